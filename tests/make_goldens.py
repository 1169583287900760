#!/usr/bin/python3
"""Generates the golden files in tests/golden/ with PyTorch (Debian's python3-torch).

    /usr/bin/python3 tests/make_goldens.py

CI never runs this: the goldens are committed. Each case names the attnwalk command line
that must reproduce it; tests/cli/test_golden.cpp runs the real binary with --json and checks
every expected step (drawn weights and dropout masks exactly, values within 1e-5 relative).
The modules below are written the way the textbook's chapter writes them.
"""
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "golden")

BUILTIN = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
           [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]


def bits(t):
    return [struct.unpack("<I", struct.pack("<f", float(v)))[0] for v in t.flatten().tolist()]


def tensor_json(t):
    t = t.detach().float()
    return {"shape": list(t.shape), "data": [float(v) if math.isfinite(v) else str(v) for v in t.flatten().tolist()]}


# ---- the textbook's modules -------------------------------------------------------------

class SelfAttentionParams(nn.Module):  # SelfAttention_v1 with rand or randn
    def __init__(self, d_in, d_out, draw):
        super().__init__()
        self.W_query = nn.Parameter(draw(d_in, d_out))
        self.W_key = nn.Parameter(draw(d_in, d_out))
        self.W_value = nn.Parameter(draw(d_in, d_out))

    def qkv(self, x):
        return x @ self.W_query, x @ self.W_key, x @ self.W_value

    def weights(self):
        return {"W_query": self.W_query, "W_key": self.W_key, "W_value": self.W_value}


class SelfAttentionLinear(nn.Module):  # SelfAttention_v2 / CausalAttention projections
    def __init__(self, d_in, d_out, bias):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=bias)
        self.W_key = nn.Linear(d_in, d_out, bias=bias)
        self.W_value = nn.Linear(d_in, d_out, bias=bias)

    def qkv(self, x):
        return self.W_query(x), self.W_key(x), self.W_value(x)

    def weights(self):
        w = {"W_query": self.W_query.weight.T, "W_key": self.W_key.weight.T, "W_value": self.W_value.weight.T}
        if self.W_query.bias is not None:
            w.update(b_query=self.W_query.bias, b_key=self.W_key.bias, b_value=self.W_value.bias)
        return w


def make_projection(d_in, d_out, init, bias):
    if init == "rand":
        return SelfAttentionParams(d_in, d_out, torch.rand)
    if init == "randn":
        return SelfAttentionParams(d_in, d_out, torch.randn)
    return SelfAttentionLinear(d_in, d_out, bias)


class CausalHead(nn.Module):  # CausalAttention
    def __init__(self, d_in, d_out, dropout, bias, init="linear"):
        super().__init__()
        self.proj = make_projection(d_in, d_out, init, bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, causal=True):
        q, k, v = self.proj.qkv(x)
        s = q @ k.transpose(-2, -1)
        if causal:
            T = x.shape[-2]
            s = s.masked_fill(torch.triu(torch.ones(T, T), diagonal=1).bool(), -torch.inf)
        w = torch.softmax(s / k.shape[-1] ** 0.5, dim=-1)
        self.w = w
        w = self.dropout(w)
        return w @ v


class Wrapper(nn.Module):  # MultiHeadAttentionWrapper
    def __init__(self, d_in, d_out, dropout, heads, bias, init):
        super().__init__()
        self.heads = nn.ModuleList([CausalHead(d_in, d_out, dropout, bias, init) for _ in range(heads)])

    def forward(self, x, causal=True):
        return torch.cat([h(x, causal) for h in self.heads], dim=-1)


class Fused(nn.Module):  # MultiHeadAttention
    def __init__(self, d_in, d_out, dropout, heads, bias, init):
        super().__init__()
        self.heads, self.d_h = heads, d_out // heads
        self.proj = make_projection(d_in, d_out, init, bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, causal=True):
        b, T, _ = x.shape
        q, k, v = self.proj.qkv(x)
        q, k, v = (t.view(b, T, self.heads, self.d_h).transpose(1, 2) for t in (q, k, v))
        s = q @ k.transpose(2, 3)
        if causal:
            s = s.masked_fill(torch.triu(torch.ones(T, T), diagonal=1).bool(), -torch.inf)
        w = torch.softmax(s / k.shape[-1] ** 0.5, dim=-1)
        self.w = w
        w = self.dropout(w)
        z = (w @ v).transpose(1, 2).contiguous().view(b, T, self.heads * self.d_h)
        self.context = z
        return self.out_proj(z)


# ---- cases ------------------------------------------------------------------------------

def random_input(seed, T, d, batch=None):
    g = torch.Generator().manual_seed(10_000 + seed)
    shape = (batch, T, d) if batch else (T, d)
    x = (torch.rand(shape, generator=g) * 2 - 1)
    x = torch.round(x * 1000) / 1000  # short decimals, exactly representable in JSON text
    return x


def case(name, args, x, expect, exact=(), tokens=None):
    c = {"name": name, "args": args, "expect": {k: tensor_json(v) for k, v in expect.items()}, "exact": list(exact)}
    if x is not None:
        c["input"] = {"embeddings": x.tolist()}
        if tokens:
            c["input"]["tokens"] = tokens
    return c


def single_head_cases():
    cases = []
    inputs = [("builtin", None, torch.tensor(BUILTIN)), ("rand7x4", "in", random_input(1, 7, 4)),
              ("batch2x5x3", "in", random_input(2, 5, 3, batch=2))]
    for label, has_file, x in inputs:
        xx = x if x.dim() == 3 else x.unsqueeze(0)
        s = xx @ xx.transpose(-2, -1)
        w = torch.softmax(s, dim=-1)
        squeeze = (lambda t: t) if x.dim() == 3 else (lambda t: t[0])
        cases.append(case(f"context_raw_{label}", ["context"], x if has_file else None,
                          {"scores": squeeze(s), "weights": squeeze(w), "context": squeeze(w @ xx)}))
        cases.append(case(f"softmax_scaled_{label}", ["softmax", "--scale", "2"], x if has_file else None,
                          {"weights": squeeze(torch.softmax(s / 2, dim=-1))}))
        cases.append(case(f"causal_raw_{label}", ["causal"], x if has_file else None,
                          {"weights": squeeze(CausalHeadRaw(xx)[0]), "context": squeeze(CausalHeadRaw(xx)[1])}))
    # one query
    x = torch.tensor(BUILTIN)
    s = x @ x[3]
    cases.append(case("context_query_with", ["context", "--query", "with"], None,
                      {"scores": s, "weights": torch.softmax(s, 0), "context": torch.softmax(s, 0) @ x}))

    # seeded projections
    for seed in [0, 1, 123, 789, 2**32 + 5]:
        for init, d_out, bias in [("rand", 2, False), ("randn", 2, False), ("randn", 6, False), ("linear", 2, False),
                                  ("linear", 3, True), ("linear", 5, False)]:
            for label, x in [("builtin", None), ("rand9x8", random_input(seed % 7, 9, 8))]:
                xin = torch.tensor(BUILTIN) if x is None else x
                torch.manual_seed(seed)
                m = make_projection(xin.shape[-1], d_out, init, bias)
                q, k, v = m.qkv(xin)
                s = q @ k.T
                w = torch.softmax(s / k.shape[-1] ** 0.5, dim=-1)
                args = ["context", "--seed", str(seed), "--init", init, "--d-out", str(d_out)] + (["--qkv-bias"] if bias else [])
                exp = {"queries": q, "keys": k, "values": v, "scores": s, "weights": w, "context": w @ v}
                exp.update(m.weights())
                cases.append(case(f"context_seed{seed}_{init}_d{d_out}{'_bias' if bias else ''}_{label}", args, x, exp,
                                  exact=list(m.weights().keys())))
    # causal with projections, batches
    for seed, batch in [(123, 2), (789, 1), (5, 3)]:
        x = torch.stack([torch.tensor(BUILTIN)] * batch)
        torch.manual_seed(seed)
        head = CausalHead(3, 2, 0.0, False)
        z = head(x)
        args = ["causal", "--seed", str(seed)] + (["--batch", str(batch)] if batch > 1 else [])
        exp = {"weights": head.w, "context": z}
        if batch == 1:
            exp = {k: t[0] for k, t in exp.items()}
        cases.append(case(f"causal_seed{seed}_batch{batch}", args, None, exp))
    return cases


def CausalHeadRaw(x):
    T = x.shape[-2]
    s = (x @ x.transpose(-2, -1)).masked_fill(torch.triu(torch.ones(T, T), diagonal=1).bool(), -torch.inf)
    w = torch.softmax(s, dim=-1)
    return w, w @ x


def dropout_cases():
    cases = []
    for n, seed, p in [(6, 123, 0.5), (8, 0, 0.5), (5, 42, 0.1), (7, 2**32 + 5, 0.3), (4, 9, 0.9)]:
        torch.manual_seed(seed)
        out = nn.Dropout(p)(torch.ones(n, n))
        keep = (out != 0).float()
        cases.append(case(f"dropout_ones{n}_seed{seed}_p{p}", ["dropout", "--ones", str(n), "--dropout-seed", str(seed), "--dropout", str(p)],
                          None, {"dropout_mask": keep, "weights_dropped": out}, exact=["dropout_mask", "weights_dropped"]))
    # dropout continuing the weights' stream, on causal weights
    for seed, p, batch in [(789, 0.5, 1), (123, 0.2, 2)]:
        x = torch.stack([torch.tensor(BUILTIN)] * batch)
        torch.manual_seed(seed)
        head = CausalHead(3, 2, p, False)
        head.train()
        z = head(x)
        w = head.w
        torch.manual_seed(seed)  # replay: build the same module, then draw the mask alone
        CausalHead(3, 2, p, False)
        keep = torch.empty(w.shape).bernoulli_(1 - p)
        args = ["dropout", "--seed", str(seed), "--dropout", str(p)] + (["--batch", str(batch)] if batch > 1 else [])
        exp = {"weights": w, "dropout_mask": keep, "context": z}
        if batch == 1:
            exp = {k: t[0] for k, t in exp.items()}
        cases.append(case(f"dropout_seed{seed}_p{p}_batch{batch}", args, None, exp, exact=["dropout_mask"]))
    return cases


def mha_cases():
    cases = []
    configs = [("fused", 2, 2, 1, 0.0, 123, 2), ("wrapper", 2, 2, 1, 0.0, 123, 2), ("fused", 6, 3, 2, 0.0, 7, 1),
               ("wrapper", 3, 3, 2, 0.0, 7, 1), ("fused", 4, 2, 1, 0.25, 11, 2), ("wrapper", 2, 2, 1, 0.25, 11, 1),
               ("fused", 8, 4, 2, 0.0, 2**32 + 5, 1), ("fused", 2, 1, 2, 0.0, 0, 2), ("wrapper", 2, 3, 1, 0.5, 3, 2),
               ("fused", 6, 2, 1, 0.1, 4, 1, False), ("wrapper", 2, 2, 2, 0.0, 5, 1, False)]
    for variant, d_out, heads, qkv_bias_i, p, seed, batch, *rest in configs:
        causal = rest[0] if rest else True
        qkv_bias = qkv_bias_i == 2
        x = torch.stack([torch.tensor(BUILTIN)] * batch)
        torch.manual_seed(seed)
        cls = Fused if variant == "fused" else Wrapper
        m = cls(3, d_out, p, heads, qkv_bias, "linear")
        m.train()
        y = m(x, causal)
        args = ["mha", "--variant", variant, "--d-out", str(d_out), "--heads", str(heads), "--seed", str(seed),
                "--dropout", str(p)] + (["--qkv-bias"] if qkv_bias else []) + (["--batch", str(batch)] if batch > 1 else [])
        args += [] if causal else ["--no-causal"]
        if variant == "fused":
            exp = {"weights": m.w, "context": m.context, "output": y}
            exact = ["W_query", "W_key", "W_value", "out_proj.weight", "out_proj.bias"]
            exp.update(m.proj.weights())
            exp["out_proj.weight"] = m.out_proj.weight.T
            exp["out_proj.bias"] = m.out_proj.bias
        else:
            exp = {"weights": torch.stack([h.w for h in m.heads], dim=1), "context": y, "output": y}
            exact = []
            for i, h in enumerate(m.heads):
                for k_, v_ in h.proj.weights().items():
                    exp[f"head{i + 1}.{k_}"] = v_
                    exact.append(f"head{i + 1}.{k_}")
        if p > 0:  # replay: the same construction, then the forward's dropout draws alone
            torch.manual_seed(seed)
            cls(3, d_out, p, heads, qkv_bias, "linear")
            T = x.shape[1]
            if variant == "fused":
                keep = torch.empty(batch, heads, T, T).bernoulli_(1 - p)
            else:
                keep = torch.stack([torch.empty(batch, T, T).bernoulli_(1 - p) for _ in range(heads)], dim=1)
            exp["dropout_mask"] = keep
            exact.append("dropout_mask")
        if batch == 1:
            exp = {k: (t[0] if k in ("weights", "context", "output", "dropout_mask") else t) for k, t in exp.items()}
        name = f"mha_{variant}_dout{d_out}_h{heads}_p{p}_seed{seed}_b{batch}{'_bias' if qkv_bias else ''}{'' if causal else '_nocausal'}"
        cases.append(case(name, args, None, exp, exact))
    return cases


# ---- beyond the chapter: the bonus notebooks' attention modules --------------------------

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


