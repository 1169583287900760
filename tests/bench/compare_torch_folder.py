#!/usr/bin/python3
"""attnwalk's forward of a Hugging Face folder against PyTorch's float32 forward of the same
weights (tests/reference/modern.py's ModernModel, written as the textbook's standalone Llama 3.2
and Qwen3 notebooks), at every T, rounds interleaved in one run (docs/performance.md). Needs
Debian's python3-torch (/usr/bin/python3); not run in CI.

    /usr/bin/python3 tests/bench/compare_torch_folder.py --folder DIR --bench BUILD/bench/attnwalk_bench
        [--attnwalk BINARY] [--tokens 10,128,512] [--rounds 3] [--env both]

DIR is a llama, qwen2 or qwen3 folder (config.json, model.safetensors in F32, BF16 or F16), e.g.
the Llama-3.2-1B-shaped BF16 one of shared/bench/llamacpp. Both sides run warm, as llama-bench
does: attnwalk's is attnwalk_bench's BM_model_forward (ATTNWALK_BENCH_MODEL=DIR: the forward and
the last position's logits, a warm-up first, 3 repetitions); PyTorch's is the reference
model's forward in eval mode under no_grad, torch.set_num_threads(2), a warm-up first, median of
3. Both multiply through the same OpenBLAS, so each round runs each environment: --env both
means OPENBLAS_CORETYPE=Haswell ("haswell") and no OPENBLAS_* variable ("clean"); a PyTorch
worker per environment holds the model (4 bytes a weight) and times on request.

Before timing, each T's top-5 next tokens are compared (`model --ids … --steps
top_k_ids,top_k_logits --json` against the reference's logits of the last position), and the
largest |difference| of those logits is printed.
"""
import argparse
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = "/usr/bin/python3"


def environments(which):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    haswell = dict(clean, OPENBLAS_CORETYPE="Haswell")
    if which == "both":
        return [("haswell", haswell), ("clean", clean)]
    if which == "haswell":
        return [("haswell", haswell)]
    if which == "clean":
        return [("clean", clean)]
    return [("asis", dict(os.environ))]


def ids_for(vocab, T):
    """T ids below the vocabulary's size, the same every run (a linear congruential walk)."""
    x, out = 1, []
    for _ in range(T):
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        out.append((x >> 33) % vocab)
    return out


# ---- the PyTorch worker: loads the folder into ModernModel, then answers "top T" and "time T R" ----

