#!/usr/bin/env python3
"""A GGUF file's forward against PyTorch's (needs Debian's python3-torch; CI does not run it).

The quantized test files' weights, dequantized by make_gguf.py's reference into
tests/data/gguf/tiny_*_ref/, are loaded into the textbook-style model of reference/modern.py
(float32); attnwalk reads the GGUF itself, within a --max-memory below the model's float32
size, so that its tensors are made as the forward reaches them and given back. The next-token
logits are compared over the whole vocabulary.

Usage: /usr/bin/python3 tests/gguf_vs_torch.py BUILD/app/attnwalk
"""
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from hostile_model_path import read_st  # noqa: E402
from reference.modern import MODERN, ModernModel, modern_tensors  # noqa: E402

CASES = [("tiny_qwen3_q8_0", "tiny_qwen3", "60K"), ("tiny_qwen2_q5_1", "tiny_qwen2", "40K")]
IDS = [1, 2, 3]


def torch_logits(ref, family):
    cfg = next(c for name, _, _, _, c in MODERN if name == family)
    m = ModernModel(cfg)
    header, body = read_st(HERE / "data" / "gguf" / ref / "model.safetensors")
    params = modern_tensors(m)
    with torch.no_grad():
        for name, p in params.items():
            e = header[name]
            assert e["dtype"] == "F32", name
            begin, end = e["data_offsets"]
            p.copy_(torch.frombuffer(bytearray(body[begin:end]), dtype=torch.float32).reshape(e["shape"]))
        return m(torch.tensor([IDS]))[0, -1]


def attnwalk_logits(binary, gguf, budget, vocab):
    with tempfile.TemporaryDirectory() as out:  # every logit as float32: the top `vocab` through --npy (the logits step is a summary)
        subprocess.run([binary, "model", "--model", HERE / "data" / "gguf" / (gguf + ".gguf"), "--ids", ",".join(map(str, IDS)),
                        "--max-memory", budget, "--top-k", str(vocab), "--npy", out], capture_output=True, text=True, check=True)
        ids, values = np.load(pathlib.Path(out) / "top_k_ids.npy"), np.load(pathlib.Path(out) / "top_k_logits.npy")
        logits = torch.empty(vocab)
        logits[torch.from_numpy(ids.astype(np.int64))] = torch.from_numpy(values.astype(np.float32))
        return logits


def main():
    failures = 0
    for gguf, family, budget in CASES:
        want = torch_logits(gguf + "_ref", family)
        got = attnwalk_logits(sys.argv[1], gguf, budget, want.numel())
        diff = (want - got).abs().max().item()
        same = int((want == got).sum())
        ok = diff <= 1e-5 and int(want.argmax()) == int(got.argmax())
        failures += not ok
        print(f"{'ok ' if ok else 'FAIL'} {gguf}.gguf at --max-memory {budget} against PyTorch: {same}/{want.numel()} logits bit-equal, "
              f"largest difference {diff:.3g}, top-1 {int(got.argmax())} / {int(want.argmax())}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
