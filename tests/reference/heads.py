"""What the heads do, on the chapter's toy and the tiny GPT-2, Llama, Qwen3 and Gemma 3 models: golden heads.

The logit lens (nostalgebraist's; TransformerLens's accumulated_resid(apply_ln=True) with the final
norm recomputed for every row): the stream after the embeddings and after every block, each through the
model's own final norm and unembedding; attention rollout, head ablation, head roles, the sink by depth
and StreamingLLM's cache. The models are rebuilt exactly as gpt2_cases and families_cases build (and
save) them."""
import torch
import torch.nn.functional as F

from .beyond import apply_rope
from .chapter import Fused
from .common import BUILTIN, as_stored, case
from .gpt2 import BookGPT, BookLayerNorm
from .modern import MODERN, ModernModel, RMSNorm


def lens_expect(m, head, blocks):
    streams = [m.embeddings] + [b.residual_2 for b in blocks]
    final_top = None
    tops, probs, ranks = [], [], []
    for r in reversed(streams):
        logits = m.final_norm(r)[0] @ head.T  # (T, V)
        top = torch.argmax(logits, dim=-1)
        if final_top is None:
            final_top = top
        ref = logits.gather(1, final_top[:, None])
        ids = torch.arange(logits.shape[1])[None]
        rank = (logits > ref).sum(-1) + ((logits == ref) & (ids < final_top[:, None])).sum(-1) + 1
        tops.append(top)
        probs.append(torch.softmax(logits, dim=-1).gather(1, top[:, None])[:, 0])
        ranks.append(rank)
    stack = lambda xs: torch.stack(list(reversed(xs)), dim=1).float()  # (T, layers + 1)
    return {"lens_top_ids": stack(tops), "lens_top_probs": stack(probs), "lens_final_rank": stack(ranks)}


def rollout_expect(blocks):  # Abnar & Zuidema: heads averaged, + I, rows normalised, R = A_L ... A_1
    R = None
    for b in blocks:
        A = b.att.w[0].mean(dim=0)
        A = A + torch.eye(A.shape[0])
        A = A / A.sum(dim=-1, keepdim=True)
        R = A if R is None else A @ R
    return {"rollout": R}


def ablation_expect(m, ids, blocks, ablate, each):
    """--ablate (layer, head or None) pairs, counted from 0; --ablate-each layer: the changes of the
    next token's logit and probability (the original top token) and of the prompt's mean cross-entropy."""
    def run(off):
        for i, b in enumerate(blocks):
            b.att.ablate = tuple(off.get(i, ()))
        with torch.no_grad():
            logits = m(ids)[0]
        for b in blocks:
            b.att.ablate = ()
        return logits
    base = run({})
    target = int(torch.argmax(base[-1]))
    def effect(logits):
        return torch.tensor([float(logits[-1, target]), float(torch.softmax(logits[-1], -1)[target]),
                             float(F.cross_entropy(logits[:-1], ids[0, 1:]))], dtype=torch.float64)
    b0 = effect(base)
    off = {}
    heads = blocks[0].att.heads if hasattr(blocks[0].att, "heads") else blocks[0].att.num_heads
    for layer, head in ablate:
        off.setdefault(layer, []).extend(range(heads) if head is None else [head])
    exp = {"ablation": effect(run(off)) - b0}
    exp["ablation_per_head"] = torch.stack([effect(run({each: [h]})) - b0 for h in range(heads)])
    return exp


def roles_expect(m, vocab, blocks, n, seed):  # TransformerLens's scores, without a BOS
    torch.manual_seed(seed)
    lo, hi = (1000, 10000) if vocab >= 10000 else (0, vocab)
    r = torch.randint(lo, hi, (n,))
    ids = torch.cat([r, r])[None]
    with torch.no_grad():
        m(ids)
    score = lambda offset: torch.stack([b.att.w[0].diagonal(offset=offset, dim1=-2, dim2=-1).mean(-1) for b in blocks])
    induction, previous, duplicate = score(1 - n), score(-1), score(-n)
    L, H = induction.shape
    order = torch.argsort(induction.flatten(), descending=True, stable=True)
    rows = []
    for k in order.tolist():
        l, h = divmod(k, H)
        w = blocks[l].att.w[0, h, 1:].double()  # the rows from 2
        entropy = -torch.where(w > 0, w * w.clamp_min(1e-300).log(), torch.zeros_like(w)).sum(-1).mean()
        rows.append([l + 1, h + 1, float(induction[l, h]), float(previous[l, h]), float(duplicate[l, h]), float(w[:, 0].mean()), float(entropy)])
    return {"roles_ids": ids[0].float(), "role_induction": induction, "role_previous": previous, "role_duplicate": duplicate,
            "roles_ranked": torch.tensor(rows)}


