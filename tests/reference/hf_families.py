"""OLMo 2, OLMo 3, SmolLM3 (and Gemma): written the way Hugging Face's modeling_olmo2.py, modeling_olmo3.py
and modeling_smollm3.py compute (eager attention, repeat_kv, rotate_half, the RMSNorm's float32 and its
cast back), with the rotary tables of modeling_rope_utils.py (default and yarn), those pieces in
hf_blocks.py. One class for the three: what differs is the config, as in the library (Qwen3-MoE and
Cohere2 build on the same attention, qwen3_moe.py and cohere2.py). Each is saved as a tiny Hugging
Face folder: golden families; SmolLM3 once more with sliding windows (smollm3_swa_cases)."""
import json
import os

import torch
import torch.nn as nn

from .common import HERE, as_stored, layer_cases, write_weights_folder
from .hf_blocks import HFRMSNorm, HFRotary, SoftmaxMoE, hf_default_inv_freq, hf_repeat_kv, hf_rotate_half, hf_rotate_interleaved, hf_yarn_inv_freq
from .tokenizer import tiny_tokenizer


class HFAttention(nn.Module):  # Olmo2Attention / Olmo3Attention / SmolLM3Attention / Qwen3MoeAttention / Cohere2Attention, eager
    def __init__(self, cfg, layer_idx):
        super().__init__()
        C, H, G, d = cfg["C"], cfg["H"], cfg["G"], cfg["d"]
        bias = cfg.get("attention_bias", False)
        self.head_dim, self.num_key_value_groups, self.scaling = d, H // G, d ** -0.5
        self.q_proj = nn.Linear(C, H * d, bias=bias)
        self.k_proj = nn.Linear(C, G * d, bias=bias)
        self.v_proj = nn.Linear(C, G * d, bias=bias)
        self.o_proj = nn.Linear(H * d, C, bias=bias)
        self.olmo = cfg["family"] in ("olmo2", "olmo3")
        if self.olmo:  # over the whole projections
            self.q_norm, self.k_norm = HFRMSNorm(H * d, cfg["eps"]), HFRMSNorm(G * d, cfg["eps"])
        self.head_norm = cfg["family"] == "qwen3_moe"
        if self.head_norm:  # Qwen3: "unlike olmo, only on the head dim", each head's features before RoPE
            self.q_norm, self.k_norm = HFRMSNorm(d, cfg["eps"]), HFRMSNorm(d, cfg["eps"])
        self.sliding_window = cfg["window"] if cfg["types"][layer_idx] == "sliding_attention" else None
        self.use_rope = cfg.get("no_rope", [1] * len(cfg["types"]))[layer_idx]
        self.rotate = hf_rotate_half
        if cfg["family"] == "cohere2":  # Cohere2Attention: RoPE on the sliding layers only, on the interleaved pairs
            self.use_rope, self.rotate = self.sliding_window is not None, hf_rotate_interleaved

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        self.q, self.k, self.v = self.q_proj(hidden_states), self.k_proj(hidden_states), self.v_proj(hidden_states)
        q, k = (self.q_norm(self.q), self.k_norm(self.k)) if self.olmo else (self.q, self.k)
        q, k = q.view(hidden_shape), k.view(hidden_shape)
        if self.head_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        query_states = q.transpose(1, 2)
        key_states = k.transpose(1, 2)
        value_states = self.v.view(hidden_shape).transpose(1, 2)
        self.q_normed, self.k_normed = query_states, key_states
        if self.use_rope:
            cos, sin = position_embeddings
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
            query_states = (query_states * cos) + (self.rotate(query_states) * sin)
            key_states = (key_states * cos) + (self.rotate(key_states) * sin)
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
        self.self_attn, self.mlp = HFAttention(cfg, layer_idx), self.make_mlp(cfg, layer_idx)
        self.post_norm = cfg["family"] in ("olmo2", "olmo3")
        if self.post_norm:  # Olmo2DecoderLayer: the norms after each sublayer
            self.post_attention_layernorm = HFRMSNorm(cfg["C"], cfg["eps"])
            self.post_feedforward_layernorm = HFRMSNorm(cfg["C"], cfg["eps"])
        else:  # LlamaDecoderLayer, GemmaDecoderLayer
            self.input_layernorm = HFRMSNorm(cfg["C"], cfg["eps"], gemma)
            self.post_attention_layernorm = HFRMSNorm(cfg["C"], cfg["eps"], gemma)

    def make_mlp(self, cfg, layer_idx):
        return HFMLP(cfg["C"], cfg["hidden"], gelu=cfg["family"] == "gemma")

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
        self.mlp_hidden = getattr(self.mlp, "hidden", None)  # a mixture of experts has none
        if self.post_norm:
            hidden_states = self.mlp_norm = self.post_feedforward_layernorm(hidden_states)
        self.residual_2 = residual + hidden_states
        return self.residual_2


