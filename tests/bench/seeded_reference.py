"""The driver shared by the comparisons whose reference model is made from a seed rather than read
from the folder (compare_gpt_oss.py, compare_qwen3_next.py): the folder is written once from the
same seed; each round, for each environment, a fresh PyTorch process builds the model again and
times its forward, and attnwalk_bench times attnwalk's on the folder. Not a script of its own.

Each round, for each environment (--env both: OPENBLAS_CORETYPE=Haswell and no OPENBLAS_*
variable; both tools multiply through the same OpenBLAS):
  - PyTorch: a fresh process builds the same model from the seed (float32), then for each T: a
    warm-up forward and 3 timed ones (eval, no_grad, 2 threads), the last position's top 5;
  - attnwalk: attnwalk_bench's BM_model_forward on the folder (warm, the last position's logits,
    3 repetitions) and, for 10 ids, the whole process (`model --compact`, 3 runs).
Before the rounds, each T's top-5 next tokens are compared with attnwalk's (`--steps
top_k_ids,top_k_logits`), and the largest |difference| of their logits is printed.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = "/usr/bin/python3"
_spec = importlib.util.spec_from_file_location("compare_torch_folder", os.path.join(ROOT, "tests", "bench", "compare_torch_folder.py"))
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)
environments, ids_for = _shared.environments, _shared.ids_for  # the settings and the ids, as there


def bench_forward(bench, folder, tokens, env):
    """attnwalk_bench's BM_model_forward: seconds per forward for each T."""
    return {T: ms / 1e3 for T, ms in _shared.bench_forward(bench, folder, tokens, env).items()}


def reference(build, vocab, layers, tokens, timed):
    """Prints one JSON line: for each T, the top 5 and (timed) the forward's seconds."""
    import torch
    torch.set_num_threads(2)
    t0 = time.perf_counter()
    m = build(layers)
    out = {"build_seconds": time.perf_counter() - t0, "T": {}}
    with torch.no_grad():
        for T in tokens:
            ids = torch.tensor([ids_for(vocab, T)])
            logits = m(ids)[0, -1]  # also the warm-up
            top = torch.argsort(logits, descending=True, stable=True)[:5]
            times = []
            for _ in range(3 if timed else 0):
                t = time.perf_counter()
                m(ids)
                times.append(time.perf_counter() - t)
            out["T"][T] = {"ids": top.tolist(), "logits": logits[top].tolist(), "seconds": times}
    print(json.dumps(out), flush=True)


def wall(cmd, runs, env):
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main(script, doc, shape, vocab, build, write, tokens="10,128,512"):
    """script: the calling file (run again as the writer and the reference); build(layers): the
    reference model, in eval mode; write(folder, layers): the folder from the same seed."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--bench", help="attnwalk_bench (the build's attnwalk_bench)")
    ap.add_argument("--attnwalk", default=os.path.join(ROOT, "build/app/attnwalk"))
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--tokens", default=tokens)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--env", default="asis", choices=["asis", "haswell", "clean", "both"])
    ap.add_argument("--keep", help="write the folder here and keep it (default: a temporary directory)")
    ap.add_argument("--write", help=argparse.SUPPRESS)
    ap.add_argument("--reference", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--untimed", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    tokens = [int(t) for t in a.tokens.split(",")]
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    if a.write:
        write(a.write, a.layers)
        return
    if a.reference:
        reference(build, vocab, a.layers, tokens, not a.untimed)
        return
    if not a.bench:
        ap.error("--bench is needed")
    tmp = None if a.keep else tempfile.TemporaryDirectory()
    folder = os.path.abspath(a.keep or tmp.name)
    me = [PYTHON, os.path.abspath(script), "--layers", str(a.layers), "--tokens", a.tokens]
    if not os.path.exists(os.path.join(folder, "config.json")):
        t = time.perf_counter()
        subprocess.run(me + ["--write", folder], check=True)
        print(f"folder written in {time.perf_counter() - t:.0f} s", flush=True)
    size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
    print(f"folder: {folder}, {size / 1e9:.2f} GB, {shape}-shaped, {a.layers} layers", flush=True)
    envs = environments(a.env)

    def run_reference(env, timed):
        out = subprocess.run(me + ["--reference"] + ([] if timed else ["--untimed"]), env=env, check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    ours = {}
    for T in tokens:
        ids = ",".join(map(str, ids_for(vocab, T)))
        out = json.loads(subprocess.run([a.attnwalk, "model", "--model", folder, "--ids", ids, "--steps", "top_k_ids,top_k_logits", "--json"],
                                        check=True, capture_output=True, text=True).stdout)
        ours[T] = ([int(v) for v in out["steps"][0]["data"]], out["steps"][1]["data"])
    results = {(n, k, T): [] for n, _ in envs for k in ("attnwalk", "PyTorch") for T in tokens}
    process = {n: [] for n, _ in envs}
    compared = False
    for r in range(a.rounds):
        for name, env in envs:
            ref = run_reference(env, True)
            if not compared:
                for T in tokens:
                    theirs = ref["T"][str(T)]
                    same = ours[T][0] == theirs["ids"]
                    gap = max(abs(x - y) for x, y in zip(ours[T][1], theirs["logits"])) if same else float("nan")
                    verdict = "the same" if same else f"DIFFERENT: {ours[T][0]} vs {theirs['ids']}"
                    print(f"T = {T}: top-5 {verdict}, their logits within {gap:.2e}", flush=True)
                compared = True
            for T in tokens:
                results[(name, "PyTorch", T)].append(statistics.median(ref["T"][str(T)]["seconds"]))
            for T, s in bench_forward(a.bench, folder, tokens, env).items():
                results[(name, "attnwalk", T)].append(s)
            process[name].append(wall([a.attnwalk, "model", "--model", folder, "--ids", ",".join(map(str, ids_for(vocab, 10))), "--compact"], 3, env))
            print(f"round {r + 1}/{a.rounds} ({name}): PyTorch built the model in {ref['build_seconds']:.0f} s", flush=True)

    print("\nforward, warm (s; median over rounds of each round's median of 3)")
    print("| env | T | attnwalk | PyTorch | PyTorch / attnwalk | attnwalk's rounds | PyTorch's rounds |")
    print("|---|---|---|---|---|---|---|")
    for name, _ in envs:
        for T in tokens:
            o, t = statistics.median(results[(name, "attnwalk", T)]), statistics.median(results[(name, "PyTorch", T)])
            print(f"| {name} | {T} | {o:.3f} | {t:.3f} | {t / o:.1f}x | {', '.join(f'{v:.3f}' for v in results[(name, 'attnwalk', T)])} "
                  f"| {', '.join(f'{v:.3f}' for v in results[(name, 'PyTorch', T)])} |")
    for name, _ in envs:
        print(f"whole process, 10 ids (`model --compact`), {name}: {statistics.median(process[name]):.2f} s "
              f"(rounds: {', '.join(f'{v:.2f}' for v in process[name])})")
