#!/usr/bin/python3
"""Generates the golden files in tests/golden/ with PyTorch (Debian's python3-torch).

    /usr/bin/python3 tests/make_goldens.py

CI never runs this: the goldens are committed. Each case names the attnwalk command line
that must reproduce it; tests/cli/test_golden.cpp runs the real binary with --json and checks
every expected step (drawn weights and dropout masks exactly, values within 1e-5 relative).
The PyTorch reference code lives in tests/reference/: one file per lesson or model family
(chapter.py, beyond.py, gpt2.py, modern.py, hf_families.py, mla.py, kvshare.py, dsa.py, deltanet.py, heads.py,
gpt_oss.py, deepseek_v3.py, qwen3_next.py, qwen3_moe.py, cohere2.py, gemma4.py, deepseek_v32.py, circuits.py, torch_checks.py), each
written the way what it names writes it (the textbook's chapter and notebooks, Hugging Face's
modeling files), beside
what they share: common.py (cases, safetensors, the tiny model folders), tokenizer.py (their
tokenizer.json) and hf_blocks.py (Hugging Face's norms, rotary tables and MLP).
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/: the package reference
from reference.beyond import flash_cases, kvcache_cases, mha_beyond_cases, params_cases, rope_cases, sdpa_cases  # noqa: E402
from reference.chapter import dropout_cases, mha_cases, single_head_cases  # noqa: E402
from reference.cohere2 import cohere2_cases  # noqa: E402
from reference.circuits import circuits_cases  # noqa: E402
from reference.common import OUT  # noqa: E402
from reference.deepseek_v3 import deepseek_v3_cases  # noqa: E402
from reference.deepseek_v32 import deepseek_v32_cases  # noqa: E402
from reference.deltanet import deltanet_cases  # noqa: E402
from reference.dsa import dsa_cases  # noqa: E402
from reference.gemma4 import gemma4_cases  # noqa: E402
from reference.gpt2 import gpt2_cases  # noqa: E402
from reference.gpt_oss import gpt_oss_cases  # noqa: E402
from reference.heads import heads_cases  # noqa: E402
from reference.hf_families import hf_families_cases, smollm3_swa_cases  # noqa: E402
from reference.kvshare import kvshare_cases  # noqa: E402
from reference.mla import mla_cases  # noqa: E402
from reference.modern import families_cases  # noqa: E402
from reference.qwen3_moe import qwen3_moe_cases  # noqa: E402
from reference.qwen3_next import qwen3_5_cases, qwen3_next_cases  # noqa: E402
from reference.torch_checks import rng_sequences, torch_repr_cases, torch_sum_cases  # noqa: E402


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    for name, cases in [("single_head", single_head_cases()), ("dropout", dropout_cases()), ("mha", mha_cases()),
                        ("mha_beyond", mha_beyond_cases()), ("kvcache", kvcache_cases()), ("mla", mla_cases()), ("kvshare", kvshare_cases()), ("dsa", dsa_cases()), ("deltanet", deltanet_cases()), ("heads", heads_cases()), ("rope", rope_cases()),
                        ("flash", flash_cases()), ("sdpa", sdpa_cases()), ("params", params_cases()),
                        ("gpt2", gpt2_cases()), ("families", families_cases() + hf_families_cases() + gpt_oss_cases() + deepseek_v3_cases() + qwen3_next_cases() + qwen3_5_cases()
                                      + qwen3_moe_cases() + cohere2_cases() + smollm3_swa_cases() + gemma4_cases() + deepseek_v32_cases()),
                        ("circuits", circuits_cases())]:
        with open(os.path.join(OUT, f"{name}.json"), "w") as f:
            json.dump({"generator": "tests/make_goldens.py", "torch": torch.__version__, "cases": cases}, f)
    with open(os.path.join(OUT, "torch_repr.json"), "w") as f:
        json.dump({"generator": "tests/make_goldens.py", "torch": torch.__version__, "tensors": torch_repr_cases()}, f)
    with open(os.path.join(OUT, "torch_sum.json"), "w") as f:
        json.dump({"generator": "tests/make_goldens.py", "torch": torch.__version__, "rows": torch_sum_cases()}, f)
    with open(os.path.join(OUT, "rng.json"), "w") as f:
        json.dump({"generator": "tests/make_goldens.py", "torch": torch.__version__, "sequences": rng_sequences()}, f)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
