#!/bin/bash
# Compares attnwalk's GPT-2 tokenizer with the npm package gpt-3-encoder 1.1.4. Skipped
# (exit 77) where node is not installed or npm cannot fetch the package.
# Usage: tokenizer_vs_npm.sh ATTNWALK_BINARY WORK_DIR
set -u
binary=$1 work=$2 here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null || { echo "node is not installed: skipped"; exit 77; }
pkg=$work/npm/node_modules/gpt-3-encoder
if [ ! -f "$pkg/Encoder.js" ]; then
  command -v npm >/dev/null || { echo "npm is not installed: skipped"; exit 77; }
  mkdir -p "$work/npm"
  (cd "$work/npm" && timeout 120 npm install --no-audit --no-fund --silent gpt-3-encoder@1.1.4 >/dev/null 2>&1) ||
    { echo "npm could not fetch gpt-3-encoder@1.1.4: skipped"; exit 77; }
fi
cd "$here/.." && node "$here/tokenizer_vs_npm.js" "$binary" "$pkg"
