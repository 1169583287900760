"""Today's families: Llama 3, Qwen3, Gemma 3 (and SmolLM2, Qwen2), written as the textbook's standalone
notebooks (torch 1.13 has no nn.RMSNorm: the RMSNorm below is the Qwen3 notebook's, and Gemma's the
Gemma 3 notebook's with its (1 + scale).) Each model is saved as a tiny Hugging Face folder: golden
families."""
import json
import os

import torch
import torch.nn as nn

from .beyond import apply_rope
from .common import HERE, as_stored, layer_cases, write_tensors
from .tokenizer import tiny_tokenizer


class RMSNorm(nn.Module):
    def __init__(self, emb_dim, eps, gemma=False):
        super().__init__()
        self.eps, self.gemma = eps, gemma
        self.scale = nn.Parameter(torch.zeros(emb_dim) if gemma else torch.ones(emb_dim))

    def forward(self, x):
        x_f = x.float()
        var = x_f.pow(2).mean(dim=-1, keepdim=True)
        x_norm = x_f * torch.rsqrt(var + self.eps)
        return x_norm * (1.0 + self.scale.float()) if self.gemma else x_norm * self.scale


def compute_rope_params_scaled(head_dim, theta_base, context_length, freq_config=None):  # Llama 3.2 notebook
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2)[: (head_dim // 2)].float() / head_dim))
    if freq_config is not None:
        low_freq_wavelen = freq_config["original_context_length"] / freq_config["low_freq_factor"]
        high_freq_wavelen = freq_config["original_context_length"] / freq_config["high_freq_factor"]
        wavelen = 2 * torch.pi / inv_freq
        inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / freq_config["factor"], inv_freq)
        smooth_factor = (freq_config["original_context_length"] / wavelen - freq_config["low_freq_factor"]) / (
            freq_config["high_freq_factor"] - freq_config["low_freq_factor"])
        smoothed_inv_freq = (1 - smooth_factor) * (inv_freq / freq_config["factor"]) + smooth_factor * inv_freq
        is_medium_freq = (wavelen <= low_freq_wavelen) & (wavelen >= high_freq_wavelen)
        inv_freq = torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)
    positions = torch.arange(context_length)
    angles = positions[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=1)
    return torch.cos(angles), torch.sin(angles), angles


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_in, num_heads, num_kv_groups, head_dim, qk_norm=None, query_pre_attn_scalar=None, qkv_bias=False):
        super().__init__()
        self.num_heads, self.num_kv_groups, self.head_dim = num_heads, num_kv_groups, head_dim
        self.group_size = num_heads // num_kv_groups
        self.d_out = num_heads * head_dim
        self.W_query = nn.Linear(d_in, self.d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, num_kv_groups * head_dim, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, num_kv_groups * head_dim, bias=qkv_bias)
        self.out_proj = nn.Linear(self.d_out, d_in, bias=False)
        self.q_norm = qk_norm(head_dim) if qk_norm else None
        self.k_norm = qk_norm(head_dim) if qk_norm else None
        self.scaling = query_pre_attn_scalar ** -0.5 if query_pre_attn_scalar else None

    def forward(self, x, mask, cos, sin):
        b, T, _ = x.shape
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        self.q, self.k, self.v = queries, keys, values
        queries = queries.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
        keys = keys.view(b, T, self.num_kv_groups, self.head_dim).transpose(1, 2)
        values = values.view(b, T, self.num_kv_groups, self.head_dim).transpose(1, 2)
        if self.q_norm:
            queries, keys = self.q_norm(queries), self.k_norm(keys)
            self.q_normed, self.k_normed = queries, keys
        queries, keys = apply_rope(queries, cos, sin), apply_rope(keys, cos, sin)
        self.q_rot, self.k_rot = queries, keys
        keys = keys.repeat_interleave(self.group_size, dim=1)
        values = values.repeat_interleave(self.group_size, dim=1)
        if self.scaling is not None:  # Gemma 3: the queries scaled before the product
            self.scores = queries @ keys.transpose(2, 3)
            scores = (queries * self.scaling) @ keys.transpose(2, 3)
            self.w = torch.softmax(scores.masked_fill(mask, -torch.inf), dim=-1)
        else:
            self.scores = queries @ keys.transpose(2, 3)
            self.w = torch.softmax(self.scores.masked_fill(mask, -torch.inf) / keys.shape[-1] ** 0.5, dim=-1)
        z = self.w @ values
        for h in getattr(self, "ablate", ()):  # ablation: this head's output zeroed (heads_cases)
            z[:, h] = 0
        self.context = z.transpose(1, 2).reshape(b, T, self.d_out)
        return self.out_proj(self.context)


