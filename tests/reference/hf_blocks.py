"""The pieces Hugging Face's modeling files share, written the way they compute: the RMSNorm's float32
and its cast back (GemmaRMSNorm's (1 + w) with gemma=True), the rotary tables of modeling_rope_utils.py
(default and yarn) and their float32 angles (Cohere's interleaved too), rotate_half (Cohere's on the
even and odd features too), repeat_kv, the gated MLP of the MoE families' experts and the softmax
router's experts of Qwen3-MoE and Qwen3-Next. Used by OLMo 2/3, SmolLM3, Gemma, multi-head latent
attention, gpt-oss, DeepSeek-V3, Qwen3-Next, Qwen3-MoE and Cohere2."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class HFRMSNorm(nn.Module):  # Olmo2RMSNorm / Olmo3RMSNorm / LlamaRMSNorm (SmolLM3); GemmaRMSNorm with gemma=True
    def __init__(self, hidden_size, eps, gemma=False):
        super().__init__()
        self.gemma = gemma
        self.weight = nn.Parameter(torch.zeros(hidden_size) if gemma else torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        if self.gemma:  # GemmaRMSNorm: x·rsqrt(mean(x²) + eps), then × (1 + w), in float32
            x = hidden_states.float()
            output = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
            return (output * (1.0 + self.weight.float())).type_as(hidden_states)
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return (self.weight * hidden_states).to(input_dtype)


def hf_default_inv_freq(base, dim):  # _compute_default_rope_parameters
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim)), 1.0


def hf_yarn_inv_freq(base, dim, rope, max_position_embeddings):  # _compute_yarn_parameters
    factor = rope["factor"]
    original = rope.get("original_max_position_embeddings") or max_position_embeddings

    def get_mscale(scale, mscale=1):
        return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0

    attention_factor = rope.get("attention_factor")
    if attention_factor is None:
        attention_factor = get_mscale(factor)
    beta_fast, beta_slow = rope.get("beta_fast") or 32, rope.get("beta_slow") or 1

    def find_correction_dim(num_rotations):
        return (dim * math.log(original / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = find_correction_dim(beta_fast), find_correction_dim(beta_slow)
    if rope.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    pos_freqs = base ** (torch.arange(0, dim, 2).to(dtype=torch.float) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    extrapolation_factor = 1 - ramp
    inv_freq = inv_freq_interpolation * (1 - extrapolation_factor) + inv_freq_extrapolation * extrapolation_factor
    return inv_freq, attention_factor


class HFRotary(nn.Module):  # Olmo2RotaryEmbedding.forward: float32 angles, cos and sin × attention_scaling
    def __init__(self, inv_freq, attention_scaling, interleave=False):
        super().__init__()
        self.inv_freq, self.attention_scaling, self.interleave = inv_freq, attention_scaling, interleave

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        # Cohere2RotaryEmbedding: "we interleave() instead of cat()", each angle twice in a row
        emb = torch.repeat_interleave(freqs, 2, dim=-1) if self.interleave else torch.cat((freqs, freqs), dim=-1)
        self.angles = emb[0]
        return (emb.cos() * self.attention_scaling).to(x.dtype), (emb.sin() * self.attention_scaling).to(x.dtype)


def hf_rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def hf_rotate_interleaved(x):  # rotate_half of modeling_cohere.py: the pairs (x0, x1), (x2, x3), … turn
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack([-x2, x1], dim=-1).flatten(-2)


def hf_repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class DsMLP(nn.Module):  # DeepseekV3MLP; Qwen3NextMLP (the experts, the shared expert, the dense layers) is the same
    def __init__(self, C, I):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = nn.Linear(C, I, bias=False), nn.Linear(C, I, bias=False), nn.Linear(I, C, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class SoftmaxMoE(nn.Module):
    """Qwen3MoeSparseMoeBlock (and Qwen3-Next's routed experts): p = softmax(router logits) over every expert in
    float32, the top_k largest, over their sum with norm_topk_prob; each chosen expert's SwiGLU weighted and
    index_add_-ed into the output, expert by expert in their order."""
    def __init__(self, cfg):
        super().__init__()
        C, E = cfg["C"], cfg["experts"]
        self.E, self.top_k, self.norm = E, cfg["top_k"], cfg["norm_topk_prob"]
        self.gate = nn.Linear(C, E, bias=False)
        self.experts = nn.ModuleList([DsMLP(C, cfg["moe_hidden"]) for _ in range(E)])

    def routed(self, h):  # h: (tokens, C)
        self.logits = F.linear(h, self.gate.weight)
        self.scores = F.softmax(self.logits, dtype=torch.float, dim=-1)
        top, self.indices = torch.topk(self.scores, self.top_k, dim=-1)
        if self.norm:
            top = top / top.sum(dim=-1, keepdim=True)
        self.top_weights = top
        out = torch.zeros_like(h)
        mask = F.one_hot(self.indices, num_classes=self.E).permute(2, 1, 0)
        for e in range(self.E):
            slot, tok = torch.where(mask[e])
            if tok.numel() > 0:
                out.index_add_(0, tok, self.experts[e](h[tok]) * self.top_weights[tok, slot, None])
        return out

    def forward(self, x):
        B, T, C = x.shape
        return self.routed(x.view(-1, C)).reshape(B, T, C)
