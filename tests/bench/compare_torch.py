#!/usr/bin/env python3
"""attnwalk against PyTorch, in one run on one machine (docs/performance.md).

Needs Debian's python3-torch (/usr/bin/python3); not run in CI.

  /usr/bin/python3 tests/bench/compare_torch.py latency [BINARY]
      every subcommand on the built-in example as a whole process, median of 30 runs,
      against a Python script that imports torch and computes the softmax walk.
  /usr/bin/python3 tests/bench/compare_torch.py scale [BINARY] [T ...]
      `attnwalk mha --summary` at d = 768, 12 heads, causal, no dropout, seeded linear
      init, against the textbook's MultiHeadAttention (torch.set_num_threads(2), eval,
      no_grad) with the same weights (torch.manual_seed(123)) on the same input:
      forward time (median of 5), whole-process wall time and peak RSS (/usr/bin/time -v),
      and the largest relative difference of the outputs.

BINARY defaults to build/app/attnwalk.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = "/usr/bin/python3"  # Debian's, with torch
RUNS = 5

TORCH_SOFTMAX = """
import torch
x = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                  [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])
s = x @ x.T
print(s, s / s.sum(dim=-1, keepdim=True), torch.exp(s) / torch.exp(s).sum(dim=-1, keepdim=True), torch.softmax(s, dim=-1))
"""

# The textbook's MultiHeadAttention (chapter 3), timed in-process after one warm-up.
TORCH_MHA = r"""
import json, statistics, sys, time
import torch
import torch.nn as nn

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys, queries, values = self.W_key(x), self.W_query(x), self.W_value(x)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)

path, out_path, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.set_num_threads(2)
x = torch.tensor(json.load(open(path))["embeddings"]).unsqueeze(0)
T, d = x.shape[1], x.shape[2]
torch.manual_seed(123)
mha = MultiHeadAttention(d, d, T, 0.0, 12).eval()
times = []
with torch.no_grad():
    y = mha(x)  # warm-up
    for _ in range(runs):
        t = time.perf_counter()
        y = mha(x)
        times.append(time.perf_counter() - t)
if out_path != "-":
    with open(out_path, "w") as f:
        json.dump(y[0].tolist(), f)
print(json.dumps({"forward": statistics.median(times)}))
"""


def timed(cmd, **kw):
    """Runs cmd under /usr/bin/time -v: (stdout, wall seconds, peak RSS in MiB)."""
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, **kw)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    rss = next(int(line.split()[-1]) for line in r.stderr.splitlines() if "Maximum resident" in line) / 1024
    return r.stdout, wall, rss


def latency(binary):
    commands = ["scores", "softmax", "context", "causal", "dropout", "mha", "walkthrough"]
    print("| command | attnwalk median (ms) | min (ms) |")
    print("|---|---|---|")
    medians = []
    for c in commands:
        ts = []
        for _ in range(30):
            t = time.perf_counter()
            subprocess.run([binary, c], stdout=subprocess.DEVNULL, check=True)
            ts.append(time.perf_counter() - t)
        medians.append(statistics.median(ts))
        print(f"| `{c}` | {statistics.median(ts) * 1e3:.1f} | {min(ts) * 1e3:.1f} |")
    ts = []
    for _ in range(RUNS):
        t = time.perf_counter()
        subprocess.run([PYTHON, "-c", TORCH_SOFTMAX], stdout=subprocess.DEVNULL, check=True)
        ts.append(time.perf_counter() - t)
    torch_ms = statistics.median(ts) * 1e3
    base = []
    for _ in range(30):
        t = time.perf_counter()
        subprocess.run(["/bin/true"], check=True)
        base.append(time.perf_counter() - t)
    print(f"\nPython + torch doing the softmax walk: median {torch_ms:.0f} ms of {RUNS} runs; "
          f"attnwalk softmax is {torch_ms / (medians[1] * 1e3):.0f}× faster. "
          f"Spawning /bin/true the same way: median {statistics.median(base) * 1e3:.1f} ms.")


def scale(binary, sizes):
    import random
    random.seed(0)
    tmp = tempfile.mkdtemp(prefix="attnwalk_bench_")
    print("| T | attnwalk forward (ms) | GFLOP/s | attnwalk process (ms) | attnwalk peak RSS (MiB) | "
          "torch forward (ms) | GFLOP/s | torch process (ms) | torch peak RSS (MiB) | forward speed-up | max rel. diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for T in sizes:
        path = os.path.join(tmp, f"x{T}.json")
        with open(path, "w") as f:
            f.write('{"embeddings": [')
            f.write(",".join("[" + ",".join("%.6g" % random.gauss(0, 1) for _ in range(768)) + "]" for _ in range(T)))
            f.write("]}")
        flops = 4 * T * 768 ** 2 + 4 * T * T * 768
        aw_fwd, aw_wall, aw_rss = [], [], []
        out = None
        for _ in range(RUNS):
            stdout, wall, rss = timed([binary, "mha", "-i", path, "--seed", "123", "--d-out", "768", "--heads", "12",
                                       "--summary", "--json"])
            doc = json.loads(stdout)
            aw_fwd.append(sum(s["seconds"] for s in doc["steps"] if s["kind"] == "result"))
            aw_wall.append(wall)
            aw_rss.append(rss)
            out = doc["steps"][-1]["data"]
        y_path = os.path.join(tmp, f"y{T}.json")
        t_fwd, t_wall, t_rss = [], [], []
        for i in range(RUNS):
            stdout, wall, rss = timed([PYTHON, "-c", TORCH_MHA, path, y_path if i == 0 else "-", str(RUNS)])
            t_fwd.append(json.loads(stdout.strip().splitlines()[-1])["forward"])
            t_wall.append(wall)
            t_rss.append(rss)
        ref = json.load(open(y_path))
        diff = max(abs(a - b) / max(1.0, abs(b)) for ra, rb in zip(out, ref) for a, b in zip(ra, rb))
        a, t = statistics.median(aw_fwd), statistics.median(t_fwd)
        print(f"| {T} | {a * 1e3:.0f} | {flops / a / 1e9:.0f} | {statistics.median(aw_wall) * 1e3:.0f} | "
              f"{statistics.median(aw_rss):.0f} | {t * 1e3:.0f} | {flops / t / 1e9:.0f} | "
              f"{statistics.median(t_wall) * 1e3:.0f} | {statistics.median(t_rss):.0f} | {t / a:.1f}× | {diff:.1e} |",
              flush=True)


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("latency", "scale"):
        sys.exit(__doc__)
    binary = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build/app/attnwalk")
    if sys.argv[1] == "latency":
        latency(binary)
    else:
        sizes = [int(a) for a in sys.argv[3:]] or [256, 512, 1024, 2048, 4096]
        scale(binary, sizes)


if __name__ == "__main__":
    main()
