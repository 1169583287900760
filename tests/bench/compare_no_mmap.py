#!/usr/bin/env python3
"""A model's warm forward read from its mapped file and from memory of its own (--no-mmap),
beside the machine's limits, in interleaved rounds (docs/performance.md, section 31).

    python3 tests/bench/compare_no_mmap.py --folder /tmp/llama/llama1b --bench build/attnwalk_bench \
        --tokens 10,128,512 --env both --rounds 2

Each round runs, for each OPENBLAS_CORETYPE setting in turn, attnwalk_bench's BM_sgemm/2048³,
BM_memcpy and BM_model_forward (medians of --repetitions) with the weights mapped, then again
with ATTNWALK_BENCH_NO_MMAP=1. The limits: the forward's floating-point work (`--gflop`, per
T: the layers' products, the causal attention's and one position's logits) at the same run's
sgemm rate, and the file's bytes at the same run's memcpy rate; a forward's limit is the larger.
Prints one line per round, setting and T, then the medians over the rounds.
"""
import argparse
import json
import os
import statistics
import subprocess


def environments(which):
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    unset = dict(base)
    haswell = dict(base, OPENBLAS_CORETYPE=os.environ.get("OPENBLAS_CORETYPE", "Haswell"))
    return {"unset": [("unset", unset)], "haswell": [("Haswell", haswell)], "both": [("Haswell", haswell), ("unset", unset)]}[which]


def run(bench, env, filter_, repetitions, extra=None):
    env = dict(env, **(extra or {}))
    out = subprocess.run([bench, f"--benchmark_filter={filter_}", f"--benchmark_repetitions={repetitions}",
                          "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
                         env=env, check=True, capture_output=True, text=True).stdout
    medians = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            medians[b["run_name"]] = b
        elif b.get("run_type") == "iteration" and repetitions == 1:  # one run: Google Benchmark gives no aggregates
            medians[b.get("run_name", b["name"])] = b
    return medians


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--folder", required=True)
    p.add_argument("--bench", default="build/attnwalk_bench")
    p.add_argument("--tokens", default="10,128,512")
    p.add_argument("--env", choices=["both", "unset", "haswell"], default="both")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--repetitions", type=int, default=3, help="runs of each benchmark, their median used (1: the one run)")
    # Llama-3.2-1B's: 1.9465 GFLOP a token through the layers, 65,536·T² FLOP of attention, 0.525 GFLOP of logits
    p.add_argument("--gflop", default="1.9465,65536e-9,0.525", help="per-token layers, per-T² attention, logits (GFLOP)")
    a = p.parse_args()
    if a.rounds < 1 or a.repetitions < 1:
        p.error("--rounds and --repetitions must be at least 1")
    per_token, per_square, logits = (float(x) for x in a.gflop.split(","))
    tokens = [int(t) for t in a.tokens.split(",")]
    size = sum(os.path.getsize(os.path.join(a.folder, f)) for f in os.listdir(a.folder) if f.endswith(".safetensors"))
    rows = []
    for r in range(a.rounds):
        for name, env in environments(a.env):
            rates = run(a.bench, env, "BM_sgemm/2048/2048/2048/|BM_memcpy", a.repetitions)
            flops = rates["BM_sgemm/2048/2048/2048/real_time"]["GFLOP/s"]
            bandwidth = rates["BM_memcpy/real_time"]["GB/s"]
            model_env = {"ATTNWALK_BENCH_MODEL": a.folder, "ATTNWALK_BENCH_TOKENS": a.tokens}
            mapped = run(a.bench, env, "BM_model_forward/", a.repetitions, model_env)
            held = run(a.bench, env, "BM_model_forward_no_mmap/", a.repetitions, dict(model_env, ATTNWALK_BENCH_NO_MMAP="1"))
            for t in tokens:
                mapped_name, held_name = f"BM_model_forward/{t}/real_time", f"BM_model_forward_no_mmap/{t}/real_time"
                if mapped_name not in mapped or held_name not in held:
                    print(f"round {r + 1}, {name}: T = {t} not run (attnwalk_bench runs T from 1 to the model's context)", flush=True)
                    continue
                work = (per_token * t + per_square * t * t + logits) * 1e9
                limit = max(work / flops, size / bandwidth)
                m = mapped[mapped_name]["real_time"] / 1e3
                h = held[held_name]["real_time"] / 1e3
                rows.append((name, t, m / limit, h / limit))
                print(f"round {r + 1}, {name}: sgemm {flops / 1e9:.0f} GFLOP/s, memcpy {bandwidth / 1e9:.1f} GB/s; T = {t}: "
                      f"limit {limit * 1e3:.0f} ms, mapped {m * 1e3:.0f} ms ({m / limit:.2f}×), no-mmap {h * 1e3:.0f} ms ({h / limit:.2f}×)",
                      flush=True)
    print("medians over the rounds (× limit):")
    for name, _ in environments(a.env):
        for t in tokens:
            sel = [row for row in rows if row[0] == name and row[1] == t]
            if not sel:
                continue
            print(f"  {name}, T = {t}: mapped {statistics.median(x[2] for x in sel):.2f}×, "
                  f"no-mmap {statistics.median(x[3] for x in sel):.2f}×")


if __name__ == "__main__":
    main()
