#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds edri and runs every test:
# formatting, the suite in a Release build, the .deb and its install
# checked (scripts/package.sh), the suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer, the threaded parts under
# ThreadSanitizer, every fuzz target for 30 s, the soak test, and a
# short bench smoke run.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage prints its start time in seconds since the run began, so a
# slow CI run shows where its time went.
stage() { echo "== [${SECONDS} s] $*"; }
scripts/setup.sh

stage "format"
files=$(git ls-files '*.cpp' '*.hpp' 2>/dev/null || find src include tests examples benchmarks -name '*.[ch]pp')
clang-format --dry-run --Werror $files
# CTest's discovery splits a test name at ';' into halves that match no
# test, which then fail: no Catch test name may hold one.
if grep -n 'TEST_CASE("[^"]*;' $files; then
  echo "a TEST_CASE name above holds ';', which CTest splits at" >&2
  exit 1
fi
if grep -n 'TEST_CASE("-' $files; then
  echo "a TEST_CASE name above starts with '-', which Catch reads as an option when CTest names it" >&2
  exit 1
fi

stage "release build and tests"
scripts/build.sh release
ctest --test-dir build --output-on-failure -j2

stage "plugins built outside the tree (the example, one --new made), tested, against the installed package"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
cmake --install build --prefix "$prefix" >/dev/null
cmake -S examples/out_of_tree -B "$prefix/hello-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/hello-build"
test -f "$prefix/hello-build/hello.so"
test -f "$prefix/hello-build/hello_assets/index.html"
# Its test, through the installed test client (edri::testing).
test -x "$prefix/hello-build/hello_test"
ctest --test-dir "$prefix/hello-build" --output-on-failure
# A new project from the installed server (--new): it builds and its test
# passes as written.
"$prefix/bin/edri-server" --new greeter "$prefix/greeter"
cmake -S "$prefix/greeter" -B "$prefix/greeter/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/greeter/build"
test -x "$prefix/greeter/build/greeter_test"
ctest --test-dir "$prefix/greeter/build" --output-on-failure

stage "the .deb: lintian, its systemd unit, a scratch install serving the notes app"
scripts/package.sh build

stage "ASan + UBSan build and tests"
scripts/build.sh asan
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure -j2 -R '^unit:'
# The integration suite is a client: built once (above), it starts the
# sanitized servers and plugins, where what it checks runs.
EDRI_TEST_SERVER_BUILD="$PWD/build-asan" ctest --test-dir build --output-on-failure -j2 -R '^integration:'
unset ASAN_OPTIONS UBSAN_OPTIONS

stage "ThreadSanitizer: the channels, the worker thread pool, SQLite's threads, guest loops, the access log's writer, the span exporter"
scripts/build.sh tsan
TSAN_OPTIONS=halt_on_error=1 build-tsan/bin/unit_tests "[threads],[outbox],[process_loop],[channel]~[stress]"

stage "fuzzing: each libFuzzer target for 30 s, two at a time"
scripts/build.sh fuzz
scripts/fuzz.sh 30

stage "soak: 1,000 clients under load and 1,000 idle WebSockets for 60 s"
build/bin/integration_tests "[soak]"

stage "bench smoke: every scenario prints its table (speed not asserted)"
# Short cells: every table printed is the check, not its figures.
build/bin/bench all --quick --duration 0.3 --warmup 0.1
# A record of two runs: the JSON ledger and the ranges.
results=$(mktemp -d)
BENCH_RESULTS_DIR="$results" build/bin/bench startup --runs 2 >"$results/report.md"
grep -q "ranges over 2 runs" "$results/report.md"
python3 -c 'import json,sys,glob; r=json.load(open(glob.glob(sys.argv[1]+"/*-startup.json")[0])); assert len(r["runs"])==2 and r["runs"][0]["tables"][0]["rows"] and r["machine"]["cores"]>0' "$results"
rm -rf "$results"
# A reference server by command (the Node one, started by its command):
# its rows carry figures under the name given.
build/bin/bench fanout --quick --reference-command 'node benchmarks/reference/streams_node/server.js' \
  --reference-name 'by command' 2>/dev/null | grep -E "^\| by command \| private only \| [0-9]+ \| [0-9]+ \|" >/dev/null
# An open-loop run: the rate is named in the report and kept.
build/bin/bench noop --quick --rate 2000 --concurrency 4 | grep "open loop at 2000 req/s" >/dev/null
# The wrk matrix (edri beside nginx under wrk, the 16-CPU figures' script):
# every cell has a rate and the report its tables.
matrix=$(mktemp -d)
python3 benchmarks/wrk_matrix.py --edri-server build/bin/edri-server --plugin "$PWD/build/plugins/bench_app.so" \
  --concurrency 1,8 --duration 1 --warmup 1 \
  --listeners 2 --route-n 1000 --idle-seconds 0.5 --out "$matrix" >"$matrix/report.md"
grep -q "^| edri defaults |" "$matrix/report.md"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; cells=[c for c in r if c["kind"] in ("matrix","listeners")]; assert len(cells)==6 and all(c.get("rate") and not c["non2xx"] for c in cells), cells; assert [c for c in r if c["kind"]=="route" and c.get("per_second")]' "$matrix/wrk_matrix.json"
rm -rf "$matrix"
stage "done"
