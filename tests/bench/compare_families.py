#!/usr/bin/env python3
"""attnwalk model on a Qwen3-0.6B-shaped random BF16 folder against the PyTorch reference
of tests/reference/modern.py (ModernModel, written as the textbook's standalone Qwen3
notebook), one run, one machine (docs/performance.md). Needs Debian's python3-torch
(/usr/bin/python3); not run in CI.

    /usr/bin/python3 tests/bench/compare_families.py [BINARY]

The folder (config.json and model.safetensors in BF16, about 1.2 GB: vocab 151936, C 1024,
28 layers, 16 heads of 128, 8 key/value heads, MLP 3072, tied head) is written to a
temporary directory. Measured, each the median of several runs:
  1. the whole process for a 10-token prompt (`--compact`), and `import torch` alone;
  2. attnwalk's peak RSS at T = 128 (/usr/bin/time -v) against the file's size;
  3. the forward at T = 10 and at T = 512: attnwalk's steps (--summary --timing, their sum)
     against the reference in float32 on the same (BF16-rounded) weights, eval, no_grad,
     2 threads; at T = 10 and T = 128 also the top-5 logits against the reference's (up to 128
     rows go through the BF16 register kernel, more through sgemm).
"""
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from reference.modern import ModernModel, write_folder  # noqa: E402
spec = importlib.util.spec_from_file_location("compare_gpt2", os.path.join(ROOT, "tests", "bench", "compare_gpt2.py"))
compare_gpt2 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_gpt2)
wall = compare_gpt2.wall  # the median wall time of a command

QWEN3_06B = dict(family="qwen3", vocab=151936, C=1024, hidden=3072, H=16, G=8, d=128, ctx=40960, eps=1e-6, theta=1000000.0,
                 tied=True, sliding=[False] * 28)


def forward_seconds(binary, folder, ids):
    """The sum of the steps' seconds of one `model --summary --timing` run."""
    out = subprocess.run([binary, "model", "--model", folder, "--ids", ids, "--summary", "--timing", "--json"], check=True,
                         capture_output=True, text=True).stdout
    return sum(float(x) for x in re.findall(r'"seconds":([0-9.eE+-]+)', out))


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/app/attnwalk"))
    torch.manual_seed(123)
    torch.set_num_threads(2)
    model = ModernModel(QWEN3_06B).eval()
    with torch.no_grad():
        for p in model.parameters():  # small weights, as a trained model's; the file holds BF16
            p.normal_(0.0, 0.02) if p.dim() > 1 else p.uniform_(0.5, 1.5)
            p.copy_(p.to(torch.bfloat16).float())
    with tempfile.TemporaryDirectory() as tmp:
        write_folder(tmp, model, torch.bfloat16, 1)
        size = os.path.getsize(os.path.join(tmp, "model.safetensors"))
        print(f"folder: {size / 1e6:.0f} MB of BF16, Qwen3-0.6B-shaped, random (seed 123)")
        g = torch.Generator().manual_seed(1)

        prompt = torch.randint(0, QWEN3_06B["vocab"], (1, 10), generator=g)
        cmd = [binary, "model", "--model", tmp, "--ids", ",".join(str(i) for i in prompt[0].tolist()), "--compact"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)  # the file in the page cache
        first = wall(cmd, 5)
        imp = wall(["/usr/bin/python3", "-c", "import torch"], 5)
        print(f"10-token prompt, whole process: attnwalk {first:.3f} s; `import torch` alone {imp:.3f} s")

        ids = ",".join(str(i) for i in prompt[0].tolist())
        ours = statistics.median(forward_seconds(binary, tmp, ids) for _ in range(5))
        out = subprocess.run([binary, "model", "--model", tmp, "--ids", ids, "--steps", "top_k_ids,top_k_logits", "--json"], check=True,
                             capture_output=True, text=True).stdout
        top_ids, top_logits = (json.loads(out)["steps"][k]["data"] for k in (0, 1))
        with torch.no_grad():
            reference = model(prompt)[0, -1]
            times = []
            for _ in range(5):
                t = time.perf_counter()
                model(prompt)
                times.append(time.perf_counter() - t)
        theirs = statistics.median(times)
        theirs_top = torch.argsort(reference, descending=True, stable=True)[:5].tolist()
        gap = (torch.tensor(top_logits) - reference[top_ids]).abs().max().item()
        print(f"forward at T = 10: attnwalk {ours:.3f} s (steps), reference {theirs:.3f} s: {theirs / ours:.2f}x; "
              f"top-5 ids {'equal' if top_ids == theirs_top else f'DIFFERENT: {top_ids} vs {theirs_top}'}, "
              f"their logits within {gap:.2e} of the reference's")

        mid = torch.randint(0, QWEN3_06B["vocab"], (1, 128), generator=g)
        cmd = [binary, "model", "--model", tmp, "--ids", ",".join(str(i) for i in mid[0].tolist()), "--summary", "--json"]
        r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, check=True)
        rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) * 1024
        print(f"peak RSS at T = 128: {rss / 1e6:.0f} MB (the file: {size / 1e6:.0f} MB; file + 400 MB = {(size + 400e6) / 1e6:.0f} MB)")
        mid_ids = ",".join(str(i) for i in mid[0].tolist())
        out = subprocess.run([binary, "model", "--model", tmp, "--ids", mid_ids, "--steps", "top_k_ids,top_k_logits", "--json"], check=True,
                             capture_output=True, text=True).stdout
        top_ids, top_logits = (json.loads(out)["steps"][k]["data"] for k in (0, 1))
        with torch.no_grad():
            reference = model(mid)[0, -1]
        theirs_top = torch.argsort(reference, descending=True, stable=True)[:5].tolist()
        gap = (torch.tensor(top_logits) - reference[top_ids]).abs().max().item()
        print(f"T = 128: top-5 ids {'equal' if top_ids == theirs_top else f'DIFFERENT: {top_ids} vs {theirs_top}'}, "
              f"their logits within {gap:.2e} of the reference's")

        long = torch.randint(0, QWEN3_06B["vocab"], (1, 512), generator=g)
        long_ids = ",".join(str(i) for i in long[0].tolist())
        steps = [forward_seconds(binary, tmp, long_ids) for _ in range(3)]
        out = subprocess.run([binary, "model", "--model", tmp, "--ids", long_ids, "--steps", "top_k_ids", "--json"], check=True,
                             capture_output=True, text=True).stdout
        ours_top = [int(v) for v in json.loads(out)["steps"][0]["data"]]
        with torch.no_grad():
            logits = model(long)  # warm-up
            times = []
            for _ in range(3):
                t = time.perf_counter()
                model(long)
                times.append(time.perf_counter() - t)
        theirs_top = torch.argsort(logits[0, -1], descending=True, stable=True)[:5].tolist()
        ours, theirs = statistics.median(steps), statistics.median(times)
        print(f"forward at T = 512: attnwalk {ours:.3f} s (steps), reference {theirs:.3f} s (float32, 2 threads, eval, no_grad): "
              f"{theirs / ours:.2f}x; top-5 ids {'equal' if ours_top == theirs_top else f'DIFFERENT: {ours_top} vs {theirs_top}'}")


if __name__ == "__main__":
    main()
