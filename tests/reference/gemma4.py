"""Gemma 4 (text), written the way Hugging Face's modeling_gemma4.py computes it (Gemma4TextModel, eager
attention): RMSNorm x·(mean(x²) + eps)^−½ · w (a plain w, not Gemma 3's 1 + w; the values' norm without one),
q_norm and k_norm per head before RoPE, v_norm on the values, scores not scaled (scaling 1.0); sliding layers
with head_dim and the default RoPE (θ 1e4), full layers with global_head_dim and the "proportional" RoPE
(_compute_proportional_rope_parameters: ⌊partial_rotary_factor · d / 2⌋ frequencies base^(−2i/d) over the whole
head, the rest 0); keys equal to values on the full layers with attention_k_eq_v (num_global_key_value_heads);
the last num_kv_shared_layers layers without k_proj/v_proj, reading the keys and values the last earlier layer
of their type stored (store_full_length_kv), with the double-wide MLP there (use_double_wide_mlp); each
layer's output × its layer_scalar; the logits soft-capped, tanh(z / cap) · cap (final_logit_softcapping);
per-layer inputs (hidden_size_per_layer_input, the E2B and E4B models: Gemma4TextModel.get_per_layer_inputs and
project_per_layer_inputs before the layers, embed_tokens_per_layer × √P and per_layer_model_projection × C^−½ through
per_layer_projection_norm, combined × 2^−½; in each layer after the MLP per_layer_input_gate, the activation, × the
layer's input, per_layer_projection, post_per_layer_input_norm, added to the stream); the last layer full attention
whatever layer_types says (Gemma4TextConfig.__post_init__ forces it).
Two tiny folders: tiny_gemma4 (gemma4_text, F32, one file; E2B-like: shared layers and per-layer inputs) and
tiny_gemma4_kv (gemma4's image-and-text layout: text_config, tensors under model.language_model., a vision tower's
tensor unused; k_eq_v; its config.json's layer_types ending in a sliding layer, which the model makes full; BF16 in
two shards)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import as_stored, layer_cases, write_weights_folder, HERE
from .hf_blocks import hf_repeat_kv, hf_rotate_half
from .tokenizer import tiny_tokenizer


class G4Norm(nn.Module):  # Gemma4RMSNorm: torch.pow(mean_squared, -0.5), × weight when it has one
    def __init__(self, dim, eps, with_scale=True):
        super().__init__()
        self.eps, self.with_scale = eps, with_scale
        if with_scale:
            self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        out = x.float() * torch.pow(x.float().pow(2).mean(-1, keepdim=True) + self.eps, -0.5)
        return (out * self.weight.float() if self.with_scale else out).type_as(x)


def g4_inv_freq(rope, d):
    """compute_default_rope_parameters, or _compute_proportional_rope_parameters over the whole head."""
    base = rope["rope_theta"]
    if rope["rope_type"] == "default":
        return 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    rope_angles = int(rope.get("partial_rotary_factor", 1.0) * d // 2)
    rotated = 1.0 / (base ** (torch.arange(0, 2 * rope_angles, 2, dtype=torch.int64).float() / d))
    return torch.cat((rotated, torch.zeros(d // 2 - rope_angles))) / rope.get("factor", 1.0)


def g4_rotary(inv_freq, T):  # Gemma4TextRotaryEmbedding.forward: float32 angles, cat(freqs, freqs)
    freqs = (inv_freq[None, :, None].float() @ torch.arange(T)[None, None, :].float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb[0], emb.cos(), emb.sin()


def g4_rope(x, cos, sin):  # apply_rotary_pos_emb(x, cos, sin, unsqueeze_dim=2) on (B,T,heads,d)
    cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)
    return (x * cos) + (hf_rotate_half(x) * sin)


def shared_from(cfg, i):
    """(is_kv_shared_layer, store_full_length_kv) of Gemma4TextAttention.__init__."""
    types = cfg["types"]
    first = len(types) - cfg["shared"]
    prev = types[:first]
    shared = i >= first >= 0
    store = not shared and i == len(prev) - 1 - prev[::-1].index(types[i])
    return shared, store


class G4Attention(nn.Module):
    def __init__(self, cfg, i):
        super().__init__()
        C, H = cfg["C"], cfg["H"]
        self.layer_type = cfg["types"][i]
        self.sliding = self.layer_type == "sliding_attention"
        self.head_dim = cfg["d"] if self.sliding else cfg["gd"]
        self.k_eq_v = cfg["k_eq_v"] and not self.sliding
        G = cfg["global_G"] if self.k_eq_v else cfg["G"]
        self.groups = H // G
        self.shared, self.store = shared_from(cfg, i)
        self.q_proj = nn.Linear(C, H * self.head_dim, bias=False)
        self.q_norm = G4Norm(self.head_dim, cfg["eps"])
        if not self.shared:
            self.k_norm = G4Norm(self.head_dim, cfg["eps"])
            self.v_norm = G4Norm(self.head_dim, cfg["eps"], with_scale=False)
            self.k_proj = nn.Linear(C, G * self.head_dim, bias=False)
            self.v_proj = None if self.k_eq_v else nn.Linear(C, G * self.head_dim, bias=False)
        self.o_proj = nn.Linear(H * self.head_dim, C, bias=False)

    def forward(self, x, cos, sin, mask, shared_kv):
        shape = (*x.shape[:-1], -1, self.head_dim)
        self.q = self.q_proj(x)
        q = self.q_norm(self.q.view(shape))
        self.q_normed = q.transpose(1, 2)
        q = g4_rope(q, cos, sin).transpose(1, 2)
        self.q_rot = q
        if self.shared:
            k, v = shared_kv[self.layer_type]
        else:
            self.k = self.k_proj(x)
            self.v = self.v_proj(x) if self.v_proj is not None else self.k
            k = self.k_norm(self.k.view(shape))
            self.k_normed = k.transpose(1, 2)
            k = g4_rope(k, cos, sin).transpose(1, 2)
            v = self.v_norm(self.v.view(shape)).transpose(1, 2)
            self.k_rot, self.v_normed = k, v
        if self.store:
            shared_kv[self.layer_type] = k, v
        k, v = hf_repeat_kv(k, self.groups), hf_repeat_kv(v, self.groups)
        self.scores = torch.matmul(q, k.transpose(2, 3))
        w = torch.matmul(q, k.transpose(2, 3)) * 1.0 + mask  # scaling 1.0
        self.w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        self.context = torch.matmul(self.w, v).transpose(1, 2).contiguous().reshape(*x.shape[:-1], -1)
        return self.o_proj(self.context)


class G4MLP(nn.Module):  # Gemma4TextMLP: twice intermediate_size on the shared layers with use_double_wide_mlp
    def __init__(self, cfg, i):
        super().__init__()
        hidden = cfg["hidden"] * (2 if cfg["double_wide"] and shared_from(cfg, i)[0] and cfg["shared"] > 0 else 1)
        self.gate_proj, self.up_proj = nn.Linear(cfg["C"], hidden, bias=False), nn.Linear(cfg["C"], hidden, bias=False)
        self.down_proj = nn.Linear(hidden, cfg["C"], bias=False)

    def forward(self, x):
        self.hidden = F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x)
        return self.down_proj(self.hidden)


class G4Layer(nn.Module):  # Gemma4TextDecoderLayer (no MoE block)
    def __init__(self, cfg, i):
        super().__init__()
        C, eps = cfg["C"], cfg["eps"]
        self.self_attn, self.mlp = G4Attention(cfg, i), G4MLP(cfg, i)
        self.input_layernorm, self.post_attention_layernorm = G4Norm(C, eps), G4Norm(C, eps)
        self.pre_feedforward_layernorm, self.post_feedforward_layernorm = G4Norm(C, eps), G4Norm(C, eps)
        self.layer_scalar = nn.Parameter(torch.ones(1))
        self.ple = cfg.get("ple", 0)
        if self.ple:  # hidden_size_per_layer_input
            self.per_layer_input_gate = nn.Linear(C, self.ple, bias=False)
            self.per_layer_projection = nn.Linear(self.ple, C, bias=False)
            self.post_per_layer_input_norm = G4Norm(C, eps)

    def forward(self, x, cos, sin, mask, shared_kv, per_layer_input=None):
        self.ln_1 = self.input_layernorm(x)
        self.attention = self.self_attn(self.ln_1, cos, sin, mask, shared_kv)
        self.attention_norm = self.post_attention_layernorm(self.attention)
        self.residual_1 = x + self.attention_norm
        self.ln_2 = self.pre_feedforward_layernorm(self.residual_1)
        self.mlp_out = self.mlp(self.ln_2)
        self.mlp_hidden = self.mlp.hidden
        self.mlp_norm = self.post_feedforward_layernorm(self.mlp_out)
        out = self.residual_1 + self.mlp_norm
        if self.ple:  # residual + post_per_layer_input_norm(per_layer_projection(act(per_layer_input_gate(h)) * per_layer_input))
            self.pl_input = per_layer_input
            h = F.gelu(self.per_layer_input_gate(out), approximate="tanh")
            h = h * per_layer_input
            self.pl_gated = h
            h = self.post_per_layer_input_norm(self.per_layer_projection(h))
            self.pl_output = h
            out = out + h
        out = out * self.layer_scalar
        self.residual_2 = out
        return out


class G4Model(nn.Module):  # Gemma4ForCausalLM
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab"], cfg["C"])
        self.layers = nn.ModuleList([G4Layer(cfg, i) for i in range(len(cfg["types"]))])
        self.norm = G4Norm(cfg["C"], cfg["eps"])
        P, L = cfg.get("ple", 0), len(cfg["types"])
        if P:  # Gemma4TextModel's per-layer embeddings (PLE)
            self.embed_tokens_per_layer = nn.Embedding(cfg["vocab"], L * P)
            self.per_layer_model_projection = nn.Linear(cfg["C"], L * P, bias=False)
            self.per_layer_projection_norm = G4Norm(P, cfg["eps"])
        self.inv_freq = {"sliding_attention": g4_inv_freq(cfg["rope"]["sliding_attention"], cfg["d"]),
                         "full_attention": g4_inv_freq(cfg["rope"]["full_attention"], cfg["gd"])}

    def forward(self, ids):
        T = ids.shape[1]
        self.tokens = self.embed_tokens(ids)
        x = self.embeddings = self.tokens * torch.tensor(self.cfg["C"] ** 0.5).to(self.tokens.dtype)
        P, L = self.cfg.get("ple", 0), len(self.cfg["types"])
        per_layer = None
        if P:  # get_per_layer_inputs, then project_per_layer_inputs
            e = self.embed_tokens_per_layer(ids) * torch.tensor(P ** 0.5).to(self.embed_tokens_per_layer.weight.dtype)
            e = e.reshape(*ids.shape, L, P)
            proj = self.per_layer_model_projection(x) * self.cfg["C"] ** -0.5
            proj = self.per_layer_projection_norm(proj.reshape(*x.shape[:-1], L, P))
            per_layer = (proj + e) * 2.0 ** -0.5
            self.pl_embed, self.pl_proj, self.pl_inputs = (t.reshape(*ids.shape, L * P) for t in (e, proj, per_layer))
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        neg = torch.finfo(torch.float32).min
        masks = {"full_attention": torch.where(j <= i, 0.0, neg)[None, None],
                 "sliding_attention": torch.where((j <= i) & (j > i - self.cfg["window"]), 0.0, neg)[None, None]}
        self.angles, rot = {}, {}
        for t, inv in self.inv_freq.items():
            self.angles[t], cos, sin = g4_rotary(inv, T)
            rot[t] = (cos, sin)
        shared_kv = {}
        for i, layer in enumerate(self.layers):
            t = layer.self_attn.layer_type
            x = layer(x, *rot[t], masks[t], shared_kv, per_layer[:, :, i, :] if per_layer is not None else None)
        self.ln_f = self.norm(x)
        logits = self.ln_f @ self.embed_tokens.weight.T
        cap = self.cfg["softcap"]
        return torch.tanh(logits / cap) * cap


def g4_text_config(cfg, dtype):
    return {"architectures": ["Gemma4ForCausalLM"], "model_type": "gemma4_text", "vocab_size": cfg["vocab"], "hidden_size": cfg["C"],
            "intermediate_size": cfg["hidden"], "num_hidden_layers": len(cfg["types"]), "num_attention_heads": cfg["H"],
            "num_key_value_heads": cfg["G"], "head_dim": cfg["d"], "global_head_dim": cfg["gd"],
            "num_global_key_value_heads": cfg["global_G"] if cfg["k_eq_v"] else None, "attention_k_eq_v": cfg["k_eq_v"],
            "num_kv_shared_layers": cfg["shared"], "use_double_wide_mlp": cfg["double_wide"], "hidden_size_per_layer_input": cfg.get("ple", 0),
            "vocab_size_per_layer_input": cfg["vocab"], "enable_moe_block": False, "max_position_embeddings": cfg["ctx"],
            "rms_norm_eps": cfg["eps"], "tie_word_embeddings": True, "hidden_activation": "gelu_pytorch_tanh", "attention_bias": False,
            "sliding_window": cfg["window"], "layer_types": cfg.get("config_types", cfg["types"]), "rope_parameters": cfg["rope"],
            "final_logit_softcapping": cfg["softcap"], "pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 2,
            "dtype": {torch.float32: "float32", torch.bfloat16: "bfloat16"}[dtype]}


def g4_tensors(m, prefix):
    t = {prefix + "embed_tokens.weight": m.embed_tokens.weight, prefix + "norm.weight": m.norm.weight}
    for i, layer in enumerate(m.layers):
        p = f"{prefix}layers.{i}."
        a = layer.self_attn
        for name in ["q_proj", "k_proj", "v_proj", "o_proj"]:
            if getattr(a, name, None) is not None:
                t[p + f"self_attn.{name}.weight"] = getattr(a, name).weight
        for name in ["q_norm", "k_norm"]:
            if hasattr(a, name):
                t[p + f"self_attn.{name}.weight"] = getattr(a, name).weight
        for name in ["input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"]:
            t[p + name + ".weight"] = getattr(layer, name).weight
        for name in ["gate_proj", "up_proj", "down_proj"]:
            t[p + f"mlp.{name}.weight"] = getattr(layer.mlp, name).weight
        t[p + "layer_scalar"] = layer.layer_scalar
        if layer.ple:
            t[p + "per_layer_input_gate.weight"] = layer.per_layer_input_gate.weight
            t[p + "per_layer_projection.weight"] = layer.per_layer_projection.weight
            t[p + "post_per_layer_input_norm.weight"] = layer.post_per_layer_input_norm.weight
    if m.cfg.get("ple", 0):
        t[prefix + "embed_tokens_per_layer.weight"] = m.embed_tokens_per_layer.weight
        t[prefix + "per_layer_model_projection.weight"] = m.per_layer_model_projection.weight
        t[prefix + "per_layer_projection_norm.weight"] = m.per_layer_projection_norm.weight
    return t


ROPE = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}}
TINY = dict(vocab=64, C=32, hidden=48, H=4, G=2, d=8, gd=16, global_G=1, ctx=64, eps=1e-6, window=3, softcap=4.0, rope=ROPE,
            types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "full_attention"],
            shared=2, double_wide=True, k_eq_v=False)
GEMMA4 = [  # name, dtype, shards, seed, configuration, image-and-text layout
    ("tiny_gemma4", torch.float32, 1, 63, dict(TINY, ple=8), False),  # E2B-like: shared layers, per-layer inputs of 8
    # config.json's layer_types end in a sliding layer: Gemma4TextConfig makes it full (the model computes TINY's types)
    ("tiny_gemma4_kv", torch.bfloat16, 2, 62, dict(TINY, k_eq_v=True, config_types=TINY["types"][:-1] + ["sliding_attention"]), True),
]


def g4_folder(name, dtype, shards, seed, cfg, multimodal):
    torch.manual_seed(seed)
    m = G4Model(cfg)
    with torch.no_grad():
        m.embed_tokens.weight.normal_(0, 0.3)  # tied, drawn small: greedy decoding does not repeat its token
        for layer in m.layers:
            layer.layer_scalar.uniform_(0.5, 1.5)
    as_stored(m, dtype, lambda mod: mod.weight if isinstance(mod, G4Norm) and mod.with_scale else None)
    with torch.no_grad():  # q_norm and k_norm small, as a model trained without 1/√d scaling learns them: the scores stay moderate
        for layer in m.layers:
            for norm in [getattr(layer.self_attn, n) for n in ("q_norm", "k_norm") if hasattr(layer.self_attn, n)]:
                norm.weight.uniform_(0.3, 0.6)
                norm.weight.copy_(norm.weight.to(dtype).float())
    text = g4_text_config(cfg, dtype)
    if multimodal:  # Gemma4ForConditionalGeneration: the text model's fields in text_config, a vision tower beside it
        config = {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "text_config": text,
                  "vision_config": {"model_type": "gemma4_vision", "hidden_size": 8}, "audio_config": None, "tie_word_embeddings": True,
                  "dtype": text["dtype"]}
        tensors = g4_tensors(m, "model.language_model.")
        tensors["model.vision_tower.encoder.layers.0.self_attn.q_proj.linear.weight"] = torch.zeros(8, 8)
    else:
        config, tensors = text, g4_tensors(m, "model.")
    folder = f"{HERE}/data/models/{name}"
    write_weights_folder(folder, config, tensors, dtype, shards)
    import json
    doc, encode = tiny_tokenizer("sentencepiece", cfg["vocab"], "gemma4_text")
    with open(f"{folder}/tokenizer.json", "w") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
    return m, encode


def g4_cases(name, m, cfg, seed, encode):
    """Every step of the layer shown; on a shared layer the queries' and the attention's (its keys and values are
    another layer's)."""
    def expect(T, layer):
        b = m.layers[layer]
        a = b.self_attn
        exp = {"token_embeddings": m.tokens[0], "embeddings": m.embeddings[0], "queries": a.q[0], "queries_normed": a.q_normed[0],
               "queries_rotated": a.q_rot[0], "scores": a.scores[0], "weights": a.w[0], "context": a.context[0], "output": b.attention[0],
               "rope_angles": m.angles[a.layer_type][:T], "ln_f": m.ln_f[0]}
        if not a.shared:
            exp.update({"keys": a.k[0], "values": a.v[0], "keys_normed": a.k_normed[0], "keys_rotated": a.k_rot[0]})
        for key in ["ln_1", "attention", "attention_norm", "residual_1", "ln_2", "mlp_hidden", "mlp_norm", "residual_2"]:
            exp[f"layer{layer + 1}.{key}"] = getattr(b, key)[0]
        if b.ple:  # the per-layer inputs, made before the layers, and this layer's part
            exp.update({"per_layer_embeddings": m.pl_embed[0], "per_layer_projection": m.pl_proj[0], "per_layer_inputs": m.pl_inputs[0]})
            for key, attr in [("per_layer_input", "pl_input"), ("per_layer_gated", "pl_gated"), ("per_layer_output", "pl_output")]:
                exp[f"layer{layer + 1}.{key}"] = getattr(b, attr)[0]
        exp[f"layer{layer + 1}.mlp"] = b.mlp_out[0]
        return exp, []
    L = len(cfg["types"])
    return layer_cases(name, m, cfg["vocab"], seed, [(5, 0), (10, 2), (10, 4), (10, L - 1)], expect, encode, (10, L - 1))


def gemma4_cases():
    cases = []
    for name, dtype, shards, seed, cfg, multimodal in GEMMA4:
        m, encode = g4_folder(name, dtype, shards, seed, cfg, multimodal)
        cases += g4_cases(name, m, cfg, seed, encode)
    return cases
