#!/usr/bin/env bash
# Builds the libFuzzer targets (preset "fuzz", clang) and runs each for SECONDS
# (default 600) on a copy of its seed corpus. Any crash, leak or timeout fails.
#   bash tests/fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-600}
cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j2
for target in embeddings weights vocab cli options safetensors tokenizer_json gpt2_tokenizer model_folder npy_header config_subnormals gguf; do
  work=$(mktemp -d)
  cp tests/fuzz/corpus/$target/* "$work"/
  max_len=4096
  [ "$target" = tokenizer_json ] && max_len=8192  # the test folders' tokenizer.json files are up to 5 KB
  [ "$target" = gguf ] && max_len=32768  # the test GGUF files are up to 24 KB
  echo "== fuzz_$target for ${seconds}s"
  status=0
  build-fuzz/tests/fuzz/fuzz_$target "$work" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=$max_len -print_final_stats=1 >"$work.log" 2>&1 || status=$?
  grep -E 'stat::number_of_executed_units|^Done|ERROR|SUMMARY' "$work.log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$work.log"
    echo "fuzz_$target failed (exit $status)"
    exit 1
  fi
  rm -rf "$work" "$work.log"
done
