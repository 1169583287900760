#!/usr/bin/env python3
"""attnwalk gpt2 against llama.cpp on the same GPT-2-124M-shaped weights, rounds
interleaved in one run (docs/performance.md, section 10). Not run in CI.

    python3 tests/bench/compare_llamacpp.py --llama LLAMA_BUILD --gguf MODEL.gguf \\
        --safetensors MODEL.safetensors [--attnwalk BINARY] [--rounds 3] [--threads 2]

LLAMA_BUILD is a llama.cpp build folder holding bin/llama-bench (and, for the whole
process, bin/llama-simple or a `topk` program beside it: see the section). MODEL.gguf must
hold the same tensors as MODEL.safetensors (the section says how it was made). Without
--llama (or LLAMA_CPP_BUILD in the environment) it says so and exits 0: nothing to compare.

Each round, for T = 10, 128 and 1024 random token ids (seed 1, the same for both):
  - llama.cpp's forward: `llama-bench -p T -n 0 -t THREADS -r 3` (its samples);
  - attnwalk's forward: the sum of the step seconds of `gpt2 --summary --timing --json`,
    the layer shown (layer 1) in full included, 3 runs;
  - the whole process (load, prompt, one next token): attnwalk `gpt2 --compact` against
    llama.cpp's topk/llama-simple, 3 runs each.
Prints medians over all rounds and the ratios, from the same run.
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def wall(cmd, runs):
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append(time.perf_counter() - t)
    return out


def attnwalk_forward(binary, model, ids, runs):
    out = []
    for _ in range(runs):
        doc = subprocess.run([binary, "gpt2", "--model", model, "--ids", ids, "--summary", "--timing", "--json"],
                             check=True, capture_output=True, text=True).stdout
        out.append(sum(float(s) for s in re.findall(r'"seconds":([0-9.eE+-]+)', doc)))
    return out


def llama_forward(bench, gguf, T, threads, runs):
    doc = subprocess.run([bench, "-m", gguf, "-p", str(T), "-n", "0", "-t", str(threads), "-r", str(runs), "-o", "json"],
                         check=True, capture_output=True, text=True).stdout
    return [ns / 1e9 for row in json.loads(doc) for ns in row["samples_ns"]]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--llama", default=os.environ.get("LLAMA_CPP_BUILD"), help="llama.cpp build folder (bin/llama-bench)")
    p.add_argument("--gguf", help="the model as GGUF, F32")
    p.add_argument("--safetensors", help="the same model as safetensors")
    p.add_argument("--attnwalk", default=os.path.join(ROOT, "build/app/attnwalk"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    if not a.llama:
        print("compare_llamacpp: skipped, no llama.cpp build given (--llama or LLAMA_CPP_BUILD)")
        return 0
    bench = os.path.join(a.llama, "bin", "llama-bench")
    if not (os.access(bench, os.X_OK) and a.gguf and a.safetensors and os.path.exists(a.gguf) and os.path.exists(a.safetensors)):
        print(f"compare_llamacpp: skipped, needs {bench}, --gguf and --safetensors")
        return 0
    topk = next((c for c in (os.path.join(a.llama, "..", "topk"), os.path.join(a.llama, "bin", "topk")) if os.access(c, os.X_OK)), None)
    simple = os.path.join(a.llama, "bin", "llama-simple")
    rng = random.Random(1)
    ids = {T: ",".join(str(rng.randrange(50257)) for _ in range(T)) for T in (10, 128, 1024)}
    res = {}

    def add(key, values):
        res.setdefault(key, []).extend(values)

    for r in range(a.rounds):
        print(f"round {r + 1}/{a.rounds}, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
        for T in (10, 128, 1024):
            add(("llama.cpp forward", T), llama_forward(bench, a.gguf, T, a.threads, 3))
            add(("attnwalk forward", T), attnwalk_forward(a.attnwalk, a.safetensors, ids[T], 3))
            add(("attnwalk process", T), wall([a.attnwalk, "gpt2", "--model", a.safetensors, "--ids", ids[T], "--compact"], 3))
            if topk:
                add(("llama.cpp process", T), wall([topk, a.gguf, ids[T], str(a.threads)], 3))
            elif os.access(simple, os.X_OK) and T == 10:  # a text prompt: llama-simple takes no ids
                add(("llama.cpp process", T), wall([simple, "-m", a.gguf, "-n", "1", "one two three four five six seven eight nine"], 3))

    med = statistics.median
    print(f"{'seconds, median (n)':<24}" + "".join(f"{'T = ' + str(T):>22}" for T in (10, 128, 1024)))
    for what in ("llama.cpp forward", "attnwalk forward", "llama.cpp process", "attnwalk process"):
        cells = [f"{med(res[(what, T)]):.4f} ({len(res[(what, T)])})" if (what, T) in res else "-" for T in (10, 128, 1024)]
        print(f"{what:<24}" + "".join(f"{c:>22}" for c in cells))
    for what in ("forward", "process"):
        cells = []
        for T in (10, 128, 1024):
            mine, theirs = res.get(("attnwalk " + what, T)), res.get(("llama.cpp " + what, T))
            cells.append(f"{med(mine) / med(theirs):.2f}×" if mine and theirs else "-")
        print(f"{'attnwalk / llama.cpp, ' + what:<24}" + "".join(f"{c:>22}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
