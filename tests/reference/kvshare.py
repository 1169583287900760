"""Cross-layer KV sharing: the textbook's ch04/10_kv-sharing, gpt_with_kv_sharing.py's
MultiHeadAttentionWithKVSharing (its forward without the cache, dropout 0) stacked as its
GPTModel.forward loops over the layers: the first n_kv_producing_layers return their keys and
values, every later layer is handed the last of them. The modules are built one after the
other after torch.manual_seed, so nn.Linear draws W_query, W_key, W_value and out_proj in
PyTorch's order (the reusing layers' W_key and W_value too, unused). Only the attention of
each block: attnwalk's stack has no LayerNorm, feed-forward or shortcut. The cache's bytes as
memory_estimator_kv_sharing.py counts them: golden kvshare."""
import torch
import torch.nn as nn

from .chapter import SelfAttentionLinear
from .common import BUILTIN, case, random_input


class SharedKVAttention(nn.Module):
    def __init__(self, d_in, d_out, num_heads):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.proj = SelfAttentionLinear(d_in, d_out, False)  # W_query, W_key, W_value, in this order
        self.out_proj = nn.Linear(d_out, d_out)

    def heads(self, t):  # (b, T, d_out) -> (b, T, H, d_h)
        return t.view(t.shape[0], t.shape[1], self.num_heads, self.head_dim)

    def forward(self, x, shared_kv=None):
        b, T, _ = x.shape
        queries = self.heads(self.proj.W_query(x))
        if shared_kv is None:  # a producing layer: its own keys and values, handed on
            keys, values = self.heads(self.proj.W_key(x)), self.heads(self.proj.W_value(x))
            handed_on = (keys, values)
        else:
            keys, values = shared_kv
            handed_on = None
        queries, keys, values = queries.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        scores = queries @ keys.transpose(2, 3)
        future = torch.arange(T).unsqueeze(-1) < torch.arange(keys.shape[-2]).unsqueeze(0)
        scores.masked_fill_(future, -torch.inf)
        weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
        context = (weights @ values).transpose(1, 2).contiguous().view(b, T, self.d_out)
        out = self.out_proj(context)
        return out, handed_on, {"queries": queries, "keys": keys, "values": values, "weights": weights, "output": out}


def run_stack(x, layers, producing):
    shared_kv, seen = None, []
    for i, layer in enumerate(layers):
        if i < producing:
            x, shared_kv, parts = layer(x, shared_kv=None)
        else:
            x, _, parts = layer(x, shared_kv=shared_kv)
        seen.append(parts)
    return x, seen


def kv_bytes(batch, context, head_dim, kv_heads, layers, bytes_per_elem):  # calc_kv_bytes_total's product
    return batch * context * head_dim * kv_heads * 2 * bytes_per_elem * layers


def kvshare_cases():
    cases = []
    for L, P, H, d_out, seed, inp in [(4, 2, 2, 4, 123, "builtin"), (3, 1, 1, 2, 7, "builtin"), (3, 3, 2, 4, 5, "builtin"),
                                      (5, 3, 3, 6, 11, "rand9x5"), (2, 1, 2, 4, 5, "batch2x7x4")]:
        x = torch.tensor(BUILTIN)[None] if inp == "builtin" else random_input(5, 9, 5)[None] if inp == "rand9x5" else random_input(6, 7, 4, 2)
        torch.manual_seed(seed)
        layers = nn.ModuleList([SharedKVAttention(x.shape[-1] if i == 0 else d_out, d_out, H) for i in range(L)])
        with torch.no_grad():
            y, seen = run_stack(x, layers, P)
        one = (lambda t: t[0]) if inp != "batch2x7x4" else (lambda t: t)
        exp = {"kv_sources": torch.tensor([float(min(i, P - 1) + 1) for i in range(L)])}
        exact = ["kv_sources"]
        for i, (layer, parts) in enumerate(zip(layers, seen)):
            n = f"layer{i + 1}."
            own = layer.proj.weights()
            params = {"W_query": own["W_query"], "out_proj.weight": layer.out_proj.weight.T, "out_proj.bias": layer.out_proj.bias}
            if i < P:
                params.update(W_key=own["W_key"], W_value=own["W_value"])
            exp.update({n + k: v for k, v in params.items()})
            exact += [n + k for k in params]
            exp.update({n + k: one(v) for k, v in parts.items()})
        B, T = x.shape[0], x.shape[1]
        exp.update({"output": one(y), "output_explicit": one(y), "max_difference": torch.tensor(0.0),
                    "cache_bytes": torch.tensor([float(kv_bytes(B, T, d_out // H, H, n, 4)) for n in (L, P)], dtype=torch.float64)})
        exact += ["max_difference", "cache_bytes"]
        args = ["kvshare", "--layers", str(L), "--kv-producing-layers", str(P), "--heads", str(H), "--d-out", str(d_out), "--seed", str(seed)]
        name = f"kvshare_l{L}_p{P}_h{H}_d{d_out}_seed{seed}_{inp}"
        cases.append(case(name, args, None if inp == "builtin" else (x[0] if inp == "rand9x5" else x), exp, exact))
    # The README's Gemma 4 E2B- and E4B-like setups (head_dim = emb_dim / n_heads, G = n_heads / n_kv_groups, bf16)
    for emb, heads, layers, groups, producing in [(2048, 8, 35, 8, 15), (2560, 8, 42, 4, 24)]:
        hd, G, context = emb // heads, heads // groups, 131072
        sizes = [kv_bytes(1, context, hd, kv, n, 2) for kv, n in ((heads, layers), (G, layers), (heads, producing), (G, producing))]
        args = ["kvshare", "--layers", str(layers), "--kv-producing-layers", str(producing), "--cache-heads", str(heads),
                "--cache-head-dim", str(hd), "--kv-heads", str(G), "--context", str(context), "--cache-dtype", "bfloat16"]
        exp = {"cache_bytes": torch.tensor([float(s) for s in sizes], dtype=torch.float64)}
        cases.append(case(f"kvshare_cache_l{layers}_p{producing}_h{heads}_hd{hd}_g{G}_ctx{context}_bf16", args, None, exp, list(exp)))
    return cases