# ---- GPT-2: the book's GPTModel (chapter 4), saved as tiny safetensors checkpoints -------------

class BookLayerNorm(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        return self.scale * (x - mean) / torch.sqrt(var + self.eps) + self.shift


class BookGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(torch.sqrt(torch.tensor(2.0 / torch.pi)) * (x + 0.044715 * torch.pow(x, 3))))


class BookMHA(nn.Module):  # the chapter's MultiHeadAttention, qkv_bias=True as GPT-2
    def __init__(self, d, ctx, heads):
        super().__init__()
        self.heads, self.d_h = heads, d // heads
        self.W_query, self.W_key, self.W_value = (nn.Linear(d, d, bias=True) for _ in range(3))
        self.out_proj = nn.Linear(d, d)
        self.register_buffer("mask", torch.triu(torch.ones(ctx, ctx), diagonal=1))

    def forward(self, x):
        b, T, d = x.shape
        q, k, v = (l(x).view(b, T, self.heads, self.d_h).transpose(1, 2) for l in (self.W_query, self.W_key, self.W_value))
        s = (q @ k.transpose(2, 3)).masked_fill(self.mask.bool()[:T, :T], -torch.inf)
        self.w = torch.softmax(s / k.shape[-1] ** 0.5, dim=-1)
        self.q, self.k, self.v = (t.transpose(1, 2).reshape(b, T, d) for t in (q, k, v))
        z = self.w @ v
        for h in getattr(self, "ablate", ()):  # ablation: this head's output zeroed (heads_cases)
            z[:, h] = 0
        self.context = z.transpose(1, 2).contiguous().view(b, T, d)
        return self.out_proj(self.context)


class BookBlock(nn.Module):
    def __init__(self, d, ctx, heads):
        super().__init__()
        self.att = BookMHA(d, ctx, heads)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), BookGELU(), nn.Linear(4 * d, d))
        self.norm1, self.norm2 = BookLayerNorm(d), BookLayerNorm(d)

    def forward(self, x):
        self.ln_1 = self.norm1(x)
        self.attention = self.att(self.ln_1)
        x = x + self.attention
        self.residual_1 = x
        self.ln_2 = self.norm2(x)
        self.mlp_hidden = self.ff[1](self.ff[0](self.ln_2))
        self.mlp = self.ff[2](self.mlp_hidden)
        self.residual_2 = x + self.mlp
        return self.residual_2


class BookGPT(nn.Module):  # GPTModel, with the output head tied to the token embeddings as GPT-2
    def __init__(self, vocab, ctx, d, layers, heads):
        super().__init__()
        self.tok_emb, self.pos_emb = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.trf_blocks = nn.Sequential(*[BookBlock(d, ctx, heads) for _ in range(layers)])
        self.final_norm = BookLayerNorm(d)

    def forward(self, ids):
        T = ids.shape[1]
        self.embeddings = self.tok_emb(ids) + self.pos_emb(torch.arange(T))
        x = self.trf_blocks(self.embeddings)
        self.ln_f = self.final_norm(x)
        return self.ln_f @ self.tok_emb.weight.T  # out_head.weight = wte


def gpt2_tensors(m, naming):
    """The checkpoint's tensors: Hugging Face names in Conv1D (x·W) layout, or nanoGPT's in nn.Linear layout."""
    linear = naming == "nanogpt"
    pre = "transformer." if linear else ""
    lw = lambda l: l.weight if linear else l.weight.T
    t = {pre + "wte.weight": m.tok_emb.weight, pre + "wpe.weight": m.pos_emb.weight,
         pre + "ln_f.weight": m.final_norm.scale, pre + "ln_f.bias": m.final_norm.shift}
    for i, b in enumerate(m.trf_blocks):
        h = f"{pre}h.{i}."
        a = b.att
        t[h + "ln_1.weight"], t[h + "ln_1.bias"] = b.norm1.scale, b.norm1.shift
        t[h + "ln_2.weight"], t[h + "ln_2.bias"] = b.norm2.scale, b.norm2.shift
        t[h + "attn.c_attn.weight"] = torch.cat([lw(a.W_query), lw(a.W_key), lw(a.W_value)], dim=0 if linear else 1)
        t[h + "attn.c_attn.bias"] = torch.cat([a.W_query.bias, a.W_key.bias, a.W_value.bias])
        t[h + "attn.c_proj.weight"], t[h + "attn.c_proj.bias"] = lw(a.out_proj), a.out_proj.bias
        t[h + "mlp.c_fc.weight"], t[h + "mlp.c_fc.bias"] = lw(b.ff[0]), b.ff[0].bias
        t[h + "mlp.c_proj.weight"], t[h + "mlp.c_proj.bias"] = lw(b.ff[2]), b.ff[2].bias
        if not linear:
            T = m.pos_emb.weight.shape[0]
            t[h + "attn.bias"] = torch.tril(torch.ones(T, T)).view(1, 1, T, T)  # a buffer old checkpoints carry: ignored
    if linear:
        t["lm_head.weight"] = m.tok_emb.weight
    return t


def write_safetensors(path, tensors, dtype):
    names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}
    header, blobs, offset = {"__metadata__": {"format": "pt", "made_by": "tests/make_goldens.py"}}, [], 0
    for name, t in tensors.items():
        if t.dtype == torch.uint8:  # bytes as they are (MXFP4's blocks and scales)
            raw = t.contiguous().numpy().tobytes()
            header[name] = {"dtype": "U8", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
            blobs.append(raw)
            offset += len(raw)
            continue
        t = t.detach().to(dtype).contiguous()
        raw = t.view(torch.int16).numpy().tobytes() if dtype != torch.float32 else t.numpy().tobytes()
        header[name] = {"dtype": names[dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def gpt2_cases():
    cases = []
    data = os.path.join(HERE, "data")
    for name, naming, dtype, seed, (vocab, ctx, d, layers, heads) in [
            ("tiny_gpt2_hf_f32", "huggingface", torch.float32, 1, (50, 16, 16, 2, 4)),
            ("tiny_gpt2_nano_f32", "nanogpt", torch.float32, 2, (40, 12, 24, 3, 3)),
            ("tiny_gpt2_hf_f16", "huggingface", torch.float16, 3, (50, 16, 16, 2, 2)),
            ("tiny_gpt2_hf_bf16", "huggingface", torch.bfloat16, 4, (30, 8, 8, 1, 2))]:
        torch.manual_seed(seed)
        m = BookGPT(vocab, ctx, d, layers, heads)
        with torch.no_grad():
            for mod in m.modules():  # LayerNorms away from 1 and 0, so that a mix-up shows
                if isinstance(mod, BookLayerNorm):
                    mod.scale.uniform_(0.5, 1.5)
                    mod.shift.uniform_(-0.2, 0.2)
            for p_ in m.parameters():  # the model computes with what the file holds
                p_.copy_(p_.to(dtype).float())
        m.eval()
        write_safetensors(os.path.join(data, name + ".safetensors"), gpt2_tensors(m, naming), dtype)
        g = torch.Generator().manual_seed(seed)
        for T, layer in [(5, 0), (ctx, layers - 1)]:
            ids = torch.randint(0, vocab, (1, T), generator=g)
            with torch.no_grad():
                logits = m(ids)[0, -1]
            b = m.trf_blocks[layer]
            exp = {"embeddings": m.embeddings[0], "queries": b.att.q[0], "keys": b.att.k[0], "values": b.att.v[0],
                   "weights": b.att.w[0], "context": b.att.context[0], "output": b.attention[0], "ln_f": m.ln_f[0]}
            for key in ["ln_1", "attention", "residual_1", "ln_2", "mlp_hidden", "mlp", "residual_2"]:
                exp[f"layer{layer + 1}.{key}"] = getattr(b, key)[0]
            probs = torch.softmax(logits, dim=-1)
            top = torch.argsort(probs, descending=True, stable=True)[:5]
            exp.update({"top_k_ids": top.float(), "top_k_logits": logits[top], "top_k_probs": probs[top]})
            args = ["gpt2", "--model", "@SRC@/tests/data/" + name + ".safetensors", "--heads", str(heads),
                    "--ids", ",".join(str(i) for i in ids[0].tolist()), "--layer", str(layer + 1)]
            cases.append(case(f"{name}_T{T}_layer{layer + 1}", args, None, exp, ["top_k_ids"]))
            if T < ctx:  # the book's generate_text_simple: greedy, the whole sequence again for every token
                n = min(4, ctx - T)
                seq = ids
                with torch.no_grad():
                    for _ in range(n):
                        nxt = torch.argmax(m(seq)[:, -1], dim=-1, keepdim=True)
                        seq = torch.cat([seq, nxt], dim=1)
                cases.append(case(f"{name}_T{T}_generate{n}", args + ["--generate", str(n)], None,
                                  {"generated_ids": seq[0, T:].float()}, ["generated_ids"]))
    return cases


# ---- today's families: Llama 3, Qwen3, Gemma 3, written as the textbook's standalone notebooks -----
# (torch 1.13 has no nn.RMSNorm: the RMSNorm below is the Qwen3 notebook's, and Gemma's the
# Gemma 3 notebook's with its (1 + scale).) Each model is saved as a tiny Hugging Face folder.

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


# ---- small tokenizer.json files of their own, in the formats the real ones use ---------------
CORPUS = ("the cat sat on the mat and the dog sat on the log while the bird sang in the tree "
          "attention is what the model pays to the tokens before it and the weights sum to one ") * 3
LLAMA3_SPLIT = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN_SPLIT = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"


def byte_chars():  # GPT-2's bytes_to_unicode
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def train_bpe(words, base, n_merges):
    """Plain BPE training: the most frequent adjacent pair, first seen wins ties."""
    words = [list(w) for w in words]
    vocab, merges = list(base), []
    for _ in range(n_merges):
        counts = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        a, b = max(counts, key=lambda p: counts[p])
        merges.append((a, b))
        vocab.append(a + b)
        for w in words:
            i = 0
            while i + 1 < len(w):
                if w[i] == a and w[i + 1] == b:
                    w[i:i + 2] = [a + b]
                i += 1
    return vocab, merges


def bpe_encode(piece, ranks, vocab):
    """Merges by rank, lowest first (the pieces these goldens use are lower-case words)."""
    w = list(piece)
    while len(w) > 1:
        pairs = [(ranks.get((a, b), 1 << 30), i) for i, (a, b) in enumerate(zip(w, w[1:]))]
        rank, i = min(pairs)
        if rank == 1 << 30:
            break
        w[i:i + 2] = [w[i] + w[i + 1]]
    return [vocab[t] for t in w]


def tiny_tokenizer(kind, size, family):
    """tokenizer.json and an encoder for simple lower-case text (for the goldens)."""
    if kind == "byte_level":
        bc = byte_chars()
        specials = ["<|begin_of_text|>", "<|end_of_text|>"] if family == "llama" else ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        words = ["".join(bc[b] for b in (("" if i == 0 else " ") + w).encode()) for i, w in enumerate(CORPUS.split())]
        vocab, merges = train_bpe(words, [bc[b] for b in range(256)], size - 256 - len(specials))
        ids = {t: i for i, t in enumerate(vocab)}
        added = [{"id": len(vocab) + k, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                  "special": True} for k, t in enumerate(specials)]
        doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
               "normalizer": {"type": "NFC"} if family == "qwen3" else None,
               "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                   {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT if family == "llama" else QWEN_SPLIT}, "behavior": "Isolated", "invert": False},
                   {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
               "post_processor": {"type": "Sequence", "processors": [
                   {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}] + ([
                   {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                                                            {"Sequence": {"id": "A", "type_id": 0}}],
                    "pair": [], "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [len(vocab)],
                                                                          "tokens": ["<|begin_of_text|>"]}}}] if family == "llama" else [])},
               "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
               "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None, "end_of_word_suffix": None,
                         "fuse_unk": False, "byte_fallback": False, "ignore_merges": family == "llama", "vocab": ids,
                         "merges": [a + " " + b for a, b in merges] if family == "llama" else [[a, b] for a, b in merges]}}
        ranks = {m: r for r, m in enumerate(merges)}

        def encode(text):  # lower-case words and single spaces: " word" pieces
            out = [len(vocab)] if family == "llama" else []
            for i, w in enumerate(text.split(" ")):
                piece = "".join(bc[b] for b in (("" if i == 0 else " ") + w).encode())
                out += [ids[piece]] if family == "llama" and piece in ids else bpe_encode(piece, ranks, ids)
            return out
        return doc, encode
    # SentencePiece-style (Gemma): ▁ for a space, <unk> for what the vocabulary lacks
    specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
    chars = ["▁"] + sorted(set(CORPUS.replace(" ", "")))
    words = [("▁" if i else "") + w for i, w in enumerate(CORPUS.split())]
    vocab, merges = train_bpe(words, specials + chars, size - len(specials) - len(chars))
    ids = {t: i for i, t in enumerate(vocab)}
    added = [{"id": k, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
             for k, t in enumerate(specials)]
    doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
           "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
           "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": False},
           "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}},
                                                                      {"Sequence": {"id": "A", "type_id": 0}}],
                              "pair": [], "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]}}},
           "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                                                         {"type": "ByteFallback"}, {"type": "Fuse"}]},
           "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None, "end_of_word_suffix": None,
                     "fuse_unk": True, "byte_fallback": False, "ignore_merges": False, "vocab": ids, "merges": [[a, b] for a, b in merges]}}
    ranks = {m: r for r, m in enumerate(merges)}
    return doc, lambda text: [2] + bpe_encode(text.replace(" ", "▁"), ranks, ids)