class FeedForward(nn.Module):  # fc1 = gate, fc2 = up, fc3 = down
    def __init__(self, emb_dim, hidden_dim, gelu):
        super().__init__()
        self.gelu = gelu
        self.fc1 = nn.Linear(emb_dim, hidden_dim, bias=False)
        self.fc2 = nn.Linear(emb_dim, hidden_dim, bias=False)
        self.fc3 = nn.Linear(hidden_dim, emb_dim, bias=False)

    def forward(self, x):
        act = nn.functional.gelu(self.fc1(x), approximate="tanh") if self.gelu else nn.functional.silu(self.fc1(x))
        self.hidden = act * self.fc2(x)
        return self.fc3(self.hidden)


class ModernBlock(nn.Module):
    def __init__(self, cfg, sliding):
        super().__init__()
        gemma = cfg["family"] == "gemma3_text"
        norm = lambda n: RMSNorm(n, cfg["eps"], gemma)
        self.sliding, self.gemma = sliding, gemma
        self.att = GroupedQueryAttention(cfg["C"], cfg["H"], cfg["G"], cfg["d"], norm if cfg["family"] in ("qwen3", "gemma3_text") else None,
                                         cfg.get("qpas"), qkv_bias=cfg["family"] == "qwen2")
        self.ff = FeedForward(cfg["C"], cfg["hidden"], gemma)
        self.norm1, self.norm2 = norm(cfg["C"]), norm(cfg["C"])
        if gemma:
            self.post_attention_layernorm, self.post_feedforward_layernorm = norm(cfg["C"]), norm(cfg["C"])

    def forward(self, x, mask, cos, sin):
        self.ln_1 = self.norm1(x)
        self.attention = self.att(self.ln_1, mask, cos, sin)
        a = self.attention
        if self.gemma:
            a = self.attention_norm = self.post_attention_layernorm(a)
        self.residual_1 = x + a
        self.ln_2 = self.norm2(self.residual_1)
        self.mlp = self.ff(self.ln_2)
        self.mlp_hidden = self.ff.hidden
        m = self.mlp
        if self.gemma:
            m = self.mlp_norm = self.post_feedforward_layernorm(m)
        self.residual_2 = self.residual_1 + m
        return self.residual_2


class ModernModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg["vocab"], cfg["C"])
        self.trf_blocks = nn.ModuleList([ModernBlock(cfg, s) for s in cfg["sliding"]])
        self.final_norm = RMSNorm(cfg["C"], cfg["eps"], cfg["family"] == "gemma3_text")
        self.out_head = nn.Linear(cfg["C"], cfg["vocab"], bias=False)
        freq = cfg.get("llama3")
        self.cos, self.sin, self.angles = compute_rope_params_scaled(cfg["d"], cfg["theta"], cfg["ctx"], freq)
        if cfg["family"] == "gemma3_text":
            self.cos_local, self.sin_local, self.angles_local = compute_rope_params_scaled(cfg["d"], cfg["local_theta"], cfg["ctx"])

    def forward(self, ids):
        T = ids.shape[1]
        self.tokens = self.tok_emb(ids)
        x = self.tokens * (self.cfg["C"] ** 0.5) if self.cfg["family"] == "gemma3_text" else self.tokens
        self.embeddings = x
        ones = torch.ones(T, T, dtype=torch.bool)
        mask_global = torch.triu(ones, diagonal=1)
        mask_local = mask_global | torch.triu(ones, diagonal=self.cfg.get("window", T + 1)).T
        for b in self.trf_blocks:
            if b.sliding:
                x = b(x, mask_local, self.cos_local[:T], self.sin_local[:T])
            else:
                x = b(x, mask_global, self.cos[:T], self.sin[:T])
        self.ln_f = self.final_norm(x)
        head = self.tok_emb.weight if self.cfg["tied"] else self.out_head.weight
        return self.ln_f @ head.T


