"""Cohere2 (Command R7B, Tiny Aya): Cohere2ForCausalLM as modeling_cohere2.py computes it: one LayerNorm per layer
(float32, mean-centred, × weight, no bias) feeding the attention and the MLP side by side, residual + attention +
MLP; RoPE in Cohere's interleaved pairs on the sliding-window layers only, none on the full ones; unscaled
embeddings, the final LayerNorm, tied logits × logit_scale. hf_families.py's attention and MLP, hf_blocks.py's
rotary table; two tiny folders (layer_types, or the older sliding_window_pattern): golden families."""
import torch
import torch.nn as nn

from .hf_blocks import HFRotary, hf_default_inv_freq
from .hf_families import HFAttention, HFMLP, HFModel, hf_family_folder, hf_layer_cases


class Cohere2LayerNorm(nn.Module):  # CohereLayerNorm
    def __init__(self, hidden_size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        mean = hidden_states.mean(-1, keepdim=True)
        variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
        hidden_states = (hidden_states - mean) * torch.rsqrt(variance + self.variance_epsilon)
        hidden_states = self.weight.to(torch.float32) * hidden_states
        return hidden_states.to(input_dtype)


class Cohere2DecoderLayer(nn.Module):  # the attention and the MLP in parallel on one norm
    def __init__(self, cfg, layer_idx):
        super().__init__()
        self.self_attn, self.mlp = HFAttention(cfg, layer_idx), HFMLP(cfg["C"], cfg["hidden"])
        self.input_layernorm = Cohere2LayerNorm(cfg["C"], cfg["eps"])

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        hidden_states = self.ln_1 = self.input_layernorm(hidden_states)
        hidden_states_attention = self.attention = self.self_attn(hidden_states, position_embeddings, attention_mask)
        hidden_states_mlp = self.mlp_out = self.mlp(hidden_states)
        self.mlp_hidden = self.mlp.hidden
        # residual + hidden_states_attention + hidden_states_mlp, added left to right
        self.residual_1 = residual + hidden_states_attention
        self.residual_2 = self.residual_1 + hidden_states_mlp
        return self.residual_2


class Cohere2Model(HFModel):  # Cohere2ForCausalLM
    layer_class = Cohere2DecoderLayer

    def __init__(self, cfg):
        super().__init__(cfg)
        self.norm = Cohere2LayerNorm(cfg["C"], cfg["eps"])
        # Cohere2RotaryEmbedding: one table, each angle twice in a row (the sliding layers use it)
        self.rotary_full = self.rotary_sliding = HFRotary(*hf_default_inv_freq(cfg["theta"], cfg["d"]), interleave=True)

    def forward(self, input_ids):
        return super().forward(input_ids) * self.cfg["logit_scale"]  # CohereForCausalLM: logits = lm_head(h) · logit_scale


def cohere2_config(cfg, dtype):
    """As Cohere2Config writes it: transformers 5's layer_types and rope_parameters (Tiny Aya), or 4.48's
    sliding_window_pattern and rope_theta (Command R7B), from which layer_types is derived: layer i slides
    unless (i + 1) % sliding_window_pattern == 0."""
    c = {"architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2", "vocab_size": cfg["vocab"], "hidden_size": cfg["C"],
         "intermediate_size": cfg["hidden"], "num_hidden_layers": len(cfg["types"]), "num_attention_heads": cfg["H"],
         "num_key_value_heads": cfg["G"], "head_dim": cfg["C"] // cfg["H"], "hidden_act": "silu", "max_position_embeddings": cfg["ctx"],
         "layer_norm_eps": cfg["eps"], "logit_scale": cfg["logit_scale"], "attention_bias": False, "attention_dropout": 0.0,
         "sliding_window": cfg["window"], "initializer_range": 0.02, "use_cache": True, "tie_word_embeddings": True, "pad_token_id": 0,
         "bos_token_id": cfg["vocab"] - 3, "eos_token_id": cfg["vocab"] - 1, "torch_dtype": {torch.float32: "float32", torch.bfloat16: "bfloat16"}[dtype]}
    if "pattern" in cfg:
        c.update({"sliding_window_pattern": cfg["pattern"], "rope_theta": cfg["theta"], "rope_scaling": None, "cache_implementation": "hybrid"})
    else:
        c.update({"layer_types": cfg["types"], "rope_parameters": {"rope_type": "default", "rope_theta": cfg["theta"]}})
    return c


def pattern_types(layers, pattern):  # Cohere2Config's layer_types from sliding_window_pattern
    return ["sliding_attention" if bool((i + 1) % pattern) else "full_attention" for i in range(layers)]


COHERE2 = [  # name, dtype, shards, seed, configuration, the (T, layer) cases
    # layer_types (3 sliding, 1 full), a window of 3, logits × 0.125; BF16 in two shards
    ("tiny_cohere2", torch.bfloat16, 2, 61,
     dict(family="cohere2", vocab=300, tokenizer="byte_level", C=64, hidden=96, H=4, G=2, d=16, ctx=64, eps=1e-5, theta=50000.0, tied=True,
          window=3, logit_scale=0.125, embed_std=0.1, types=["sliding_attention"] * 3 + ["full_attention"]), [(5, 0), (10, 3), (10, 0)]),
    # no layer_types: sliding_window_pattern 4 over 5 layers (the fourth full, the fifth sliding again), a window of 4, logits × 0.3; F32
    ("tiny_cohere2_pattern", torch.float32, 1, 62,
     dict(family="cohere2", vocab=300, tokenizer="byte_level", C=64, hidden=96, H=4, G=2, d=16, ctx=64, eps=1e-5, theta=10000.0, tied=True,
          window=4, logit_scale=0.3, embed_std=0.1, pattern=4, types=pattern_types(5, 4)), [(5, 0), (10, 4), (10, 3)]),
]


def cohere2_cases():
    cases = []
    for name, dtype, shards, seed, cfg, plan in COHERE2:
        m, encode = hf_family_folder(name, dtype, shards, seed, cfg, Cohere2Model, cohere2_config, (Cohere2LayerNorm,))
        cases += hf_layer_cases(name, m, cfg, seed, encode, plan)
    return cases