def write_folder(folder, m, dtype, shards):
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        if f.startswith("model") or f == "tokenizer.json":
            os.remove(os.path.join(folder, f))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(modern_config(m.cfg, dtype), f, indent=2)
    write_tensors(folder, modern_tensors(m), dtype, shards)


def write_tensors(folder, tensors, dtype, shards):
    """model.safetensors, or `shards` files and their model.safetensors.index.json."""
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), tensors, dtype)
        return
    names = list(tensors)
    weight_map = {}
    for k in range(shards):
        part = names[k::shards]
        shard = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(os.path.join(folder, shard), {n: tensors[n] for n in part}, dtype)
        weight_map.update({n: shard for n in part})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"made_by": "tests/make_goldens.py"}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)


def as_stored(m, dtype, norm_scale):
    """Norms away from their identity, so that a mix-up shows (Gemma's stored around 0); then
    every parameter as the file holds it (rounded to dtype), the model in eval mode."""
    with torch.no_grad():
        for mod in m.modules():
            scale = norm_scale(mod)
            if scale is not None:
                scale.uniform_(-0.5, 0.5) if mod.gemma else scale.uniform_(0.5, 1.5)
        for p_ in m.parameters():  # the model computes with what the file holds
            p_.copy_(p_.to(dtype).float())
    m.eval()


def text_case(name, m, encode):
    """A text through the folder's tokenizer.json: its ids, the final norm, the next token."""
    text = "the cat sat on the mat and the bird sang"
    tids = torch.tensor([encode(text)])
    with torch.no_grad():
        tl = m(tids)[0, -1]
    tp = torch.softmax(tl, dim=-1)
    ttop = torch.argsort(tp, descending=True, stable=True)[:5]
    return case(f"{name}_text", ["model", "--model", "@SRC@/tests/data/models/" + name, "--text", text],
                None, {"token_ids": tids[0].float(), "ln_f": m.ln_f[0], "top_k_ids": ttop.float(),
                       "top_k_probs": tp[ttop]}, ["token_ids", "top_k_ids"])


def greedy_case(name, m, ids, args, n):
    """Greedy decoding, the whole sequence run again for every token (attnwalk: through its cache)."""
    T, seq = ids.shape[1], ids
    with torch.no_grad():
        for _ in range(n):
            nxt = torch.argmax(m(seq)[:, -1], dim=-1, keepdim=True)
            seq = torch.cat([seq, nxt], dim=1)
    return case(f"{name}_T{T}_generate{n}", args + ["--generate", str(n)], None,
                {"generated_ids": seq[0, T:].float()}, ["generated_ids"])


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
        g = torch.Generator().manual_seed(seed)
        L = len(cfg["sliding"])
        for T, layer in [(5, 0), (10, L - 1)] + ([(10, 0)] if cfg["family"] == "gemma3_text" else []):
            ids = torch.randint(0, cfg["vocab"], (1, T), generator=g)
            with torch.no_grad():
                logits = m(ids)[0, -1]
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
            probs = torch.softmax(logits, dim=-1)
            top = torch.argsort(probs, descending=True, stable=True)[:5]
            exp.update({"top_k_ids": top.float(), "top_k_logits": logits[top], "top_k_probs": probs[top]})
            args = ["model", "--model", "@SRC@/tests/data/models/" + name, "--ids", ",".join(str(i) for i in ids[0].tolist()),
                    "--layer", str(layer + 1)]
            cases.append(case(f"{name}_T{T}_layer{layer + 1}", args, None, exp, ["top_k_ids"]))
            if encode and T == 10 and layer == L - 1:  # a text through the folder's tokenizer.json
                cases.append(text_case(name, m, encode))
            if T == 5:  # greedy, the whole sequence again for every token
                cases.append(greedy_case(name, m, ids, args, 4))
    return cases


# ---- OLMo 2, OLMo 3, SmolLM3: written the way Hugging Face's modeling_olmo2.py, modeling_olmo3.py and
# modeling_smollm3.py compute (eager attention, repeat_kv, rotate_half, the RMSNorm's float32 and its cast
# back), with the rotary tables of modeling_rope_utils.py (default and yarn). One class for the three: what
# differs is the config, as in the library. Each is saved as a tiny Hugging Face folder.

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
    def __init__(self, inv_freq, attention_scaling):
        super().__init__()
        self.inv_freq, self.attention_scaling = inv_freq, attention_scaling

    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.angles = emb[0]
        return (emb.cos() * self.attention_scaling).to(x.dtype), (emb.sin() * self.attention_scaling).to(x.dtype)


def hf_rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def hf_repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class HFAttention(nn.Module):  # Olmo2Attention / Olmo3Attention / SmolLM3Attention, eager
    def __init__(self, cfg, layer_idx):
        super().__init__()
        C, H, G, d = cfg["C"], cfg["H"], cfg["G"], cfg["d"]
        self.head_dim, self.num_key_value_groups, self.scaling = d, H // G, d ** -0.5
        self.q_proj = nn.Linear(C, H * d, bias=False)
        self.k_proj = nn.Linear(C, G * d, bias=False)
        self.v_proj = nn.Linear(C, G * d, bias=False)
        self.o_proj = nn.Linear(H * d, C, bias=False)
        self.olmo = cfg["family"] in ("olmo2", "olmo3")
        if self.olmo:  # over the whole projections
            self.q_norm, self.k_norm = HFRMSNorm(H * d, cfg["eps"]), HFRMSNorm(G * d, cfg["eps"])
        self.sliding_window = cfg["window"] if cfg["types"][layer_idx] == "sliding_attention" else None
        self.use_rope = cfg.get("no_rope", [1] * len(cfg["types"]))[layer_idx]

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        self.q, self.k, self.v = self.q_proj(hidden_states), self.k_proj(hidden_states), self.v_proj(hidden_states)
        q, k = (self.q_norm(self.q), self.k_norm(self.k)) if self.olmo else (self.q, self.k)
        query_states = q.view(hidden_shape).transpose(1, 2)
        key_states = k.view(hidden_shape).transpose(1, 2)
        value_states = self.v.view(hidden_shape).transpose(1, 2)
        self.q_normed, self.k_normed = query_states, key_states
        if self.use_rope:
            cos, sin = position_embeddings
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
            query_states = (query_states * cos) + (hf_rotate_half(query_states) * sin)
            key_states = (key_states * cos) + (hf_rotate_half(key_states) * sin)
        self.q_rot, self.k_rot = query_states, key_states
        key_states = hf_repeat_kv(key_states, self.num_key_value_groups)
        value_states = hf_repeat_kv(value_states, self.num_key_value_groups)
        self.scores = torch.matmul(query_states, key_states.transpose(2, 3))
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        self.w = attn_weights
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
        self.context = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(self.context)


class HFMLP(nn.Module):  # down_proj(act_fn(gate_proj(x)) * up_proj(x)): silu, or gelu_pytorch_tanh (Gemma)
    def __init__(self, C, hidden, gelu=False):
        super().__init__()
        self.gelu = gelu
        self.gate_proj = nn.Linear(C, hidden, bias=False)
        self.up_proj = nn.Linear(C, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, C, bias=False)

    def forward(self, x):
        gate = self.gate_proj(x)
        act = nn.functional.gelu(gate, approximate="tanh") if self.gelu else nn.functional.silu(gate)
        self.hidden = act * self.up_proj(x)
        return self.down_proj(self.hidden)


class HFDecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        gemma = cfg["family"] == "gemma"
        self.self_attn, self.mlp = HFAttention(cfg, layer_idx), HFMLP(cfg["C"], cfg["hidden"], gelu=gemma)
        self.post_norm = cfg["family"] in ("olmo2", "olmo3")
        if self.post_norm:  # Olmo2DecoderLayer: the norms after each sublayer
            self.post_attention_layernorm = HFRMSNorm(cfg["C"], cfg["eps"])
            self.post_feedforward_layernorm = HFRMSNorm(cfg["C"], cfg["eps"])
        else:  # LlamaDecoderLayer, GemmaDecoderLayer
            self.input_layernorm = HFRMSNorm(cfg["C"], cfg["eps"], gemma)
            self.post_attention_layernorm = HFRMSNorm(cfg["C"], cfg["eps"], gemma)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        if not self.post_norm:
            hidden_states = self.ln_1 = self.input_layernorm(hidden_states)
        hidden_states = self.attention = self.self_attn(hidden_states, position_embeddings, attention_mask)
        if self.post_norm:
            hidden_states = self.attention_norm = self.post_attention_layernorm(hidden_states)
        hidden_states = self.residual_1 = residual + hidden_states
        residual = hidden_states
        if not self.post_norm:
            hidden_states = self.ln_2 = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp_out = self.mlp(hidden_states)
        self.mlp_hidden = self.mlp.hidden
        if self.post_norm:
            hidden_states = self.mlp_norm = self.post_feedforward_layernorm(hidden_states)
        self.residual_2 = residual + hidden_states
        return self.residual_2


class HFModel(nn.Module):  # Olmo2ForCausalLM / Olmo3ForCausalLM / SmolLM3ForCausalLM
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab"], cfg["C"])
        self.layers = nn.ModuleList([HFDecoderLayer(cfg, i) for i in range(len(cfg["types"]))])
        self.norm = HFRMSNorm(cfg["C"], cfg["eps"], cfg["family"] == "gemma")
        self.lm_head = nn.Linear(cfg["C"], cfg["vocab"], bias=False)
        rope = cfg.get("rope_scaling")
        full = hf_yarn_inv_freq(cfg["theta"], cfg["d"], rope, cfg["ctx"]) if rope else hf_default_inv_freq(cfg["theta"], cfg["d"])
        self.rotary_full = HFRotary(*full)
        self.rotary_sliding = HFRotary(*hf_default_inv_freq(cfg["theta"], cfg["d"]))  # Olmo3: sliding layers unscaled

    def forward(self, input_ids):
        T = input_ids.shape[1]
        self.tokens = self.embed_tokens(input_ids)
        hidden_states = self.tokens
        if self.cfg["family"] == "gemma":  # GemmaModel: × √hidden_size, as a tensor of the embeddings' dtype
            hidden_states = hidden_states * torch.tensor(self.cfg["C"] ** 0.5, dtype=hidden_states.dtype)
        self.embeddings = hidden_states
        position_ids = torch.arange(T).unsqueeze(0)
        full = self.rotary_full(hidden_states, position_ids)
        sliding = self.rotary_sliding(hidden_states, position_ids)
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        neg = torch.finfo(torch.float32).min  # masking_utils: the dtype's minimum where masked
        causal = torch.where(j <= i, 0.0, neg)[None, None]
        window = self.cfg.get("window") or T + 1
        local = torch.where((j <= i) & (i - j < window), 0.0, neg)[None, None]
        for layer in self.layers:
            if layer.self_attn.sliding_window:
                hidden_states = layer(hidden_states, local, sliding)
            else:
                hidden_states = layer(hidden_states, causal, full)
        self.ln_f = self.norm(hidden_states)
        head = self.embed_tokens.weight if self.cfg["tied"] else self.lm_head.weight
        return self.ln_f @ head.T


def hf_tensors(m):
    t = {"model.embed_tokens.weight": m.embed_tokens.weight, "model.norm.weight": m.norm.weight}
    for i, layer in enumerate(m.layers):
        p = f"model.layers.{i}."
        a = layer.self_attn
        for name in ["q_proj", "k_proj", "v_proj", "o_proj"]:
            t[p + f"self_attn.{name}.weight"] = getattr(a, name).weight
        if a.olmo:
            t[p + "self_attn.q_norm.weight"], t[p + "self_attn.k_norm.weight"] = a.q_norm.weight, a.k_norm.weight
            t[p + "post_attention_layernorm.weight"] = layer.post_attention_layernorm.weight
            t[p + "post_feedforward_layernorm.weight"] = layer.post_feedforward_layernorm.weight
        else:
            t[p + "input_layernorm.weight"] = layer.input_layernorm.weight
            t[p + "post_attention_layernorm.weight"] = layer.post_attention_layernorm.weight
        for name in ["gate_proj", "up_proj", "down_proj"]:
            t[p + f"mlp.{name}.weight"] = getattr(layer.mlp, name).weight
    if not m.cfg["tied"]:
        t["lm_head.weight"] = m.lm_head.weight
    return t


def hf_config(cfg, dtype):
    family = cfg["family"]
    c = {"architectures": [{"olmo2": "Olmo2ForCausalLM", "olmo3": "Olmo3ForCausalLM", "smollm3": "SmolLM3ForCausalLM", "gemma": "GemmaForCausalLM"}[family]],
         "model_type": family, "vocab_size": cfg["vocab"], "hidden_size": cfg["C"], "intermediate_size": cfg["hidden"],
         "num_hidden_layers": len(cfg["types"]), "num_attention_heads": cfg["H"], "num_key_value_heads": cfg["G"],
         "max_position_embeddings": cfg["ctx"], "rms_norm_eps": cfg["eps"], "rope_theta": cfg["theta"], "hidden_act": "silu",
         "attention_bias": False, "attention_dropout": 0.0, "tie_word_embeddings": cfg["tied"], "pad_token_id": 1, "eos_token_id": 0,
         "rope_scaling": cfg.get("rope_scaling"), "torch_dtype": {torch.float32: "float32", torch.bfloat16: "bfloat16"}[dtype]}
    if family == "olmo3":
        c.update({"sliding_window": cfg["window"], "layer_types": cfg["types"]})
    if family == "gemma":
        c.update({"head_dim": cfg["d"], "hidden_activation": "gelu_pytorch_tanh", "hidden_act": "gelu"})
    if family == "smollm3":
        c.update({"no_rope_layers": cfg["no_rope"], "use_sliding_window": False, "sliding_window": None, "mlp_bias": False,
                  "layer_types": cfg["types"], "no_rope_layer_interval": 4})
    return c


