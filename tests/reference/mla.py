"""Multi-head latent attention: DeepseekV3Attention's forward in modeling_deepseek_v3.py (eager path, no
cache), its layers built in its order with nn.Linear's own initialisation after torch.manual_seed, as
the textbook's ch04/05_mla builds MultiHeadLatentAttention; the absorbed form written out beside it:
golden mla."""
import torch
import torch.nn as nn

from .common import BUILTIN, case, random_input
from .hf_blocks import HFRMSNorm, HFRotary, hf_default_inv_freq, hf_rotate_half


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
