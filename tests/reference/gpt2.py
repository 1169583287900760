"""GPT-2: the book's GPTModel (chapter 4), saved as tiny safetensors checkpoints in Hugging Face's
and nanoGPT's layouts: golden gpt2."""
import os

import torch
import torch.nn as nn

from .common import HERE, case, write_safetensors


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
