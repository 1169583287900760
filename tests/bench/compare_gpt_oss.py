#!/usr/bin/python3
"""attnwalk on a gpt-oss-20b-shaped folder (MXFP4 experts) against the PyTorch reference of
tests/reference/gpt_oss.py (GptOssForCausalLM as modeling_gpt_oss.py computes it: eager
attention with the sinks, the experts' eval path over every expert, the experts dequantised as
integrations/mxfp4.py does), rounds interleaved in one run (docs/performance.md). Needs Debian's
python3-torch (/usr/bin/python3) and about 20 GB of memory for the reference's 4 layers; not run
in CI.

    /usr/bin/python3 tests/bench/compare_gpt_oss.py --bench BUILD/attnwalk_bench
        [--attnwalk BINARY] [--layers 4] [--tokens 10,128,512] [--rounds 2] [--env both] [--keep DIR]

The folder: gpt-oss-20b's shapes (vocab 201,088, width 2,880, 64 query and 8 key/value heads of
64, 32 experts of 2,880 with 4 chosen, sliding window 128 on every other layer, YaRN factor 32)
cut to --layers layers; random (seed 123), everything BF16 but the experts' MXFP4 blocks and
scales, about 1 GB a layer less 0.6: 4.1 GB at 4 layers. Written once to a temporary directory
(or --keep DIR).

The rounds and the check of the next token before them: tests/bench/seeded_reference.py (the
reference's experts as float32, 3.2 GB a layer).
"""
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("seeded_reference", os.path.join(ROOT, "tests", "bench", "seeded_reference.py"))
seeded = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(seeded)

GPT_OSS_20B = dict(family="gpt_oss", vocab=201088, C=2880, hidden=2880, H=64, G=8, d=64, ctx=131072, eps=1e-5, theta=150000.0, window=128,
                   experts=32, top_k=4, limit=7.0,
                   rope_scaling={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                 "original_max_position_embeddings": 4096, "truncate": False})


def build(layers, experts_as_floats):
    """The reference model, the same from the seed every time. Without `experts_as_floats` the
    experts keep only their MXFP4 bytes (enough to write the folder)."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from reference import gpt_oss

    whole = gpt_oss.mxfp4_dequantize

    def one_expert_at_a_time(blocks, scales):  # the same values, without the whole tensor's index temporaries
        if not experts_as_floats:
            return torch.empty(0)
        out = torch.empty(blocks.shape[0], blocks.shape[2] * blocks.shape[3] * 2, blocks.shape[1])
        for e in range(blocks.shape[0]):
            out[e] = whole(blocks[e:e + 1], scales[e:e + 1])[0]
        return out

    gpt_oss.mxfp4_dequantize = one_expert_at_a_time
    cfg = dict(GPT_OSS_20B, types=["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)])
    torch.manual_seed(123)
    m = gpt_oss.OssModel(cfg)
    with torch.no_grad():  # as gpt_oss_cases: BF16 values, the norms near 1
        for prm in m.parameters():
            prm.copy_(prm.bfloat16().float())
        for layer in m.layers:
            for norm in (layer.input_layernorm, layer.post_attention_layernorm):
                norm.weight.uniform_(0.5, 1.5)
                norm.weight.copy_(norm.weight.bfloat16().float())
    gpt_oss.mxfp4_dequantize = whole
    return m.eval(), cfg


def reference_model(layers):
    return build(layers, True)[0]


def write(folder, layers):
    import torch
    from reference.common import write_weights_folder
    from reference.gpt_oss import oss_config, oss_tensors
    m, cfg = build(layers, False)
    config = dict(oss_config(cfg), initial_context_length=4096)  # gpt-oss-20b's (the tiny folder's is 16)
    write_weights_folder(folder, config, oss_tensors(m), torch.bfloat16, 2 + 2 * layers)


if __name__ == "__main__":
    seeded.main(__file__, __doc__, "gpt-oss-20b", GPT_OSS_20B["vocab"], reference_model, write)
