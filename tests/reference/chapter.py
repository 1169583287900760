"""The textbook's chapter 3 (self-attention, causal attention, dropout, multi-head attention), its
modules written the way the chapter writes them: goldens single_head, dropout and mha."""
import torch
import torch.nn as nn

from .common import BUILTIN, case, random_input


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
