#!/usr/bin/env python3
"""attnwalk gpt2 against the book's GPTModel in PyTorch, one run, one machine
(docs/performance.md). Needs Debian's python3-torch (/usr/bin/python3); not run in CI.

    /usr/bin/python3 tests/bench/compare_gpt2.py [BINARY]

Writes a random GPT-2-124M-shaped checkpoint (50257 × 768, 12 layers, 12 heads, context
1024; about 500 MB of float32, Hugging Face names) to a temporary directory, then
measures, each the median of several runs:
  1. the whole process for a 10-token prompt, `attnwalk gpt2 ... --compact`, and the
     import of torch alone;
  2. the forward at T = 1024: attnwalk's steps (--summary --timing, their sum) and its
     whole process, against GPTModel (eval, no_grad, torch.set_num_threads(2)) in-process;
  3. attnwalk's peak RSS (/usr/bin/time -v) against the file's size.
"""
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
from reference.common import write_safetensors  # noqa: E402
from reference.gpt2 import BookGPT, gpt2_tensors  # noqa: E402


def wall(cmd, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def gpt2_124m(folder):
    """The book's GPTModel at GPT-2 124M's shape, random (seed 123), in eval mode on 2
    threads, and its checkpoint (Hugging Face names, float32) written into `folder`."""
    torch.manual_seed(123)
    torch.set_num_threads(2)
    model = BookGPT(50257, 1024, 768, 12, 12).eval()
    path = os.path.join(folder, "gpt2-124M-shaped.safetensors")
    write_safetensors(path, gpt2_tensors(model, "huggingface"), torch.float32)
    return model, path


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/app/attnwalk"))
    with tempfile.TemporaryDirectory() as tmp:
        model, path = gpt2_124m(tmp)
        size = os.path.getsize(path)
        print(f"checkpoint: {size / 1e6:.0f} MB, 124M-shaped, random (seed 123)")
        g = torch.Generator().manual_seed(1)
        prompt = torch.randint(0, 50257, (1, 10), generator=g)
        ids = ",".join(str(i) for i in prompt[0].tolist())
        cmd = [binary, "gpt2", "--model", path, "--ids", ids, "--compact"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)  # the file in the page cache
        first = wall(cmd, 7)
        imp = wall(["/usr/bin/python3", "-c", "import torch"], 5)
        print(f"10-token prompt, whole process: attnwalk {first * 1e3:.0f} ms; `import torch` alone {imp * 1e3:.0f} ms")

        long = torch.randint(0, 50257, (1, 1024), generator=g)
        long_ids = ",".join(str(i) for i in long[0].tolist())
        cmd = [binary, "gpt2", "--model", path, "--ids", long_ids, "--summary", "--timing", "--json"]
        steps = []
        for _ in range(5):
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            steps.append(sum(float(x) for x in re.findall(r'"seconds":([0-9.eE+-]+)', out)))
        process = wall(cmd, 3)
        with torch.no_grad():
            model(long)  # warm-up
            times = []
            for _ in range(5):
                t = time.perf_counter()
                model(long)
                times.append(time.perf_counter() - t)
        ours, theirs = statistics.median(steps), statistics.median(times)
        print(f"forward at T = 1024: attnwalk {ours:.3f} s (steps; whole process {process:.3f} s), "
              f"GPTModel {theirs:.3f} s (2 threads, eval, no_grad): {theirs / ours:.2f}x")

        r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
        rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) * 1024
        print(f"peak RSS at T = 1024: {rss / 1e6:.0f} MB (the file: {size / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
