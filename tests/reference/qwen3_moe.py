"""Qwen3-MoE (Qwen3-30B-A3B): Qwen3MoeForCausalLM as modeling_qwen3_moe.py computes it: Qwen3's attention (an
RMSNorm over each head's queries and keys before RoPE, grouped-query, eager), RMSNorm before each sublayer,
and Qwen3MoeSparseMoeBlock (a float32 softmax over every expert, the top k, over their sum with
norm_topk_prob, no shared expert) wherever mlp_only_layers and decoder_sparse_step leave the experts, a
dense SwiGLU elsewhere. hf_families.py's layers with hf_blocks.py's experts, on two tiny folders: golden
families."""
import torch

from .hf_blocks import SoftmaxMoE
from .hf_families import HFDecoderLayer, HFModel, hf_family_folder, hf_layer_cases


class Qwen3MoeDecoderLayer(HFDecoderLayer):
    def make_mlp(self, cfg, layer_idx):  # the experts where Qwen3MoeDecoderLayer puts them, else Qwen3MoeMLP
        if layer_idx not in cfg["mlp_only"] and cfg["experts"] > 0 and (layer_idx + 1) % cfg["sparse_step"] == 0:
            return SoftmaxMoE(cfg)
        return super().make_mlp(cfg, layer_idx)


class Qwen3MoeModel(HFModel):  # Qwen3MoeForCausalLM
    layer_class = Qwen3MoeDecoderLayer


def qwen3_moe_config(cfg, dtype):  # as Qwen3MoeConfig writes it (transformers 4.51, the released checkpoints)
    return {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "vocab_size": cfg["vocab"], "hidden_size": cfg["C"],
            "intermediate_size": cfg["hidden"], "moe_intermediate_size": cfg["moe_hidden"], "num_hidden_layers": len(cfg["types"]),
            "num_attention_heads": cfg["H"], "num_key_value_heads": cfg["G"], "head_dim": cfg["d"], "hidden_act": "silu",
            "max_position_embeddings": cfg["ctx"], "rms_norm_eps": cfg["eps"], "rope_theta": cfg["theta"], "rope_scaling": None,
            "attention_bias": False, "attention_dropout": 0.0, "use_sliding_window": False, "sliding_window": None,
            "max_window_layers": len(cfg["types"]), "decoder_sparse_step": cfg["sparse_step"], "mlp_only_layers": cfg["mlp_only"],
            "num_experts": cfg["experts"], "num_experts_per_tok": cfg["top_k"], "norm_topk_prob": cfg["norm_topk_prob"],
            "output_router_logits": False, "router_aux_loss_coef": 0.001, "initializer_range": 0.02, "use_cache": True,
            "tie_word_embeddings": False, "bos_token_id": cfg["vocab"] - 3, "eos_token_id": cfg["vocab"] - 1,
            "torch_dtype": {torch.float32: "float32", torch.bfloat16: "bfloat16"}[dtype]}


QWEN3_MOE = [  # name, dtype, shards, seed, configuration, the (T, layer) cases
    # one dense layer (mlp_only_layers), experts on the others, their weights renormalised; BF16 in two shards
    ("tiny_qwen3_moe", torch.bfloat16, 2, 51,
     dict(family="qwen3_moe", vocab=300, tokenizer="byte_level", tokenizer_family="qwen3", C=64, hidden=48, H=4, G=2, d=16, ctx=64, eps=1e-6,
          theta=1000000.0, tied=False, types=["full_attention"] * 4, experts=8, top_k=2, moe_hidden=32, mlp_only=[0], sparse_step=1,
          norm_topk_prob=True), [(5, 0), (10, 3), (10, 1)]),
    # the weights as the softmax gave them; experts every second layer (decoder_sparse_step 2) but layer 0's dense by the list;
    # heads of 24 (H·d = 96, not C); F32 in one file
    ("tiny_qwen3_moe_f32", torch.float32, 1, 52,
     dict(family="qwen3_moe", vocab=300, tokenizer="byte_level", tokenizer_family="qwen3", C=64, hidden=48, H=4, G=2, d=24, ctx=64, eps=1e-6,
          theta=1000000.0, tied=False, types=["full_attention"] * 4, experts=8, top_k=2, moe_hidden=32, mlp_only=[0], sparse_step=2,
          norm_topk_prob=False), [(5, 0), (10, 3), (10, 2)]),
]


def qwen3_moe_cases():
    cases = []
    for name, dtype, shards, seed, cfg, plan in QWEN3_MOE:
        m, encode = hf_family_folder(name, dtype, shards, seed, cfg, Qwen3MoeModel, qwen3_moe_config)
        cases += hf_layer_cases(name, m, cfg, seed, encode, plan)
    return cases