def modern_tensors(m):
    cfg, t = m.cfg, {"model.embed_tokens.weight": m.tok_emb.weight, "model.norm.weight": m.final_norm.scale}
    for i, b in enumerate(m.trf_blocks):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = b.norm1.scale
        if b.gemma:
            t[p + "post_attention_layernorm.weight"] = b.post_attention_layernorm.scale
            t[p + "pre_feedforward_layernorm.weight"] = b.norm2.scale
            t[p + "post_feedforward_layernorm.weight"] = b.post_feedforward_layernorm.scale
        else:
            t[p + "post_attention_layernorm.weight"] = b.norm2.scale
        a = b.att
        for name, lin in [("q_proj", a.W_query), ("k_proj", a.W_key), ("v_proj", a.W_value), ("o_proj", a.out_proj)]:
            t[p + f"self_attn.{name}.weight"] = lin.weight
            if lin.bias is not None:
                t[p + f"self_attn.{name}.bias"] = lin.bias
        if a.q_norm:
            t[p + "self_attn.q_norm.weight"], t[p + "self_attn.k_norm.weight"] = a.q_norm.scale, a.k_norm.scale
        t[p + "mlp.gate_proj.weight"], t[p + "mlp.up_proj.weight"], t[p + "mlp.down_proj.weight"] = b.ff.fc1.weight, b.ff.fc2.weight, b.ff.fc3.weight
    if not cfg["tied"]:
        t["lm_head.weight"] = m.out_head.weight
    return t


def modern_config(cfg, dtype):
    c = {"architectures": [{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
                            "gemma3_text": "Gemma3ForCausalLM"}[cfg["family"]]],
         "model_type": cfg["family"], "vocab_size": cfg["vocab"], "hidden_size": cfg["C"], "intermediate_size": cfg["hidden"],
         "num_hidden_layers": len(cfg["sliding"]), "num_attention_heads": cfg["H"], "num_key_value_heads": cfg["G"],
         "head_dim": cfg["d"], "max_position_embeddings": cfg["ctx"], "rms_norm_eps": cfg["eps"], "rope_theta": cfg["theta"],
         "tie_word_embeddings": cfg["tied"], "torch_dtype": {torch.float32: "float32", torch.bfloat16: "bfloat16"}[dtype]}
    if cfg["family"] == "gemma3_text":
        c.update({"hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": cfg["qpas"], "sliding_window": cfg["window"],
                  "rope_local_base_freq": cfg["local_theta"], "rope_scaling": None, "final_logit_softcapping": None,
                  "attn_logit_softcapping": None,
                  "layer_types": ["sliding_attention" if s else "full_attention" for s in cfg["sliding"]]})
    else:
        c.update({"hidden_act": "silu", "attention_bias": False,
                  "rope_scaling": None if "llama3" not in cfg else {
                      "rope_type": "llama3", "factor": cfg["llama3"]["factor"], "low_freq_factor": cfg["llama3"]["low_freq_factor"],
                      "high_freq_factor": cfg["llama3"]["high_freq_factor"],
                      "original_max_position_embeddings": cfg["llama3"]["original_context_length"]}})
        if cfg["family"] == "qwen2":
            del c["attention_bias"], c["head_dim"]
    return c


