#!/usr/bin/env python3
"""Validates the --json output of every command against docs/trace.schema.json
(JSON Schema draft 2020-12), with Debian's python3-jsonschema.

Usage: validate_json.py BINARY    (exit 77 = skipped when jsonschema is not installed)
"""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMANDS = [
    "scores", "scores --query journey", "scores --seed 123 --init rand --explain 1,2",
    "softmax", "softmax --query 1", "softmax -i data/large_scores.json", "softmax --explain journey,starts",
    "context", "context --seed 789 --qkv-bias", "context --weights data/weights_example.json", "context --batch 2 --seed 1",
    "causal", "causal --seed 789 --explain 4,2", "causal --batch 2 --seed 123 --timing",
    "dropout", "dropout --ones 6 --dropout-seed 123", "dropout --eval", "dropout --seed 789 --no-causal --dropout 0.3",
    "mha", "mha --batch 2 --seed 123 --heads 2", "mha --variant wrapper --heads 3 --dropout 0.5 --qkv-bias",
    "mha --summary", "mha --summary --no-causal --batch 2 --heads 1",
    "walkthrough",
    "causal --json-nonfinite null",
    "context --text 'cats climb trees during' --vocab data/vocab.json",
    "mha --heads 4 --d-out 8 --kv-heads 2 --window 3 --show-einsum", "mha --variant combined-qkv --qkv-bias",
    "kvcache", "kvcache --window 2 --batch 2 --heads 4 --d-out 8 --kv-heads 1", "rope", "rope --heads 2 --d-out 8 --summary",
    "flash --block 2 --causal --window 2", "sdpa --queries 2 --is-causal",
    "sdpa --attn-mask '[[1,1,0,0,0,0],[0,0,0,0,0,0],[1,1,1,1,1,1],[1,1,1,1,1,1],[1,1,1,1,1,1],[1,1,1,1,1,1]]'",
    "params", "params --kv-heads 4 --layers 12",
    "kvshare", "kvshare --layers 3 --kv-producing-layers 1 --batch 2 --kv-heads 1",
    "gpt2 --model tests/data/tiny_gpt2_hf_f32.safetensors --heads 4 --ids 1,2,3 --top-p 0.9",
    "tokenize --text 'Hello world is'",
    "gpt2 --model tests/data/tiny_gpt2_hf_f16.safetensors --heads 2 --ids 1,2,3,4 --view --sort entropy",
    "gpt2 --model tests/data/tiny_gpt2_nano_f32.safetensors --heads 3 --ids 5,6 --all-layers --summary",
    "model --model tests/data/models/tiny_gemma3 --ids 1,2,3,4,5,6 --layer 1 --generate 2",
    "model --model tests/data/models/tiny_qwen3 --ids 1,2,3 --view --sort diagonal",
    "model --model tests/data/models/tiny_llama --ids 1,2,3 --head 3 --all-layers",
]


def main():
    try:
        import jsonschema
    except ImportError:
        print("skipped: python3-jsonschema is not installed (apt-get install python3-jsonschema)")
        return 77
    schema = json.loads((ROOT / "docs/trace.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    failed = 0
    for args in COMMANDS:
        import shlex
        out = subprocess.run([sys.argv[1]] + shlex.split(args) + ["--json"], cwd=ROOT, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"FAIL {args}: exit {out.returncode}: {out.stderr.strip()}")
            failed += 1
            continue
        errors = sorted(validator.iter_errors(json.loads(out.stdout)), key=lambda e: list(e.path))
        for e in errors[:3]:
            print(f"FAIL {args}: at {'/'.join(map(str, e.path))}: {e.message[:200]}")
        failed += bool(errors)
    print(f"{len(COMMANDS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
