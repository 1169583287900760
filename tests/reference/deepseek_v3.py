"""DeepSeek-V3: DeepseekV3ForCausalLM as modeling_deepseek_v3.py computes it (eager attention on the
concatenated [nope | rope] queries and keys, YaRN with its mscale folded into the softmax scale,
rope_interleave; DeepseekV3TopkRouter's sigmoid scores, correction bias and group-limited top-k;
DeepseekV3MoE's per-expert loop with index_add_ and its shared expert), on tiny folders of ours:
golden families."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import layer_cases, write_tiny_folder
from .hf_blocks import DsMLP, HFRMSNorm, HFRotary, hf_default_inv_freq, hf_rotate_half, hf_yarn_inv_freq


class DsAttention(nn.Module):  # DeepseekV3Attention
    def __init__(self, cfg):
        super().__init__()
        C, H = cfg["C"], cfg["H"]
        self.H, self.nope, self.rope, self.v_dim, self.r = H, cfg["nope"], cfg["rope"], cfg["v"], cfg["kv_rank"]
        self.qk, self.q_rank, self.interleave = cfg["nope"] + cfg["rope"], cfg["q_rank"], cfg["interleave"]
        if self.q_rank is None:
            self.q_proj = nn.Linear(C, H * self.qk, bias=False)
        else:
            self.q_a_proj = nn.Linear(C, self.q_rank, bias=False)
            self.q_a_layernorm = HFRMSNorm(self.q_rank, 1e-6)  # DeepseekV3RMSNorm's default eps, not rms_norm_eps
            self.q_b_proj = nn.Linear(self.q_rank, H * self.qk, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(C, self.r + self.rope, bias=False)
        self.kv_a_layernorm = HFRMSNorm(self.r, 1e-6)
        self.kv_b_proj = nn.Linear(self.r, H * (self.nope + self.v_dim), bias=False)
        self.o_proj = nn.Linear(H * self.v_dim, C, bias=False)
        self.scaling = self.qk ** (-0.5)
        rs = cfg.get("rope_scaling")
        if rs is not None and rs.get("mscale_all_dim", 0):
            mscale = 0.1 * rs["mscale_all_dim"] * math.log(rs["factor"]) + 1.0 if rs["factor"] > 1 else 1.0
            self.scaling = self.scaling * mscale * mscale

    def forward(self, x, cos, sin, mask):
        b, T, _ = x.shape
        if self.q_rank is None:
            q = self.q_proj(x)
        else:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        self.q = q
        q = q.view(b, T, -1, self.qk).transpose(1, 2)
        q_pass, q_rot = torch.split(q, [self.nope, self.rope], dim=-1)
        compressed = self.kv_a_proj_with_mqa(x)
        k_pass, k_rot = torch.split(compressed, [self.r, self.rope], dim=-1)
        self.latent = self.kv_a_layernorm(k_pass)
        k_pass = self.kv_b_proj(self.latent).view(b, T, -1, self.nope + self.v_dim).transpose(1, 2)
        k_pass, value = torch.split(k_pass, [self.nope, self.v_dim], dim=-1)
        k_rot = k_rot.view(b, 1, T, self.rope)
        c, s_ = cos.unsqueeze(1), sin.unsqueeze(1)
        if self.interleave:  # apply_rotary_pos_emb_interleave
            q_rot = q_rot.reshape(b, self.H, T, self.rope // 2, 2).transpose(4, 3).reshape(b, self.H, T, self.rope)
            k_rot = k_rot.reshape(b, 1, T, self.rope // 2, 2).transpose(4, 3).reshape(b, 1, T, self.rope)
        q_rot = (q_rot * c) + (hf_rotate_half(q_rot) * s_)
        k_rot = (k_rot * c) + (hf_rotate_half(k_rot) * s_)
        self.k_rope = k_rot[:, 0]
        k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
        query = torch.cat((q_pass, q_rot), dim=-1)
        key = torch.cat((k_pass, k_rot), dim=-1)
        self.q_rotated = query
        self.k = key.transpose(1, 2).reshape(b, T, -1)
        self.v = value.transpose(1, 2).reshape(b, T, -1)
        self.scores = query @ key.transpose(2, 3)
        attn = torch.matmul(query, key.transpose(2, 3)) * self.scaling + mask
        self.w = F.softmax(attn, dim=-1, dtype=torch.float32)
        self.context = (self.w @ value).transpose(1, 2).reshape(b, T, -1)
        return self.o_proj(self.context)


class DsMoE(nn.Module):  # DeepseekV3TopkRouter + DeepseekV3MoE
    def __init__(self, cfg):
        super().__init__()
        C, E = cfg["C"], cfg["experts"]
        self.E, self.top_k, self.n_group, self.topk_group = E, cfg["top_k"], cfg["n_group"], cfg["topk_group"]
        self.norm_topk_prob, self.routed_scaling_factor = cfg["norm_topk_prob"], cfg["routed_scale"]
        self.experts = nn.ModuleList([DsMLP(C, cfg["moe_hidden"]) for _ in range(E)])
        self.gate = nn.Linear(C, E, bias=False)
        self.e_score_correction_bias = nn.Parameter(torch.randn(E) * 0.05)
        self.shared_experts = DsMLP(C, cfg["moe_hidden"] * cfg["shared"])

    def forward(self, x):
        b, T, C = x.shape
        h = x.view(-1, C)
        self.logits = F.linear(h.type(torch.float32), self.gate.weight.type(torch.float32))
        self.scores = self.logits.sigmoid()
        choice = self.scores.view(-1, self.E) + self.e_score_correction_bias.unsqueeze(0)
        group_scores = choice.view(-1, self.n_group, self.E // self.n_group).topk(2, dim=-1)[0].sum(dim=-1)
        group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores)
        group_mask.scatter_(1, group_idx, 1)
        score_mask = group_mask.unsqueeze(-1).expand(-1, self.n_group, self.E // self.n_group).reshape(-1, self.E)
        choice = choice.masked_fill(~score_mask.bool(), 0.0)
        self.indices = torch.topk(choice, k=self.top_k, dim=-1, sorted=True)[1]  # sorted: the order attnwalk shows (the set is topk's)
        weights = self.scores.gather(1, self.indices)
        if self.norm_topk_prob:
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        self.top_weights = weights * self.routed_scaling_factor
        out = torch.zeros_like(h)
        mask = F.one_hot(self.indices, num_classes=self.E).permute(2, 0, 1)
        for e in range(self.E):
            tok, slot = torch.where(mask[e])
            if tok.numel() > 0:
                out.index_add_(0, tok, self.experts[e](h[tok]) * self.top_weights[tok, slot].unsqueeze(-1))
        self.shared = self.shared_experts(x)
        return out.view(b, T, C) + self.shared


class DsLayer(nn.Module):  # DeepseekV3DecoderLayer
    def __init__(self, cfg, i):
        super().__init__()
        self.self_attn = DsAttention(cfg)
        self.moe = i >= cfg["first_dense"]
        self.mlp = DsMoE(cfg) if self.moe else DsMLP(cfg["C"], cfg["hidden"])
        self.input_layernorm, self.post_attention_layernorm = HFRMSNorm(cfg["C"], cfg["eps"]), HFRMSNorm(cfg["C"], cfg["eps"])

    def forward(self, x, cos, sin, mask):
        self.ln_1 = self.input_layernorm(x)
        self.attention = self.self_attn(self.ln_1, cos, sin, mask)
        self.residual_1 = x + self.attention
        self.ln_2 = self.post_attention_layernorm(self.residual_1)
        self.mlp_out = self.mlp(self.ln_2)
        self.residual_2 = self.residual_1 + self.mlp_out
        return self.residual_2


class DsModel(nn.Module):  # DeepseekV3ForCausalLM
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab"], cfg["C"])
        self.layers = nn.ModuleList([DsLayer(cfg, i) for i in range(cfg["layers"])])
        self.norm = HFRMSNorm(cfg["C"], cfg["eps"])
        self.lm_head = nn.Linear(cfg["C"], cfg["vocab"], bias=False)
        rs = cfg.get("rope_scaling")
        if rs:  # _compute_yarn_parameters with DeepSeek's mscale and mscale_all_dim
            inv_freq, _ = hf_yarn_inv_freq(cfg["theta"], cfg["rope"], rs, cfg["ctx"])

            def get_mscale(scale, mscale=1):
                return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0
            self.inv_freq, self.attention_scaling = inv_freq, get_mscale(rs["factor"], rs["mscale"]) / get_mscale(rs["factor"], rs["mscale_all_dim"])
        else:
            self.inv_freq, self.attention_scaling = hf_default_inv_freq(cfg["theta"], cfg["rope"])

    def forward(self, ids):
        T = ids.shape[1]
        self.tokens = self.embed_tokens(ids)
        x = self.tokens
        cos, sin = HFRotary(self.inv_freq, self.attention_scaling)(x, torch.arange(T)[None])
        neg = torch.finfo(torch.float32).min
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        mask = torch.where(j <= i, 0.0, neg)[None, None]
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        self.ln_f = self.norm(x)
        return self.ln_f @ self.lm_head.weight.T


def ds_tensors(m, extra_layers):
    t = {"model.embed_tokens.weight": m.embed_tokens.weight, "model.norm.weight": m.norm.weight, "lm_head.weight": m.lm_head.weight}
    for i, layer in enumerate(m.layers):
        p = f"model.layers.{i}."
        a = layer.self_attn
        t[p + "input_layernorm.weight"], t[p + "post_attention_layernorm.weight"] = layer.input_layernorm.weight, layer.post_attention_layernorm.weight
        names = (["q_proj"] if a.q_rank is None else ["q_a_proj", "q_b_proj"]) + ["kv_a_proj_with_mqa", "kv_b_proj", "o_proj"]
        for n in names:
            t[p + f"self_attn.{n}.weight"] = getattr(a, n).weight
        if a.q_rank is not None:
            t[p + "self_attn.q_a_layernorm.weight"] = a.q_a_layernorm.weight
        t[p + "self_attn.kv_a_layernorm.weight"] = a.kv_a_layernorm.weight
        mlps = {"mlp.": layer.mlp} if not layer.moe else dict({f"mlp.experts.{e}.": x for e, x in enumerate(layer.mlp.experts)},
                                                               **{"mlp.shared_experts.": layer.mlp.shared_experts})
        for q, mlp in mlps.items():
            for n in ["gate_proj", "up_proj", "down_proj"]:
                t[p + q + n + ".weight"] = getattr(mlp, n).weight
        if layer.moe:
            t[p + "mlp.gate.weight"], t[p + "mlp.gate.e_score_correction_bias"] = layer.mlp.gate.weight, layer.mlp.e_score_correction_bias
    L = len(m.layers)
    for i in range(L, L + extra_layers):  # the multi-token-prediction layers as the checkpoints ship them; the forward runs none
        C = m.cfg["C"]
        p = f"model.layers.{i}."
        t[p + "enorm.weight"], t[p + "hnorm.weight"] = torch.ones(C), torch.ones(C)
        t[p + "eh_proj.weight"] = torch.randn(C, 2 * C) * 0.02
        t[p + "shared_head.norm.weight"] = torch.ones(C)
    return t


def ds_config(cfg, dtype):
    return {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "vocab_size": cfg["vocab"], "hidden_size": cfg["C"],
            "intermediate_size": cfg["hidden"], "moe_intermediate_size": cfg["moe_hidden"], "num_hidden_layers": cfg["layers"],
            "num_nextn_predict_layers": cfg["extra"], "num_attention_heads": cfg["H"], "num_key_value_heads": cfg["H"],
            "n_shared_experts": cfg["shared"], "n_routed_experts": cfg["experts"], "routed_scaling_factor": cfg["routed_scale"],
            "kv_lora_rank": cfg["kv_rank"], "q_lora_rank": cfg["q_rank"], "qk_rope_head_dim": cfg["rope"], "v_head_dim": cfg["v"],
            "qk_nope_head_dim": cfg["nope"], "head_dim": cfg["rope"], "n_group": cfg["n_group"], "topk_group": cfg["topk_group"],
            "num_experts_per_tok": cfg["top_k"], "first_k_dense_replace": cfg["first_dense"], "norm_topk_prob": cfg["norm_topk_prob"],
            "hidden_act": "silu", "max_position_embeddings": cfg["ctx"], "rms_norm_eps": cfg["eps"], "rope_theta": cfg["theta"],
            "rope_scaling": cfg["rope_scaling"], "rope_interleave": cfg["interleave"], "attention_bias": False, "attention_dropout": 0.0,
            "tie_word_embeddings": False, "bos_token_id": 0, "eos_token_id": 1, "torch_dtype": dtype}


DEEPSEEK_V3 = [
    # q_lora_rank, YaRN (mscale in the softmax scale), rope_interleave, BF16 in two shards, one multi-token-prediction layer
    ("tiny_deepseek_v3", torch.bfloat16, 2, 31,
     dict(vocab=300, C=48, hidden=64, moe_hidden=16, layers=3, extra=1, H=4, kv_rank=12, q_rank=16, nope=8, rope=8, v=12, experts=8,
          n_group=4, topk_group=2, top_k=3, shared=1, routed_scale=2.5, norm_topk_prob=True, first_dense=1, ctx=64, eps=1e-6,
          theta=10000.0, interleave=True,
          rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16, "beta_fast": 32, "beta_slow": 1,
                        "mscale": 1.0, "mscale_all_dim": 1.0})),
    # no query latent, plain RoPE in the half-split layout, unnormalised weights, F32 in one file
    ("tiny_deepseek_v3_f32", torch.float32, 1, 37,
     dict(vocab=300, C=32, hidden=48, moe_hidden=16, layers=2, extra=0, H=2, kv_rank=8, q_rank=None, nope=6, rope=4, v=8, experts=6,
          n_group=3, topk_group=2, top_k=2, shared=2, routed_scale=1.5, norm_topk_prob=False, first_dense=1, ctx=64, eps=1e-6,
          theta=10000.0, interleave=False, rope_scaling=None)),
]


def deepseek_v3_cases():
    cases = []
    for name, dtype, shards, seed, cfg in DEEPSEEK_V3:
        torch.manual_seed(seed)
        m = DsModel(cfg)
        with torch.no_grad():  # stored in `dtype`: the reference computes with those numbers; the norms near 1, as trained ones are
            for mod in m.modules():
                if isinstance(mod, HFRMSNorm):
                    mod.weight.uniform_(0.5, 1.5)
            for prm in m.parameters():
                prm.copy_(prm.to(dtype).float())
        write_tiny_folder(name, ds_config(cfg, "bfloat16" if dtype == torch.bfloat16 else "float32"), ds_tensors(m, cfg["extra"]), dtype, shards,
                          cfg["vocab"], "deepseek_v3")
        L = cfg["layers"]

        def expect(T, layer):
            b = m.layers[layer]
            a = b.self_attn
            exp = {"token_embeddings": m.tokens[0], "queries": a.q[0], "keys": a.k[0], "values": a.v[0], "latent_kv": a.latent[0],
                   "keys_rope": a.k_rope[0], "queries_rotated": a.q_rotated[0], "scores": a.scores[0], "weights": a.w[0], "context": a.context[0], "output": b.attention[0],
                   "ln_f": m.ln_f[0]}
            for key in ["ln_1", "attention", "residual_1", "ln_2", "residual_2"]:
                exp[f"layer{layer + 1}.{key}"] = getattr(b, key)[0]
            exp[f"layer{layer + 1}.mlp"] = b.mlp_out[0]
            exact = []
            if b.moe:
                e = b.mlp
                exp.update({f"layer{layer + 1}.router_logits": e.logits, f"layer{layer + 1}.router_scores": e.scores,
                            f"layer{layer + 1}.experts_chosen": e.indices.float(), f"layer{layer + 1}.expert_weights": e.top_weights,
                            f"layer{layer + 1}.shared_expert": e.shared[0]})
                exact.append(f"layer{layer + 1}.experts_chosen")
            return exp, exact
        cases += layer_cases(name, m, cfg["vocab"], seed, [(5, 0), (10, L - 1)], expect)
    return cases
