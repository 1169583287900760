"""DeepSeek-V3.2: DeepseekV32ForCausalLM as modular_deepseek_v32.py computes it (eager attention): DeepSeek-V3's
MLA (always rope-interleaved, always through the query latent) and MoE, plus DeepseekV32Indexer: queries
wq_b(q_resid) from the normed query latent, one key per token wk(x) then the k_norm LayerNorm (eps 1e-6), the
half-split RoPE (apply_rotary_pos_emb) on the first qk_rope_head_dim features of both, ReLU(q·k)·index_head_dim^−½
weighted by weights_proj(x)·index_n_heads^−½ and summed over the index heads, the causal mask added, torch.topk of
min(index_topk, T) keys; the keys not kept get finfo.min in the attention mask. On tiny folders of ours: golden
families, with index_topk below the prompt's length so that the selection matters."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import layer_cases, write_tiny_folder
from .deepseek_v3 import DsAttention, DsLayer, DsModel, ds_config, ds_tensors
from .hf_blocks import HFRMSNorm, hf_rotate_half


def hf_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim):  # apply_rotary_pos_emb, the half-split layout
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (hf_rotate_half(q) * sin), (k * cos) + (hf_rotate_half(k) * sin)


class DsIndexer(nn.Module):  # DeepseekV32Indexer
    def __init__(self, cfg):
        super().__init__()
        C = cfg["C"]
        self.n_heads, self.head_dim, self.rope, self.index_topk = cfg["index_heads"], cfg["index_dim"], cfg["rope"], cfg["index_topk"]
        self.wq_b = nn.Linear(cfg["q_rank"], self.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(C, self.head_dim, bias=False)
        self.k_norm = nn.LayerNorm(self.head_dim, eps=1e-6)
        self.weights_proj = nn.Linear(C, self.n_heads, bias=False)
        self.softmax_scale = self.head_dim ** -0.5

    def forward(self, x, q_resid, cos, sin, mask):
        b, T, _ = x.shape
        q = self.wq_b(q_resid).view(b, T, self.n_heads, self.head_dim)
        q_rot, q_pass = torch.split(q, [self.rope, self.head_dim - self.rope], dim=-1)
        k = self.k_norm(self.wk(x)).unsqueeze(2)
        k_rot, k_pass = torch.split(k, [self.rope, self.head_dim - self.rope], dim=-1)
        q_rot, k_rot = hf_apply_rotary_pos_emb(q_rot, k_rot, cos, sin, unsqueeze_dim=2)
        q = torch.cat([q_rot, q_pass], dim=-1)
        k = torch.cat([k_rot, k_pass], dim=-1).squeeze(2)
        self.q, self.k = q, k  # (b,T,H_I,d_I), (b,T,d_I)
        scores = torch.matmul(q.float(), k.transpose(-1, -2).float().unsqueeze(1)) * self.softmax_scale
        scores = F.relu(scores)
        weights = self.weights_proj(x).float() * (self.n_heads ** -0.5)
        self.gates = weights
        index_scores = torch.matmul(weights.unsqueeze(-2), scores).squeeze(-2)
        index_scores = index_scores + mask
        self.scores = torch.where(mask < 0, float("-inf"), index_scores)  # as attnwalk shows them: −∞ after the query
        topk = min(self.index_topk, index_scores.shape[-1])
        return index_scores.topk(topk, dim=-1).indices


class DsV32Attention(DsAttention):  # DeepseekV32Attention: DeepSeek-V3's MLA with the indexer's mask folded in
    def __init__(self, cfg):
        super().__init__(cfg)
        self.indexer = DsIndexer(cfg)

    def forward(self, x, cos, sin, mask):
        b, T, _ = x.shape
        q_resid = self.q_a_layernorm(self.q_a_proj(x))
        top = self.indexer(x, q_resid, cos, sin, mask[:, 0])
        index_mask = torch.ones((b, T, T), dtype=torch.bool).scatter(-1, top.long(), False).unsqueeze(1)
        self.kept = ((~index_mask[:, 0]) & (mask[:, 0] == 0)).float()  # kept and visible
        self.top = top
        return super().forward(x, cos, sin, mask.masked_fill(index_mask, torch.finfo(torch.float32).min))


class DsV32Model(DsModel):
    def __init__(self, cfg):
        super().__init__(cfg)
        for i, layer in enumerate(self.layers):
            layer.self_attn = DsV32Attention(cfg)


def v32_tensors(m, extra_layers):
    t = ds_tensors(m, extra_layers)
    for i, layer in enumerate(m.layers):
        ix = layer.self_attn.indexer
        p = f"model.layers.{i}.self_attn.indexer."
        t[p + "wq_b.weight"], t[p + "wk.weight"], t[p + "weights_proj.weight"] = ix.wq_b.weight, ix.wk.weight, ix.weights_proj.weight
        t[p + "k_norm.weight"], t[p + "k_norm.bias"] = ix.k_norm.weight, ix.k_norm.bias
    return t


def v32_config(cfg, dtype):
    c = ds_config(cfg, dtype)
    c.update({"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32", "index_topk": cfg["index_topk"],
              "index_head_dim": cfg["index_dim"], "index_n_heads": cfg["index_heads"]})
    del c["rope_interleave"]  # DeepseekV32Config has none: its attention always de-interleaves
    return c


DEEPSEEK_V32 = [
    # YaRN, BF16 in two shards, one multi-token-prediction layer; 4 index heads of 12 (8 rotary), 4 keys kept
    ("tiny_deepseek_v32", torch.bfloat16, 2, 41,
     dict(vocab=300, C=48, hidden=64, moe_hidden=16, layers=3, extra=1, H=4, kv_rank=12, q_rank=16, nope=8, rope=8, v=12, experts=8,
          n_group=4, topk_group=2, top_k=3, shared=1, routed_scale=2.5, norm_topk_prob=True, first_dense=1, ctx=64, eps=1e-6,
          theta=10000.0, interleave=True, index_heads=4, index_dim=12, index_topk=4,
          rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16, "beta_fast": 32, "beta_slow": 1,
                        "mscale": 1.0, "mscale_all_dim": 1.0})),
    # plain RoPE, F32 in one file; 3 index heads of 4 (all rotary), 3 keys kept
    ("tiny_deepseek_v32_f32", torch.float32, 1, 43,
     dict(vocab=300, C=32, hidden=48, moe_hidden=16, layers=2, extra=0, H=2, kv_rank=8, q_rank=12, nope=6, rope=4, v=8, experts=6,
          n_group=3, topk_group=2, top_k=2, shared=2, routed_scale=1.5, norm_topk_prob=False, first_dense=1, ctx=64, eps=1e-6,
          theta=10000.0, interleave=True, index_heads=3, index_dim=4, index_topk=3, rope_scaling=None)),
]


def check_no_near_ties(m, T):
    """The selection must not hang on a rounding: for every row that sees more than index_topk keys, the k-th and the
    (k+1)-th index scores apart (or exactly equal, which torch.topk's order decides and attnwalk follows)."""
    for layer in m.layers:
        s, k = layer.self_attn.indexer.scores[0], layer.self_attn.indexer.index_topk
        for t in range(k, T):
            row = torch.sort(s[t, :t + 1], descending=True).values
            gap = float(row[k - 1] - row[k])
            assert gap == 0.0 or gap > 1e-5 * max(1.0, float(row[k - 1].abs())), (t, gap)


def deepseek_v32_cases():
    cases = []
    for name, dtype, shards, seed, cfg in DEEPSEEK_V32:
        torch.manual_seed(seed)
        m = DsV32Model(cfg)
        with torch.no_grad():  # stored in `dtype`; the norms near 1, as trained ones are
            for mod in m.modules():
                if isinstance(mod, HFRMSNorm):
                    mod.weight.uniform_(0.5, 1.5)
                if isinstance(mod, nn.LayerNorm):
                    mod.weight.uniform_(0.5, 1.5)
                    mod.bias.uniform_(-0.2, 0.2)
            for prm in m.parameters():
                prm.copy_(prm.to(dtype).float())
        write_tiny_folder(name, v32_config(cfg, "bfloat16" if dtype == torch.bfloat16 else "float32"), v32_tensors(m, cfg["extra"]), dtype,
                          shards, cfg["vocab"], "deepseek_v3")
        L = cfg["layers"]

        def expect(T, layer):
            check_no_near_ties(m, T)
            b = m.layers[layer]
            a = b.self_attn
            ix = a.indexer
            exp = {"token_embeddings": m.tokens[0], "queries": a.q[0], "keys": a.k[0], "values": a.v[0], "latent_kv": a.latent[0],
                   "keys_rope": a.k_rope[0], "queries_rotated": a.q_rotated[0], "scores": a.scores[0], "weights": a.w[0],
                   "context": a.context[0], "output": b.attention[0], "ln_f": m.ln_f[0],
                   "index_queries": ix.q[0].transpose(0, 1), "index_keys": ix.k[0], "index_gates": ix.gates[0],
                   "index_scores": ix.scores[0], "kept": a.kept[0]}
            for key in ["ln_1", "attention", "residual_1", "ln_2", "residual_2"]:
                exp[f"layer{layer + 1}.{key}"] = getattr(b, key)[0]
            exp[f"layer{layer + 1}.mlp"] = b.mlp_out[0]
            exact = ["kept"]
            if b.moe:
                e = b.mlp
                exp.update({f"layer{layer + 1}.router_logits": e.logits, f"layer{layer + 1}.router_scores": e.scores,
                            f"layer{layer + 1}.experts_chosen": e.indices.float(), f"layer{layer + 1}.expert_weights": e.top_weights,
                            f"layer{layer + 1}.shared_expert": e.shared[0]})
                exact.append(f"layer{layer + 1}.experts_chosen")
            return exp, exact
        cases += layer_cases(name, m, cfg["vocab"], seed, [(5, 0), (10, L - 1), (12, 0)], expect)
    return cases
