#!/usr/bin/env python3
"""attnwalk against llama.cpp on the same weights, rounds interleaved in one run
(docs/performance.md, sections 10 and 14). Not run in CI.

    python3 tests/bench/compare_llamacpp.py --llama LLAMA_BUILD --gguf MODEL.gguf \\
        [--safetensors MODEL.safetensors | --folder DIR] [--attnwalk BINARY] [--rounds 3]
        [--threads 2] [--env both] [--bench BUILD/attnwalk_bench]

LLAMA_BUILD is a llama.cpp build folder holding bin/llama-bench (and, for the whole
process, a `topk` program beside it or bin/llama-simple: see section 10). MODEL.gguf must
hold the same tensors as the safetensors file (GPT-2: `gpt2 --model`) or the Hugging Face
folder (any family: `model --model DIR`, e.g. a Llama-3.2-1B-shaped BF16 one). With
neither, both tools read MODEL.gguf itself (`model --model MODEL.gguf`), quantized or not;
the whole process of llama.cpp is then best timed by `llamacpp_logits` (built into
LLAMA_BUILD/bin by tests/bench/gguf_llamacpp.py), which takes ids as topk does. Without
--llama (or LLAMA_CPP_BUILD in the environment) it says so and exits 0: nothing to compare.

Each round, for T random token ids below the vocabulary's size (seed 1, the same for both;
T = 10, 128 and 1024 for GPT-2, 10, 128 and 512 for a folder):
  - llama.cpp's forward: `llama-bench -p T -n 0 -t THREADS -r 3` (its samples);
  - attnwalk's forward: the sum of the step seconds of `--summary --timing --json`,
    the layer shown (layer 1) in full included, 3 runs: the first forward of a process,
    which reads every page of the weights for the first time;
  - with --bench, attnwalk's forward warm, as llama-bench's is (its figure leaves out a
    warm-up run): attnwalk_bench's BM_model_forward (no layer shown, no trace; its own ids
    of the same lengths), 3 repetitions;
  - the whole process (load, prompt, one next token): attnwalk `--compact` against
    llama.cpp's topk/llama-simple, 3 runs each.
Each tool's file is read through before its runs.
--env both runs each round twice: with OPENBLAS_CORETYPE=Haswell ("haswell") and with no
OPENBLAS_* variable at all ("clean"). Prints medians over all rounds and the ratios, from
the same run.
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


def wall(cmd, runs, env=None):
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        out.append(time.perf_counter() - t)
    return out


def attnwalk_forward(command, ids, runs, env):
    out = []
    for _ in range(runs):
        doc = subprocess.run(command + ["--ids", ids, "--summary", "--timing", "--json"],
                             check=True, capture_output=True, text=True, env=env).stdout
        out.append(sum(float(s) for s in re.findall(r'"seconds":([0-9.eE+-]+)', doc)))
    return out


def llama_forward(bench, gguf, T, threads, runs, env):
    doc = subprocess.run([bench, "-m", gguf, "-p", str(T), "-n", "0", "-t", str(threads), "-r", str(runs), "-o", "json"],
                         check=True, capture_output=True, text=True, env=env).stdout
    return [ns / 1e9 for row in json.loads(doc) for ns in row["samples_ns"]]


def attnwalk_warm(bench, model, lengths, runs, env):
    """BM_model_forward's repetitions (seconds) for each length, from one run of the bench."""
    env = dict(env, ATTNWALK_BENCH_MODEL=model, ATTNWALK_BENCH_TOKENS=",".join(str(T) for T in lengths))
    doc = subprocess.run([bench, "--benchmark_filter=BM_model_forward", f"--benchmark_repetitions={runs}", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True, env=env).stdout
    out = {}
    for b in json.loads(doc)["benchmarks"]:
        if b.get("run_type") == "iteration":
            T = int(b["run_name"].split("/")[1])
            out.setdefault(T, []).append(b["real_time"] / 1e3)  # the benchmark reports milliseconds
    return out


def warm(path):
    """Reads a file (or a folder's files) through, so that neither tool's runs begin with a
    disk read of pages the machine dropped from its cache meanwhile."""
    files = [os.path.join(path, f) for f in sorted(os.listdir(path))] if os.path.isdir(path) else [path]
    for f in files:
        with open(f, "rb") as h:
            while h.read(1 << 24):
                pass


def environments(which):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    haswell = dict(clean, OPENBLAS_CORETYPE="Haswell")
    return {"both": [("haswell", haswell), ("clean", clean)], "haswell": [("haswell", haswell)],
            "clean": [("clean", clean)], "asis": [("asis", dict(os.environ))]}[which]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--llama", default=os.environ.get("LLAMA_CPP_BUILD"), help="llama.cpp build folder (bin/llama-bench)")
    p.add_argument("--gguf", help="the model as GGUF (F32 beside a folder or safetensors file; any type alone)")
    p.add_argument("--safetensors", help="the same model as GPT-2's safetensors (the gpt2 command)")
    p.add_argument("--folder", help="the same model as a Hugging Face folder (the model command)")
    p.add_argument("--attnwalk", default=os.path.join(ROOT, "build/app/attnwalk"))
    p.add_argument("--bench", help="attnwalk_bench (cmake --build build --target attnwalk_bench): the forward warm too")
    p.add_argument("--max-memory", help="attnwalk's --max-memory (a 1B model's weights in float32 take 4.6 GiB)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--env", choices=("asis", "haswell", "clean", "both"), default="asis",
                   help="OPENBLAS_CORETYPE=Haswell, none, or both in each round (default: the environment as it is)")
    a = p.parse_args()
    if not a.llama:
        print("compare_llamacpp: skipped, no llama.cpp build given (--llama or LLAMA_CPP_BUILD)")
        return 0
    bench = os.path.join(a.llama, "bin", "llama-bench")
    model = a.folder or a.safetensors or a.gguf
    if not (os.access(bench, os.X_OK) and a.gguf and os.path.exists(a.gguf) and os.path.exists(model)):
        print(f"compare_llamacpp: skipped, needs {bench} and --gguf")
        return 0
    topk = next((c for c in (os.path.join(a.llama, "..", "topk"), os.path.join(a.llama, "bin", "topk"),
                             os.path.join(a.llama, "bin", "llamacpp_logits")) if os.access(c, os.X_OK)), None)
    simple = os.path.join(a.llama, "bin", "llama-simple")
    if a.folder:
        command = [a.attnwalk, "model", "--model", a.folder]
        vocab = json.load(open(os.path.join(a.folder, "config.json")))["vocab_size"]
        lengths = (10, 128, 512)
    elif not a.safetensors:  # the same file for both
        command = [a.attnwalk, "model", "--model", a.gguf] + (["--max-memory", a.max_memory] if a.max_memory else [])
        vocab = json.loads(subprocess.run(command + ["--ids", "0", "--steps", "token_ids", "--json"], check=True,
                                          capture_output=True, text=True).stdout)["params"]["vocab"]
        lengths = (10, 128, 512)
    else:
        command = [a.attnwalk, "gpt2", "--model", a.safetensors]
        vocab, lengths = 50257, (10, 128, 1024)
    if a.max_memory and "--max-memory" not in command:
        command += ["--max-memory", a.max_memory]
    rng = random.Random(1)
    ids = {T: ",".join(str(rng.randrange(vocab)) for _ in range(T)) for T in lengths}
    res = {}

    def add(key, values):
        res.setdefault(key, []).extend(values)

    envs = environments(a.env)
    for r in range(a.rounds):
        for name, env in envs:
            print(f"round {r + 1}/{a.rounds} ({name}), load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
            for T in lengths:
                warm(a.gguf)
                add((name, "llama.cpp forward", T), llama_forward(bench, a.gguf, T, a.threads, 3, env))
                warm(model)
                add((name, "attnwalk forward", T), attnwalk_forward(command, ids[T], 3, env))
                add((name, "attnwalk process", T), wall(command + ["--ids", ids[T], "--compact"], 3, env))
                warm(a.gguf)
                if topk:
                    add((name, "llama.cpp process", T), wall([topk, a.gguf, ids[T], str(a.threads)], 3, env))
                elif os.access(simple, os.X_OK) and T == 10:  # a text prompt: llama-simple takes no ids
                    add((name, "llama.cpp process", T), wall([simple, "-m", a.gguf, "-n", "1", "one two three four five six seven eight nine"], 3, env))
            if a.bench:
                warm(model)
                for T, seconds in attnwalk_warm(a.bench, model, lengths, 3, env).items():
                    add((name, "attnwalk forward, warm", T), seconds)

    med = statistics.median
    for name, _ in envs:
        print(f"{name + ': seconds, median (n)':<32}" + "".join(f"{'T = ' + str(T):>20}" for T in lengths))
        for what in ("llama.cpp forward", "attnwalk forward", "attnwalk forward, warm", "llama.cpp process", "attnwalk process"):
            cells = [f"{med(res[(name, what, T)]):.4f} ({len(res[(name, what, T)])})" if (name, what, T) in res else "-" for T in lengths]
            print(f"{what:<32}" + "".join(f"{c:>20}" for c in cells))
        for what, theirs_name in (("forward", "forward"), ("forward, warm", "forward"), ("process", "process")):
            cells = []
            for T in lengths:
                mine, theirs = res.get((name, "attnwalk " + what, T)), res.get((name, "llama.cpp " + theirs_name, T))
                cells.append(f"{med(mine) / med(theirs):.2f}×" if mine and theirs else "-")
            print(f"{'attnwalk / llama.cpp, ' + what:<32}" + "".join(f"{c:>20}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
