"""Beyond the chapter: the bonus notebooks' attention modules (grouped queries, sliding windows,
combined QKV, output gates, learned sinks, the KV cache, RoPE, FlashAttention's online softmax,
scaled_dot_product_attention, parameter and cache counts): goldens mha_beyond, kvcache, rope,
flash, sdpa and params."""
import json
import math

import torch
import torch.nn as nn

from .chapter import SelfAttentionLinear
from .common import BUILTIN, case, random_input


def causal_band(T, window=None, causal=True):
    """True = masked: the future (triu, diagonal=1) and, with a window, the far past."""
    mask = torch.triu(torch.ones(T, T), diagonal=1).bool() if causal else torch.zeros(T, T, dtype=torch.bool)
    if window:
        mask = mask | torch.triu(torch.ones(T, T), diagonal=window).T.bool()
    return mask


class GroupedQuery(nn.Module):  # GroupedQueryAttention, built in the chapter's order: query, key, value, out_proj
    def __init__(self, d_in, d_out, heads, kv_heads, bias, window=None, sinks=None):
        super().__init__()
        self.heads, self.kv_heads, self.d_h, self.window = heads, kv_heads, d_out // heads, window
        self.sinks = None if sinks is None else torch.tensor(sinks, dtype=torch.float32).expand(heads).clone()  # given, not drawn
        self.W_query = nn.Linear(d_in, d_out, bias=bias)
        self.W_key = nn.Linear(d_in, kv_heads * self.d_h, bias=bias)
        self.W_value = nn.Linear(d_in, kv_heads * self.d_h, bias=bias)
        self.out_proj = nn.Linear(d_out, d_out)

    def forward(self, x):
        b, T, _ = x.shape
        q = self.W_query(x).view(b, T, self.heads, self.d_h).transpose(1, 2)
        k = self.W_key(x).view(b, T, self.kv_heads, self.d_h).transpose(1, 2)
        v = self.W_value(x).view(b, T, self.kv_heads, self.d_h).transpose(1, 2)
        k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
        v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        s = (q @ k.transpose(2, 3)).masked_fill(causal_band(T, self.window), -torch.inf)
        if self.sinks is None:
            self.w = torch.softmax(s / self.d_h ** 0.5, dim=-1)
        else:  # learned sinks as Hugging Face's eager gpt-oss attention: a column appended, the max subtracted, dropped after
            s = s / self.d_h ** 0.5
            combined = torch.cat([s, self.sinks.reshape(1, -1, 1, 1).expand(b, -1, T, -1)], dim=-1)
            combined = combined - combined.max(dim=-1, keepdim=True).values
            probs = torch.softmax(combined, dim=-1)
            self.w, self.sink_share = probs[..., :-1], probs[..., -1]
        self.context = (self.w @ v).transpose(1, 2).contiguous().view(b, T, self.heads * self.d_h)
        return self.out_proj(self.context)

    def weights(self):
        w = {"W_query": self.W_query.weight.T, "W_key": self.W_key.weight.T, "W_value": self.W_value.weight.T,
             "out_proj.weight": self.out_proj.weight.T, "out_proj.bias": self.out_proj.bias}
        if self.W_query.bias is not None:
            w.update(b_query=self.W_query.bias, b_key=self.W_key.bias, b_value=self.W_value.bias)
        return w


class CombinedQKV(nn.Module):  # MHACombinedQKV
    def __init__(self, d_in, d_out, heads, bias):
        super().__init__()
        self.heads, self.d_h, self.d_out = heads, d_out // heads, d_out
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=bias)
        self.proj = nn.Linear(d_out, d_out)

    def forward(self, x):
        b, T, _ = x.shape
        qkv = self.qkv(x)
        self.qkv_out = qkv
        q, k, v = qkv.view(b, T, 3, self.heads, self.d_h).permute(2, 0, 3, 1, 4).unbind(0)
        s = (q @ k.transpose(-2, -1)).masked_fill(causal_band(T), -torch.inf)
        self.w = torch.softmax(s / k.shape[-1] ** 0.5, dim=-1)
        self.context = (self.w @ v).transpose(1, 2).contiguous().view(b, T, self.d_out)
        return self.proj(self.context)