HF_FAMILIES = [  # name, dtype, shards, seed, configuration
    ("tiny_olmo2", torch.float32, 1, 16, dict(family="olmo2", vocab=300, tokenizer="byte_level", C=32, hidden=48, H=4, G=2, d=8, ctx=64,
                                               eps=1e-6, theta=500000.0, tied=False, types=["full_attention"] * 2)),
    ("tiny_olmo3", torch.bfloat16, 2, 17, dict(family="olmo3", vocab=300, tokenizer="byte_level", C=32, hidden=48, H=4, G=2, d=8, ctx=128,
                                                eps=1e-6, theta=500000.0, tied=False, window=3,
                                                types=["sliding_attention"] * 3 + ["full_attention"],
                                                rope_scaling={"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 16,
                                                              "attention_factor": 1.2079441541679836, "beta_fast": 32, "beta_slow": 1})),
    ("tiny_smollm3", torch.float32, 1, 18, dict(family="smollm3", vocab=300, tokenizer="byte_level", C=32, hidden=48, H=4, G=2, d=8, ctx=64,
                                                 eps=1e-6, theta=2000000.0, tied=True, types=["full_attention"] * 4, no_rope=[1, 1, 1, 0])),
    ("tiny_gemma", torch.bfloat16, 1, 19, dict(family="gemma", vocab=64, tokenizer="sentencepiece", C=32, hidden=48, H=4, G=1, d=8, ctx=64,
                                               eps=1e-6, theta=10000.0, tied=True, types=["full_attention"] * 2)),
]


def write_weights_folder(folder, config, tensors, dtype, shards):
    """config.json and the weights, the folder's old weights and tokenizer.json removed first."""
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        if f.startswith("model") or f == "tokenizer.json":
            os.remove(os.path.join(folder, f))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_tensors(folder, tensors, dtype, shards)


def write_hf_folder(folder, m, dtype, shards, config):
    write_weights_folder(folder, config, hf_tensors(m), dtype, shards)


# ---- multi-head latent attention: DeepseekV3Attention's forward in modeling_deepseek_v3.py (eager path, no
# cache), its layers built in its order with nn.Linear's own initialisation after torch.manual_seed, as the
# textbook's ch04/05_mla builds MultiHeadLatentAttention; the absorbed form written out beside it.

