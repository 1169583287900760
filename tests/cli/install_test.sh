#!/bin/bash
# Issue 24: attnwalk installs like a Unix tool. Installs the build into a temporary prefix,
# then runs the installed binary from an unrelated folder: its data (GPT-2's tokenizer,
# vocab.json), the OpenBLAS plugin, the man page and the bash completion must all come
# from the prefix.
# usage: install_test.sh CMAKE BUILD_DIR SOURCE_DIR
set -euo pipefail
cmake=$1 build=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
fail() { echo "FAIL: $*" >&2; exit 1; }
for f in bin/attnwalk share/attnwalk/gpt2/encoder.json share/attnwalk/gpt2/vocab.bpe share/attnwalk/vocab.json \
         share/man/man1/attnwalk.1 share/bash-completion/completions/attnwalk share/doc/attnwalk/json.md \
         share/doc/attnwalk/teaching.md; do
    [[ -e $prefix/$f ]] || fail "$f was not installed"
done
mkdir "$work/elsewhere" && cd "$work/elsewhere"
bin=$prefix/bin/attnwalk
out=$("$bin" tokenize --text "Hello world is" --json)
[[ $out == *'"data":[15496,995,318]'* ]] || fail "tokenize: $out"
# --text through GPT-2's shipped tokenizer into a checkpoint (ids below its 50 tokens)
out=$("$bin" gpt2 --model "$src/tests/data/tiny_gpt2_hf_f32.safetensors" --heads 4 --text "A1!B" --steps token_ids --json)
[[ $out == *'"data":[32,16,0,33]'* ]] || fail "gpt2 --text: $out"
# the docs' data/vocab.json, from a folder that has no data/
out=$("$bin" context --text "cats climb trees" --vocab data/vocab.json --steps context --json)
[[ $out == *'"id":"context"'* ]] || fail "context --vocab data/vocab.json: $out"
# the plugin beside the binary (when the build has one)
if [[ -d $prefix/lib/attnwalk || -n $(find "$prefix" -name 'libattnwalk_openblas*' -print -quit) ]]; then
    embeddings=$(python3 -c "import json; print(json.dumps({'embeddings': [[((i * j) % 7) / 10 for j in range(64)] for i in range(200)]}))")
    out=$(echo "$embeddings" | "$bin" mha -i - --heads 4 --d-out 64 --timing --json)
    [[ $out == *"loaded from $prefix/"* ]] || fail "the OpenBLAS plugin did not come from the prefix: ${out##*matrix_products}"
fi
# the man page renders, and completion offers commands, options and step ids
if command -v man >/dev/null; then
    MANWIDTH=80 man -l "$prefix/share/man/man1/attnwalk.1" 2>/dev/null | grep -q "COUNTING" || fail "man page"
fi
PATH=$prefix/bin:$PATH bash -c '
    source "$1/share/bash-completion/completions/attnwalk"
    COMP_WORDS=(attnwalk sof); COMP_CWORD=1; _attnwalk; [[ "${COMPREPLY[*]}" == softmax ]] || { echo "commands: ${COMPREPLY[*]}"; exit 1; }
    COMP_WORDS=(attnwalk softmax --qu); COMP_CWORD=2; _attnwalk; [[ "${COMPREPLY[*]}" == --query ]] || { echo "options: ${COMPREPLY[*]}"; exit 1; }
    COMP_WORDS=(attnwalk softmax --steps weights_n); COMP_CWORD=3; _attnwalk; [[ "${COMPREPLY[*]}" == weights_naive ]] || { echo "steps: ${COMPREPLY[*]}"; exit 1; }
    # explore offers only what it can explore (no params, tokenize, walkthrough or explore)
    COMP_WORDS=(attnwalk explore ""); COMP_CWORD=2; _attnwalk
    [[ " ${COMPREPLY[*]} " == *" mha "* && " ${COMPREPLY[*]} " != *" params "* && " ${COMPREPLY[*]} " != *" walkthrough "* ]] || { echo "explore: ${COMPREPLY[*]}"; exit 1; }
    COMP_WORDS=(attnwalk explore softmax --qu); COMP_CWORD=3; _attnwalk; [[ "${COMPREPLY[*]}" == --query ]] || { echo "explore options: ${COMPREPLY[*]}"; exit 1; }
' _ "$prefix" || fail "bash completion"
echo "installed into $prefix and ran from $work/elsewhere: ok"
