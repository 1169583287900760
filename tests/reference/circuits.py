"""Circuits, as TransformerLens computes them, on the tiny GPT-2 and the tiny Llama (GQA), Qwen3
(QK-norm) and Gemma 3 (QK-norm, norms after the sublayers) models: golden circuits.

Direct logit attribution (ActivationCache.decompose_resid / stack_head_results / apply_ln_to_stack):
the last position's stream as a stack of parts (the embeddings, each head's z_h @ W_O[h], o_proj's
bias, each MLP's output), in float64, each centred (LayerNorm) and divided by the final norm's scale
of the final stream (RMSNorm: divided only), then dotted with the unembedding direction with the
final norm's weight folded in (fold_ln): γ ⊙ (W_U[answer] − W_U[wrong]). The final norm's shift
(TransformerLens folds it into b_U) is a term of its own, so that the terms sum to the logit.

Activation patching (patching.py's generic_activation_patch): the corrupted prompt run with one
activation from the clean run, through PyTorch hooks on the reference modules: resid_pre at one
position (layer_pos_patch_setter), a head's z at every position (layer_head_vector_patch_setter on
hook_z: the input of o_proj, its head's slice), and a layer's attention output or MLP output at
every position (attnwalk's by-layer grid; TransformerLens's attn_out / mlp_out grids go by position
too). The metric is the logit difference, or the answer's log-probability; normalised as its
demos do, (patched − corrupted) / (clean − corrupted). A head's circuits (head_circuits_expect): the QK and OV tables,
the OV circuit's eigenvalues and copying score, as TransformerLens's FactoredMatrix computes them (and, for DeepSeek-V3's latent
attention, through the latent: latent_circuits_expect). The models are rebuilt exactly as
gpt2_cases and families_cases build (and save) them."""
import torch

from .common import as_stored, case
from .deepseek_v3 import DEEPSEEK_V3, DsModel
from .gpt2 import BookGPT, BookLayerNorm
from .hf_blocks import HFRMSNorm, HFRotary, hf_rotate_half
from .modern import MODERN, ModernModel, RMSNorm


def blocks_of(m):
    return list(m.trf_blocks)


def heads_of(block):
    return block.att.heads if hasattr(block.att, "heads") else block.att.num_heads


def run(m, ids, hooks=()):
    handles = []
    for module, kind, fn in hooks:
        handles.append(module.register_forward_pre_hook(fn) if kind == "pre" else module.register_forward_hook(fn))
    try:
        with torch.no_grad():
            return m(ids)[0]  # (T, V)
    finally:
        for h in handles:
            h.remove()


def metric(logits, answer, wrong):
    last = logits[-1]
    if wrong is not None:
        return float(last[answer]) - float(last[wrong])
    return float(torch.log_softmax(last.double(), dim=-1)[answer])  # attnwalk's: in double from the float32 logits