def sink_depth_expect(blocks):  # the emergent sink by depth: per layer, the rows from 2's weight on token 1, over the heads
    return {"sink_by_depth": torch.stack([b.att.w[0, :, 1:, 0].double().mean() for b in blocks]).float()}


def streaming_expect(m, ids, start, recent, n, top=5):
    # StreamingLLM (Xiao et al.): StartRecentKVCache.evict_for_space before each token, keys cached
    # before RoPE and rotated at their index in the cache, the query at the last index (its
    # llama_pos_shift_attention_forward), on the textbook's Llama/Qwen3 blocks; greedy on the kept
    # cache, each next token's distribution against the whole sequence run again (no cache).
    caches = [None] * len(m.trf_blocks)
    head = m.tok_emb.weight if m.cfg["tied"] else m.out_head.weight

    def run(tokens):
        Tn = tokens.shape[1]
        x, rows = m.tok_emb(tokens), []
        for li, b in enumerate(m.trf_blocks):
            att = b.att
            h = b.norm1(x)
            q = att.W_query(h).view(1, Tn, att.num_heads, att.head_dim).transpose(1, 2)
            k = att.W_key(h).view(1, Tn, att.num_kv_groups, att.head_dim).transpose(1, 2)
            v = att.W_value(h).view(1, Tn, att.num_kv_groups, att.head_dim).transpose(1, 2)
            if att.q_norm:
                q, k = att.q_norm(q), att.k_norm(k)
            if caches[li] is not None:
                K, V = caches[li]
                L = K.shape[2]
                if L + Tn > start + recent:  # evict_for_space(Tn)
                    K = torch.cat([K[:, :, :start], K[:, :, L - recent + Tn:]], dim=2)
                    V = torch.cat([V[:, :, :start], V[:, :, L - recent + Tn:]], dim=2)
                k, v = torch.cat([K, k], dim=2), torch.cat([V, v], dim=2)
            caches[li] = (k, v)
            nk = k.shape[2]
            qr = apply_rope(q, m.cos[nk - Tn:nk], m.sin[nk - Tn:nk])
            kr = apply_rope(k, m.cos[:nk], m.sin[:nk]).repeat_interleave(att.group_size, dim=1)
            vr = v.repeat_interleave(att.group_size, dim=1)
            mask = torch.triu(torch.ones(Tn, nk, dtype=torch.bool), diagonal=nk - Tn + 1)
            w = torch.softmax((qr @ kr.transpose(2, 3)).masked_fill(mask, -torch.inf) / att.head_dim ** 0.5, dim=-1)
            rows.append(w)
            x = x + att.out_proj((w @ vr).transpose(1, 2).reshape(1, Tn, att.d_out))
            x = x + b.ff(b.norm2(x))
        return m.final_norm(x)[0, -1] @ head.T, rows

    exp, seq, kl, overlap = {}, ids, [], []
    with torch.no_grad():
        logits, _ = run(ids)
        for step in range(n):
            nxt = int(torch.argmax(logits))
            seq = torch.cat([seq, torch.tensor([[nxt]])], dim=1)
            logits, rows = run(seq[:, -1:])
            exp[f"step{seq.shape[1]}.weights"] = rows[0][0, :, 0]
            p = torch.softmax(m(seq)[0, -1].double(), dim=-1)
            r = torch.softmax(logits.double(), dim=-1)
            kl.append(float((p * (p.log() - r.log())).sum()))
            a, c = torch.argsort(p, descending=True, stable=True)[:top], torch.argsort(r, descending=True, stable=True)[:top]
            overlap.append(len(set(a.tolist()) & set(c.tolist())))
    T, total = ids.shape[1], seq.shape[1]
    kept = list(range(min(start, total))) + list(range(max(start, total - recent), total))
    exp.update({"generated_ids": seq[0, T:].float(), "cache_kept": torch.tensor(kept).float(), "cache_kl": torch.tensor(kl),
                "cache_top_k_overlap": torch.tensor(overlap).float()})
    return exp