class GatedMultiHeadAttention(nn.Module):  # the textbook's, ch04/08_deltanet's README (gated attention)
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_gate = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1), persistent=False)

    def forward(self, x):
        b, num_tokens, _ = x.shape
        queries = self.W_query(x)
        gate = self.W_gate(x)
        keys = self.W_key(x)
        values = self.W_value(x)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, torch.finfo(attn_scores.dtype).min)
        attn_weights = torch.softmax(attn_scores / (self.head_dim ** 0.5), dim=-1)
        attn_weights = self.dropout(attn_weights)
        context = (attn_weights @ values).transpose(1, 2)
        context = context.reshape(b, num_tokens, self.d_out)
        gated = context * torch.sigmoid(gate)
        out = self.out_proj(gated)
        return {"weights": attn_weights, "context": context, "gate": gate, "gated": gated, "output": out}


def mha_beyond_cases():
    cases = []
    # (d_out, heads, kv_heads, window, bias, seed, input)
    configs = [(8, 4, 2, None, False, 123, "builtin"), (8, 4, 1, None, False, 7, "builtin"), (8, 4, 4, None, True, 3, "builtin"),
               (12, 6, 3, None, True, 11, "rand9x5"), (4, 2, 2, 2, False, 123, "builtin"), (6, 3, 1, 3, False, 5, "rand9x5"),
               (4, 2, 2, 1, False, 9, "builtin"), (8, 4, 2, 4, True, 21, "rand9x5")]
    for d_out, heads, kv, window, bias, seed, inp in configs:
        x = torch.tensor(BUILTIN) if inp == "builtin" else random_input(3, 9, 5)
        torch.manual_seed(seed)
        m = GroupedQuery(x.shape[1], d_out, heads, kv, bias, window)
        y = m(x[None])
        args = ["mha", "--d-out", str(d_out), "--heads", str(heads), "--seed", str(seed)]
        args += (["--kv-heads", str(kv)] if kv != heads else []) + (["--window", str(window)] if window else [])
        args += ["--qkv-bias"] if bias else []
        exp = {"weights": m.w[0], "context": m.context[0], "output": y[0]}
        exp.update(m.weights())
        exact = [k for k in m.weights()]
        name = f"mha_gqa_dout{d_out}_h{heads}_g{kv}_w{window}_seed{seed}{'_bias' if bias else ''}_{inp}"
        cases.append(case(name, args, None if inp == "builtin" else x, exp, exact))
    for d_out, heads, bias, seed in [(2, 2, False, 123), (6, 3, True, 7), (4, 1, True, 2)]:
        x = torch.tensor(BUILTIN)
        torch.manual_seed(seed)
        m = CombinedQKV(3, d_out, heads, bias)
        y = m(x[None])
        args = ["mha", "--variant", "combined-qkv", "--d-out", str(d_out), "--heads", str(heads), "--seed", str(seed)]
        args += ["--qkv-bias"] if bias else []
        exp = {"W_qkv": m.qkv.weight.T, "qkv": m.qkv_out[0], "weights": m.w[0], "context": m.context[0], "output": y[0],
               "out_proj.weight": m.proj.weight.T, "out_proj.bias": m.proj.bias}
        exact = ["W_qkv", "out_proj.weight", "out_proj.bias"]
        if bias:
            exp["b_qkv"] = m.qkv.bias
            exact.append("b_qkv")
        cases.append(case(f"mha_combined_dout{d_out}_h{heads}_seed{seed}{'_bias' if bias else ''}", args, None, exp, exact))
    for d_out, heads, bias, seed, inp in [(2, 2, False, 123, "builtin"), (6, 3, True, 7, "builtin"), (8, 2, False, 5, "rand9x5")]:
        x = torch.tensor(BUILTIN) if inp == "builtin" else random_input(3, 9, 5)
        torch.manual_seed(seed)
        m = GatedMultiHeadAttention(x.shape[1], d_out, x.shape[0], 0.0, heads, bias)
        out = m(x[None])
        args = ["mha", "--output-gate", "--d-out", str(d_out), "--heads", str(heads), "--seed", str(seed)] + (["--qkv-bias"] if bias else [])
        exp = {k: v[0] for k, v in out.items()}
        params = {"W_query": m.W_query.weight.T, "W_gate": m.W_gate.weight.T, "W_key": m.W_key.weight.T, "W_value": m.W_value.weight.T,
                  "out_proj.weight": m.out_proj.weight.T, "out_proj.bias": m.out_proj.bias}
        if bias:
            params.update(b_query=m.W_query.bias, b_gate=m.W_gate.bias, b_key=m.W_key.bias, b_value=m.W_value.bias)
        exp.update(params)
        cases.append(case(f"mha_gated_dout{d_out}_h{heads}_seed{seed}{'_bias' if bias else ''}_{inp}", args,
                          None if inp == "builtin" else x, exp, list(params)))
    # learned sinks (gpt-oss), with grouped heads and a window as gpt-oss has them
    for d_out, heads, kv, window, bias, seed, inp, sinks in [(4, 2, 2, None, False, 123, "builtin", [0.0, 2.0]),
                                                             (8, 4, 2, None, False, 123, "builtin", [0.5, -1.0, 2.0, 0.0]),
                                                             (8, 4, 1, 3, True, 5, "rand9x5", [1.0])]:
        x = torch.tensor(BUILTIN) if inp == "builtin" else random_input(3, 9, 5)
        torch.manual_seed(seed)
        m = GroupedQuery(x.shape[1], d_out, heads, kv, bias, window, sinks)
        y = m(x[None])
        args = ["mha", "--d-out", str(d_out), "--heads", str(heads), "--seed", str(seed), "--sinks", ",".join(str(s) for s in sinks)]
        args += (["--kv-heads", str(kv)] if kv != heads else []) + (["--window", str(window)] if window else [])
        args += ["--qkv-bias"] if bias else []
        exp = {"weights": m.w[0], "sink_share": m.sink_share[0], "context": m.context[0], "output": y[0], "sinks": m.sinks}
        exp.update(m.weights())
        name = f"mha_sinks_dout{d_out}_h{heads}_g{kv}_w{window}_seed{seed}{'_bias' if bias else ''}_{inp}"
        cases.append(case(name, args, None if inp == "builtin" else x, exp, list(m.weights()) + ["sinks"]))
    return cases