def worker(folder):
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from reference.modern import ModernModel, modern_tensors
    spec = importlib.util.spec_from_file_location("make_gguf", os.path.join(ROOT, "tests", "make_gguf.py"))
    make_gguf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_gguf)
    import pathlib

    c = json.load(open(os.path.join(folder, "config.json")))
    family = c["model_type"]
    if family not in ("llama", "qwen2", "qwen3"):
        raise SystemExit(f"{folder}: model_type {family!r}: this comparison reads llama, qwen2 and qwen3 folders")
    cfg = dict(family=family, vocab=c["vocab_size"], C=c["hidden_size"], hidden=c["intermediate_size"], H=c["num_attention_heads"],
               G=c.get("num_key_value_heads", c["num_attention_heads"]), d=c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"],
               ctx=min(c["max_position_embeddings"], 8192), eps=c["rms_norm_eps"], theta=c.get("rope_theta", 10000.0),
               tied=c.get("tie_word_embeddings", False), sliding=[False] * c["num_hidden_layers"])
    rs = c.get("rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":
        cfg["llama3"] = dict(factor=rs["factor"], low_freq_factor=rs["low_freq_factor"], high_freq_factor=rs["high_freq_factor"],
                             original_context_length=rs["original_max_position_embeddings"])
    elif rs:
        raise SystemExit(f"{folder}: rope_scaling {rs!r} is not one this comparison reads")
    torch.set_num_threads(2)
    model = ModernModel(cfg).eval()
    tensors = make_gguf.read_folder(pathlib.Path(folder))
    with torch.no_grad():
        for name, p in modern_tensors(model).items():
            a, _ = tensors.pop(name)
            p.copy_(torch.from_numpy(np.ascontiguousarray(a)))
    del tensors
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        T = int(words[1])
        ids = torch.tensor([ids_for(cfg["vocab"], T)])
        with torch.no_grad():
            if words[0] == "top":
                logits = model(ids)[0, -1]
                top = torch.argsort(logits, descending=True, stable=True)[:5]
                print(json.dumps({"ids": top.tolist(), "logits": logits[top].tolist()}), flush=True)
            else:
                model(ids)  # the warm-up
                times = []
                for _ in range(int(words[2])):
                    t = time.perf_counter()
                    model(ids)
                    times.append(time.perf_counter() - t)
                print(json.dumps(times), flush=True)


# ---- the driver ----

def bench_forward(bench, folder, tokens, env):
    """attnwalk_bench's BM_model_forward: milliseconds per forward for each T (median of 3 repetitions)."""
    e = dict(env, ATTNWALK_BENCH_MODEL=folder, ATTNWALK_BENCH_TOKENS=",".join(map(str, tokens)))
    out = subprocess.run([bench, "--benchmark_filter=BM_model_forward", "--benchmark_repetitions=3", "--benchmark_format=json"],
                         env=e, check=True, capture_output=True, text=True).stdout
    per = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") == "iteration":
            T = int(b["name"].split("/")[1])
            per.setdefault(T, []).append(b["real_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]])  # ms
    return {T: statistics.median(v) for T, v in per.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", required=True)
    ap.add_argument("--bench", required=True, help="attnwalk_bench (the build's bench/attnwalk_bench)")
    ap.add_argument("--attnwalk", default=os.path.join(ROOT, "build/app/attnwalk"))
    ap.add_argument("--tokens", default="10,128,512")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--env", default="asis", choices=["asis", "haswell", "clean", "both"])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    folder = os.path.abspath(a.folder)
    if a.worker:
        worker(folder)
        return
    tokens = [int(t) for t in a.tokens.split(",")]
    vocab = json.load(open(os.path.join(folder, "config.json")))["vocab_size"]
    envs = environments(a.env)
    workers = {}
    for name, env in envs:
        t = time.perf_counter()
        p = subprocess.Popen([PYTHON, os.path.abspath(__file__), "--folder", folder, "--bench", a.bench, "--worker"], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if p.stdout.readline().strip() != "ready":
            raise SystemExit("the PyTorch worker did not start")
        workers[name] = p
        print(f"PyTorch worker ({name}) loaded the folder in {time.perf_counter() - t:.1f} s", flush=True)

    def ask(name, line):
        p = workers[name]
        p.stdin.write(line + "\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    for T in tokens:
        ids = ",".join(map(str, ids_for(vocab, T)))
        out = subprocess.run([a.attnwalk, "model", "--model", folder, "--ids", ids, "--steps", "top_k_ids,top_k_logits", "--json"],
                             check=True, capture_output=True, text=True).stdout
        steps = json.loads(out)["steps"]
        ours_ids, ours_logits = [int(v) for v in steps[0]["data"]], steps[1]["data"]
        ref = ask(envs[0][0], f"top {T}")
        gap = max(abs(x - y) for x, y in zip(ours_logits, ref["logits"])) if ours_ids == ref["ids"] else float("nan")
        same = "the same" if ours_ids == ref["ids"] else f"DIFFERENT: {ours_ids} vs {ref['ids']}"
        print(f"T = {T}: top-5 {same}, their logits within {gap:.2e}", flush=True)

    ours = {(n, T): [] for n, _ in envs for T in tokens}
    theirs = {(n, T): [] for n, _ in envs for T in tokens}
    for r in range(a.rounds):
        for name, env in envs:
            for T, ms in bench_forward(a.bench, folder, tokens, env).items():
                ours[(name, T)].append(ms)
            for T in tokens:
                theirs[(name, T)].append(1e3 * statistics.median(ask(name, f"time {T} 3")))
        print(f"round {r + 1} of {a.rounds} done", flush=True)
    for p in workers.values():
        p.stdin.close()
        p.wait()

    print("\nforward, warm (ms; median over rounds of each round's median)")
    print("| env | T | attnwalk | PyTorch | PyTorch / attnwalk | attnwalk's rounds | PyTorch's rounds |")
    print("|---|---|---|---|---|---|---|")
    for name, _ in envs:
        for T in tokens:
            o, t = statistics.median(ours[(name, T)]), statistics.median(theirs[(name, T)])
            print(f"| {name} | {T} | {o:.3g} | {t:.3g} | {t / o:.2f}x | {', '.join(f'{v:.3g}' for v in ours[(name, T)])} "
                  f"| {', '.join(f'{v:.3g}' for v in theirs[(name, T)])} |")


if __name__ == "__main__":
    main()