class LatentAttention(nn.Module):
    def __init__(self, hidden, heads, kv_lora_rank, q_lora_rank, nope, rope, v_dim, theta, interleave):
        super().__init__()
        self.heads, self.kv_lora_rank, self.q_lora_rank = heads, kv_lora_rank, q_lora_rank
        self.nope, self.rope, self.v_dim, self.qk = nope, rope, v_dim, nope + rope
        self.theta, self.interleave = theta, interleave
        if q_lora_rank is None:
            self.q_proj = nn.Linear(hidden, heads * self.qk, bias=False)
        else:
            self.q_a_proj = nn.Linear(hidden, q_lora_rank, bias=False)
            self.q_a_layernorm = HFRMSNorm(q_lora_rank, 1e-6)
            self.q_b_proj = nn.Linear(q_lora_rank, heads * self.qk, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(hidden, kv_lora_rank + rope, bias=False)
        self.kv_a_layernorm = HFRMSNorm(kv_lora_rank, 1e-6)
        self.kv_b_proj = nn.Linear(kv_lora_rank, heads * (nope + v_dim), bias=False)
        self.o_proj = nn.Linear(heads * v_dim, hidden, bias=False)
        self.scaling = self.qk ** (-0.5)

    def forward(self, hidden_states):
        out = {}
        batch_size, seq_length = hidden_states.shape[:-1]
        query_shape = (batch_size, seq_length, -1, self.qk)
        key_shape = (batch_size, seq_length, -1, self.nope + self.v_dim)
        if self.q_lora_rank is None:
            q_states = self.q_proj(hidden_states)
        else:
            out["query_latent"] = self.q_a_proj(hidden_states)
            out["query_latent_normed"] = self.q_a_layernorm(out["query_latent"])
            q_states = self.q_b_proj(out["query_latent_normed"])
        out["queries"] = q_states
        q_states = q_states.view(query_shape).transpose(1, 2)
        q_pass, q_rot = torch.split(q_states, [self.nope, self.rope], dim=-1)
        compressed_kv = self.kv_a_proj_with_mqa(hidden_states)
        out["kv_down"] = compressed_kv
        k_pass, k_rot = torch.split(compressed_kv, [self.kv_lora_rank, self.rope], dim=-1)
        latent = self.kv_a_layernorm(k_pass)
        out["latent"] = latent
        k_pass = self.kv_b_proj(latent).view(key_shape).transpose(1, 2)
        k_pass, value_states = torch.split(k_pass, [self.nope, self.v_dim], dim=-1)
        k_rot = k_rot.view(batch_size, 1, seq_length, self.rope)
        if self.rope:
            inv_freq, scaling = hf_default_inv_freq(self.theta, self.rope)
            cos, sin = HFRotary(inv_freq, scaling)(hidden_states, torch.arange(seq_length)[None])
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
            if self.interleave:  # apply_rotary_pos_emb_interleave
                b, h, s_, d = q_rot.shape
                q_rot = q_rot.reshape(b, h, s_, d // 2, 2).transpose(4, 3).reshape(b, h, s_, d)
                b, h, s_, d = k_rot.shape
                k_rot = k_rot.reshape(b, h, s_, d // 2, 2).transpose(4, 3).reshape(b, h, s_, d)
            q_rot = (q_rot * cos) + (hf_rotate_half(q_rot) * sin)
            k_rot = (k_rot * cos) + (hf_rotate_half(k_rot) * sin)
        out.update(queries_nope=q_pass, queries_rope=q_rot, keys_rope=k_rot[:, 0], keys_nope=k_pass, values=value_states)
        k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
        query_states = torch.cat((q_pass, q_rot), dim=-1)
        key_states = torch.cat((k_pass, k_rot), dim=-1)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
        mask = torch.full((seq_length, seq_length), float("-inf")).triu(1)
        attn_weights = nn.functional.softmax(attn_weights + mask, dim=-1, dtype=torch.float32)
        out["scores_nope"] = q_pass @ k_pass.transpose(2, 3)
        out["scores_rope"] = q_rot @ k_rot.transpose(2, 3)
        out["weights"] = attn_weights
        attn_output = torch.matmul(attn_weights, value_states)
        out["head_outputs"] = attn_output
        attn_output = attn_output.transpose(1, 2).contiguous().reshape(batch_size, seq_length, -1)
        out["context"] = attn_output
        out["output"] = self.o_proj(attn_output)
        # absorbed: W_UK into the query, the values kept latent until W_UV
        w_kvb = self.kv_b_proj.weight.view(self.heads, self.nope + self.v_dim, self.kv_lora_rank)
        w_uk, w_uv = w_kvb[:, :self.nope], w_kvb[:, self.nope:]
        q_latent = torch.einsum("bhtn,hnr->bhtr", q_pass, w_uk)
        scores = (q_latent @ latent[:, None].transpose(2, 3) + q_rot @ k_rot.transpose(2, 3)) * self.scaling
        weights = torch.softmax(scores + mask, dim=-1)
        latent_context = weights @ latent[:, None]
        heads_out = torch.einsum("bhtr,hvr->bhtv", latent_context, w_uv)
        out.update({"absorbed.queries_latent": q_latent, "absorbed.scores_nope": q_latent @ latent[:, None].transpose(2, 3),
                    "absorbed.weights": weights, "absorbed.latent_context": latent_context,
                    "absorbed.output": self.o_proj(heads_out.transpose(1, 2).reshape(batch_size, seq_length, -1))})
        return out

    def parameters_xw(self):
        names = (["q_proj"] if self.q_lora_rank is None else ["q_a_proj", "q_b_proj"]) + ["kv_a_proj_with_mqa", "kv_b_proj", "o_proj"]
        return {n.replace("_with_mqa", "") + ".weight": getattr(self, n).weight.T for n in names}


def mla_cases():
    cases = []
    for heads, r, rq, nope, rope, v, theta, inter, seed, inp in [
            (2, 2, None, 2, 2, 2, 10000, False, 123, "builtin"), (2, 2, 2, 2, 2, 2, 10000, False, 123, "builtin"),
            (4, 3, None, 4, 4, 3, 10000, True, 7, "builtin"), (3, 5, 4, 2, 0, 4, 10000, False, 11, "rand9x5"),
            (2, 4, 3, 3, 6, 2, 500, False, 5, "batch2x7x4")]:
        x = torch.tensor(BUILTIN)[None] if inp == "builtin" else random_input(5, 9, 5)[None] if inp == "rand9x5" else random_input(6, 7, 4, 2)
        torch.manual_seed(seed)
        m = LatentAttention(x.shape[-1], heads, r, rq, nope, rope, v, theta, inter)
        with torch.no_grad():
            out = m(x)
        exp = {k: (t[0] if inp != "batch2x7x4" else t) for k, t in out.items()}
        if not rope:
            for k in ("queries_rope", "keys_rope", "scores_rope"):
                exp.pop(k)
        params = m.parameters_xw()
        exp.update(params)
        args = ["mla", "--heads", str(heads), "--kv-lora-rank", str(r), "--qk-nope-head-dim", str(nope), "--qk-rope-head-dim", str(rope),
                "--v-head-dim", str(v), "--seed", str(seed)] + (["--rope-base", str(theta)] if rope else [])
        args += (["--q-lora-rank", str(rq)] if rq else []) + (["--rope-interleave"] if inter else [])
        name = f"mla_h{heads}_r{r}_rq{rq}_n{nope}_p{rope}_v{v}_base{theta}{'_interleave' if inter else ''}_seed{seed}_{inp}"
        cases.append(case(name, args, None if inp == "builtin" else (x[0] if inp == "rand9x5" else x), exp, list(params)))
    return cases


# ---- Gated DeltaNet: the textbook's GatedDeltaNet class (ch04/08_deltanet), its layers built in its
# order after torch.manual_seed, with one write strength β per head as Qwen3-Next's layer has it (the
# textbook's W_beta gives one per feature); its loop is torch_recurrent_gated_delta_rule's; the chunked
# form is torch_chunk_gated_delta_rule from modeling_qwen3_next.py, and the effective attention matrix
# is the outputs' matrix found column by column: the layer is linear in the values once q, k, α and β
# are fixed, so A[:, j] is the output for the one-hot values e_j.

def l2norm(x, dim=-1, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(dim=dim, keepdim=True) + eps)


def recurrent_gated_delta_rule(q, k, v, g, beta, keep=None):  # (b, h, t, d), g and beta (b, h, t)
    b, h, T, dk = k.shape
    S = torch.zeros(b, h, dk, v.shape[-1])
    outs = []
    for t in range(T):
        S = S * g[:, :, t].exp()[..., None, None]
        kv_mem = (S * k[:, :, t].unsqueeze(-1)).sum(dim=-2)
        delta = (v[:, :, t] - kv_mem) * beta[:, :, t].unsqueeze(-1)
        if keep is not None:
            keep.append({"decayed": S.clone(), "prediction": kv_mem, "error": v[:, :, t] - kv_mem,
                         "write": k[:, :, t].unsqueeze(-1) * delta.unsqueeze(-2)})
        S = S + k[:, :, t].unsqueeze(-1) * delta.unsqueeze(-2)
        y = (S * q[:, :, t].unsqueeze(-1)).sum(dim=-2)
        if keep is not None:
            keep[-1].update(state=S.clone(), output=y)
        outs.append(y)
    return torch.stack(outs, dim=2)


def chunk_gated_delta_rule(query, key, value, g, beta, chunk_size):  # torch_chunk_gated_delta_rule, q already scaled
    batch_size, num_heads, sequence_length, k_head_dim = key.shape
    v_head_dim = value.shape[-1]
    pad_size = (chunk_size - sequence_length % chunk_size) % chunk_size
    query = F.pad(query, (0, 0, 0, pad_size))
    key = F.pad(key, (0, 0, 0, pad_size))
    value = F.pad(value, (0, 0, 0, pad_size))
    beta = F.pad(beta, (0, pad_size))
    g = F.pad(g, (0, pad_size))
    total_sequence_length = sequence_length + pad_size
    v_beta = value * beta.unsqueeze(-1)
    k_beta = key * beta.unsqueeze(-1)
    query, key, value, k_beta, v_beta = [
        x.reshape(x.shape[0], x.shape[1], -1, chunk_size, x.shape[-1]) for x in (query, key, value, k_beta, v_beta)]
    g = g.reshape(g.shape[0], g.shape[1], -1, chunk_size)
    mask = torch.triu(torch.ones(chunk_size, chunk_size, dtype=torch.bool), diagonal=0)
    g = g.cumsum(dim=-1)
    decay_mask = ((g.unsqueeze(-1) - g.unsqueeze(-2)).tril().exp().float()).tril()
    attn = -((k_beta @ key.transpose(-1, -2)) * decay_mask).masked_fill(mask, 0)
    for i in range(1, chunk_size):
        row = attn[..., i, :i].clone()
        sub = attn[..., :i, :i].clone()
        attn[..., i, :i] = row + (row.unsqueeze(-1) * sub).sum(-2)
    attn = attn + torch.eye(chunk_size, dtype=attn.dtype)
    value = attn @ v_beta
    k_cumdecay = attn @ (k_beta * g.exp().unsqueeze(-1))
    last_recurrent_state = torch.zeros(batch_size, num_heads, k_head_dim, v_head_dim)
    core_attn_out = torch.zeros_like(value)
    mask = torch.triu(torch.ones(chunk_size, chunk_size, dtype=torch.bool), diagonal=1)
    for i in range(0, total_sequence_length // chunk_size):
        q_i, k_i, v_i = query[:, :, i], key[:, :, i], value[:, :, i]
        attn = (q_i @ k_i.transpose(-1, -2) * decay_mask[:, :, i]).masked_fill_(mask, 0)
        v_prime = (k_cumdecay[:, :, i]) @ last_recurrent_state
        v_new = v_i - v_prime
        attn_inter = (q_i * g[:, :, i, :, None].exp()) @ last_recurrent_state
        core_attn_out[:, :, i] = attn_inter + attn @ v_new
        last_recurrent_state = (last_recurrent_state * g[:, :, i, -1, None, None].exp()
                                + (k_i * (g[:, :, i, -1, None] - g[:, :, i]).exp()[..., None]).transpose(-1, -2) @ v_new)
    core_attn_out = core_attn_out.reshape(core_attn_out.shape[0], core_attn_out.shape[1], -1, core_attn_out.shape[-1])
    return core_attn_out[:, :, :sequence_length]


class GatedDeltaNet(nn.Module):
    def __init__(self, d_in, d_out, num_heads):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.W_gate = nn.Linear(d_in, d_out, bias=False)
        self.W_beta = nn.Linear(d_in, num_heads, bias=False)  # one β per head (Qwen3-Next)
        self.W_alpha = nn.Linear(d_in, num_heads, bias=False)
        self.dt_bias = nn.Parameter(torch.ones(num_heads))
        A_init = torch.empty(num_heads).uniform_(0, 16)
        self.A_log = nn.Parameter(torch.log(A_init))
        self.norm_weight = nn.Parameter(torch.ones(self.head_dim))  # nn.RMSNorm(head_dim, eps=1e-6)
        self.out_proj = nn.Linear(d_out, d_out)

    def forward(self, x, chunk):
        out = {}
        b, T, _ = x.shape
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        out.update(queries=queries, keys=keys, values=values)
        beta = torch.sigmoid(self.W_beta(x))
        alpha_log = -self.A_log.exp().view(1, 1, -1) * F.softplus(self.W_alpha(x) + self.dt_bias)
        gate = self.W_gate(x)
        keys = keys.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
        values = values.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
        queries = queries.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)
        queries = l2norm(queries, dim=-1) / (self.head_dim ** 0.5)
        keys = l2norm(keys, dim=-1)
        beta, g = beta.transpose(1, 2), alpha_log.transpose(1, 2)
        out.update(queries_normed=queries, keys_normed=keys, values_split=values, beta=beta, decay_log=g, decay=g.exp())
        steps = []
        o = recurrent_gated_delta_rule(queries, keys, values, g, beta, steps)
        for t, st in enumerate(steps):
            for name, tensor in st.items():
                out[f"step{t + 1}.{name}"] = tensor
        out["head_outputs"] = o
        # the effective matrix: the recurrence on one-hot values gives its columns
        eye = torch.eye(T).expand(b, self.num_heads, T, T)
        cols = [recurrent_gated_delta_rule(queries, keys, eye[..., j:j + 1].contiguous(), g, beta)[..., 0] for j in range(T)]
        A = torch.stack(cols, dim=-1)
        out["effective_attention"] = A
        out["effective_output"] = A @ values
        out["chunked_output"] = chunk_gated_delta_rule(queries, keys, values, g, beta, chunk)
        context = o.transpose(1, 2).contiguous()
        normed = context * torch.rsqrt(context.pow(2).mean(-1, keepdim=True) + 1e-6) * self.norm_weight
        out["outputs_normed"] = normed.reshape(b, T, self.d_out)
        out["gate"] = gate
        gated = (normed * F.silu(gate.view(b, T, self.num_heads, self.head_dim))).reshape(b, T, self.d_out)
        out["gated"] = gated
        out["output"] = self.out_proj(gated)
        return out

    def parameters_xw(self):
        return {"W_query": self.W_query.weight.T, "W_key": self.W_key.weight.T, "W_value": self.W_value.weight.T,
                "W_gate": self.W_gate.weight.T, "W_beta": self.W_beta.weight.T, "W_alpha": self.W_alpha.weight.T,
                "dt_bias": self.dt_bias, "A_log": self.A_log, "out_proj.weight": self.out_proj.weight.T,
                "out_proj.bias": self.out_proj.bias}


def deltanet_cases():
    cases = []
    for d_out, heads, chunk, seed, rate, inp in [(4, 2, 2, 123, None, "builtin"), (4, 2, 4, 7, None, "builtin"),
                                                 (6, 2, 3, 11, 0.05, "builtin"), (8, 2, 3, 5, 0.02, "rand9x5"),
                                                 (6, 3, 4, 2, None, "batch2x7x4"), (4, 2, 2, 123, 0.1, "builtin")]:
        x = torch.tensor(BUILTIN)[None] if inp == "builtin" else random_input(5, 9, 5)[None] if inp == "rand9x5" else random_input(6, 7, 4, 2)
        torch.manual_seed(seed)
        m = GatedDeltaNet(x.shape[-1], d_out, heads)
        if rate is not None:  # --decay-rate: A for every head, after the draw
            m.A_log.data = torch.log(torch.full((heads,), rate))
        with torch.no_grad():
            out = m(x, chunk)
        exp = {k: (t[0] if inp != "batch2x7x4" else t) for k, t in out.items()}
        params = m.parameters_xw()
        exp.update({k: v.detach() for k, v in params.items()})
        args = ["deltanet", "--d-out", str(d_out), "--heads", str(heads), "--chunk", str(chunk), "--seed", str(seed)]
        args += ["--decay-rate", str(rate)] if rate is not None else []
        name = f"deltanet_dout{d_out}_h{heads}_chunk{chunk}_seed{seed}{f'_rate{rate}' if rate else ''}_{inp}"
        cases.append(case(name, args, None if inp == "builtin" else (x[0] if inp == "rand9x5" else x), exp, list(params)))
    return cases


# ---- the logit lens (nostalgebraist's; TransformerLens's accumulated_resid(apply_ln=True) with the final
# norm recomputed for every row): the stream after the embeddings and after every block, each through the
# model's own final norm and unembedding. The models are rebuilt exactly as gpt2_cases and families_cases
# build (and save) them.

def lens_expect(m, head, blocks):
    streams = [m.embeddings] + [b.residual_2 for b in blocks]
    final_top = None
    tops, probs, ranks = [], [], []
    for r in reversed(streams):
        logits = m.final_norm(r)[0] @ head.T  # (T, V)
        top = torch.argmax(logits, dim=-1)
        if final_top is None:
            final_top = top
        ref = logits.gather(1, final_top[:, None])
        ids = torch.arange(logits.shape[1])[None]
        rank = (logits > ref).sum(-1) + ((logits == ref) & (ids < final_top[:, None])).sum(-1) + 1
        tops.append(top)
        probs.append(torch.softmax(logits, dim=-1).gather(1, top[:, None])[:, 0])
        ranks.append(rank)
    stack = lambda xs: torch.stack(list(reversed(xs)), dim=1).float()  # (T, layers + 1)
    return {"lens_top_ids": stack(tops), "lens_top_probs": stack(probs), "lens_final_rank": stack(ranks)}


def rollout_expect(blocks):  # Abnar & Zuidema: heads averaged, + I, rows normalised, R = A_L ... A_1
    R = None
    for b in blocks:
        A = b.att.w[0].mean(dim=0)
        A = A + torch.eye(A.shape[0])
        A = A / A.sum(dim=-1, keepdim=True)
        R = A if R is None else A @ R
    return {"rollout": R}


def ablation_expect(m, ids, blocks, ablate, each):
    """--ablate (layer, head or None) pairs, counted from 0; --ablate-each layer: the changes of the
    next token's logit and probability (the original top token) and of the prompt's mean cross-entropy."""
    def run(off):
        for i, b in enumerate(blocks):
            b.att.ablate = tuple(off.get(i, ()))
        with torch.no_grad():
            logits = m(ids)[0]
        for b in blocks:
            b.att.ablate = ()
        return logits
    base = run({})
    target = int(torch.argmax(base[-1]))
    def effect(logits):
        return torch.tensor([float(logits[-1, target]), float(torch.softmax(logits[-1], -1)[target]),
                             float(F.cross_entropy(logits[:-1], ids[0, 1:]))], dtype=torch.float64)
    b0 = effect(base)
    off = {}
    heads = blocks[0].att.heads if hasattr(blocks[0].att, "heads") else blocks[0].att.num_heads
    for layer, head in ablate:
        off.setdefault(layer, []).extend(range(heads) if head is None else [head])
    exp = {"ablation": effect(run(off)) - b0}
    exp["ablation_per_head"] = torch.stack([effect(run({each: [h]})) - b0 for h in range(heads)])
    return exp


def roles_expect(m, vocab, blocks, n, seed):  # TransformerLens's scores, without a BOS
    torch.manual_seed(seed)
    lo, hi = (1000, 10000) if vocab >= 10000 else (0, vocab)
    r = torch.randint(lo, hi, (n,))
    ids = torch.cat([r, r])[None]
    with torch.no_grad():
        m(ids)
    score = lambda offset: torch.stack([b.att.w[0].diagonal(offset=offset, dim1=-2, dim2=-1).mean(-1) for b in blocks])
    induction, previous, duplicate = score(1 - n), score(-1), score(-n)
    L, H = induction.shape
    order = torch.argsort(induction.flatten(), descending=True, stable=True)
    rows = []
    for k in order.tolist():
        l, h = divmod(k, H)
        w = blocks[l].att.w[0, h, 1:].double()  # the rows from 2
        entropy = -torch.where(w > 0, w * w.clamp_min(1e-300).log(), torch.zeros_like(w)).sum(-1).mean()
        rows.append([l + 1, h + 1, float(induction[l, h]), float(previous[l, h]), float(duplicate[l, h]), float(w[:, 0].mean()), float(entropy)])
    return {"roles_ids": ids[0].float(), "role_induction": induction, "role_previous": previous, "role_duplicate": duplicate,
            "roles_ranked": torch.tensor(rows)}


def sink_depth_expect(blocks):  # the emergent sink by depth: per layer, the rows from 2's weight on token 1, over the heads
    return {"sink_by_depth": torch.stack([b.att.w[0, :, 1:, 0].double().mean() for b in blocks]).float()}


def streaming_expect(m, ids, start, recent, n, top=5):
    # StreamingLLM (Xiao et al.): StartRecentKVCache.evict_for_space before each token, keys cached
    # before RoPE and rotated at their index in the cache, the query at the last index (its
    # llama_pos_shift_attention_forward), on the textbook's Llama/Qwen3 blocks; greedy on the kept
    # cache, each next token's distribution against the whole sequence run again (no cache).
    caches = [None] * len(m.trf_blocks)
    head = m.tok_emb.weight if m.cfg["tied"] else m.out_head.weight

    def run(tokens):
        Tn = tokens.shape[1]
        x, rows = m.tok_emb(tokens), []
        for li, b in enumerate(m.trf_blocks):
            att = b.att
            h = b.norm1(x)
            q = att.W_query(h).view(1, Tn, att.num_heads, att.head_dim).transpose(1, 2)
            k = att.W_key(h).view(1, Tn, att.num_kv_groups, att.head_dim).transpose(1, 2)
            v = att.W_value(h).view(1, Tn, att.num_kv_groups, att.head_dim).transpose(1, 2)
            if att.q_norm:
                q, k = att.q_norm(q), att.k_norm(k)
            if caches[li] is not None:
                K, V = caches[li]
                L = K.shape[2]
                if L + Tn > start + recent:  # evict_for_space(Tn)
                    K = torch.cat([K[:, :, :start], K[:, :, L - recent + Tn:]], dim=2)
                    V = torch.cat([V[:, :, :start], V[:, :, L - recent + Tn:]], dim=2)
                k, v = torch.cat([K, k], dim=2), torch.cat([V, v], dim=2)
            caches[li] = (k, v)
            nk = k.shape[2]
            qr = apply_rope(q, m.cos[nk - Tn:nk], m.sin[nk - Tn:nk])
            kr = apply_rope(k, m.cos[:nk], m.sin[:nk]).repeat_interleave(att.group_size, dim=1)
            vr = v.repeat_interleave(att.group_size, dim=1)
            mask = torch.triu(torch.ones(Tn, nk, dtype=torch.bool), diagonal=nk - Tn + 1)
            w = torch.softmax((qr @ kr.transpose(2, 3)).masked_fill(mask, -torch.inf) / att.head_dim ** 0.5, dim=-1)
            rows.append(w)
            x = x + att.out_proj((w @ vr).transpose(1, 2).reshape(1, Tn, att.d_out))
            x = x + b.ff(b.norm2(x))
        return m.final_norm(x)[0, -1] @ head.T, rows

    exp, seq, kl, overlap = {}, ids, [], []
    with torch.no_grad():
        logits, _ = run(ids)
        for step in range(n):
            nxt = int(torch.argmax(logits))
            seq = torch.cat([seq, torch.tensor([[nxt]])], dim=1)
            logits, rows = run(seq[:, -1:])
            exp[f"step{seq.shape[1]}.weights"] = rows[0][0, :, 0]
            p = torch.softmax(m(seq)[0, -1].double(), dim=-1)
            r = torch.softmax(logits.double(), dim=-1)
            kl.append(float((p * (p.log() - r.log())).sum()))
            a, c = torch.argsort(p, descending=True, stable=True)[:top], torch.argsort(r, descending=True, stable=True)[:top]
            overlap.append(len(set(a.tolist()) & set(c.tolist())))
    T, total = ids.shape[1], seq.shape[1]
    kept = list(range(min(start, total))) + list(range(max(start, total - recent), total))
    exp.update({"generated_ids": seq[0, T:].float(), "cache_kept": torch.tensor(kept).float(), "cache_kl": torch.tensor(kl),
                "cache_top_k_overlap": torch.tensor(overlap).float()})
    return exp


def heads_cases():
    cases = []
    # the chapter's toy: MultiHeadAttention on the sentence run twice, TransformerLens's three diagonals per head
    for heads, d_out, seed in [(2, 2, 123), (4, 8, 7)]:
        x = torch.tensor(BUILTIN)
        torch.manual_seed(seed)
        m = Fused(3, d_out, 0.0, heads, False, "linear")
        with torch.no_grad():
            m(torch.cat([x, x])[None])
        n, w = x.shape[0], m.w[0]
        diag = lambda offset: w.diagonal(offset=offset, dim1=-2, dim2=-1).mean(-1)
        exp = {"role_induction": diag(1 - n), "role_previous": diag(-1), "role_duplicate": diag(-n)}
        cases.append(case(f"toy_mha_head_roles_h{heads}_dout{d_out}_seed{seed}",
                          ["mha", "--heads", str(heads), "--d-out", str(d_out), "--seed", str(seed), "--head-roles"], None, exp))
    for name, seed, (vocab, ctx, d, layers, heads) in [("tiny_gpt2_hf_f32", 1, (50, 16, 16, 2, 4)), ("tiny_gpt2_nano_f32", 2, (40, 12, 24, 3, 3))]:
        torch.manual_seed(seed)
        m = BookGPT(vocab, ctx, d, layers, heads)
        with torch.no_grad():
            for mod in m.modules():
                if isinstance(mod, BookLayerNorm):
                    mod.scale.uniform_(0.5, 1.5)
                    mod.shift.uniform_(-0.2, 0.2)
        m.eval()
        ids = torch.randint(0, vocab, (1, 9), generator=torch.Generator().manual_seed(100 + seed))
        with torch.no_grad():
            m(ids)
            exp = lens_expect(m, m.tok_emb.weight, m.trf_blocks)
            exp.update(rollout_expect(m.trf_blocks))
        args = ["gpt2", "--model", "@SRC@/tests/data/" + name + ".safetensors", "--heads", str(heads),
                "--ids", ",".join(str(i) for i in ids[0].tolist()), "--logit-lens", "--rollout"]
        cases.append(case(f"{name}_logit_lens_rollout", args, None, exp, ["lens_top_ids", "lens_final_rank"]))
        cases.append(case(f"{name}_sink_by_depth", args[:-2] + ["--view"], None, sink_depth_expect(m.trf_blocks)))
        exp = ablation_expect(m, ids, m.trf_blocks, [(0, 1), (layers - 1, None)], layers - 1)
        args = args[:-2] + ["--ablate", f"1.2,{layers}.*", "--ablate-each", str(layers)]
        cases.append(case(f"{name}_ablation", args, None, exp))
        exp = roles_expect(m, vocab, m.trf_blocks, ctx // 2 - 1, seed)
        args = args[:-4] + ["--head-roles", str(ctx // 2 - 1), "--roles-seed", str(seed)]
        cases.append(case(f"{name}_roles", args, None, exp, ["roles_ids"]))
    for name, dtype, shards, seed, cfg in MODERN:
        if name not in ("tiny_llama", "tiny_gemma3", "tiny_qwen3"):
            continue
        torch.manual_seed(seed)
        m = ModernModel(cfg)
        as_stored(m, dtype, lambda mod: mod.scale if isinstance(mod, RMSNorm) else None)
        ids = torch.randint(0, cfg["vocab"], (1, 10), generator=torch.Generator().manual_seed(100 + seed))
        with torch.no_grad():
            m(ids)
            exp = lens_expect(m, m.tok_emb.weight if cfg["tied"] else m.out_head.weight, m.trf_blocks)
            exp.update(rollout_expect(m.trf_blocks))
        args = ["model", "--model", "@SRC@/tests/data/models/" + name, "--ids", ",".join(str(i) for i in ids[0].tolist()), "--logit-lens",
                "--rollout"]
        cases.append(case(f"{name}_logit_lens_rollout", args, None, exp, ["lens_top_ids", "lens_final_rank"]))
        cases.append(case(f"{name}_sink_by_depth", args[:-2] + ["--view"], None, sink_depth_expect(m.trf_blocks)))
        L = len(cfg["sliding"])
        exp = ablation_expect(m, ids, m.trf_blocks, [(0, 1), (L - 1, None)], 0)
        args = args[:-2] + ["--ablate", f"1.2,{L}.*", "--ablate-each", "1"]
        cases.append(case(f"{name}_ablation", args, None, exp))
        exp = roles_expect(m, cfg["vocab"], m.trf_blocks, 9, seed)
        args = args[:-4] + ["--head-roles", "9", "--roles-seed", str(seed)]
        cases.append(case(f"{name}_roles", args, None, exp, ["roles_ids"]))
        if name != "tiny_gemma3":  # StreamingLLM's cache: every layer full (Gemma 3's sliding layers keep their own window)
            exp = streaming_expect(m, ids, 2, 4, 6)
            args = args[:-4] + ["--generate", "6", "--streaming-cache", "2,4"]
            cases.append(case(f"{name}_streaming_cache", args, None, exp, ["generated_ids", "cache_kept", "cache_top_k_overlap"]))
    return cases


def hf_families_cases():
    cases = []
    for name, dtype, shards, seed, cfg in HF_FAMILIES:
        torch.manual_seed(seed)
        m = HFModel(cfg)
        as_stored(m, dtype, lambda mod: mod.weight if isinstance(mod, HFRMSNorm) else None)
        folder = os.path.join(HERE, "data", "models", name)
        write_hf_folder(folder, m, dtype, shards, hf_config(cfg, dtype))
        doc, encode = tiny_tokenizer(cfg["tokenizer"], cfg["vocab"], cfg["family"])
        with open(os.path.join(folder, "tokenizer.json"), "w") as f:
            json.dump(doc, f, ensure_ascii=False, indent=1)
        g = torch.Generator().manual_seed(seed)
        L = len(cfg["types"])
        for T, layer in [(5, 0), (10, L - 1)] + ([(10, 0)] if "window" in cfg else []):
            ids = torch.randint(0, cfg["vocab"], (1, T), generator=g)
            with torch.no_grad():
                logits = m(ids)[0, -1]
            b = m.layers[layer]
            a = b.self_attn
            rotary = m.rotary_sliding if a.sliding_window else m.rotary_full
            exp = {"token_embeddings": m.tokens[0], "embeddings": m.embeddings[0], "queries": a.q[0], "keys": a.k[0], "values": a.v[0],
                   "scores": a.scores[0], "weights": a.w[0], "context": a.context[0], "output": b.attention[0], "ln_f": m.ln_f[0]}
            if a.use_rope:
                exp.update({"queries_rotated": a.q_rot[0], "keys_rotated": a.k_rot[0], "rope_angles": rotary.angles[:T]})
            if a.olmo:
                exp["queries_normed"], exp["keys_normed"] = a.q_normed[0], a.k_normed[0]
            keys = ["attention", "residual_1", "mlp_hidden", "residual_2"] + (["attention_norm", "mlp_norm"] if b.post_norm else ["ln_1", "ln_2"])
            for key in keys:
                exp[f"layer{layer + 1}.{key}"] = getattr(b, key)[0]
            exp[f"layer{layer + 1}.mlp"] = b.mlp_out[0]
            probs = torch.softmax(logits, dim=-1)
            top = torch.argsort(probs, descending=True, stable=True)[:5]
            exp.update({"top_k_ids": top.float(), "top_k_logits": logits[top], "top_k_probs": probs[top]})
            args = ["model", "--model", "@SRC@/tests/data/models/" + name, "--ids", ",".join(str(i) for i in ids[0].tolist()),
                    "--layer", str(layer + 1)]
            cases.append(case(f"{name}_T{T}_layer{layer + 1}", args, None, exp, ["top_k_ids"]))
            if T == 10 and layer == L - 1:  # a text through the folder's tokenizer.json
                cases.append(text_case(name, m, encode))
            if T == 5:  # greedy, the whole sequence again for every token; attnwalk decodes through its cache
                cases.append(greedy_case(name, m, ids, args, 6))
    return cases


# ---- gpt-oss: GptOssForCausalLM as modeling_gpt_oss.py computes it (eager attention with the sinks, the
# experts' eval path over every expert), its experts stored in MXFP4 as the released checkpoints are and
# dequantised as integrations/mxfp4.py's convert_moe_packed_tensors does; everything else BF16.

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


def write_tiny_folder(name, config, tensors, dtype, shards, vocab, family):
    """A tiny test folder of tests/data/models: config.json, the weights, tokenizer.json (the old weights removed first)."""
    folder = os.path.join(HERE, "data", "models", name)
    write_weights_folder(folder, config, tensors, dtype, shards)
    doc, _ = tiny_tokenizer("byte_level", vocab, family)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)


def gpt_oss_cases():
    cases = []
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
    g = torch.Generator().manual_seed(23)
    L = len(cfg["types"])
    for T, layer in [(5, 0), (10, 1), (10, 2)]:
        ids = torch.randint(0, cfg["vocab"], (1, T), generator=g)
        with torch.no_grad():
            logits = m(ids)[0, -1]
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
        probs = torch.softmax(logits, dim=-1)
        top = torch.argsort(probs, descending=True, stable=True)[:5]
        exp.update({"top_k_ids": top.float(), "top_k_logits": logits[top], "top_k_probs": probs[top]})
        args = ["model", "--model", "@SRC@/tests/data/models/tiny_gpt_oss", "--ids", ",".join(str(i) for i in ids[0].tolist()),
                "--layer", str(layer + 1)]
        cases.append(case(f"tiny_gpt_oss_T{T}_layer{layer + 1}", args, None, exp, ["top_k_ids", f"layer{layer + 1}.experts_chosen"]))
        if T == 5:  # greedy, the whole sequence again for every token; attnwalk decodes through its cache
            cases.append(greedy_case("tiny_gpt_oss", m, ids, args, 6))
    return cases


# ---- DeepSeek-V3: DeepseekV3ForCausalLM as modeling_deepseek_v3.py computes it (eager attention on the
# concatenated [nope | rope] queries and keys, YaRN with its mscale folded into the softmax scale,
# rope_interleave; DeepseekV3TopkRouter's sigmoid scores, correction bias and group-limited top-k;
# DeepseekV3MoE's per-expert loop with index_add_ and its shared expert), on tiny folders of ours.

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


class DsMLP(nn.Module):  # DeepseekV3MLP
    def __init__(self, C, I):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = nn.Linear(C, I, bias=False), nn.Linear(C, I, bias=False), nn.Linear(I, C, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


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
        g = torch.Generator().manual_seed(seed)
        L = cfg["layers"]
        for T, layer in [(5, 0), (10, L - 1)]:
            ids = torch.randint(0, cfg["vocab"], (1, T), generator=g)
            with torch.no_grad():
                logits = m(ids)[0, -1]
            b = m.layers[layer]
            a = b.self_attn
            exp = {"token_embeddings": m.tokens[0], "queries": a.q[0], "keys": a.k[0], "values": a.v[0], "latent_kv": a.latent[0],
                   "keys_rope": a.k_rope[0], "queries_rotated": a.q_rotated[0], "scores": a.scores[0], "weights": a.w[0], "context": a.context[0], "output": b.attention[0],
                   "ln_f": m.ln_f[0]}
            for key in ["ln_1", "attention", "residual_1", "ln_2", "residual_2"]:
                exp[f"layer{layer + 1}.{key}"] = getattr(b, key)[0]
            exp[f"layer{layer + 1}.mlp"] = b.mlp_out[0]
            exact = ["top_k_ids"]
            if b.moe:
                e = b.mlp
                exp.update({f"layer{layer + 1}.router_logits": e.logits, f"layer{layer + 1}.router_scores": e.scores,
                            f"layer{layer + 1}.experts_chosen": e.indices.float(), f"layer{layer + 1}.expert_weights": e.top_weights,
                            f"layer{layer + 1}.shared_expert": e.shared[0]})
                exact.append(f"layer{layer + 1}.experts_chosen")
            probs = torch.softmax(logits, dim=-1)
            top = torch.argsort(probs, descending=True, stable=True)[:5]
            exp.update({"top_k_ids": top.float(), "top_k_logits": logits[top], "top_k_probs": probs[top]})
            args = ["model", "--model", "@SRC@/tests/data/models/" + name, "--ids", ",".join(str(i) for i in ids[0].tolist()),
                    "--layer", str(layer + 1)]
            cases.append(case(f"{name}_T{T}_layer{layer + 1}", args, None, exp, exact))
            if T == 5:  # greedy, the whole sequence again for every token; attnwalk decodes through its latent cache
                cases.append(greedy_case(name, m, ids, args, 6))
    return cases


# ---- Qwen3-Next: Qwen3NextForCausalLM as modeling_qwen3_next.py computes it without its fast kernels: the
# Gated DeltaNet layers through torch_chunk_gated_delta_rule (chunks of 64), the gated full attention with
# partial RoPE, RMSNorms of (1 + w), the softmax router and the sigmoid-gated shared expert; on a tiny folder.

class NextRMSNorm(nn.Module):  # Qwen3NextRMSNorm: x·rsqrt(mean(x²) + eps) × (1 + w), in float32
    def __init__(self, n, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.zeros(n)), eps

    def forward(self, x):
        out = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return (out * (1.0 + self.weight.float())).type_as(x)


def next_l2norm(x, eps=1e-6):  # l2norm of modeling_qwen3_next.py (FLA's)
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


def next_chunk_delta_rule(q, k, v, g, beta, chunk=64):
    """torch_chunk_gated_delta_rule with use_qk_l2norm_in_kernel: q, k, v (B,T,H,d), g, beta (B,T,H)."""
    q, k = next_l2norm(q), next_l2norm(k)
    q, k, v, beta, g = [x.transpose(1, 2).contiguous().float() for x in (q, k, v, beta, g)]
    B, H, T, dk = k.shape
    dv = v.shape[-1]
    pad = (chunk - T % chunk) % chunk
    q, k, v = F.pad(q, (0, 0, 0, pad)), F.pad(k, (0, 0, 0, pad)), F.pad(v, (0, 0, 0, pad))
    beta, g = F.pad(beta, (0, pad)), F.pad(g, (0, pad))
    q = q * (1 / dk ** 0.5)
    v_beta, k_beta = v * beta.unsqueeze(-1), k * beta.unsqueeze(-1)
    q, k, v, k_beta, v_beta = [x.reshape(B, H, -1, chunk, x.shape[-1]) for x in (q, k, v, k_beta, v_beta)]
    g = g.reshape(B, H, -1, chunk).cumsum(dim=-1)
    upper = torch.triu(torch.ones(chunk, chunk, dtype=torch.bool), diagonal=0)
    decay = ((g.unsqueeze(-1) - g.unsqueeze(-2)).tril().exp().float()).tril()
    attn = -((k_beta @ k.transpose(-1, -2)) * decay).masked_fill(upper, 0)
    for i in range(1, chunk):
        row, sub = attn[..., i, :i].clone(), attn[..., :i, :i].clone()
        attn[..., i, :i] = row + (row.unsqueeze(-1) * sub).sum(-2)
    attn = attn + torch.eye(chunk)
    v = attn @ v_beta
    k_cumdecay = attn @ (k_beta * g.exp().unsqueeze(-1))
    S = torch.zeros(B, H, dk, dv)
    out = torch.zeros_like(v)
    strict = torch.triu(torch.ones(chunk, chunk, dtype=torch.bool), diagonal=1)
    for i in range(v.shape[2]):
        q_i, k_i, v_i = q[:, :, i], k[:, :, i], v[:, :, i]
        a = (q_i @ k_i.transpose(-1, -2) * decay[:, :, i]).masked_fill_(strict, 0)
        v_new = v_i - k_cumdecay[:, :, i] @ S
        out[:, :, i] = (q_i * g[:, :, i, :, None].exp()) @ S + a @ v_new
        S = S * g[:, :, i, -1, None, None].exp() + (k_i * (g[:, :, i, -1, None] - g[:, :, i]).exp()[..., None]).transpose(-1, -2) @ v_new
    out = out.reshape(B, H, -1, dv)[:, :, :T]
    return out.transpose(1, 2).contiguous(), S


class NextDeltaNet(nn.Module):  # Qwen3NextGatedDeltaNet (no cache, no fast path)
    def __init__(self, cfg):
        super().__init__()
        C = cfg["C"]
        self.Hk, self.Hv, self.dk, self.dv, self.K = cfg["lin_kh"], cfg["lin_vh"], cfg["lin_dk"], cfg["lin_dv"], cfg["lin_k"]
        self.key_dim, self.value_dim = self.Hk * self.dk, self.Hv * self.dv
        self.conv_dim = 2 * self.key_dim + self.value_dim
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, bias=False, kernel_size=self.K, groups=self.conv_dim, padding=self.K - 1)
        self.split = cfg.get("split", False)  # Qwen3_5GatedDeltaNet: four projections in order
        if self.split:
            self.in_proj_qkv = nn.Linear(C, 2 * self.key_dim + self.value_dim, bias=False)
            self.in_proj_z = nn.Linear(C, self.value_dim, bias=False)
            self.in_proj_b, self.in_proj_a = nn.Linear(C, self.Hv, bias=False), nn.Linear(C, self.Hv, bias=False)
        else:
            self.in_proj_qkvz = nn.Linear(C, 2 * self.key_dim + 2 * self.value_dim, bias=False)
            self.in_proj_ba = nn.Linear(C, 2 * self.Hv, bias=False)
        self.dt_bias = nn.Parameter(torch.rand(self.Hv) - 0.5)
        self.A_log = nn.Parameter(torch.empty(self.Hv).uniform_(0.02, 0.5).log())  # decays of about 0.7 to 1, as a trained model's mostly are
        self.norm_weight = nn.Parameter(torch.empty(self.dv).uniform_(0.5, 1.5))
        self.eps = cfg["eps"]
        self.out_proj = nn.Linear(self.value_dim, C, bias=False)

    def forward(self, x):
        B, T, _ = x.shape
        r = self.Hv // self.Hk
        if self.split:
            mixed = self.in_proj_qkv(x).transpose(1, 2)
            z = self.in_proj_z(x).reshape(B, T, -1, self.dv)
            b, a = self.in_proj_b(x), self.in_proj_a(x)
        else:
            qkvz = self.in_proj_qkvz(x).view(B, T, self.Hk, 2 * self.dk + 2 * self.dv * r)
            ba = self.in_proj_ba(x).view(B, T, self.Hk, 2 * r)
            q, k, v, z = torch.split(qkvz, [self.dk, self.dk, r * self.dv, r * self.dv], dim=3)
            b, a = torch.split(ba, [r, r], dim=3)
            v, z = v.reshape(B, T, -1, self.dv), z.reshape(B, T, -1, self.dv)
            b, a = b.reshape(B, T, self.Hv), a.reshape(B, T, self.Hv)
            mixed = torch.cat([t.reshape(B, T, -1) for t in (q, k, v)], dim=-1).transpose(1, 2)
        mixed = F.silu(self.conv1d(mixed)[:, :, :T]).transpose(1, 2)
        self.q, self.k, self.v = torch.split(mixed, [self.key_dim, self.key_dim, self.value_dim], dim=-1)
        self.z = z.reshape(B, T, -1)
        q = self.q.reshape(B, T, -1, self.dk)
        k = self.k.reshape(B, T, -1, self.dk)
        v = self.v.reshape(B, T, -1, self.dv)
        self.beta = b.sigmoid()
        g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)
        self.decay = g.exp()
        if r > 1:
            q, k = q.repeat_interleave(r, dim=2), k.repeat_interleave(r, dim=2)
        core, self.state = next_chunk_delta_rule(q, k, v, g, self.beta)
        self.head_outputs = core.transpose(1, 2)  # (B,Hv,T,dv)
        h = core.reshape(-1, self.dv).float()  # Qwen3NextRMSNormGated
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        h = self.norm_weight * h
        h = h * F.silu(z.reshape(-1, self.dv).float())
        self.normed = h.reshape(B, T, -1)
        return self.out_proj(self.normed)


class NextAttention(nn.Module):  # Qwen3NextAttention, eager
    def __init__(self, cfg):
        super().__init__()
        C, H, G, d = cfg["C"], cfg["H"], cfg["G"], cfg["d"]
        self.H, self.G, self.d, self.scaling = H, G, d, d ** -0.5
        self.q_proj, self.k_proj = nn.Linear(C, H * d * 2, bias=False), nn.Linear(C, G * d, bias=False)
        self.v_proj, self.o_proj = nn.Linear(C, G * d, bias=False), nn.Linear(H * d, C, bias=False)
        self.q_norm, self.k_norm = NextRMSNorm(d, cfg["eps"]), NextRMSNorm(d, cfg["eps"])

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        q, gate = torch.chunk(self.q_proj(x).view(B, T, -1, self.d * 2), 2, dim=-1)
        self.gate = gate.reshape(B, T, -1)
        self.q = q.reshape(B, T, -1)
        self.k, self.v = self.k_proj(x), self.v_proj(x)
        q = self.q_norm(q.view(B, T, -1, self.d)).transpose(1, 2)
        k = self.k_norm(self.k.view(B, T, -1, self.d)).transpose(1, 2)
        v = self.v.view(B, T, -1, self.d).transpose(1, 2)
        c, s_ = cos.unsqueeze(1), sin.unsqueeze(1)
        rd = c.shape[-1]  # apply_rotary_pos_emb: the first rotary_dim features turn
        q = torch.cat([q[..., :rd] * c + hf_rotate_half(q[..., :rd]) * s_, q[..., rd:]], dim=-1)
        k = torch.cat([k[..., :rd] * c + hf_rotate_half(k[..., :rd]) * s_, k[..., rd:]], dim=-1)
        k, v = hf_repeat_kv(k, self.H // self.G), hf_repeat_kv(v, self.H // self.G)
        self.scores = q @ k.transpose(2, 3)
        self.w = F.softmax(torch.matmul(q, k.transpose(2, 3)) * self.scaling + mask, dim=-1, dtype=torch.float32)
        self.context = (self.w @ v).transpose(1, 2).reshape(B, T, -1)
        self.gated = self.context * torch.sigmoid(self.gate)
        return self.o_proj(self.gated)


class NextMoE(nn.Module):  # Qwen3NextTopKRouter + Qwen3NextSparseMoeBlock, experts one by one as the checkpoints store them
    def __init__(self, cfg):
        super().__init__()
        C, E = cfg["C"], cfg["experts"]
        self.E, self.top_k, self.norm = E, cfg["top_k"], cfg["norm_topk_prob"]
        self.gate = nn.Linear(C, E, bias=False)
        self.experts = nn.ModuleList([DsMLP(C, cfg["moe_hidden"]) for _ in range(E)])
        self.shared_expert = DsMLP(C, cfg["shared_hidden"])
        self.shared_expert_gate = nn.Linear(C, 1, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        h = x.view(-1, C)
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
        self.shared = F.sigmoid(self.shared_expert_gate(h)) * self.shared_expert(h)
        return (out + self.shared).reshape(B, T, C)


class NextLayer(nn.Module):  # Qwen3NextDecoderLayer
    def __init__(self, cfg, i):
        super().__init__()
        self.linear = cfg["types"][i] == "linear_attention"
        self.mixer = NextDeltaNet(cfg) if self.linear else NextAttention(cfg)
        self.moe = cfg["experts"] > 0 and i not in cfg["mlp_only"]
        self.mlp = NextMoE(cfg) if self.moe else DsMLP(cfg["C"], cfg["hidden"])
        self.input_layernorm, self.post_attention_layernorm = NextRMSNorm(cfg["C"], cfg["eps"]), NextRMSNorm(cfg["C"], cfg["eps"])

    def forward(self, x, cos, sin, mask):
        self.ln_1 = self.input_layernorm(x)
        self.attention = self.mixer(self.ln_1) if self.linear else self.mixer(self.ln_1, cos, sin, mask)
        self.residual_1 = x + self.attention
        self.ln_2 = self.post_attention_layernorm(self.residual_1)
        self.mlp_out = self.mlp(self.ln_2)
        self.residual_2 = self.residual_1 + self.mlp_out
        return self.residual_2


class NextModel(nn.Module):  # Qwen3NextForCausalLM
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab"], cfg["C"])
        self.layers = nn.ModuleList([NextLayer(cfg, i) for i in range(len(cfg["types"]))])
        self.norm = NextRMSNorm(cfg["C"], cfg["eps"])
        self.lm_head = nn.Linear(cfg["C"], cfg["vocab"], bias=False)
        self.inv_freq, _ = hf_default_inv_freq(cfg["theta"], int(cfg["d"] * cfg["partial"]))

    def forward(self, ids):
        T = ids.shape[1]
        self.tokens = self.embed_tokens(ids)
        x = self.tokens
        cos, sin = HFRotary(self.inv_freq, 1.0)(x, torch.arange(T)[None])
        neg = torch.finfo(torch.float32).min
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        mask = torch.where(j <= i, 0.0, neg)[None, None]
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        self.ln_f = self.norm(x)
        return self.ln_f @ self.lm_head.weight.T


def next_tensors(m):
    t = {"model.embed_tokens.weight": m.embed_tokens.weight, "model.norm.weight": m.norm.weight, "lm_head.weight": m.lm_head.weight}
    for i, layer in enumerate(m.layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"], t[p + "post_attention_layernorm.weight"] = layer.input_layernorm.weight, layer.post_attention_layernorm.weight
        a = layer.mixer
        if layer.linear:
            q = p + "linear_attn."
            names = ["in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"] if a.split else ["in_proj_qkvz", "in_proj_ba"]
            t.update({q + n + ".weight": getattr(a, n).weight for n in names})
            t.update({q + "conv1d.weight": a.conv1d.weight, q + "dt_bias": a.dt_bias, q + "A_log": a.A_log, q + "norm.weight": a.norm_weight,
                      q + "out_proj.weight": a.out_proj.weight})
        else:
            for n in ["q_proj", "k_proj", "v_proj", "o_proj"]:
                t[p + f"self_attn.{n}.weight"] = getattr(a, n).weight
            t[p + "self_attn.q_norm.weight"], t[p + "self_attn.k_norm.weight"] = a.q_norm.weight, a.k_norm.weight
        if layer.moe:
            e = layer.mlp
            t[p + "mlp.gate.weight"], t[p + "mlp.shared_expert_gate.weight"] = e.gate.weight, e.shared_expert_gate.weight
            mlps = dict({f"mlp.experts.{k}.": x for k, x in enumerate(e.experts)}, **{"mlp.shared_expert.": e.shared_expert})
        else:
            mlps = {"mlp.": layer.mlp}
        for q, mlp in mlps.items():
            for n in ["gate_proj", "up_proj", "down_proj"]:
                t[p + q + n + ".weight"] = getattr(mlp, n).weight
    t["mtp.fc.weight"] = torch.randn(m.cfg["C"], 2 * m.cfg["C"]) * 0.02  # a multi-token-prediction head, as the release ships one: unused
    return t


def next_config(cfg, dtype):
    return {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "vocab_size": cfg["vocab"], "hidden_size": cfg["C"],
            "intermediate_size": cfg["hidden"], "num_hidden_layers": len(cfg["types"]), "num_attention_heads": cfg["H"],
            "num_key_value_heads": cfg["G"], "head_dim": cfg["d"], "partial_rotary_factor": cfg["partial"], "rope_theta": cfg["theta"],
            "rope_scaling": None, "max_position_embeddings": cfg["ctx"], "rms_norm_eps": cfg["eps"], "hidden_act": "silu",
            "layer_types": cfg["types"], "full_attention_interval": 2, "linear_num_key_heads": cfg["lin_kh"], "linear_num_value_heads": cfg["lin_vh"],
            "linear_key_head_dim": cfg["lin_dk"], "linear_value_head_dim": cfg["lin_dv"], "linear_conv_kernel_dim": cfg["lin_k"],
            "num_experts": cfg["experts"], "num_experts_per_tok": cfg["top_k"], "moe_intermediate_size": cfg["moe_hidden"],
            "shared_expert_intermediate_size": cfg["shared_hidden"], "decoder_sparse_step": 1, "mlp_only_layers": cfg["mlp_only"],
            "norm_topk_prob": cfg["norm_topk_prob"], "attention_bias": False, "attention_dropout": 0.0, "tie_word_embeddings": False,
            "use_sliding_window": False, "bos_token_id": 0, "eos_token_id": 1, "torch_dtype": dtype}


QWEN3_NEXT = dict(vocab=300, C=32, hidden=40, H=4, G=2, d=8, partial=0.5, theta=10000.0, ctx=64, eps=1e-6,
                  types=["linear_attention", "full_attention", "linear_attention", "full_attention"], lin_kh=2, lin_vh=4, lin_dk=8, lin_dv=6,
                  lin_k=4, experts=4, top_k=2, moe_hidden=16, shared_hidden=24, mlp_only=[2], norm_topk_prob=True)


def next_model(cfg, seed, tied=False):
    """NextModel stored in BF16 (the reference computes with those numbers), the (1 + w) norms' w near 0."""
    torch.manual_seed(seed)
    m = NextModel(cfg)
    with torch.no_grad():
        if tied:
            m.lm_head.weight = m.embed_tokens.weight
        for mod in m.modules():
            if isinstance(mod, NextRMSNorm):
                mod.weight.uniform_(-0.5, 0.5)
        for prm in m.parameters():
            prm.copy_(prm.bfloat16().float())
    return m


def next_cases(name, m, cfg, seed, plan):
    """Every step of the layer shown for each (T, layer) of `plan`, and greedy decoding from the first prompt."""
    cases = []
    g = torch.Generator().manual_seed(seed)
    for T, layer in plan:
        ids = torch.randint(0, cfg["vocab"], (1, T), generator=g)
        with torch.no_grad():
            logits = m(ids)[0, -1]
        b = m.layers[layer]
        a = b.mixer
        exp = {"token_embeddings": m.tokens[0], "output": b.attention[0], "ln_f": m.ln_f[0]}
        if b.linear:
            exp.update({"queries": a.q[0], "keys": a.k[0], "values": a.v[0], "beta": a.beta[0], "decay": a.decay[0], "head_outputs": a.head_outputs[0],
                        "state": a.state[0], "gate": a.z[0], "outputs_normed": a.normed[0]})
        else:
            exp.update({"queries": a.q[0], "keys": a.k[0], "values": a.v[0], "scores": a.scores[0], "weights": a.w[0], "context": a.context[0],
                        "gate": a.gate[0], "gated": a.gated[0]})
        for key in ["ln_1", "attention", "residual_1", "ln_2", "residual_2"]:
            exp[f"layer{layer + 1}.{key}"] = getattr(b, key)[0]
        exp[f"layer{layer + 1}.mlp"] = b.mlp_out[0]
        exact = ["top_k_ids"]
        if b.moe:
            e = b.mlp
            exp.update({f"layer{layer + 1}.router_logits": e.logits, f"layer{layer + 1}.router_scores": e.scores,
                        f"layer{layer + 1}.experts_chosen": e.indices.float(), f"layer{layer + 1}.expert_weights": e.top_weights,
                        f"layer{layer + 1}.shared_expert": e.shared})
            exact.append(f"layer{layer + 1}.experts_chosen")
        probs = torch.softmax(logits, dim=-1)
        top = torch.argsort(probs, descending=True, stable=True)[:5]
        exp.update({"top_k_ids": top.float(), "top_k_logits": logits[top], "top_k_probs": probs[top]})
        args = ["model", "--model", "@SRC@/tests/data/models/" + name, "--ids", ",".join(str(i) for i in ids[0].tolist()), "--layer", str(layer + 1)]
        cases.append(case(f"{name}_T{T}_layer{layer + 1}", args, None, exp, exact))
        if T == 5:  # greedy, the whole sequence again for every token; attnwalk decodes through its state and cache
            cases.append(greedy_case(name, m, ids, args, 6))
    return cases


def qwen3_next_cases():
    name, cfg, seed = "tiny_qwen3_next", QWEN3_NEXT, 41
    m = next_model(cfg, seed)
    write_tiny_folder(name, next_config(cfg, "bfloat16"), next_tensors(m), torch.bfloat16, 1, cfg["vocab"], "qwen3_next")
    return next_cases(name, m, cfg, seed, [(5, 0), (10, 1), (10, 2), (10, 3)])


# Qwen3.5 (dense) as modeling_qwen3_5.py computes it: Qwen3-Next's layers with the DeltaNet's four projections
# and a dense MLP, in the image-and-text layout (text_config, model.language_model., a vision tower beside).
QWEN3_5 = dict(QWEN3_NEXT, experts=0, split=True, tied=True, types=["linear_attention", "linear_attention", "full_attention"])


def qwen3_5_tensors(m):
    t = {("model.language_model." + k[len("model."):] if k.startswith("model.") else k): v for k, v in next_tensors(m).items()
         if k != "lm_head.weight" and not k.startswith("mtp.")}
    t["model.visual.patch_embed.proj.weight"] = torch.randn(16, 3, 2, 2, 2) * 0.02  # the vision tower, which the text model does not read
    t["model.visual.merger.linear_fc1.weight"] = torch.randn(16, 16) * 0.02
    return t


def qwen3_5_cases():
    name, cfg, seed = "tiny_qwen3_5", QWEN3_5, 43
    m = next_model(cfg, seed, tied=True)
    text = next_config(cfg, "bfloat16")
    for k in ["architectures", "num_experts", "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size", "decoder_sparse_step",
              "mlp_only_layers", "norm_topk_prob", "tie_word_embeddings", "rope_theta", "rope_scaling", "partial_rotary_factor"]:
        text.pop(k)
    text.update({"model_type": "qwen3_5_text", "rope_parameters": {"rope_type": "default", "rope_theta": cfg["theta"], "partial_rotary_factor": cfg["partial"],
                                                                    "mrope_section": [1, 1, 0], "mrope_interleaved": True}})
    config = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "text_config": text,
              "vision_config": {"model_type": "qwen3_5", "depth": 1, "hidden_size": 16, "out_hidden_size": cfg["C"]},
              "image_token_id": 290, "video_token_id": 291, "tie_word_embeddings": True}
    write_tiny_folder(name, config, qwen3_5_tensors(m), torch.bfloat16, 1, cfg["vocab"], "qwen3_5")
    return next_cases(name, m, cfg, seed, [(5, 0), (10, 1), (10, 2)])


def rng_sequences():
    seqs = []
    for seed in [0, 1, 123, 789, 2**32 + 5]:
        for kind, n in [("rand", 20), ("randn", 6), ("randn", 15), ("randn", 16), ("randn", 17), ("randn", 100), ("linear", 5), ("bernoulli", 40)]:
            torch.manual_seed(seed)
            if kind == "rand":
                t = torch.rand(n)
            elif kind == "randn":
                t = torch.randn(n)
            elif kind == "linear":
                lin = nn.Linear(n, 3)
                t = torch.cat([lin.weight.detach().flatten(), lin.bias.detach()])
            else:
                t = torch.empty(n).bernoulli_(0.7)
            seqs.append({"seed": seed, "kind": kind, "n": n, "bits": bits(t)})
        # values after thousands of draws
        torch.manual_seed(seed)
        torch.rand(5000)
        seqs.append({"seed": seed, "kind": "rand_after_5000", "n": 8, "bits": bits(torch.rand(8))})
        # the normal cache carries over between calls
        torch.manual_seed(seed)
        t = torch.cat([torch.randn(3), torch.randn(3), torch.randn(5)])
        seqs.append({"seed": seed, "kind": "randn_3_3_5", "n": 11, "bits": bits(t)})
    return seqs


def torch_repr_cases():
    """repr() of float32 tensors: the text --format torch must reproduce character for character."""
    g = torch.Generator().manual_seed(5)
    x = torch.tensor(BUILTIN)
    w = torch.softmax(x @ x.T, dim=-1)
    masked = (x @ x.T).masked_fill(torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1), -torch.inf)
    tensors = [
        w, x, w[1], w.sum(dim=-1), (x @ x.T)[1, 2],        # the textbook's shapes
        torch.ones(6, 6), torch.zeros(3), torch.tensor([2.0, -3.0, 0.0]),        # integer mode
        torch.tensor([1.0, 2.0e9]), torch.tensor([1.0, 1.0e-5]), torch.tensor([0.5, 12345.678]),  # scientific
        masked, torch.tensor([float("nan"), 1.5, -float("inf")]), torch.tensor([float("nan"), 1.0]),
        torch.randn(2, 3, 4, generator=g), torch.randn(1, 2, 3, 2, generator=g) * 100,
        torch.randn(40, generator=g),                    # wraps at 80 columns
        torch.rand(40, 40, generator=g),                 # summarised (over 1000 elements)
        torch.randn(3, 400, generator=g) * 1000,         # summarised, scientific
        torch.randn(1001, generator=g),
        -torch.rand(5, 5, generator=g),
        torch.tensor(3.0), torch.tensor(-0.000123),
    ]
    return [dict(tensor_json(t), repr=repr(t)) for t in tensors]


def torch_sum_cases():
    """torch.sum of float32 rows of many lengths: the order of additions (tests/ops/test_rows.cpp)."""
    cases = []
    g = torch.Generator().manual_seed(5)
    for n in list(range(1, 41)) + [63, 64, 65, 100, 127, 128, 129, 257, 1000, 4097]:
        for kind in ("softmax", "randn", "scores"):
            x = torch.randn(n, generator=g)
            if kind == "softmax":
                x = torch.softmax(x, 0)
            elif kind == "scores":
                x = x * 10 + 3
            cases.append({"n": n, "kind": kind, "row": bits(x), "sum": bits(x.sum())[0],
                          "sum_dim": bits(x.unsqueeze(0).repeat(2, 1).sum(dim=-1)[1])[0]})
    return cases


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    for name, cases in [("single_head", single_head_cases()), ("dropout", dropout_cases()), ("mha", mha_cases()),
                        ("mha_beyond", mha_beyond_cases()), ("kvcache", kvcache_cases()), ("mla", mla_cases()), ("deltanet", deltanet_cases()), ("heads", heads_cases()), ("rope", rope_cases()),
                        ("flash", flash_cases()), ("sdpa", sdpa_cases()), ("params", params_cases()),
                        ("gpt2", gpt2_cases()), ("families", families_cases() + hf_families_cases() + gpt_oss_cases() + deepseek_v3_cases() + qwen3_next_cases() + qwen3_5_cases())]:
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
