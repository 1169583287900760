#!/bin/bash
# The --html pages in a real browser: Debian's chromium, headless, driven by the npm
# package puppeteer-core 21. Each page loads without a console error, a click on a cell
# shows its explanation, a model view's grid opens a head, the walkthrough's page holds its
# seven parts and draws the first; at 1024×768 and 1280×800 (a projector's screens), before
# and after A+ twice, every column of every heatmap is inside the window, the title is not
# one letter a line, and the explanation's panel is closed until a cell is clicked; a mask
# step says what its 1 and 0 mean; screenshots go to WORK_DIR/html.
# Skipped (exit 77) without chromium, node, or npm able to fetch puppeteer-core.
# Usage: html_in_browser.sh ATTNWALK_BINARY WORK_DIR
set -u
binary=$1 work=$2 here=$(cd "$(dirname "$0")" && pwd)
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "chromium is not installed: skipped"; exit 77; }
command -v node >/dev/null || { echo "node is not installed: skipped"; exit 77; }
pkg=$work/npm-browser/node_modules/puppeteer-core
if [ ! -f "$pkg/package.json" ]; then
  command -v npm >/dev/null || { echo "npm is not installed: skipped"; exit 77; }
  mkdir -p "$work/npm-browser"
  (cd "$work/npm-browser" && timeout 180 npm install --no-audit --no-fund --silent puppeteer-core@21 >/dev/null 2>&1) ||
    { echo "npm could not fetch puppeteer-core@21: skipped"; exit 77; }
fi
out=$work/html
mkdir -p "$out"
cd "$here/.." || exit 1
"$binary" mha --heads 2 --causal --seed 123 --html "$out/mha.html" >/dev/null || exit 1
"$binary" gpt2 --model tests/data/tiny_gpt2_nano_f32.safetensors --heads 3 --ids 1,2,3,4,5,6,7,8 --view --html "$out/view.html" >/dev/null || exit 1
"$binary" model --model tests/data/models/tiny_gpt_oss --ids 1,2,3,4,5,6,7 --view --html "$out/gptoss.html" >/dev/null || exit 1
"$binary" softmax --html "$out/softmax.html" >/dev/null || exit 1
"$binary" walkthrough --html "$out/walkthrough.html" >/dev/null || exit 1
NODE_PATH=$work/npm-browser/node_modules node "$here/html_in_browser.js" "$browser" "$out"
