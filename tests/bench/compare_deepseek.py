#!/usr/bin/env python3
"""attnwalk model on a DeepSeek-V2-Lite-shaped random BF16 deepseek_v3 folder against the
PyTorch reference of tests/reference/deepseek_v3.py (DsModel, written as Hugging Face's
modeling_deepseek_v3.py computes), one run, one machine (docs/performance.md). Needs Debian's
python3-torch (/usr/bin/python3) and about 15 GB of memory; not run in CI.

    /usr/bin/python3 tests/bench/compare_deepseek.py [BINARY] [LAYERS]

The folder has LAYERS (default 4) of DeepSeek-V2-Lite's 27 layers at its sizes: hidden 2048,
16 heads, latent attention with kv_lora_rank 512 and no query latent, d_nope 128, d_rope
64, d_v 128; the first layer a dense MLP of 10944, the others 64 experts (6 per token, one
group) of 1408 and 2 shared; vocab 102400; random N(0, 0.02) weights rounded to BF16,
about 4.5 GB at 4 layers, in a temporary directory. Measured:
  1. the whole process for a 10-token prompt to its top-5 next tokens (median of 5), and
     its peak RSS (the mapped file's pages count: attnwalk reads the weights where they lie);
  2. the reference's forward on the same prompt in float32 on the same (BF16-rounded)
     weights, eval, no_grad, 2 threads (median of 3, the weights already in memory);
  3. the top-5 ids and logits of both.
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from reference.common import write_tensors  # noqa: E402
from reference.deepseek_v3 import DsModel, ds_config, ds_tensors  # noqa: E402
from reference.hf_blocks import HFRMSNorm  # noqa: E402


def lite(layers):
    return dict(vocab=102400, C=2048, hidden=10944, moe_hidden=1408, layers=layers, extra=0, H=16, kv_rank=512, q_rank=None, nope=128,
                rope=64, v=128, experts=64, n_group=1, topk_group=1, top_k=6, shared=2, routed_scale=1.0, norm_topk_prob=False,
                first_dense=1, ctx=4096, eps=1e-6, theta=10000.0, interleave=True, rope_scaling=None)


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/app/attnwalk"))
    cfg = lite(int(sys.argv[2]) if len(sys.argv) > 2 else 4)
    torch.manual_seed(1)
    torch.set_num_threads(2)
    with torch.no_grad():
        model = DsModel(cfg).eval()
        for p in model.parameters():
            p.normal_(0.0, 0.02)
            p.copy_(p.bfloat16().float())
        for m in model.modules():
            if isinstance(m, HFRMSNorm):
                m.weight.fill_(1.0)
    prompt = torch.tensor([[15, 2024, 99, 31337, 7, 420, 1000, 56789, 3, 77]])
    ids = ",".join(str(i) for i in prompt[0].tolist())
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(ds_config(cfg, "bfloat16"), f)
        write_tensors(tmp, ds_tensors(model, 0), torch.bfloat16, 1)
        size = os.path.getsize(os.path.join(tmp, "model.safetensors"))
        print(f"folder: {size / 1e9:.2f} GB of BF16, DeepSeek-V2-Lite-shaped, {cfg['layers']} layers, random (seed 1)")
        cmd = [binary, "model", "--model", tmp, "--ids", ids, "--steps", "top_k_ids,top_k_logits", "--json"]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout  # also puts the file in the page cache
        top_ids, top_logits = (json.loads(out)["steps"][k]["data"] for k in (0, 1))
        times = []
        for _ in range(5):
            t = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - t)
        # the peak through /usr/bin/time: a child forked from this process would count this process's pages until its exec
        r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True, check=True)
        peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) * 1024
        ours = statistics.median(times)
        with torch.no_grad():
            reference = model(prompt)[0, -1]
            times = []
            for _ in range(3):
                t = time.perf_counter()
                model(prompt)
                times.append(time.perf_counter() - t)
        theirs = statistics.median(times)
        theirs_top = torch.argsort(reference, descending=True, stable=True)[:5].tolist()
        gap = (torch.tensor(top_logits) - reference[top_ids]).abs().max().item()
        print(f"10-token prompt: attnwalk's whole process {ours:.3f} s, peak RSS {peak / 2**20:.0f} MiB; "
              f"the reference's forward alone {theirs:.3f} s ({theirs / ours:.1f}x attnwalk's process)")
        print(f"top-5 ids {'equal' if top_ids == theirs_top else f'DIFFERENT: {top_ids} vs {theirs_top}'}, "
              f"attnwalk's logits within {gap:.2e} of the reference's")


if __name__ == "__main__":
    main()