class CachedMHA(nn.Module):  # MultiHeadAttention with a KV cache, as the KV-cache bonus code writes it
    def __init__(self, d_in, d_out, heads, kv_heads, window=None):
        super().__init__()
        self.inner = GroupedQuery(d_in, d_out, heads, kv_heads, False, window)
        self.window = window
        self.cache_k = self.cache_v = None

    def step(self, x_t):  # x_t: (b, 1, d_in)
        m = self.inner
        b = x_t.shape[0]
        q = m.W_query(x_t).view(b, 1, m.heads, m.d_h).transpose(1, 2)
        k = m.W_key(x_t).view(b, 1, m.kv_heads, m.d_h).transpose(1, 2)
        v = m.W_value(x_t).view(b, 1, m.kv_heads, m.d_h).transpose(1, 2)
        self.cache_k = k if self.cache_k is None else torch.cat([self.cache_k, k], dim=2)
        self.cache_v = v if self.cache_v is None else torch.cat([self.cache_v, v], dim=2)
        if self.window:
            self.cache_k, self.cache_v = self.cache_k[:, :, -self.window:], self.cache_v[:, :, -self.window:]
        kk = self.cache_k.repeat_interleave(m.heads // m.kv_heads, dim=1)
        vv = self.cache_v.repeat_interleave(m.heads // m.kv_heads, dim=1)
        w = torch.softmax((q @ kk.transpose(2, 3)) / m.d_h ** 0.5, dim=-1)
        z = (w @ vv).transpose(1, 2).contiguous().view(b, 1, m.heads * m.d_h)
        return q, k, v, w, m.out_proj(z)


def kvcache_cases():
    cases = []
    for d_out, heads, kv, window, seed in [(2, 2, 2, None, 123), (8, 4, 2, None, 7), (8, 4, 1, 3, 5), (6, 3, 3, 2, 11)]:
        x = torch.tensor(BUILTIN)[None]
        torch.manual_seed(seed)
        m = CachedMHA(3, d_out, heads, kv, window)
        full = m.inner(x)
        exp = {"output_full": full[0], "W_key": m.inner.W_key.weight.T}
        outs = []
        for t in range(x.shape[1]):
            q, k, v, w, y = m.step(x[:, t:t + 1])
            exp[f"step{t + 1}.query"] = q[0, :, 0]
            exp[f"step{t + 1}.key"] = k[0, :, 0]
            exp[f"step{t + 1}.keys_cache"] = m.cache_k[0]
            exp[f"step{t + 1}.values_cache"] = m.cache_v[0]
            exp[f"step{t + 1}.weights"] = w[0, :, 0]
            exp[f"step{t + 1}.output"] = y[0, 0]
            outs.append(y[0, 0])
        exp["output"] = torch.stack(outs)
        args = ["kvcache", "--d-out", str(d_out), "--heads", str(heads), "--seed", str(seed)]
        args += (["--kv-heads", str(kv)] if kv != heads else []) + (["--window", str(window)] if window else [])
        cases.append(case(f"kvcache_dout{d_out}_h{heads}_g{kv}_w{window}_seed{seed}", args, None, exp, ["W_key"]))
    return cases


def compute_rope_params(head_dim, theta_base, context_length):  # the Llama notebooks' reference code
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2)[: (head_dim // 2)].float() / head_dim))
    positions = torch.arange(context_length)
    angles = positions[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=1)
    return torch.cos(angles), torch.sin(angles), inv_freq, angles


def apply_rope(x, cos, sin):
    head_dim = x.shape[-1]
    x1, x2 = x[..., : head_dim // 2], x[..., head_dim // 2:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return (x * cos) + (rotated * sin)


def rope_cases():
    cases = []
    for d_out, heads, base, shift, seed, inp in [(4, 1, 10000, 3, 123, "builtin"), (8, 2, 10000, 10, 7, "builtin"),
                                                 (8, 1, 100, 5, 3, "rand9x5"), (12, 3, 500000, 1, 9, "rand9x5")]:
        x = torch.tensor(BUILTIN) if inp == "builtin" else random_input(3, 9, 5)
        T, d_h = x.shape[0], d_out // heads
        torch.manual_seed(seed)
        proj = SelfAttentionLinear(x.shape[1], d_out, False)
        q, k, _ = proj.qkv(x)
        q = q.view(T, heads, d_h).transpose(0, 1)
        k = k.view(T, heads, d_h).transpose(0, 1)
        cos, sin, inv_freq, angles = compute_rope_params(d_h, base, T + shift)
        qr, kr = apply_rope(q, cos[:T], sin[:T]), apply_rope(k, cos[:T], sin[:T])
        s = qr @ kr.transpose(-2, -1)
        qs, ks = apply_rope(q, cos[shift:], sin[shift:]), apply_rope(k, cos[shift:], sin[shift:])
        w = torch.softmax(s.masked_fill(causal_band(T), -torch.inf) / d_h ** 0.5, dim=-1)
        exp = {"rope_frequencies": inv_freq, "rope_angles": angles[:T], "rope_cos": cos[:T], "rope_sin": sin[:T],
               "queries_rotated": qr, "keys_rotated": kr, "scores": s, "weights": w,
               "scores_position_shift": qs @ ks.transpose(-2, -1)}
        exp.update(proj.weights())
        args = ["rope", "--d-out", str(d_out), "--heads", str(heads), "--seed", str(seed), "--rope-base", str(base), "--shift", str(shift)]
        cases.append(case(f"rope_dout{d_out}_h{heads}_base{base}_shift{shift}_seed{seed}_{inp}", args, None if inp == "builtin" else x,
                          exp, ["W_query", "W_key", "W_value"]))
    return cases


def flash_cases():
    """FlashAttention's online softmax, written as its paper's loop, against softmax attention."""
    cases = []
    for block, causal, window, seed, inp in [(2, False, None, None, "builtin"), (4, True, None, None, "builtin"), (1, True, 2, None, "builtin"),
                                              (3, False, None, 123, "builtin"), (4, True, 3, 5, "rand9x5"), (2, True, None, 7, "rand9x5"),
                                              (6, True, 2, None, "builtin"), (5, False, None, None, "rand9x5")]:
        x = torch.tensor(BUILTIN) if inp == "builtin" else random_input(3, 9, 5)
        T = x.shape[0]
        exp = {}
        if seed is not None:
            torch.manual_seed(seed)
            proj = SelfAttentionLinear(x.shape[1], 2, False)
            q, k, v = proj.qkv(x)
            scale = k.shape[-1] ** 0.5
        else:
            q = k = v = x
            scale = 1.0
        mask = causal_band(T, window, causal)
        ref = torch.softmax((q @ k.T).masked_fill(mask, -torch.inf) / scale, dim=-1) @ v
        m = torch.full((T,), -torch.inf)
        l = torch.zeros(T)
        o = torch.zeros(T, v.shape[1])
        for b, j0 in enumerate(range(0, T, block)):
            j1 = min(j0 + block, T)
            s = (q @ k[j0:j1].T).masked_fill(mask[:, j0:j1], -torch.inf) / scale
            m_new = torch.maximum(m, s.max(dim=-1).values)
            m_safe = torch.where(m_new == -torch.inf, torch.zeros_like(m_new), m_new)
            r = torch.exp(m - m_safe)
            p = torch.exp(s - m_safe[:, None])
            l = l * r + p.sum(dim=-1)
            o = o * r[:, None] + p @ v[j0:j1]
            m = m_new
            exp.update({f"block{b + 1}.scores": s, f"block{b + 1}.max": m, f"block{b + 1}.rescale": r, f"block{b + 1}.sum": l,
                        f"block{b + 1}.accumulator": o})
        exp["flash_output"] = o / l[:, None]
        exp["context"] = ref
        args = ["flash", "--block", str(block)] + (["--causal"] if causal else []) + (["--window", str(window)] if window else [])
        args += ["--seed", str(seed)] if seed is not None else []
        cases.append(case(f"flash_block{block}_causal{causal}_w{window}_seed{seed}_{inp}", args, None if inp == "builtin" else x, exp))
    return cases


def sdpa_reference(query, key, value, attn_mask=None, is_causal=False, scale=None, fill=float("-inf")):
    """torch.nn.functional.scaled_dot_product_attention's documented reference implementation
    (PyTorch 2.x docs; Debian's torch 1.13 has no F.scaled_dot_product_attention)."""
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    attn_bias = torch.zeros(L, S, dtype=query.dtype)
    if is_causal:
        temp_mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
        attn_bias.masked_fill_(temp_mask.logical_not(), fill)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_bias.masked_fill_(attn_mask.logical_not(), fill)
        else:
            attn_bias = attn_mask + attn_bias
    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    attn_weight += attn_bias
    attn_weight = torch.softmax(attn_weight, dim=-1)
    return attn_bias, attn_weight, attn_weight @ value


def sdpa_cases():
    cases = []
    full = [[1] * 6] * 6
    holes = [[1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [1, 0, 1, 0, 1, 0], [1] * 6, [0, 0, 0, 0, 0, 1], [1] * 6]
    floats = [[0.0, -1.5, 2.0, 0.25, -3.0, 1.0], [0.5] * 6]
    for L, mask, dtype, causal, scale, seed in [(6, None, None, False, None, None), (6, None, None, True, None, None),
                                                (2, None, None, True, None, None), (3, None, None, False, 0.5, None),
                                                (6, holes, "bool", False, None, None), (6, full, "bool", False, None, 123),
                                                (2, floats, "float", False, None, None), (4, None, None, True, 2.0, 7)]:
        x = torch.tensor(BUILTIN)
        S = x.shape[0]
        if seed is not None:
            torch.manual_seed(seed)
            proj = SelfAttentionLinear(3, 2, False)
            q, k, v = proj.qkv(x)
        else:
            q = k = v = x
        q = q[S - L:]
        m = None if mask is None else torch.tensor(mask, dtype=torch.bool if dtype == "bool" else torch.float32)
        bias, w, out = sdpa_reference(q, k, v, m, causal, scale)
        exp = {"attn_bias": bias, "weights": w, "output": out, "scores": q @ k.T}
        if L != S or causal:
            exp["causal_top_left"] = torch.ones(L, S).tril()
            exp["causal_bottom_right"] = torch.ones(L, S).tril(diagonal=S - L)
        if m is not None and (bias == -torch.inf).any():
            _, wf, of = sdpa_reference(q, k, v, m, causal, scale, fill=torch.finfo(torch.float32).min)
            exp["weights_large_fill"] = wf
            exp["output_large_fill"] = of
            if torch.isnan(w).any():
                exp["weights_safe"] = torch.where((bias == -torch.inf).all(dim=-1, keepdim=True), torch.zeros_like(w), w)
        args = ["sdpa", "--queries", str(L)] + (["--is-causal"] if causal else []) + (["--scale", str(scale)] if scale else [])
        args += (["--attn-mask", json.dumps(mask), "--mask-dtype", dtype] if mask is not None else [])
        args += ["--seed", str(seed)] if seed is not None else []
        cases.append(case(f"sdpa_L{L}_{dtype}_causal{causal}_scale{scale}_seed{seed}", args, None, exp))
    # dropout_p: torch.dropout(attn_weight, p, train=True) after the reference's softmax
    for L, causal, p, dseed in [(6, True, 0.5, 123), (3, False, 0.25, 7), (6, False, 0.1, None)]:
        x = torch.tensor(BUILTIN)
        q = x[6 - L:]
        bias, w, _ = sdpa_reference(q, x, x, None, causal)
        torch.manual_seed(123 if dseed is None else dseed)
        keep = torch.empty(L, 6).bernoulli_(1 - p)
        torch.manual_seed(123 if dseed is None else dseed)
        wd = torch.dropout(w, p, True)
        args = ["sdpa", "--queries", str(L), "--dropout-p", str(p)] + (["--is-causal"] if causal else [])
        args += ["--dropout-seed", str(dseed)] if dseed is not None else []
        cases.append(case(f"sdpa_L{L}_causal{causal}_dropout{p}_seed{dseed}", args, None,
                          {"weights": w, "dropout_mask": keep, "weights_dropped": wd, "output": wd @ x}, ["dropout_mask"]))
    return cases


def params_cases():
    cases = []
    for d_in, d_out, heads, kv, bias, out_proj in [(768, 768, 12, 12, False, True), (768, 768, 12, 4, True, True),
                                                    (3, 2, 2, 2, False, True), (4096, 4096, 32, 8, False, True), (3, 2, 1, 1, True, False)]:
        torch.manual_seed(0)
        m = GroupedQuery(d_in, d_out, heads, kv, bias)
        count = lambda mod: torch.tensor(float(sum(p.numel() for p in mod.parameters())))
        exp = {"count_query": count(m.W_query), "count_key": count(m.W_key), "count_value": count(m.W_value)}
        total = exp["count_query"] + exp["count_key"] + exp["count_value"]
        if out_proj:
            exp["count_out_proj"] = count(m.out_proj)
            total = total + exp["count_out_proj"]
        exp["count_total"] = total
        args = ["params", "--d-in", str(d_in), "--d-out", str(d_out), "--heads", str(heads), "--kv-heads", str(kv)]
        args += (["--qkv-bias"] if bias else []) + ([] if out_proj else ["--no-out-proj"])
        cases.append(case(f"params_{d_in}_{d_out}_h{heads}_g{kv}{'_bias' if bias else ''}{'' if out_proj else '_noproj'}", args, None, exp,
                          list(exp)))
    # the cache with a sliding window, KV sharing or MLA, as the textbook's memory estimators count it
    # (ch04/06_swa/memory_estimator_swa.py, ch04/10_kv-sharing/memory_estimator_kv_sharing.py,
    # ch04/05_mla/memory_estimator_mla.py), batch 1, float32
    def kv_bytes(context, head_dim, kv_heads, layers, b=4):
        return context * head_dim * kv_heads * 2 * b * layers

    def distribute_layers(n_layers, a, b):
        blocks, rem = n_layers // (a + b), n_layers % (a + b)
        return blocks * a + min(a, rem), blocks * b + max(0, rem - a)

    for emb, heads, kv, layers, context, extra in [(768, 8, 4, 34, 32768, ("swa", 1024, 5, 1)), (2048, 16, 16, 10, 4096, ("swa", 512, 1, 0)),
                                                  (768, 12, 12, 7, 100, ("swa", 4096, 2, 3)), (768, 12, 4, 35, 32768, ("share", 15)),
                                                  (2048, 16, 16, 61, 1024, ("mla", 512, 64))]:
        hd = emb // heads
        mha = kv_bytes(context, hd, heads, layers)
        args = ["params", "--d-in", str(emb), "--d-out", str(emb), "--heads", str(heads), "--kv-heads", str(kv), "--layers", str(layers),
                "--context", str(context)]
        if extra[0] == "swa":
            _, W, a, b = extra
            n_swa, n_full = distribute_layers(layers, a, b)
            ours = n_swa * kv_bytes(min(context, W), hd, kv, 1) + n_full * kv_bytes(context, hd, kv, 1)
            args += ["--window", str(W), "--swa-ratio", f"{a}:{b}"]
        elif extra[0] == "share":
            ours = kv_bytes(context, hd, kv, extra[1])
            args += ["--kv-producing-layers", str(extra[1])]
        else:
            ours = context * layers * (extra[1] + extra[2]) * 4  # calc_mla_bytes_total with latent_dim = r + d_rope
            args += ["--kv-lora-rank", str(extra[1]), "--qk-rope-head-dim", str(extra[2])]
        compared = [mha] + ([kv_bytes(context, hd, kv, layers)] if kv != heads else []) + [ours]
        exp = {"cache_bytes": torch.tensor(float(ours)), "cache_compared": torch.tensor([float(c) for c in compared], dtype=torch.float64)}
        cases.append(case("params_cache_" + "_".join(a.lstrip("-").replace(":", "to") for a in args[1:]), args, None, exp, list(exp)))
    return cases
