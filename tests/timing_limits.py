#!/usr/bin/env python3
"""--timing sets each step beside the machine: the work counted in the step's matrix products,
the machine's rates measured after the walk, and the step's limit (ops/work.hpp).

Checks, on mha with a 2048×768 input, 12 heads of 64 (17 GFLOP, above the 10 GFLOP a trace
needs for limits): every step's flop and bytes are whole numbers; the four projections
count 2·T·d·d each, exactly; scores and head_outputs count the same work, between the causal
triangle's and the full square's; each step's limit is its work at the measured rates; the
text view prints the ratios. On the built-in sentence with grouped keys and an output gate,
each projection counts its own work (d_in = 3, T = 6). And a chapter command's trace, far
below 10 GFLOP, gets no rates and no limits. No time is checked: these machines are shared.

Usage: timing_limits.py BINARY
"""
import array
import json
import os
import struct
import subprocess
import sys
import tempfile

T, D, HEADS = 2048, 768, 12


def write_npy(path):
    values = array.array("f")
    x = 1
    for _ in range(T * D):  # any values: a small linear congruential generator
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        values.append(x / 0x7FFFFFFF - 0.5)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (T, D)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + values.tobytes())


def run(binary, *args):
    out = subprocess.run([binary, *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"FAIL {' '.join(args)}: exit {out.returncode}: {out.stderr.strip()}")
    return out.stdout


def main():
    binary = sys.argv[1]
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as scratch:
        npy = os.path.join(scratch, "x.npy")
        write_npy(npy)
        args = ["mha", "-i", npy, "--d-out", str(D), "--heads", str(HEADS), "--summary", "--timing"]
        doc = json.loads(run(binary, *args, "--json"))
        text = run(binary, *args)

    timing = doc["timing"]
    check(timing.get("sgemm_flop_per_second", 0) > 0 and timing.get("copy_bytes_per_second", 0) > 0, "the machine's rates measured")
    steps = {s["id"]: s for s in doc["steps"]}
    for s in doc["steps"]:
        check(isinstance(s.get("flop"), int) and isinstance(s.get("bytes"), int), f"{s['id']}: whole flop and bytes")
    for name in ("queries", "keys", "values", "output"):
        check(steps[name]["flop"] == 2 * T * D * D, f"{name}: 2·T·d·d = {2 * T * D * D} operations, got {steps[name]['flop']}")
    triangle, square = 2 * HEADS * (T * (T + 1) // 2) * (D // HEADS), 2 * HEADS * T * T * (D // HEADS)
    check(steps["scores"]["flop"] == steps["head_outputs"]["flop"], "scores and head_outputs: the same work")
    check(triangle <= steps["scores"]["flop"] <= square, f"scores between the triangle's {triangle} and the square's {square}")
    check(steps["weights"]["flop"] == 0 and "limit_seconds" not in steps["weights"], "the softmax: no products, no limit")
    rate, bw = timing["sgemm_flop_per_second"], timing["copy_bytes_per_second"]
    for s in doc["steps"]:
        if s["flop"] == 0:
            continue
        want = max(s["flop"] / rate, s["bytes"] / bw)
        check(abs(s.get("limit_seconds", -1) - want) <= 1e-9 + 1e-6 * want, f"{s['id']}: limit = max(flop/rate, bytes/bandwidth)")
    check("× limit" in text and "GFLOP/s (sgemm 2048³)" in text, "the text view: ratios and rates")
    total = [line.split() for line in text.splitlines() if line.strip().startswith("total")]
    check(bool(total) and len(total[-1]) == 4, "the text view: the total's seconds, GFLOP and ratio")
    if total and len(total[-1]) == 4:
        counted = sum(s["flop"] for s in doc["steps"] if "limit_seconds" in s) / 1e9
        check(abs(float(total[-1][2]) - counted) < 0.002, f"the text view's total GFLOP {total[-1][2]} against the JSON's {counted:.3f}")

    grouped = json.loads(run(binary, "mha", "--heads", "4", "--d-out", "8", "--kv-heads", "1", "--output-gate", "--seed", "1",
                             "--timing", "--json"))
    work = {s["id"]: s["flop"] for s in grouped["steps"]}
    for name, d_out in (("queries", 8), ("keys", 2), ("values", 2), ("gate", 8)):
        check(work.get(name) == 2 * 6 * 3 * d_out, f"grouped: {name} counts 2·T·d_in·{d_out} = {2 * 6 * 3 * d_out}, got {work.get(name)}")

    small = json.loads(run(binary, "softmax", "--timing", "--json"))
    check("sgemm_flop_per_second" not in small["timing"], "a chapter command: no rates measured")
    check(all("limit_seconds" not in s for s in small["steps"]), "a chapter command: no limits")

    for f in failures:
        print("FAIL " + f)
    print(f"{'ok' if not failures else str(len(failures)) + ' failed'}: mha at T = {T}, d = {D}: "
          f"{sum(s['flop'] for s in doc['steps']) / 1e9:.2f} GFLOP counted")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
