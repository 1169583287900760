#!/usr/bin/python3
"""attnwalk on a Qwen3-Next-shaped folder against the PyTorch reference of
tests/reference/qwen3_next.py (Qwen3NextForCausalLM as modeling_qwen3_next.py computes it without
its fast kernels: the Gated DeltaNet layers through torch_chunk_gated_delta_rule in chunks of 64,
the gated full attention, the softmax router over the experts one by one), rounds interleaved in
one run (docs/performance.md). Needs Debian's python3-torch (/usr/bin/python3) and about 10 GB of
memory for the reference's 4 layers; not run in CI.

    /usr/bin/python3 tests/bench/compare_qwen3_next.py --bench BUILD/attnwalk_bench
        [--attnwalk BINARY] [--layers 4] [--tokens 10,512,2048] [--rounds 2] [--env both] [--keep DIR]

The folder: Qwen3-Next-80B-A3B's shapes (vocab 151,936, width 2,048; Gated DeltaNet of 16 key
and 32 value heads of 128, convolution of 4 taps; gated attention of 16 query and 2 key/value
heads of 256, a quarter of each turned; every 4th layer attention; 10 experts of 512 chosen per
token and a shared one of 512) cut to --layers layers and 64 of the 512 experts (the work per
token is the same: 10 experts); random (seed 123), BF16: 3.2 GB at 4 layers. Written once to a
temporary directory (or --keep DIR).

The rounds and the check of the next token before them: tests/bench/seeded_reference.py.
"""
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("seeded_reference", os.path.join(ROOT, "tests", "bench", "seeded_reference.py"))
seeded = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(seeded)

QWEN3_NEXT_80B = dict(vocab=151936, C=2048, hidden=5120, H=16, G=2, d=256, partial=0.25, theta=10000000.0, ctx=262144, eps=1e-6,
                      lin_kh=16, lin_vh=32, lin_dk=128, lin_dv=128, lin_k=4, experts=64, top_k=10, moe_hidden=512, shared_hidden=512,
                      mlp_only=[], norm_topk_prob=True)


def config_for(layers):
    return dict(QWEN3_NEXT_80B, types=["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(layers)])


def reference_model(layers):
    """The reference model, the same from the seed every time (tests/reference/qwen3_next.py's next_model)."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from reference.qwen3_next import next_model
    return next_model(config_for(layers), 123).eval()


def write(folder, layers):
    import torch
    from reference.common import write_weights_folder
    from reference.qwen3_next import next_config, next_tensors
    m = reference_model(layers)
    config = dict(next_config(config_for(layers), "bfloat16"), full_attention_interval=4)
    write_weights_folder(folder, config, next_tensors(m), torch.bfloat16, 2 + 2 * layers)


if __name__ == "__main__":
    seeded.main(__file__, __doc__, "Qwen3-Next-80B-A3B", QWEN3_NEXT_80B["vocab"], reference_model, write, tokens="10,512,2048")
