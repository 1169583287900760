"""DeepSeek Sparse Attention as the textbook's bonus material ch04/09_dsa (gpt_with_kv_dsa.py) computes it:
the lightning indexer's scores, the top-k keys each query keeps, and multi-head attention over them, the
modules built in its order with nn.Linear's own initialisation after torch.manual_seed: golden dsa."""
import torch
import torch.nn as nn

from .common import BUILTIN, case, random_input


class Indexer(nn.Module):  # LightningIndexer: H_I index heads of d_I, one key per token shared by them
    def __init__(self, d_in, index_heads, index_dim):
        super().__init__()
        self.index_heads, self.index_dim = index_heads, index_dim
        self.W_q_index = nn.Linear(d_in, index_heads * index_dim, bias=False)
        self.W_k_index = nn.Linear(d_in, index_dim, bias=False)
        self.W_weights = nn.Linear(d_in, index_heads, bias=False)
        self.scale = index_dim ** -0.5

    def forward(self, x, topk, causal, out):
        b, T, _ = x.shape
        q = self.W_q_index(x).view(b, T, self.index_heads, self.index_dim)  # (b, T, H_I, d_I)
        k = self.W_k_index(x)                                                # (b, S, d_I)
        dots = torch.relu(torch.einsum("bthd,bsd->bths", q, k) * self.scale)  # (b, T, H_I, S)
        gates = self.W_weights(x).softmax(dim=-1)                             # (b, T, H_I): normalised across the heads
        scores = torch.einsum("bth,bths->bts", gates, dots) + causal          # (b, T, S), −∞ after the query
        chosen = scores.topk(min(topk, T), dim=-1)                            # (b, T, k)
        out.update({"index_queries": q.transpose(1, 2), "index_keys": k, "index_dots": dots.transpose(1, 2),
                    "index_gates": gates, "index_scores": scores, "index_topk": chosen.indices,
                    "index_kth": chosen.values[..., -1]})
        return chosen.indices


class AttentionWithDsa(nn.Module):  # MultiHeadAttentionWithDSA without the cache, dropout 0
    def __init__(self, d_in, d_out, heads, index_heads, index_dim, topk):
        super().__init__()
        self.heads, self.head_dim, self.d_out, self.topk = heads, d_out // heads, d_out, topk
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)
        self.indexer = Indexer(d_in, index_heads, index_dim)

    def attend(self, q, k, v, mask, b, T):
        s = q @ k.transpose(2, 3)
        w = torch.softmax((s + mask.unsqueeze(1)) / self.head_dim ** 0.5, dim=-1)
        z = w @ v
        context = z.transpose(1, 2).contiguous().view(b, T, self.d_out)
        return s, w, z, context, self.out_proj(context)

    def forward(self, x):
        out = {}
        b, T, _ = x.shape
        split = lambda t: t.view(b, T, self.heads, self.head_dim).transpose(1, 2)  # noqa: E731
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        causal = torch.zeros(T, T).masked_fill_(torch.arange(T)[:, None] < torch.arange(T)[None], float("-inf"))
        chosen = self.indexer(x, self.topk, causal, out)
        sparse = torch.full((b, T, T), float("-inf")).scatter_(-1, chosen, 0.0)
        mask = causal[None] + sparse
        s, w, z, context, y = self.attend(split(queries), split(keys), split(values), mask, b, T)
        _, _, _, _, y_full = self.attend(split(queries), split(keys), split(values), causal[None].expand(b, T, T), b, T)
        out.update({"queries": queries, "keys": keys, "values": values, "kept": (mask == 0).float(), "scores": s, "weights": w,
                    "head_outputs": z, "context": context, "output": y, "output_full": y_full,
                    "full_difference": (y - y_full).abs().amax(dim=-1)})
        return out

    def parameters_xw(self):
        ix = self.indexer
        return {"W_query": self.W_query.weight.T, "W_key": self.W_key.weight.T, "W_value": self.W_value.weight.T,
                "out_proj.weight": self.out_proj.weight.T, "out_proj.bias": self.out_proj.bias,
                "W_q_index": ix.W_q_index.weight.T, "W_k_index": ix.W_k_index.weight.T, "W_weights": ix.W_weights.weight.T}


def dsa_cases():
    cases = []
    for d_out, heads, index_heads, index_dim, topk, seed, inp in [
            (4, 2, 2, 2, 3, 123, "builtin"), (2, 2, 2, 2, 2, 123, "builtin"), (6, 3, 3, 4, 4, 7, "builtin"),
            (4, 2, 2, 2, 6, 123, "builtin"), (8, 2, 4, 3, 3, 11, "rand9x5"), (4, 1, 1, 1, 2, 5, "rand9x5")]:
        x = torch.tensor(BUILTIN)[None] if inp == "builtin" else random_input(5, 9, 5)[None]
        torch.manual_seed(seed)
        m = AttentionWithDsa(x.shape[-1], d_out, heads, index_heads, index_dim, topk)
        with torch.no_grad():
            out = m(x)
        exp = {k: t[0] for k, t in out.items()}
        params = m.parameters_xw()
        exp.update(params)
        args = ["dsa", "--d-out", str(d_out), "--heads", str(heads), "--index-heads", str(index_heads),
                "--index-head-dim", str(index_dim), "--topk", str(topk), "--seed", str(seed)]
        name = f"dsa_d{d_out}_h{heads}_ih{index_heads}_id{index_dim}_k{topk}_seed{seed}_{inp}"
        cases.append(case(name, args, None if inp == "builtin" else x[0], exp, list(params) + ["kept", "index_topk"]))
    return cases


if __name__ == "__main__":  # the cases' kept keys and the index scores, for a look
    torch.set_printoptions(precision=4, sci_mode=False)
    for c in dsa_cases():
        print(c["name"])
        for k in ("index_scores", "index_kth", "kept", "full_difference"):
            print(k, torch.tensor([float(v) for v in c["expect"][k]["data"]]).view(c["expect"][k]["shape"]))
