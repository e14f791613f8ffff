#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds the server and the example
# app's plugins (only those: scripts/test.sh builds the tests) and serves
# the example app (notes: REST, WebSocket push and a live web page; two
# domains, SQLite) on http://127.0.0.1:8080 (override with EDRI_HOST /
# EDRI_PORT; the notes are kept in EDRI_NOTES_DB, default ./notes.db).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh serve
export EDRI_HOST="${EDRI_HOST:-127.0.0.1}" EDRI_PORT="${EDRI_PORT:-8080}"
export EDRI_PLUGINS="${EDRI_PLUGINS:-$PWD/build/plugins/notes.so:$PWD/build/plugins/audit.so}"
exec build/bin/edri-server
