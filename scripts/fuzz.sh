#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each (default 60), starting from
# its committed seeds (tests/fuzz/corpus/<target>/), which it leaves as
# they are: what the run finds goes to a scratch folder, a crash to
# build-fuzz/crashes/. Needs scripts/build.sh fuzz first.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(http_request_fuzzer envelope_fuzzer websocket_message_fuzzer json_binding_fuzzer)
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p build-fuzz/crashes
for t in "${targets[@]}"; do
  echo "fuzz: $t for ${seconds} s"
  mkdir -p "$scratch/$t"
  build-fuzz/bin/"$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/crashes/$t-" "$scratch/$t" "tests/fuzz/corpus/$t" 2>&1 |
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)|ERROR|SUMMARY|Test unit written" || true
  # libFuzzer exits non-zero on a finding; pipefail is off for the grep.
  if ls build-fuzz/crashes/"$t"-* >/dev/null 2>&1; then
    echo "fuzz: $t found a failing input: build-fuzz/crashes/" >&2
    exit 1
  fi
done
