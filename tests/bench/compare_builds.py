#!/usr/bin/env python3
"""Two attnwalk builds against each other in one interleaved run (a change's before and
after), with GPTModel in PyTorch as the yardstick. Needs Debian's python3-torch
(/usr/bin/python3) for the checkpoint and the reference; not run in CI.

    /usr/bin/python3 tests/bench/compare_builds.py BEFORE_BINARY AFTER_BINARY [RUNS]

Writes the random GPT-2-124M-shaped checkpoint of compare_gpt2.py, then, RUNS times
(default 5), alternating the two builds, measures: the whole process for a 10-token
prompt (`gpt2 --compact`), the sum of the steps' times of a T = 1024 forward
(`gpt2 --summary --timing --json`), the peak RSS of that walk without --timing, and `mha`
at T = 2048, d = 768, H = 12 (`--summary --timing`). Prints each median, and the after/before ratio.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_gpt2 import gpt2_124m  # noqa: E402  (the book's GPTModel and its checkpoint)


def once(cmd):
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) * 1024
    steps = sum(float(x) for x in re.findall(r'"seconds":([0-9.eE+-]+)', r.stdout))
    return wall, steps, rss


def main():
    before, after = (os.path.abspath(b) for b in sys.argv[1:3])
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    with tempfile.TemporaryDirectory() as tmp:
        model, path = gpt2_124m(tmp)
        g = torch.Generator().manual_seed(1)
        short = ",".join(str(i) for i in torch.randint(0, 50257, (10,), generator=g).tolist())
        long = ",".join(str(i) for i in torch.randint(0, 50257, (1024,), generator=g).tolist())
        embeddings = os.path.join(tmp, "x.json")
        x = torch.randn(2048, 768, generator=g)
        with open(embeddings, "w") as f:
            json.dump({"tokens": [f"t{i}" for i in range(2048)], "embeddings": x.tolist()}, f)
        cases = {
            "10-token prompt, whole process (s)": (["gpt2", "--model", path, "--ids", short, "--compact"], 0),
            "T = 1024 forward, sum of steps (s)": (["gpt2", "--model", path, "--ids", long, "--summary", "--timing", "--json"], 1),
            # without --timing: its measurement of the machine after the walk (up to 128 MiB) is no part of the forward's memory
            "T = 1024 peak RSS (MB)": (["gpt2", "--model", path, "--ids", long, "--summary", "--json"], 2),
            "mha T = 2048 d = 768 H = 12, sum of steps (s)": (["mha", "-i", embeddings, "--d-out", "768", "--heads", "12", "--seed", "1",
                                                               "--summary", "--timing", "--json", "--max-memory", "16G"], 1),
        }
        for binary in (before, after):  # warm: the files in the page cache
            subprocess.run([binary] + cases["10-token prompt, whole process (s)"][0], check=True, capture_output=True)
        results = {name: {before: [], after: []} for name in cases}
        seen = {}
        for _ in range(runs):
            for binary in (before, after):
                for name, (args, which) in cases.items():
                    key = (binary, tuple(args))
                    if key not in seen or which == 0:
                        seen[key] = once([binary] + args)
                    value = seen[key][which]
                    results[name][binary].append(value / 1e6 if which == 2 else value)
                seen.clear()
        with torch.no_grad():
            ids = torch.tensor([[int(i) for i in long.split(",")]])
            model(ids)
            times = []
            for _ in range(runs):
                t = time.perf_counter()
                model(ids)
                times.append(time.perf_counter() - t)
        print(f"{runs} interleaved runs, medians; before = {before}, after = {after}")
        for name in cases:
            b, a = statistics.median(results[name][before]), statistics.median(results[name][after])
            print(f"  {name:48s} before {b:9.3f}  after {a:9.3f}  after/before {a / b:.3f}")
        print(f"  GPTModel T = 1024 forward (2 threads, eval, no_grad): {statistics.median(times):.3f} s")


if __name__ == "__main__":
    main()
