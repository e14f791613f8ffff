#!/usr/bin/env bash
# Configures and builds one configuration:
#   scripts/build.sh [release|serve|asan|tsan|fuzz]
# Outputs: build/ (release: everything; serve: only the server and the
# example app's plugins, what scripts/run.sh serves), build-asan/ (the
# server, every plugin and the unit tests under ASan+UBSan: the integration
# suite is a client, run from build/ against these servers with
# EDRI_TEST_SERVER_BUILD=build-asan), build-tsan/ (the unit tests
# under ThreadSanitizer) or build-fuzz/ (the libFuzzer targets, with clang).
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-release}"
targets=()
jobs="$(nproc)"
sanitizer_flags=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
case "$kind" in
  release) dir=build; flags=(-DCMAKE_BUILD_TYPE=Release) ;;
  # The test suites and benchmarks are most of a fresh build's minutes.
  serve) dir=build; flags=(-DCMAKE_BUILD_TYPE=Release); targets=(--target edri-server notes audit) ;;
  # The sanitizer builds: -O1 (what the sanitizers' authors advise) and
  # -g1 (line tables for the reports, no more) compile in half the time of
  # RelWithDebInfo's -O2 -g, which is most of CI's time.
  asan) dir=build-asan; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "${sanitizer_flags[@]}" -DEDRI_SANITIZE=ON)
        targets=(--target edri-server unit_tests handler_tests) ;;
  tsan) dir=build-tsan; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "${sanitizer_flags[@]}" -DEDRI_TSAN=ON)
        targets=(--target unit_tests) ;;
  fuzz) dir=build-fuzz
        flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDRI_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++) ;;
  *) echo "usage: scripts/build.sh [release|serve|asan|tsan|fuzz]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$jobs" "${targets[@]}"