MODERN = [  # name, dtype, shards, seed, configuration
    ("tiny_llama", torch.float32, 2, 11, dict(family="llama", vocab=320, tokenizer="byte_level", C=32, hidden=48, H=4, G=2, d=8, ctx=64, eps=1e-5, theta=500000.0,
                                               tied=False, sliding=[False, False],
                                               llama3=dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_context_length=16))),
    ("tiny_smollm2", torch.float32, 1, 12, dict(family="llama", vocab=48, C=24, hidden=40, H=3, G=3, d=8, ctx=32, eps=1e-5, theta=100000.0,
                                                 tied=True, sliding=[False, False, False])),
    ("tiny_qwen2", torch.float32, 1, 13, dict(family="qwen2", vocab=40, C=32, hidden=40, H=4, G=2, d=8, ctx=32, eps=1e-6, theta=1000000.0,
                                               tied=True, sliding=[False, False])),
    ("tiny_qwen3", torch.bfloat16, 1, 14, dict(family="qwen3", vocab=300, tokenizer="byte_level", C=32, hidden=48, H=4, G=1, d=16, ctx=64, eps=1e-6, theta=1000000.0,
                                                tied=True, sliding=[False, False])),
    ("tiny_gemma3", torch.float32, 1, 15, dict(family="gemma3_text", vocab=64, tokenizer="sentencepiece", C=32, hidden=48, H=4, G=2, d=8, qpas=16, ctx=64, eps=1e-6,
                                                theta=1000000.0, local_theta=10000.0, window=4, tied=True,
                                                sliding=[True, True, False, True])),
]


def write_folder(folder, m, dtype, shards):
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        if f.startswith("model") or f == "tokenizer.json":
            os.remove(os.path.join(folder, f))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(modern_config(m.cfg, dtype), f, indent=2)
    write_tensors(folder, modern_tensors(m), dtype, shards)


def families_cases():
    cases = []
    for name, dtype, shards, seed, cfg in MODERN:
        torch.manual_seed(seed)
        m = ModernModel(cfg)
        as_stored(m, dtype, lambda mod: mod.scale if isinstance(mod, RMSNorm) else None)
        folder = os.path.join(HERE, "data", "models", name)
        write_folder(folder, m, dtype, shards)
        encode = None
        if "tokenizer" in cfg:
            doc, encode = tiny_tokenizer(cfg["tokenizer"], cfg["vocab"], cfg["family"])
            with open(os.path.join(folder, "tokenizer.json"), "w") as f:
                json.dump(doc, f, ensure_ascii=False, indent=1)
        L = len(cfg["sliding"])

        def expect(T, layer):
            b = m.trf_blocks[layer]
            a = b.att
            exp = {"token_embeddings": m.tokens[0], "embeddings": m.embeddings[0], "queries": a.q[0], "keys": a.k[0], "values": a.v[0],
                   "queries_rotated": a.q_rot[0], "keys_rotated": a.k_rot[0], "scores": a.scores[0], "weights": a.w[0],
                   "context": a.context[0], "output": b.attention[0], "ln_f": m.ln_f[0],
                   "rope_angles": (m.angles_local if b.sliding else m.angles)[:T]}
            if a.q_norm:
                exp["queries_normed"], exp["keys_normed"] = a.q_normed[0], a.k_normed[0]
            keys = ["ln_1", "attention", "residual_1", "ln_2", "mlp_hidden", "mlp", "residual_2"]
            if b.gemma:
                keys += ["attention_norm", "mlp_norm"]
            for key in keys:
                exp[f"layer{layer + 1}.{key}"] = getattr(b, key)[0]
            return exp, []
        cases += layer_cases(name, m, cfg["vocab"], seed, [(5, 0), (10, L - 1)] + ([(10, 0)] if cfg["family"] == "gemma3_text" else []), expect,
                             encode, (10, L - 1), 4)
    return cases
