#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each (default 60), as many at once
# as there are cores, starting from its committed seeds
# (tests/fuzz/corpus/<target>/), which it leaves as they are: what the run
# finds goes to a scratch folder, a crash to build-fuzz/crashes/. Needs
# scripts/build.sh fuzz first.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(http_request_fuzzer envelope_fuzzer websocket_message_fuzzer json_binding_fuzzer cluster_frame_fuzzer
    http2_frame_fuzzer json_members_fuzzer cluster_inbound_fuzzer proxy_header_fuzzer http1_codec_fuzzer
    message_ends_fuzzer)
fi
parallel="${FUZZ_JOBS:-$(nproc)}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p build-fuzz/crashes
for t in "${targets[@]}"; do
  if [ ! -x "build-fuzz/bin/$t" ]; then
    echo "fuzz: no build-fuzz/bin/$t (run scripts/build.sh fuzz)" >&2
    exit 2
  fi
done

# One target: its summary lines go to its own log, printed when all are done.
run() {
  local t="$1"
  mkdir -p "$scratch/$t"
  build-fuzz/bin/"$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/crashes/$t-" "$scratch/$t" "tests/fuzz/corpus/$t" >"$scratch/$t.log" 2>&1 || true
}

running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$parallel" ]; then
    wait -n
    running=$((running - 1))
  fi
  echo "fuzz: $t for ${seconds} s"
  run "$t" &
  running=$((running + 1))
done
wait

failed=0
for t in "${targets[@]}"; do
  echo "fuzz: $t"
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)|ERROR|SUMMARY|Test unit written" "$scratch/$t.log" || true
  # libFuzzer exits non-zero on a finding; the crash file is the verdict.
  if ls build-fuzz/crashes/"$t"-* >/dev/null 2>&1; then
    echo "fuzz: $t found a failing input: build-fuzz/crashes/" >&2
    failed=1
  fi
done
exit "$failed"
