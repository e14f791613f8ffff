#!/usr/bin/env bash
# Installs the Debian 12 packages edri needs to build, test and benchmark.
# Idempotent: installs only what is missing; a no-op on a ready machine.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libboost-dev libboost-system-dev
  nlohmann-json3-dev libspdlog-dev catch2 node-llhttp libsqlite3-dev libkainjow-mustache-dev libssl-dev openssl
  clang-format
  # several hosts joined over NATS (docs/cluster.md): the client library, and
  # the server the cluster tests and `bench cluster` start
  libnats-dev nats-server
  # HTTP/2 in the listener (decision 0021), and what tests and benchmarks it
  # with: gRPC's Python client and reference server, h2load, curl
  libnghttp2-dev nghttp2-client python3-grpcio curl
  # gRPC (docs/grpc.md): protobuf messages compiled at build time, and the
  # Python modules the gRPC tests generate
  libprotobuf-dev protobuf-compiler python3-protobuf
  # bearer tokens for middleware (edri::jwt, docs/security.md)
  libjwt-dev
  # compressed answers (docs/compression.md): gzip and brotli
  libbrotli-dev zlib1g-dev
  # edri-server --config FILE: TOML (docs/decisions/0045)
  libtoml11-dev
  # installed as a service (docs/operations.md): sd_notify for Type=notify,
  # and what scripts/package.sh checks the .deb with
  libsystemd-dev lintian systemd
  # a declared field's pattern (edri/fields.hpp), matched in linear time
  libre2-dev
  # outbound HTTP from handlers, on the manager's loop (Context::fetch)
  libcurl4-openssl-dev
  # Postgres from handlers (src/database/, issue 37): libpq to build, the
  # server the tests start (tests/support/postgres_server.hpp), and asyncpg
  # and Jinja2 for the FastAPI reference measured beside it
  libpq-dev postgresql-15 python3-asyncpg python3-jinja2
  # the libFuzzer targets (tests/fuzz)
  clang libclang-rt-14-dev
  # bench_micro (bench serialization, bench inprocess)
  libbenchmark-dev
  # the notes page is tested in headless Chromium
  chromium
  # references measured side by side by `bench` (optional at run time)
  nginx-light python3-fastapi python3-httpx python3-uvicorn python3-uvloop python3-httptools wrk
  # nginx's stream module: the PROXY protocol test puts nginx in front of edri
  # (tests/support/nginx_stream.hpp)
  libnginx-mod-stream
  # bench --record draws its charts with it
  gnuplot-nox
  # bench fanout's reference: a Node.js `ws` server (its package from npm,
  # below: Debian packages npm apart from nodejs, other builds of Node
  # bring their own, and the two conflict)
  nodejs
)

# npm packages pinned by a lock file, each in its folder: `npm ci` there
# unless node_modules/<module> is in place. Optional: what needs one says
# it is missing (bench fanout's Node reference) or fails (the OpenAPI test).
install_npm_folder() {
  local dir="$1" module="$2" what="$3"
  dir="$(cd "$(dirname "$0")/.." && pwd)/$dir"
  [ -d "$dir/node_modules/$module" ] && return 0
  if ! command -v npm > /dev/null; then
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends npm >&2 ||
      echo "setup: npm could not be installed; $what" >&2
  fi
  command -v npm > /dev/null || return 0
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error > /dev/null) ||
    echo "setup: npm ci in $dir failed; $what" >&2
}

# The ws package of bench fanout's Node reference.
install_node_reference() {
  install_npm_folder benchmarks/reference/streams_node ws "bench fanout will run without its Node reference"
}

# The OpenAPI 3.1 validator the /openapi.json test runs.
install_openapi_check() {
  install_npm_folder tests/openapi_check @seriousme "the OpenAPI test will fail until it is installed"
}

# Swagger UI's files, which the page at /docs loads (EDRI_API_DOCS): the
# build copies them into share/edri/swagger-ui beside bin/.
install_swagger_ui() {
  install_npm_folder packaging/swagger-ui swagger-ui-dist "the page at /docs will answer 404 until it is installed"
}

# promtool, Prometheus's linter of the /metrics text (the plugin metrics
# test runs it): taken out of Debian's prometheus package into .tools/
# rather than installed, since the package would also start a Prometheus
# server as a service.
install_promtool() {
  local tools
  tools="$(cd "$(dirname "$0")/.." && pwd)/.tools"
  [ -x "$tools/prometheus/usr/bin/promtool" ] && return 0
  local scratch
  scratch="$(mktemp -d)"
  mkdir -p "$tools"
  (cd "$scratch" && apt-get download -qq prometheus > /dev/null 2>&1 &&
    dpkg -x prometheus_*.deb "$tools/prometheus" && rm -f "$tools/prometheus/usr/bin/prometheus") ||
    echo "setup: promtool could not be fetched; the plugin metrics test will fail until it is" >&2
  rm -rf "$scratch"
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  install_node_reference
  install_openapi_check
  install_swagger_ui
  install_promtool
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
install_node_reference
install_openapi_check
install_swagger_ui
install_promtool
