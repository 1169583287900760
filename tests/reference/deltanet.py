"""Gated DeltaNet: the textbook's GatedDeltaNet class (ch04/08_deltanet), its layers built in its
order after torch.manual_seed, with one write strength β per head as Qwen3-Next's layer has it (the
textbook's W_beta gives one per feature); its loop is torch_recurrent_gated_delta_rule's; the chunked
form is torch_chunk_gated_delta_rule from modeling_qwen3_next.py, and the effective attention matrix
is the outputs' matrix found column by column: the layer is linear in the values once q, k, α and β
are fixed, so A[:, j] is the output for the one-hot values e_j. Golden deltanet."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import BUILTIN, case, random_input


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
