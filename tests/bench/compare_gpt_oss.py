#!/usr/bin/python3
"""attnwalk on a gpt-oss-20b-shaped folder (MXFP4 experts) against the PyTorch reference of
tests/reference/gpt_oss.py (GptOssForCausalLM as modeling_gpt_oss.py computes it: eager
attention with the sinks, the experts' eval path over every expert, the experts dequantised as
integrations/mxfp4.py does), rounds interleaved in one run (docs/performance.md). Needs Debian's
python3-torch (/usr/bin/python3) and about 20 GB of memory for the reference's 4 layers; not run
in CI.

    /usr/bin/python3 tests/bench/compare_gpt_oss.py --bench BUILD/attnwalk_bench
        [--attnwalk BINARY] [--layers 4] [--tokens 10,128,512] [--rounds 2] [--env both] [--keep DIR]

The folder: gpt-oss-20b's shapes (vocab 201,088, width 2,880, 64 query and 8 key/value heads of
64, 32 experts of 2,880 with 4 chosen, sliding window 128 on every other layer, YaRN factor 32)
cut to --layers layers; random (seed 123), everything BF16 but the experts' MXFP4 blocks and
scales, about 1 GB a layer less 0.6: 4.1 GB at 4 layers. Written once to a temporary directory
(or --keep DIR).

Each round, for each environment (--env both: OPENBLAS_CORETYPE=Haswell and no OPENBLAS_*
variable; both tools multiply through the same OpenBLAS):
  - PyTorch: a fresh process builds the same model from the seed (the experts as float32, 3.2 GB
    a layer), then for each T: a warm-up forward and 3 timed ones (eval, no_grad, 2 threads), the
    last position's top 5;
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

GPT_OSS_20B = dict(family="gpt_oss", vocab=201088, C=2880, hidden=2880, H=64, G=8, d=64, ctx=131072, eps=1e-5, theta=150000.0, window=128,
                   experts=32, top_k=4, limit=7.0,
                   rope_scaling={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                 "original_max_position_embeddings": 4096, "truncate": False})


def build(layers, experts_as_floats):
    """The reference model, the same from the seed every time. Without `experts_as_floats` the
    experts keep only their MXFP4 bytes (enough to write the folder)."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from reference import gpt_oss

    whole = gpt_oss.mxfp4_dequantize

    def one_expert_at_a_time(blocks, scales):  # the same values, without the whole tensor's index temporaries
        if not experts_as_floats:
            return torch.empty(0)
        out = torch.empty(blocks.shape[0], blocks.shape[2] * blocks.shape[3] * 2, blocks.shape[1])
        for e in range(blocks.shape[0]):
            out[e] = whole(blocks[e:e + 1], scales[e:e + 1])[0]
        return out

    gpt_oss.mxfp4_dequantize = one_expert_at_a_time
    cfg = dict(GPT_OSS_20B, types=["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)])
    torch.manual_seed(123)
    m = gpt_oss.OssModel(cfg)
    with torch.no_grad():  # as gpt_oss_cases: BF16 values, the norms near 1
        for prm in m.parameters():
            prm.copy_(prm.bfloat16().float())
        for layer in m.layers:
            for norm in (layer.input_layernorm, layer.post_attention_layernorm):
                norm.weight.uniform_(0.5, 1.5)
                norm.weight.copy_(norm.weight.bfloat16().float())
    gpt_oss.mxfp4_dequantize = whole
    return m.eval(), cfg


def write(folder, layers):
    import torch
    from reference.common import write_weights_folder
    from reference.gpt_oss import oss_config, oss_tensors
    m, cfg = build(layers, False)
    config = dict(oss_config(cfg), initial_context_length=4096)  # gpt-oss-20b's (the tiny folder's is 16)
    write_weights_folder(folder, config, oss_tensors(m), torch.bfloat16, 2 + 2 * layers)


def reference(layers, tokens, timed):
    """Prints one JSON line: for each T, the top 5 and (timed) the forward's seconds."""
    import torch
    torch.set_num_threads(2)
    t0 = time.perf_counter()
    m, cfg = build(layers, True)
    out = {"build_seconds": time.perf_counter() - t0, "T": {}}
    with torch.no_grad():
        for T in tokens:
            ids = torch.tensor([ids_for(cfg["vocab"], T)])
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", help="attnwalk_bench (the build's attnwalk_bench)")
    ap.add_argument("--attnwalk", default=os.path.join(ROOT, "build/app/attnwalk"))
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--tokens", default="10,128,512")
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
        reference(a.layers, tokens, not a.untimed)
        return
    if not a.bench:
        ap.error("--bench is needed")
    tmp = None if a.keep else tempfile.TemporaryDirectory()
    folder = os.path.abspath(a.keep or tmp.name)
    me = [PYTHON, os.path.abspath(__file__), "--layers", str(a.layers), "--tokens", a.tokens]
    if not os.path.exists(os.path.join(folder, "config.json")):
        t = time.perf_counter()
        subprocess.run(me + ["--write", folder], check=True)
        print(f"folder written in {time.perf_counter() - t:.0f} s", flush=True)
    size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
    print(f"folder: {folder}, {size / 1e9:.2f} GB, gpt-oss-20b-shaped, {a.layers} layers", flush=True)
    envs = environments(a.env)

    def run_reference(env, timed):
        out = subprocess.run(me + ["--reference"] + ([] if timed else ["--untimed"]), env=env, check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    vocab = GPT_OSS_20B["vocab"]
    ours = {}
    for T in tokens:
        ids = ",".join(map(str, ids_for(vocab, T)))
        doc = json.loads(subprocess.run([a.attnwalk, "model", "--model", folder, "--ids", ids, "--steps", "top_k_ids,top_k_logits", "--json"],
                                        check=True, capture_output=True, text=True).stdout)
        ours[T] = ([int(v) for v in doc["steps"][0]["data"]], doc["steps"][1]["data"])
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


if __name__ == "__main__":
    main()
