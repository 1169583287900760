"""Qwen3-Next: Qwen3NextForCausalLM as modeling_qwen3_next.py computes it without its fast kernels: the
Gated DeltaNet layers through torch_chunk_gated_delta_rule (chunks of 64), the gated full attention with
partial RoPE, RMSNorms of (1 + w), the softmax router and the sigmoid-gated shared expert; on a tiny
folder. Then Qwen3.5 (dense), Qwen3-Next's layers in the image-and-text layout. Golden families."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import layer_cases, write_tiny_folder
from .hf_blocks import DsMLP, HFRotary, SoftmaxMoE, hf_default_inv_freq, hf_repeat_kv, hf_rotate_half


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


class NextMoE(SoftmaxMoE):  # Qwen3NextTopKRouter + Qwen3NextSparseMoeBlock, experts one by one as the checkpoints store them
    def __init__(self, cfg):
        super().__init__(cfg)
        C = cfg["C"]
        self.shared_expert = DsMLP(C, cfg["shared_hidden"])
        self.shared_expert_gate = nn.Linear(C, 1, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        h = x.view(-1, C)
        out = self.routed(h)
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
    def expect(T, layer):
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
        exact = []
        if b.moe:
            e = b.mlp
            exp.update({f"layer{layer + 1}.router_logits": e.logits, f"layer{layer + 1}.router_scores": e.scores,
                        f"layer{layer + 1}.experts_chosen": e.indices.float(), f"layer{layer + 1}.expert_weights": e.top_weights,
                        f"layer{layer + 1}.shared_expert": e.shared})
            exact.append(f"layer{layer + 1}.experts_chosen")
        return exp, exact
    return layer_cases(name, m, cfg["vocab"], seed, plan, expect)


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
