"""gpt-oss: GptOssForCausalLM as modeling_gpt_oss.py computes it (eager attention with the sinks, the
experts' eval path over every expert), its experts stored in MXFP4 as the released checkpoints are and
dequantised as integrations/mxfp4.py's convert_moe_packed_tensors does; everything else BF16. Saved as
a tiny Hugging Face folder: golden families."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import layer_cases, write_tiny_folder
from .hf_blocks import HFRMSNorm, hf_repeat_kv, hf_yarn_inv_freq


FP4_VALUES = [+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def mxfp4_dequantize(blocks, scales):  # convert_moe_packed_tensors in float32 (every value is exact there)
    scales = scales.to(torch.int32) - 127
    lut = torch.tensor(FP4_VALUES, dtype=torch.float32)
    *prefix, G, B = blocks.shape
    rows = math.prod(prefix) * G
    blk, exp = blocks.reshape(rows, B), scales.reshape(rows, 1)
    out = torch.empty(rows, B * 2)
    out[:, 0::2] = lut[(blk & 0x0F).long()]
    out[:, 1::2] = lut[(blk >> 4).long()]
    out = torch.ldexp(out, exp)
    return out.reshape(*prefix, G * B * 2).transpose(1, 2).contiguous()


def oss_rotary(x, cos, sin):  # _apply_rotary_emb
    first_half, second_half = torch.chunk(x, 2, dim=-1)
    return torch.cat((first_half * cos - second_half * sin, second_half * cos + first_half * sin), dim=-1)


class OssAttention(nn.Module):  # GptOssAttention + eager_attention_forward
    def __init__(self, cfg, layer_idx):
        super().__init__()
        C, H, G, d = cfg["C"], cfg["H"], cfg["G"], cfg["d"]
        self.head_dim, self.groups, self.scaling = d, H // G, d ** -0.5
        self.q_proj, self.k_proj = nn.Linear(C, H * d), nn.Linear(C, G * d)
        self.v_proj, self.o_proj = nn.Linear(C, G * d), nn.Linear(H * d, C)
        self.sinks = nn.Parameter(torch.randn(H))
        self.sliding_window = cfg["window"] if cfg["types"][layer_idx] == "sliding_attention" else None

    def forward(self, hidden_states, cos, sin, mask):
        b, T, _ = hidden_states.shape
        shape = (b, T, -1, self.head_dim)
        self.q, self.k, self.v = self.q_proj(hidden_states), self.k_proj(hidden_states), self.v_proj(hidden_states)
        q, k, v = self.q.view(shape).transpose(1, 2), self.k.view(shape).transpose(1, 2), self.v.view(shape).transpose(1, 2)
        q, k = oss_rotary(q, cos, sin), oss_rotary(k, cos, sin)
        self.q_rot, self.k_rot = q, k
        k, v = hf_repeat_kv(k, self.groups), hf_repeat_kv(v, self.groups)
        self.scores = q @ k.transpose(2, 3)
        attn = torch.matmul(q, k.transpose(2, 3)) * self.scaling + mask
        combined = torch.cat([attn, self.sinks.reshape(1, -1, 1, 1).expand(b, -1, T, -1)], dim=-1)
        combined = combined - combined.max(dim=-1, keepdim=True).values
        probs = F.softmax(combined, dim=-1, dtype=combined.dtype)
        self.w, self.sink_share = probs[..., :-1], probs[..., -1]
        self.context = (self.w @ v).transpose(1, 2).reshape(b, T, -1)
        return self.o_proj(self.context)


class OssMLP(nn.Module):  # GptOssTopKRouter + GptOssExperts (eval: every expert, weighted, summed)
    def __init__(self, cfg):
        super().__init__()
        C, I, E = cfg["C"], cfg["hidden"], cfg["experts"]
        self.top_k, self.E, self.alpha, self.limit = cfg["top_k"], E, 1.702, cfg["limit"]
        self.router = nn.Linear(C, E)
        # the experts as shipped: random MXFP4 codes, exponents near 127 (values of about ±1/16 … ±6/8)
        self.gate_up_blocks = torch.randint(0, 256, (E, 2 * I, C // 32, 16), dtype=torch.uint8)
        self.gate_up_scales = torch.randint(120, 125, (E, 2 * I, C // 32), dtype=torch.uint8)
        self.down_blocks = torch.randint(0, 256, (E, C, I // 32, 16), dtype=torch.uint8)
        self.down_scales = torch.randint(120, 125, (E, C, I // 32), dtype=torch.uint8)
        self.gate_up_proj = mxfp4_dequantize(self.gate_up_blocks, self.gate_up_scales)  # (E, C, 2I)
        self.down_proj = mxfp4_dequantize(self.down_blocks, self.down_scales)  # (E, I, C)
        self.gate_up_proj_bias = nn.Parameter(torch.randn(E, 2 * I) * 0.1)
        self.down_proj_bias = nn.Parameter(torch.randn(E, C) * 0.1)

    def forward(self, x):
        b, T, C = x.shape
        h = x.reshape(-1, C)
        self.logits = F.linear(h, self.router.weight, self.router.bias)
        top, self.indices = torch.topk(self.logits, self.top_k, dim=-1)
        self.top_weights = F.softmax(top, dim=1, dtype=top.dtype)
        scores = torch.zeros_like(self.logits).scatter_(1, self.indices, self.top_weights)
        hs = h.repeat(self.E, 1).view(self.E, -1, C)
        gate_up = torch.bmm(hs, self.gate_up_proj) + self.gate_up_proj_bias[..., None, :]
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        out = torch.bmm((up + 1) * glu, self.down_proj) + self.down_proj_bias[..., None, :]
        out = out.view(self.E, b, -1, C) * scores.transpose(0, 1).view(self.E, b, -1)[..., None]
        return out.sum(dim=0)


class OssLayer(nn.Module):  # GptOssDecoderLayer
    def __init__(self, cfg, i):
        super().__init__()
        self.self_attn, self.mlp = OssAttention(cfg, i), OssMLP(cfg)
        self.input_layernorm, self.post_attention_layernorm = HFRMSNorm(cfg["C"], cfg["eps"]), HFRMSNorm(cfg["C"], cfg["eps"])

    def forward(self, x, cos, sin, mask):
        self.ln_1 = self.input_layernorm(x)
        self.attention = self.self_attn(self.ln_1, cos, sin, mask)
        self.residual_1 = x + self.attention
        self.ln_2 = self.post_attention_layernorm(self.residual_1)
        self.mlp_out = self.mlp(self.ln_2)
        self.residual_2 = self.residual_1 + self.mlp_out
        return self.residual_2


class OssModel(nn.Module):  # GptOssForCausalLM
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab"], cfg["C"])
        self.layers = nn.ModuleList([OssLayer(cfg, i) for i in range(len(cfg["types"]))])
        self.norm = HFRMSNorm(cfg["C"], cfg["eps"])
        self.lm_head = nn.Linear(cfg["C"], cfg["vocab"], bias=False)
        self.inv_freq, self.attention_scaling = hf_yarn_inv_freq(cfg["theta"], cfg["d"], cfg["rope_scaling"], cfg["ctx"])

    def forward(self, ids):
        T = ids.shape[1]
        self.tokens = self.embed_tokens(ids)
        x = self.tokens
        freqs = self.inv_freq[:, None].float() @ torch.arange(T)[None, :].float()  # GptOssRotaryEmbedding: (d/2, T)
        freqs = freqs.T
        self.angles = torch.cat((freqs, freqs), dim=-1)
        cos, sin = freqs.cos() * self.attention_scaling, freqs.sin() * self.attention_scaling
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        neg = torch.finfo(torch.float32).min
        full = torch.where(j <= i, 0.0, neg)[None, None]
        local = torch.where((j <= i) & (i - j < self.cfg["window"]), 0.0, neg)[None, None]
        for layer in self.layers:
            x = layer(x, cos, sin, local if layer.self_attn.sliding_window else full)
        self.ln_f = self.norm(x)
        return self.ln_f @ self.lm_head.weight.T


def oss_tensors(m):
    t = {"model.embed_tokens.weight": m.embed_tokens.weight, "model.norm.weight": m.norm.weight, "lm_head.weight": m.lm_head.weight}
    for i, layer in enumerate(m.layers):
        p = f"model.layers.{i}."
        a, e = layer.self_attn, layer.mlp
        t[p + "input_layernorm.weight"], t[p + "post_attention_layernorm.weight"] = layer.input_layernorm.weight, layer.post_attention_layernorm.weight
        for name in ["q_proj", "k_proj", "v_proj", "o_proj"]:
            t[p + f"self_attn.{name}.weight"], t[p + f"self_attn.{name}.bias"] = getattr(a, name).weight, getattr(a, name).bias
        t[p + "self_attn.sinks"] = a.sinks
        t[p + "mlp.router.weight"], t[p + "mlp.router.bias"] = e.router.weight, e.router.bias
        t[p + "mlp.experts.gate_up_proj_blocks"], t[p + "mlp.experts.gate_up_proj_scales"] = e.gate_up_blocks, e.gate_up_scales
        t[p + "mlp.experts.down_proj_blocks"], t[p + "mlp.experts.down_proj_scales"] = e.down_blocks, e.down_scales
        t[p + "mlp.experts.gate_up_proj_bias"], t[p + "mlp.experts.down_proj_bias"] = e.gate_up_proj_bias, e.down_proj_bias
    return t


def oss_config(cfg):
    return {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "vocab_size": cfg["vocab"], "hidden_size": cfg["C"],
            "intermediate_size": cfg["hidden"], "num_hidden_layers": len(cfg["types"]), "num_attention_heads": cfg["H"],
            "num_key_value_heads": cfg["G"], "head_dim": cfg["d"], "max_position_embeddings": cfg["ctx"], "rms_norm_eps": cfg["eps"],
            "rope_theta": cfg["theta"], "rope_scaling": cfg["rope_scaling"], "sliding_window": cfg["window"], "layer_types": cfg["types"],
            "attention_bias": True, "attention_dropout": 0.0, "num_local_experts": cfg["experts"], "num_experts_per_tok": cfg["top_k"],
            "experts_per_token": cfg["top_k"], "swiglu_limit": cfg["limit"], "hidden_act": "silu", "tie_word_embeddings": False,
            "router_aux_loss_coef": 0.9, "output_router_logits": False, "initial_context_length": 16, "eos_token_id": 0, "pad_token_id": 1,
            "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                                                        "model.embed_tokens", "lm_head"]},
            "torch_dtype": "bfloat16"}


GPT_OSS = dict(family="gpt_oss", vocab=300, C=64, hidden=32, H=4, G=2, d=16, ctx=64, eps=1e-5, theta=150000.0, window=4,
               types=["sliding_attention", "full_attention", "sliding_attention"], experts=4, top_k=2, limit=7.0,
               rope_scaling={"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0, "original_max_position_embeddings": 16,
                             "truncate": False})


def gpt_oss_cases():
    torch.manual_seed(23)
    cfg = GPT_OSS
    m = OssModel(cfg)
    with torch.no_grad():  # stored in BF16 (but the experts' MXFP4): the reference computes with those numbers
        for prm in m.parameters():
            prm.copy_(prm.bfloat16().float())
        for layer in m.layers:  # the norms near 1, as trained ones are
            for norm in (layer.input_layernorm, layer.post_attention_layernorm):
                norm.weight.uniform_(0.5, 1.5)
                norm.weight.copy_(norm.weight.bfloat16().float())
    write_tiny_folder("tiny_gpt_oss", oss_config(cfg), oss_tensors(m), torch.bfloat16, 1, cfg["vocab"], "gpt_oss")

    def expect(T, layer):
        b = m.layers[layer]
        a, e = b.self_attn, b.mlp
        exp = {"token_embeddings": m.tokens[0], "queries": a.q[0], "keys": a.k[0], "values": a.v[0], "queries_rotated": a.q_rot[0],
               "keys_rotated": a.k_rot[0], "rope_angles": m.angles, "scores": a.scores[0], "weights": a.w[0], "sink_share": a.sink_share[0],
               "context": a.context[0], "output": b.attention[0], "ln_f": m.ln_f[0]}
        for key in ["ln_1", "attention", "residual_1", "ln_2", "residual_2"]:
            exp[f"layer{layer + 1}.{key}"] = getattr(b, key)[0]
        exp[f"layer{layer + 1}.mlp"] = b.mlp_out[0]
        exp[f"layer{layer + 1}.router_logits"] = e.logits
        exp[f"layer{layer + 1}.experts_chosen"] = e.indices.float()
        exp[f"layer{layer + 1}.expert_weights"] = e.top_weights
        return exp, [f"layer{layer + 1}.experts_chosen"]
    return layer_cases("tiny_gpt_oss", m, cfg["vocab"], 23, [(5, 0), (10, 1), (10, 2)], expect)