class HFModel(nn.Module):  # Olmo2ForCausalLM / Olmo3ForCausalLM / SmolLM3ForCausalLM
    layer_class = HFDecoderLayer

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg["vocab"], cfg["C"])
        self.layers = nn.ModuleList([self.layer_class(cfg, i) for i in range(len(cfg["types"]))])
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
            if getattr(a, name).bias is not None:
                t[p + f"self_attn.{name}.bias"] = getattr(a, name).bias
        if a.olmo or a.head_norm:
            t[p + "self_attn.q_norm.weight"], t[p + "self_attn.k_norm.weight"] = a.q_norm.weight, a.k_norm.weight
        for name in ["input_layernorm", "post_attention_layernorm", "post_feedforward_layernorm"]:  # those the layer has
            if hasattr(layer, name):
                t[p + name + ".weight"] = getattr(layer, name).weight
        mlps = {"mlp.": layer.mlp}
        if isinstance(layer.mlp, SoftmaxMoE):  # the router, and the experts one by one as the checkpoints store them
            t[p + "mlp.gate.weight"] = layer.mlp.gate.weight
            mlps = {f"mlp.experts.{e}.": x for e, x in enumerate(layer.mlp.experts)}
        for q, mlp in mlps.items():
            for name in ["gate_proj", "up_proj", "down_proj"]:
                t[p + q + name + ".weight"] = getattr(mlp, name).weight
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
        c.update({"no_rope_layers": cfg["no_rope"], "use_sliding_window": "window" in cfg, "sliding_window": cfg.get("window"), "mlp_bias": False,
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


def write_hf_folder(folder, m, dtype, shards, config):
    write_weights_folder(folder, config, hf_tensors(m), dtype, shards)


def hf_family_folder(name, dtype, shards, seed, cfg, model=HFModel, config=hf_config, norms=(HFRMSNorm,)):
    """The model (its norms away from 1, every parameter as the file holds it) and its tiny folder; the tokenizer's encoder."""
    torch.manual_seed(seed)
    m = model(cfg)
    if "embed_std" in cfg:  # tied embeddings drawn small: the stream is not its token's own row, greedy decoding does not repeat it
        with torch.no_grad():
            m.embed_tokens.weight.normal_(0, cfg["embed_std"])
    as_stored(m, dtype, lambda mod: mod.weight if isinstance(mod, norms) else None)
    folder = os.path.join(HERE, "data", "models", name)
    write_hf_folder(folder, m, dtype, shards, config(cfg, dtype))
    doc, encode = tiny_tokenizer(cfg["tokenizer"], cfg["vocab"], cfg.get("tokenizer_family", cfg["family"]))
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
    return m, encode


def hf_layer_cases(name, m, cfg, seed, encode, plan):
    """Every step of the layer shown for each (T, layer) of `plan` (a mixture of experts' router too), a text through
    the folder's tokenizer.json after (10, the last layer), greedy decoding from the prompt of 5."""
    def expect(T, layer):
        b = m.layers[layer]
        a = b.self_attn
        rotary = m.rotary_sliding if a.sliding_window else m.rotary_full
        exp = {"token_embeddings": m.tokens[0], "embeddings": m.embeddings[0], "queries": a.q[0], "keys": a.k[0], "values": a.v[0],
               "scores": a.scores[0], "weights": a.w[0], "context": a.context[0], "output": b.attention[0], "ln_f": m.ln_f[0]}
        if a.use_rope:
            exp.update({"queries_rotated": a.q_rot[0], "keys_rotated": a.k_rot[0], "rope_angles": rotary.angles[:T]})
        if a.olmo or a.head_norm:
            exp["queries_normed"], exp["keys_normed"] = a.q_normed[0], a.k_normed[0]
        keys = ["attention", "residual_1", "mlp_hidden", "residual_2", "attention_norm", "mlp_norm", "ln_1", "ln_2"]
        for key in [k for k in keys if getattr(b, k, None) is not None]:  # the points the layer has
            exp[f"layer{layer + 1}.{key}"] = getattr(b, key)[0]
        exp[f"layer{layer + 1}.mlp"] = b.mlp_out[0]
        exact = []
        if isinstance(b.mlp, SoftmaxMoE):  # the steps qwen3_next.py's cases name, over every token
            e = b.mlp
            exp.update({f"layer{layer + 1}.router_logits": e.logits, f"layer{layer + 1}.router_scores": e.scores,
                        f"layer{layer + 1}.experts_chosen": e.indices.float(), f"layer{layer + 1}.expert_weights": e.top_weights})
            exact.append(f"layer{layer + 1}.experts_chosen")
        return exp, exact
    return layer_cases(name, m, cfg["vocab"], seed, plan, expect, encode, (10, len(cfg["types"]) - 1))


def hf_families_cases():
    cases = []
    for name, dtype, shards, seed, cfg in HF_FAMILIES:
        m, encode = hf_family_folder(name, dtype, shards, seed, cfg)
        L = len(cfg["types"])
        cases += hf_layer_cases(name, m, cfg, seed, encode, [(5, 0), (10, L - 1)] + ([(10, 0)] if "window" in cfg else []))
    return cases


# SmolLM3 with use_sliding_window: SmolLM3Attention's sliding_window is config.sliding_window where layer_types says
# "sliding_attention" (the eager path takes that layer type's mask). Without layer_types the config would slide the
# NoPE layers only (no_rope_layers 0); this one lists its own, a RoPE layer sliding too, so the list is what counts.
SMOLLM3_SWA = dict(HF_FAMILIES[2][4], window=3, types=["sliding_attention", "full_attention", "sliding_attention", "sliding_attention"],
                   embed_std=0.1)


def smollm3_swa_cases():
    name, seed, cfg = "tiny_smollm3_swa", 20, SMOLLM3_SWA
    m, encode = hf_family_folder(name, torch.float32, 1, seed, cfg)
    return hf_layer_cases(name, m, cfg, seed, encode, [(5, 0), (10, 1), (10, 3)])