def patching_expect(m, clean_ids, corrupt_ids, answer, wrong):
    blocks = blocks_of(m)
    L, T = len(blocks), clean_ids.shape[1]
    H = heads_of(blocks[0])
    cache = {}

    def keep(name):
        def pre(module, args):
            cache[name] = args[0].detach().clone()
        def post(module, args, out):
            cache[name] = out.detach().clone()
        return pre, post

    mlp_of = lambda b: b.ff[2] if isinstance(b.ff, torch.nn.Sequential) else b.ff  # BookBlock calls its MLP's parts one by one
    hooks = []
    for l, b in enumerate(blocks):
        hooks += [(b, "pre", keep(("resid", l))[0]), (b.att, "post", keep(("attn", l))[1]), (mlp_of(b), "post", keep(("mlp", l))[1]),
                  (b.att.out_proj, "pre", keep(("z", l))[0])]
    m_clean = metric(run(m, clean_ids, hooks), answer, wrong)
    m_corrupt = metric(run(m, corrupt_ids), answer, wrong)

    def pre_setter(fn):
        def hook(module, args):
            return (fn(args[0].clone()),) + tuple(args[1:])
        return hook

    resid = torch.zeros(L, T, dtype=torch.float64)
    for l, b in enumerate(blocks):
        for p in range(T):
            def fn(x, l=l, p=p):
                x[:, p] = cache[("resid", l)][:, p]
                return x
            resid[l, p] = metric(run(m, corrupt_ids, [(b, "pre", pre_setter(fn))]), answer, wrong)
    heads = torch.zeros(L, H, dtype=torch.float64)
    for l, b in enumerate(blocks):
        d = b.att.out_proj.in_features // H
        for h in range(H):
            def fn(z, l=l, h=h, d=d):
                z[:, :, h * d:(h + 1) * d] = cache[("z", l)][:, :, h * d:(h + 1) * d]
                return z
            heads[l, h] = metric(run(m, corrupt_ids, [(b.att.out_proj, "pre", pre_setter(fn))]), answer, wrong)
    layers = torch.zeros(L, 2, dtype=torch.float64)
    for l, b in enumerate(blocks):
        layers[l, 0] = metric(run(m, corrupt_ids, [(b.att, "post", lambda mod, a, o, l=l: cache[("attn", l)])]), answer, wrong)
        layers[l, 1] = metric(run(m, corrupt_ids, [(mlp_of(b), "post", lambda mod, a, o, l=l: cache[("mlp", l)])]), answer, wrong)
    norm = lambda t: (t - m_corrupt) / (m_clean - m_corrupt)
    return {"patching_metric": torch.tensor([m_clean, m_corrupt]), "patching_resid": norm(resid), "patching_resid_raw": resid,
            "patching_heads": norm(heads), "patching_heads_raw": heads, "patching_layers": norm(layers), "patching_layers_raw": layers}


def attribution_expect(m, ids, answer, wrong, layer_norm, head, gemma=False):
    """TransformerLens's direct logit attribution at the last position, in float64."""
    logits = run(m, ids)
    blocks = blocks_of(m)
    H = heads_of(blocks[0])
    d64 = lambda t: t.detach().double()
    final = d64(blocks[-1].residual_2[0, -1])
    fn = m.final_norm
    if layer_norm:
        gamma, beta, eps = d64(fn.scale), d64(fn.shift), fn.eps
        scale = ((final - final.mean()) ** 2).mean().add(eps).sqrt()  # hook_scale
    else:
        gamma = d64(1.0 + fn.scale) if fn.gemma else d64(fn.scale)
        beta, eps = None, fn.eps
        scale = (final ** 2).mean().add(eps).sqrt()
    W_U = d64(head)
    direction = gamma * (W_U[answer] - (W_U[wrong] if wrong is not None else 0.0))  # fold_ln: W_U with ln_final.w folded in

    def apply_ln_to_stack(stack):  # (n, C)
        if layer_norm:
            stack = stack - stack.mean(dim=-1, keepdim=True)
        return stack / scale

    def logit_attrs(stack):
        return apply_ln_to_stack(stack) @ direction

    L = len(blocks)
    per_head = torch.full((L, H), float("nan"), dtype=torch.float64)
    per_layer = torch.zeros(L, 2, dtype=torch.float64)
    for l, b in enumerate(blocks):
        att = b.att
        added_attention = b.attention_norm if hasattr(b, "attention_norm") else b.attention
        added_mlp = b.mlp_norm if hasattr(b, "mlp_norm") else b.mlp
        per_layer[l] = logit_attrs(torch.stack([d64(added_attention[0, -1]), d64(added_mlp[0, -1])]))
        if not hasattr(b, "attention_norm"):  # stack_head_results: z_h @ W_O[h]
            d = att.out_proj.in_features // H
            z, W_O = d64(att.context[0, -1]), d64(att.out_proj.weight)
            results = torch.stack([z[h * d:(h + 1) * d] @ W_O[:, h * d:(h + 1) * d].T for h in range(H)])
            per_head[l] = logit_attrs(results)
    if hasattr(m, "pos_emb"):
        T = ids.shape[1]
        parts = [d64(m.tok_emb(ids)[0, -1]), d64(m.pos_emb(torch.arange(T))[-1])]
    else:
        parts = [d64(m.embeddings[0, -1])]
    terms = list(logit_attrs(torch.stack(parts)))
    terms += [per_layer[:, 0].sum(), per_layer[:, 1].sum()]
    if beta is not None:
        terms.append(beta @ (W_U[answer] - (W_U[wrong] if wrong is not None else 0.0)))
    total = sum(terms)
    logit = float(logits[-1, answer]) - (float(logits[-1, wrong]) if wrong is not None else 0.0)
    assert abs(float(total) - logit) < 1e-5 * max(1.0, abs(logit)), (float(total), logit)
    terms += [total, torch.tensor(logit, dtype=torch.float64)]
    return {"attribution_heads": per_head, "attribution_layers": per_layer, "attribution_terms": torch.stack([torch.as_tensor(t) for t in terms])}


