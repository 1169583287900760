#!/usr/bin/env python3
"""Writes a Llama-3.2-1B-shaped GGUF of Q4_K blocks (random codes, bounded scales; norms F32,
the head tied): a file as large as the ones Ollama and LM Studio hold, for measuring how
attnwalk reads one within --max-memory (docs/gguf.md, "Memory"). Numpy only; about 0.7 GB,
written as it is made.

Usage: /usr/bin/python3 tests/bench/big_gguf.py OUT.gguf [--layers 16] [--type Q4_K|Q8_0]
"""
import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from make_gguf import BLOCK, gguf_header  # noqa: E402

SIZE = {"Q4_K": 144, "Q8_0": 34}


def blocks(kind, n_weights, rng):
    """Random blocks of `kind` whose weights stay small (|w| about 0.02 or less)."""
    n = n_weights // BLOCK[kind]
    b = rng.integers(0, 256, (n, SIZE[kind]), dtype=np.uint8)
    if kind == "Q4_K":  # d and dmin (f16) first, then 12 bytes of 6-bit scales and mins, then 128 of codes
        b[:, 0:2] = np.frombuffer(np.float16(0.02 / 63 / 15).tobytes(), np.uint8)
        b[:, 2:4] = np.frombuffer(np.float16(0.02 / 63).tobytes(), np.uint8)
    else:  # Q8_0: d (f16), then 32 int8 codes
        b[:, 0:2] = np.frombuffer(np.float16(0.02 / 127).tobytes(), np.uint8)
    return b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--type", default="Q4_K", choices=sorted(SIZE))
    a = ap.parse_args()
    C, L, H, G, d_h, F, V = 2048, a.layers, 32, 8, 64, 8192, 128256
    kv = [("general.architecture", ("str", "llama")), ("llama.context_length", ("u32", 131072)),
          ("llama.embedding_length", ("u32", C)), ("llama.block_count", ("u32", L)),
          ("llama.feed_forward_length", ("u32", F)), ("llama.attention.head_count", ("u32", H)),
          ("llama.attention.head_count_kv", ("u32", G)), ("llama.rope.freq_base", ("f32", 500000.0)),
          ("llama.attention.layer_norm_rms_epsilon", ("f32", 1e-5))]
    tensors = [("token_embd.weight", [V, C], a.type), ("output_norm.weight", [C], "F32")]
    for i in range(L):
        p = f"blk.{i}."
        tensors += [(p + "attn_norm.weight", [C], "F32"), (p + "attn_q.weight", [H * d_h, C], a.type),
                    (p + "attn_k.weight", [G * d_h, C], a.type), (p + "attn_v.weight", [G * d_h, C], a.type),
                    (p + "attn_output.weight", [C, H * d_h], a.type), (p + "ffn_norm.weight", [C], "F32"),
                    (p + "ffn_gate.weight", [F, C], a.type), (p + "ffn_up.weight", [F, C], a.type),
                    (p + "ffn_down.weight", [C, F], a.type)]

    def nbytes(shape, kind):
        n = int(np.prod(shape))
        return 4 * n if kind == "F32" else n // BLOCK[kind] * SIZE[kind]

    head, offsets = gguf_header(kv, [(name, shape, kind, nbytes(shape, kind)) for name, shape, kind in tensors])
    rng = np.random.default_rng(61)
    with open(a.out, "wb") as f:
        f.write(head)
        at = 0
        for (name, shape, kind), off in zip(tensors, offsets):
            f.write(b"\0" * (off - at))
            if kind == "F32":
                raw = rng.uniform(0.5, 1.5, int(np.prod(shape))).astype("<f4").tobytes()
            else:
                raw = blocks(kind, int(np.prod(shape)), rng).tobytes()
            f.write(raw)
            at = off + len(raw)
    print(f"{a.out}: {len(tensors)} tensors, {pathlib.Path(a.out).stat().st_size / 1e9:.2f} GB")


if __name__ == "__main__":
    main()