def heads_cases():
    cases = []
    # the chapter's toy: MultiHeadAttention on the sentence run twice, TransformerLens's three diagonals per head
    for heads, d_out, seed in [(2, 2, 123), (4, 8, 7)]:
        x = torch.tensor(BUILTIN)
        torch.manual_seed(seed)
        m = Fused(3, d_out, 0.0, heads, False, "linear")
        with torch.no_grad():
            m(torch.cat([x, x])[None])
        n, w = x.shape[0], m.w[0]
        diag = lambda offset: w.diagonal(offset=offset, dim1=-2, dim2=-1).mean(-1)
        exp = {"role_induction": diag(1 - n), "role_previous": diag(-1), "role_duplicate": diag(-n)}
        cases.append(case(f"toy_mha_head_roles_h{heads}_dout{d_out}_seed{seed}",
                          ["mha", "--heads", str(heads), "--d-out", str(d_out), "--seed", str(seed), "--head-roles"], None, exp))
    for name, seed, (vocab, ctx, d, layers, heads) in [("tiny_gpt2_hf_f32", 1, (50, 16, 16, 2, 4)), ("tiny_gpt2_nano_f32", 2, (40, 12, 24, 3, 3))]:
        torch.manual_seed(seed)
        m = BookGPT(vocab, ctx, d, layers, heads)
        with torch.no_grad():
            for mod in m.modules():
                if isinstance(mod, BookLayerNorm):
                    mod.scale.uniform_(0.5, 1.5)
                    mod.shift.uniform_(-0.2, 0.2)
        m.eval()
        ids = torch.randint(0, vocab, (1, 9), generator=torch.Generator().manual_seed(100 + seed))
        with torch.no_grad():
            m(ids)
            exp = lens_expect(m, m.tok_emb.weight, m.trf_blocks)
            exp.update(rollout_expect(m.trf_blocks))
        args = ["gpt2", "--model", "@SRC@/tests/data/" + name + ".safetensors", "--heads", str(heads),
                "--ids", ",".join(str(i) for i in ids[0].tolist()), "--logit-lens", "--rollout"]
        cases.append(case(f"{name}_logit_lens_rollout", args, None, exp, ["lens_top_ids", "lens_final_rank"]))
        cases.append(case(f"{name}_sink_by_depth", args[:-2] + ["--view"], None, sink_depth_expect(m.trf_blocks)))
        exp = ablation_expect(m, ids, m.trf_blocks, [(0, 1), (layers - 1, None)], layers - 1)
        args = args[:-2] + ["--ablate", f"1.2,{layers}.*", "--ablate-each", str(layers)]
        cases.append(case(f"{name}_ablation", args, None, exp))
        exp = roles_expect(m, vocab, m.trf_blocks, ctx // 2 - 1, seed)
        args = args[:-4] + ["--head-roles", str(ctx // 2 - 1), "--roles-seed", str(seed)]
        cases.append(case(f"{name}_roles", args, None, exp, ["roles_ids"]))
    for name, dtype, shards, seed, cfg in MODERN:
        if name not in ("tiny_llama", "tiny_gemma3", "tiny_qwen3"):
            continue
        torch.manual_seed(seed)
        m = ModernModel(cfg)
        as_stored(m, dtype, lambda mod: mod.scale if isinstance(mod, RMSNorm) else None)
        ids = torch.randint(0, cfg["vocab"], (1, 10), generator=torch.Generator().manual_seed(100 + seed))
        with torch.no_grad():
            m(ids)
            exp = lens_expect(m, m.tok_emb.weight if cfg["tied"] else m.out_head.weight, m.trf_blocks)
            exp.update(rollout_expect(m.trf_blocks))
        args = ["model", "--model", "@SRC@/tests/data/models/" + name, "--ids", ",".join(str(i) for i in ids[0].tolist()), "--logit-lens",
                "--rollout"]
        cases.append(case(f"{name}_logit_lens_rollout", args, None, exp, ["lens_top_ids", "lens_final_rank"]))
        cases.append(case(f"{name}_sink_by_depth", args[:-2] + ["--view"], None, sink_depth_expect(m.trf_blocks)))
        L = len(cfg["sliding"])
        exp = ablation_expect(m, ids, m.trf_blocks, [(0, 1), (L - 1, None)], 0)
        args = args[:-2] + ["--ablate", f"1.2,{L}.*", "--ablate-each", "1"]
        cases.append(case(f"{name}_ablation", args, None, exp))
        exp = roles_expect(m, cfg["vocab"], m.trf_blocks, 9, seed)
        args = args[:-4] + ["--head-roles", "9", "--roles-seed", str(seed)]
        cases.append(case(f"{name}_roles", args, None, exp, ["roles_ids"]))
        if name != "tiny_gemma3":  # StreamingLLM's cache: every layer full (Gemma 3's sliding layers keep their own window)
            exp = streaming_expect(m, ids, 2, 4, 6)
            args = args[:-4] + ["--generate", "6", "--streaming-cache", "2,4"]
            cases.append(case(f"{name}_streaming_cache", args, None, exp, ["generated_ids", "cache_kept", "cache_top_k_overlap"]))
    return cases