def head_circuits_expect(m, ids, layer, head, layer_norm, W_U, embed_scale=1.0, cos_sin=None, offset=1):
    """A head's circuits as TransformerLens computes them (model.QK / model.OV as FactoredMatrix, with fold_ln: each norm's weight
    folded into the weights that read the stream, W_Q, W_K, W_V and W_U, and for a LayerNorm the reading weights and W_U centred;
    its scale σ, b_Q, b_K, b_V, b_O left out), in float64. QK: W_E·W_QK·W_Eᵀ restricted to the prompt's tokens (query × key);
    OV: W_E·W_OV·W_U likewise (source × output token); the eigenvalues of the whole vocabulary's OV circuit as FactoredMatrix
    finds them, torch.linalg.eig of BA = (W_O·W_U)·(W_E·W_V) (d_h × d_h), sorted by real part then imaginary part, largest first;
    the copying score Σλ / Σ|λ| (its real part). attnwalk's additions, which TransformerLens has no such layer for: QK-norm's and
    a norm after the attention's weights folded in the same way (their divisions left out), and with RoPE the QK table again
    with the query `offset` positions after the key (q·R(Δ), k·R(0), the model's own rotary tables)."""
    d64 = lambda t: t.detach().double()
    b = blocks_of(m)[layer]
    att = b.att
    H = heads_of(b)
    G = getattr(att, "num_kv_groups", H)
    d = att.head_dim if hasattr(att, "head_dim") else att.d_h
    g = head // (H // G)

    def weight(norm):  # a norm's weight as it multiplies (Gemma's 1 + w)
        return d64(1.0 + norm.scale.float()) if getattr(norm, "gemma", False) else d64(norm.scale)

    W_E = d64(m.tok_emb.weight) * embed_scale  # (V, C)
    if layer_norm:
        W_E = W_E - W_E.mean(dim=-1, keepdim=True)  # the centring the folded LayerNorm does (TL centres the reading weights)
    W_E = W_E * weight(b.norm1)
    W_Q = d64(att.W_query.weight)[head * d:(head + 1) * d].T  # (C, d_h)
    W_K = d64(att.W_key.weight)[g * d:(g + 1) * d].T
    W_V = d64(att.W_value.weight)[g * d:(g + 1) * d].T
    W_O = d64(att.out_proj.weight)[:, head * d:(head + 1) * d].T  # (d_h, C)
    gq = weight(att.q_norm) if getattr(att, "q_norm", None) is not None else 1.0
    gk = weight(att.k_norm) if getattr(att, "k_norm", None) is not None else 1.0
    U = weight(m.final_norm)[:, None] * d64(W_U).T  # (C, V)
    if layer_norm:
        U = U - U.mean(dim=0, keepdim=True)
    if hasattr(b, "post_attention_layernorm"):
        U = weight(b.post_attention_layernorm)[:, None] * U
    E = W_E[ids[0]]  # the prompt's rows
    q, k = (E @ W_Q) * gq, (E @ W_K) * gk
    out = {"circuit_qk": q @ k.T}
    if cos_sin is not None:
        cos, sin = (d64(t) for t in cos_sin)

        def turn(x, p):
            half = torch.cat([-x[:, d // 2:], x[:, :d // 2]], dim=-1)
            return x * cos[p] + half * sin[p]
        out["circuit_qk_offset"] = turn(q, offset) @ turn(k, 0).T
    out["circuit_ov"] = E @ W_V @ W_O @ U[:, ids[0]]
    A, B = W_E @ W_V, W_O @ U  # FactoredMatrix(W_E W_V, W_O W_U)
    eig = torch.linalg.eig(B @ A).eigenvalues
    order = sorted(range(d), key=lambda i: (-float(eig[i].real), -float(eig[i].imag)))
    eig = eig[order]
    out["circuit_ov_eigenvalues"] = torch.stack([eig.real, eig.imag], dim=1)
    score = (eig.sum() / eig.abs().sum()).real
    out["circuit_copying"] = torch.stack([score, eig.real.sum(), eig.abs().sum()])
    return out


def latent_circuits_expect(m, ids, layer, head, offset):
    """A latent attention (MLA, DeepseekV3Attention) head's circuits, folded as head_circuits_expect folds a head's: each RMSNorm's
    weight folded in and its division left out (the layer's input norm, the query latent's q_a_layernorm, the key/value latent's
    kv_a_layernorm, the final norm). The query head h: q_proj's (or q_b_proj(q_a_proj(x) ⊙ γ_qa)'s) columns of head h, [q_nope | q_rope];
    the key [c_KV·W_UK,h | k_rope], c_KV = kv_a_proj_with_mqa(x)[:r] ⊙ γ_kv, k_rope its last d_rope (one for every head); the value
    c_KV·W_UV,h. The offset table rotates q_rope and k_rope as apply_rotary_pos_emb(_interleave) does, at positions Δ and 0."""
    d64 = lambda t: t.detach().double()
    a = m.layers[layer].self_attn
    nope, rope, v, r, qk = a.nope, a.rope, a.v_dim, a.r, a.qk
    W_E = d64(m.embed_tokens.weight) * d64(m.layers[layer].input_layernorm.weight)

    def query(X):
        if a.q_rank is None:
            q = X @ d64(a.q_proj.weight).T
        else:
            q = ((X @ d64(a.q_a_proj.weight).T) * d64(a.q_a_layernorm.weight)) @ d64(a.q_b_proj.weight).T
        return q.view(-1, a.H, qk)[:, head]

    def latent(X):  # k_nope, k_rope, value
        kv = X @ d64(a.kv_a_proj_with_mqa.weight).T
        c = kv[:, :r] * d64(a.kv_a_layernorm.weight)
        kvb = (c @ d64(a.kv_b_proj.weight).T).view(-1, a.H, nope + v)[:, head]
        return kvb[:, :nope], kv[:, r:], kvb[:, nope:]

    E = W_E[ids[0]]
    q = query(E)
    k_nope, k_rot, val = latent(E)
    out = {"circuit_qk": q @ torch.cat([k_nope, k_rot], dim=-1).T}
    cos, sin = HFRotary(m.inv_freq, m.attention_scaling)(torch.zeros(1), torch.arange(offset + 1)[None])
    cos, sin = d64(cos[0]), d64(sin[0])

    def turn(x, p):
        if a.interleave:
            x = x.reshape(-1, rope // 2, 2).transpose(2, 1).reshape(-1, rope)
        return x * cos[p] + hf_rotate_half(x) * sin[p]
    qo = torch.cat([q[:, :nope], turn(q[:, nope:], offset)], dim=-1)
    ko = torch.cat([k_nope, turn(k_rot, 0)], dim=-1)
    out["circuit_qk_offset"] = qo @ ko.T
    W_O = d64(a.o_proj.weight)[:, head * v:(head + 1) * v].T  # (d_v, C)
    U = d64(m.norm.weight)[:, None] * d64(m.lm_head.weight).T
    out["circuit_ov"] = val @ W_O @ U[:, ids[0]]
    A, B = latent(W_E)[2], W_O @ U  # FactoredMatrix(W_E·W_V, W_O·W_U)
    eig = torch.linalg.eig(B @ A).eigenvalues
    order = sorted(range(v), key=lambda i: (-float(eig[i].real), -float(eig[i].imag)))
    eig = eig[order]
    out["circuit_ov_eigenvalues"] = torch.stack([eig.real, eig.imag], dim=1)
    out["circuit_copying"] = torch.stack([(eig.sum() / eig.abs().sum()).real, eig.real.sum(), eig.abs().sum()])
    return out


def corrupted(ids, vocab, positions):
    c = ids.clone()
    for p in positions:
        c[0, p] = (int(c[0, p]) + 1 + p) % vocab
    return c


def patching_choice(m, ids, vocab, log_prob):
    """The metric (the top token's log-probability, or its logit difference against one of the next five) and the corruption (of
    a few) whose change is largest against the metric's size: random test models barely depend on their context, and a change of
    a few hundredths on a metric of 20 would make the normalised grids a ratio of float32 roundings."""
    logits = run(m, ids)[-1]
    top = int(torch.argmax(logits))
    order = torch.argsort(logits, descending=True).tolist()
    best = None
    for wrong in [None] if log_prob else order[1:6]:
        clean = metric(logits[None], top, wrong)
        for ps in ([1, 6], [2, 5], [0, 3], [4], [3, 7], [5, 6, 7], list(range(ids.shape[1] - 1))):
            bad = corrupted(ids, vocab, ps)
            x = metric(run(m, bad), top, wrong)
            score = abs(clean - x) / max(1.0, abs(clean), abs(x))
            if best is None or score > best[0]:
                best = (score, wrong, bad)
    return top, best[1], best[2]


def patching_case(name, m, ids, vocab, base, log_prob):
    top, wrong, bad = patching_choice(m, ids, vocab, log_prob)
    exp = patching_expect(m, ids, bad, top, wrong)
    args = base + ["--corrupt-ids", ",".join(str(i) for i in bad[0].tolist()), "--answer", f"#{top}"]
    if wrong is not None:
        args += ["--wrong", f"#{wrong}"]
    return case(name + ("_patching_log_prob" if log_prob else "_patching"), args, None, exp)


def circuits_cases():
    cases = []
    for name, seed, (vocab, ctx, d, layers, heads) in [("tiny_gpt2_hf_f32", 1, (50, 16, 16, 2, 4))]:
        torch.manual_seed(seed)
        m = BookGPT(vocab, ctx, d, layers, heads)
        with torch.no_grad():
            for mod in m.modules():
                if isinstance(mod, BookLayerNorm):
                    mod.scale.uniform_(0.5, 1.5)
                    mod.shift.uniform_(-0.2, 0.2)
        m.eval()
        ids = torch.randint(0, vocab, (1, 9), generator=torch.Generator().manual_seed(100 + seed))
        top = int(torch.argmax(run(m, ids)[-1]))
        base = ["gpt2", "--model", "@SRC@/tests/data/" + name + ".safetensors", "--heads", str(heads), "--ids", ",".join(str(i) for i in ids[0].tolist())]
        exp = attribution_expect(m, ids, top, None, True, m.tok_emb.weight)
        cases.append(case(f"{name}_attribution_top", base + ["--attribution"], None, exp))
        answer, wrong = 3, 7
        exp = attribution_expect(m, ids, answer, wrong, True, m.tok_emb.weight)
        cases.append(case(f"{name}_attribution_difference", base + ["--attribution", "--answer", f"#{answer}", "--wrong", f"#{wrong}"], None, exp))
        cases.append(patching_case(name, m, ids, vocab, base, False))
        cases.append(patching_case(name, m, ids, vocab, base, True))
        exp = head_circuits_expect(m, ids, 1, 2, True, m.tok_emb.weight)
        cases.append(case(f"{name}_circuits", base + ["--circuits", "--layer", "2", "--head", "3"], None, exp))
    for name, dtype, shards, seed, cfg in MODERN:
        if name not in ("tiny_llama", "tiny_qwen3", "tiny_gemma3"):
            continue
        torch.manual_seed(seed)
        m = ModernModel(cfg)
        as_stored(m, dtype, lambda mod: mod.scale if isinstance(mod, RMSNorm) else None)
        ids = torch.randint(0, cfg["vocab"], (1, 10), generator=torch.Generator().manual_seed(100 + seed))
        head = m.tok_emb.weight if cfg["tied"] else m.out_head.weight
        gemma = cfg["family"] == "gemma3_text"
        base = ["model", "--model", "@SRC@/tests/data/models/" + name, "--ids", ",".join(str(i) for i in ids[0].tolist())]
        answer, wrong = 5, 9
        exp = attribution_expect(m, ids, answer, wrong, False, head, gemma)
        cases.append(case(f"{name}_attribution_difference", base + ["--attribution", "--answer", f"#{answer}", "--wrong", f"#{wrong}"], None, exp))
        cases.append(patching_case(name, m, ids, cfg["vocab"], base, False))
        # a head's circuits: Llama's query head 3 shares key/value head 2 (GQA, H = 4, G = 2: h // 2, not h % 2); Qwen3 and Gemma 3 fold QK-norm's weights
        layer, qh, offset = {"tiny_llama": (1, 2, 3), "tiny_qwen3": (0, 1, 1), "tiny_gemma3": (0, 2, 2)}[name]
        blk = m.trf_blocks[layer]
        tables = (m.cos_local, m.sin_local) if gemma and blk.sliding else (m.cos, m.sin)
        scale = float(torch.tensor(cfg["C"] ** 0.5, dtype=torch.float32)) if gemma else 1.0
        exp = head_circuits_expect(m, ids, layer, qh, False, head, embed_scale=scale, cos_sin=tables, offset=offset)
        args = base + ["--circuits", "--layer", str(layer + 1), "--head", str(qh + 1)] + (["--offset", str(offset)] if offset != 1 else [])
        cases.append(case(f"{name}_circuits", args, None, exp))
    # latent attention (MLA): a query latent, YaRN and interleaved RoPE (BF16), and plain q_proj (F32), rebuilt as deepseek_v3_cases builds them
    for name, dtype, shards, seed, cfg in DEEPSEEK_V3:
        torch.manual_seed(seed)
        m = DsModel(cfg)
        with torch.no_grad():
            for mod in m.modules():
                if isinstance(mod, HFRMSNorm):
                    mod.weight.uniform_(0.5, 1.5)
            for prm in m.parameters():
                prm.copy_(prm.to(dtype).float())
        ids = torch.randint(0, cfg["vocab"], (1, 7), generator=torch.Generator().manual_seed(100 + seed))
        layer, qh, offset = (1, 2, 2) if cfg["q_rank"] else (0, 1, 1)
        exp = latent_circuits_expect(m, ids, layer, qh, offset)
        args = ["model", "--model", "@SRC@/tests/data/models/" + name, "--ids", ",".join(str(i) for i in ids[0].tolist()), "--circuits",
                "--layer", str(layer + 1), "--head", str(qh + 1)] + (["--offset", str(offset)] if offset != 1 else [])
        cases.append(case(f"{name}_circuits", args, None, exp))
    return cases
