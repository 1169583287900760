#!/usr/bin/env python3
"""Runs many attnwalk command lines and keeps what they print, to check that a change
keeps every number and every JSON document (a refactoring's before and after).

    python3 tests/trace_snapshot.py take BINARY OUT.json     # run every command line, keep the output
    python3 tests/trace_snapshot.py compare BEFORE.json AFTER.json

The command lines are those of the docs' example blocks (<!-- attnwalk ... -->) and of
the PyTorch golden cases (tests/golden/*.json), each as text and with --json. The
text is compared as printed; a JSON document step by step (id, shape, data, row sums,
note), with times left out; the --svg picture byte for byte.
"""
import json
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
M = "tests/data/tiny_gpt2_"
# The model path beyond what the docs and goldens run: every layer, one head, the view,
# generation, text prompts, summaries.
EXTRA = [
    f"gpt2 --model {M}hf_f32.safetensors --heads 4 --ids 1,2,3,4,5 --all-layers",
    f"gpt2 --model {M}hf_f32.safetensors --heads 4 --ids 1,2,3,4,5 --head 2 --layer 1",
    f"gpt2 --model {M}nano_f32.safetensors --heads 3 --ids 3,1,4,1,5,9,2,6 --view",
    f"gpt2 --model {M}nano_f32.safetensors --heads 3 --ids 3,1,4,1,5,9,2,6 --view --sort entropy",
    f"gpt2 --model {M}hf_f32.safetensors --heads 4 --ids 7,8,9 --generate 5 --layer 1 --top-k 3 --temperature 0.7",
    f"gpt2 --model {M}hf_bf16.safetensors --heads 2 --ids 7,8,9,10 --generate 2 --layer 1 --summary",
    f"gpt2 --model {M}hf_f16.safetensors --heads 2 --ids 1,2,3,4,5,6 --summary",
    f"gpt2 --model {M}hf_f32.safetensors --heads 2 --text 'Hello world' --top-p 0.5",
    f"gpt2 --model {M}nano_f32.safetensors --heads 1 --ids 0,1,2 --layer 2 --generate 1",
    "tokenize --text \"Hello world, isn't it?\"",
    "kvcache --window 2 --kv-heads 1 --heads 2",
    "mha --heads 3 --d-out 6 --kv-heads 1 --window 2",
]
MARKER = re.compile(r"^<!-- attnwalk (.*?) -->$", re.M)


def command_lines():
    seen = []
    for page in [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md")):
        for m in MARKER.finditer(page.read_text()):
            args = m.group(1).split("|")[0].strip()
            if args not in seen:
                seen.append(args)
    for golden in sorted((ROOT / "tests" / "golden").glob("*.json")):
        doc = json.loads(golden.read_text())
        for case in doc.get("cases", []) if isinstance(doc, dict) else []:
            args = case.get("args") if isinstance(case, dict) else None
            if isinstance(args, str) and args not in seen:
                seen.append(args)
            elif isinstance(args, list):
                a = " ".join(shlex.quote(x) for x in args)
                if a not in seen:
                    seen.append(a)
    for args in EXTRA:
        if args not in seen:
            seen.append(args)
    return [a.replace("@SRC@/", "") for a in seen]


TIMES = re.compile(r"\b\d+\.\d+ s +\d+\.\d%|\d+\.\d+ s\b")


def run(binary, args):
    out = subprocess.run([binary] + shlex.split(args), cwd=ROOT, capture_output=True, text=True, errors="replace")
    return {"rc": out.returncode, "out": TIMES.sub("<time>", out.stdout), "err": out.stderr}


def strip_times(doc):
    if isinstance(doc, dict):
        return {k: strip_times(v) for k, v in doc.items() if k not in ("seconds", "total_seconds", "backend")}
    if isinstance(doc, list):
        return [strip_times(v) for v in doc]
    return doc


def take(binary, out_path):
    result = {}
    for args in command_lines():
        entry = {"text": run(binary, args)}
        if "--json" not in args and "--svg" not in args and entry["text"]["rc"] == 0:
            j = run(binary, args + " --json")
            try:
                j["doc"] = strip_times(json.loads(j["out"]))
                del j["out"]
            except ValueError:
                pass
            entry["json"] = j
            svg = pathlib.Path(tempfile.gettempdir()) / "attnwalk_snapshot.svg"  # one name: messages name it
            svg.unlink(missing_ok=True)
            r = run(binary, args + " --svg " + shlex.quote(str(svg)))
            entry["svg"] = {"rc": r["rc"], "err": r["err"], "file": svg.read_text() if svg.exists() else None}
            svg.unlink(missing_ok=True)
        result[args] = entry
    pathlib.Path(out_path).write_text(json.dumps(result))
    print(f"{len(result)} command lines, {sum('json' in e for e in result.values())} also as JSON -> {out_path}")


def compare(before_path, after_path):
    before = json.loads(pathlib.Path(before_path).read_text())
    after = json.loads(pathlib.Path(after_path).read_text())
    differ = 0
    for args, b in before.items():
        a = after.get(args)
        if a is None:
            print(f"missing: {args}")
            differ += 1
            continue
        if a["text"] != b["text"]:
            print(f"text differs: {args}")
            differ += 1
        if a.get("svg") != b.get("svg"):
            print(f"svg differs: {args}")
            differ += 1
        if ("json" in a) != ("json" in b):
            print(f"json present in one only: {args}")
            differ += 1
        elif "json" in b and a["json"] != b["json"]:
            bd, ad = b["json"].get("doc", {}), a["json"].get("doc", {})
            bs = {s.get("id"): s for s in bd.get("steps", [])}
            as_ = {s.get("id"): s for s in ad.get("steps", [])}
            where = [i for i in bs if bs[i] != as_.get(i)] + [i for i in as_ if i not in bs]
            fields = sorted({k for i in where for k in set(bs.get(i, {})) | set(as_.get(i, {}))
                             if bs.get(i, {}).get(k) != as_.get(i, {}).get(k)})
            print(f"json differs: {args}: steps {where[:8]}" + (f" in {fields}" if where else " (outside the steps)"))
            differ += 1
    n_json = sum("json" in e for e in before.values())
    print(f"{len(before)} command lines (text) and {n_json} JSON documents compared; {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "take":
        take(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        print(__doc__)
        sys.exit(2)
