#!/usr/bin/env python3
"""Writes the GGUF test files of tests/data/gguf/ from the tiny Hugging Face folders, as
llama.cpp's convert_hf_to_gguf.py and llama-quantize lay them out (no llama.cpp needed):

  tiny_llama3_f32.gguf        a Llama 3.x: tiny_smollm2's weights with Llama 3's RoPE (rope_theta 500000,
                              rope_scaling llama3, factor 8), q's and k's rows permuted as
                              LlamaModel.permute does, and the scaling as the converter writes it:
                              the tensor rope_freqs.weight (LlamaModel.generate_extra_tensors); its
                              folder is tiny_smollm2's weights beside tiny_llama3_f32_ref/config.json
  tiny_qwen3_bf16.gguf        Qwen3 in BF16, with its tokenizer (tokenizer.ggml.pre "qwen2")
  tiny_qwen3_q8_0.gguf, tiny_olmo2_q4_0.gguf, tiny_qwen2_q5_1.gguf, tiny_gemma3_q8_0.gguf
                              quantized where a row is whole blocks (else F32, as llama-quantize
                              falls back), each beside a folder of the same weights dequantized
                              by this file's reference (tiny_*_ref/): the forward must be equal
                              (Gemma 3's norms stored as 1 + w, as the converter does; its folder
                              with llama.cpp's scale 1/√d_h and window pattern)
  tiny_llama_tokenizer.gguf   tiny_llama's tokenizer alone (tokenizer.ggml.pre "llama-bpe")
  tiny_gpt2_f32.gguf, tiny_gpt2_f16.gguf, tiny_gpt2_q8_0.gguf
                              GPT-2 as convert_hf_to_gguf.py's GPT2Model writes it (gpt2.* keys, the
                              LayerNorm's layer_norm_epsilon, attn_qkv and the other Conv1D weights
                              transposed to [out, in], position_embd, output.weight a copy of
                              token_embd, tokenizer.ggml.pre "gpt-2"), from tiny_gpt2_f32_ref/, a
                              Hugging Face GPT-2 folder this file writes (random weights, a byte-level
                              BPE tokenizer.json of GPT-2's kind); the Q8_0 file as llama-quantize
                              makes it from the F32 one (position_embd, norms and biases kept F32),
                              beside tiny_gpt2_q8_0_ref/; the F16 one (--outtype f16) beside
                              tiny_gpt2_f16_ref/, its 16-bit weights in Hugging Face's layout
  blocks.gguf + blocks.f32    one tensor per type, two rows of 256, and the reference's floats
                              for each, one after the other as little-endian float32 (their bits)

The reference dequantization below is written from ggml's dequantize_row_* (ggml-quants.c)
with numpy float32 operations, each rounded as the C computes it.
Usage: /usr/bin/python3 tests/make_gguf.py
"""
import json
import pathlib
import shutil
import struct

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
MODELS = HERE / "data" / "models"
OUT = HERE / "data" / "gguf"
sys_path = str(HERE)
import sys  # noqa: E402
sys.path.insert(0, sys_path)
from hostile_model_path import read_st, write_st  # noqa: E402

TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8, "Q2_K": 10, "Q3_K": 11, "Q4_K": 12, "Q5_K": 13, "Q6_K": 14, "BF16": 30, "IQ4_NL": 20, "IQ4_XS": 23}
BLOCK = {"F32": 1, "F16": 1, "BF16": 1, "Q4_0": 32, "Q4_1": 32, "Q5_0": 32, "Q5_1": 32, "Q8_0": 32, "Q2_K": 256, "Q4_K": 256, "Q5_K": 256, "Q6_K": 256, "Q3_K": 256,
         "IQ4_NL": 32, "IQ4_XS": 256}  # Q3_K, then the IQ4s, last: the others' test blocks as before
f32 = np.float32


# ---- the reference: ggml's dequantize_row_* ----------------------------------------------
def half(b):
    return np.frombuffer(bytes(b), dtype="<f2").astype(f32)


def dequantize(kind, data, n):
    data = np.frombuffer(data, dtype=np.uint8)
    if kind == "F32":
        return np.frombuffer(data.tobytes(), dtype="<f4").copy()
    if kind == "F16":
        return np.frombuffer(data.tobytes(), dtype="<f2").astype(f32)
    if kind == "BF16":
        return (np.frombuffer(data.tobytes(), dtype="<u2").astype(np.uint32) << 16).view(f32)
    per = BLOCK[kind]
    size = len(data) // (n // per)
    out = []
    for blk in data.reshape(n // per, size):
        out.append(globals()["dq_" + kind.lower()](blk))
    return np.concatenate(out).astype(f32)


def dq_q8_0(b):
    return b[2:34].view(np.int8).astype(f32) * half(b[0:2])[0]


def dq_q4_0(b):
    d, qs = half(b[0:2])[0], b[2:18].astype(np.int32)
    return np.concatenate([((qs & 15) - 8).astype(f32) * d, ((qs >> 4) - 8).astype(f32) * d])


def dq_q4_1(b):
    d, m, qs = half(b[0:2])[0], half(b[2:4])[0], b[4:20].astype(np.int32)
    return np.concatenate([(qs & 15).astype(f32) * d + m, (qs >> 4).astype(f32) * d + m])


def q5(b, with_min):
    d = half(b[0:2])[0]
    m = half(b[2:4])[0] if with_min else f32(0)
    p = 4 if with_min else 2
    qh = int.from_bytes(bytes(b[p:p + 4]), "little")
    qs = b[p + 4:p + 20].astype(np.int32)
    j = np.arange(16)
    h0 = ((qh >> j) << 4) & 0x10
    h1 = (qh >> (j + 12)) & 0x10
    x0, x1 = (qs & 15) | h0, (qs >> 4) | h1
    if with_min:
        return np.concatenate([x0.astype(f32) * d + m, x1.astype(f32) * d + m])
    return np.concatenate([(x0 - 16).astype(f32) * d, (x1 - 16).astype(f32) * d])


def dq_q5_0(b):
    return q5(b, False)


def dq_q5_1(b):
    return q5(b, True)


def scale_min_k4(j, q):
    if j < 4:
        return q[j] & 63, q[j + 4] & 63
    return (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4)


def dq_q2_k(b):
    scales, q, d, mn = b[0:16], b[16:80].astype(np.int32), half(b[80:82])[0], half(b[82:84])[0]
    y, i = [], 0
    for n in range(2):
        qq = q[32 * n:32 * n + 32]
        for shift in (0, 2, 4, 6):
            for part in (qq[:16], qq[16:]):
                sc = int(scales[i]); i += 1
                dl, ml = d * f32(sc & 15), mn * f32(sc >> 4)
                y.append(dl * ((part >> shift) & 3).astype(f32) - ml)
    return np.concatenate(y)


def dq_q3_k(b):
    hm, q, d = b[0:32].astype(np.int32), b[32:96].astype(np.int32), half(b[108:110])[0]
    aux = [int.from_bytes(bytes(b[96 + 4 * i:100 + 4 * i]), "little") for i in range(3)] + [0]
    tmp, k1, k2 = aux[2], 0x03030303, 0x0F0F0F0F
    aux[2] = ((aux[0] >> 4) & k2) | (((tmp >> 4) & k1) << 4)
    aux[3] = ((aux[1] >> 4) & k2) | (((tmp >> 6) & k1) << 4)
    aux[0] = (aux[0] & k2) | (((tmp >> 0) & k1) << 4)
    aux[1] = (aux[1] & k2) | (((tmp >> 2) & k1) << 4)
    scales = np.frombuffer(b"".join(struct.pack("<I", a) for a in aux), dtype=np.int8).astype(np.int32)
    y, i, m = [], 0, 1
    for n in range(2):
        qq = q[32 * n:32 * n + 32]
        for shift in (0, 2, 4, 6):
            for h in (0, 1):
                dl = d * f32(scales[i] - 32)
                i += 1
                code = ((qq[16 * h:16 * h + 16] >> shift) & 3) - np.where(hm[16 * h:16 * h + 16] & m, 0, 4)
                y.append(dl * code.astype(f32))
            m <<= 1
    return np.concatenate(y)


def q45_k(b, five):
    d, mn, scales = half(b[0:2])[0], half(b[2:4])[0], [int(x) for x in b[4:16]]
    qh = b[16:48].astype(np.int32)
    ql = b[48:176].astype(np.int32) if five else b[16:144].astype(np.int32)
    y = []
    for k in range(4):
        q = ql[32 * k:32 * k + 32]
        sc, m = scale_min_k4(2 * k, scales)
        d1, m1 = d * f32(sc), mn * f32(m)
        sc, m = scale_min_k4(2 * k + 1, scales)
        d2, m2 = d * f32(sc), mn * f32(m)
        hi1 = np.where(qh & (1 << (2 * k)), 16, 0) if five else 0
        hi2 = np.where(qh & (2 << (2 * k)), 16, 0) if five else 0
        y.append(d1 * ((q & 15) + hi1).astype(f32) - m1)
        y.append(d2 * ((q >> 4) + hi2).astype(f32) - m2)
    return np.concatenate(y)


def dq_q4_k(b):
    return q45_k(b, False)


def dq_q5_k(b):
    return q45_k(b, True)


def dq_q6_k(b):
    ql, qh, sc, d = b[0:128].astype(np.int32), b[128:192].astype(np.int32), b[192:208].view(np.int8).astype(f32), half(b[208:210])[0]
    y = np.zeros(256, f32)
    for n in range(2):
        L, H, S = ql[64 * n:64 * n + 64], qh[32 * n:32 * n + 32], sc[8 * n:8 * n + 8]
        for l in range(32):
            i = l // 16
            q1 = ((L[l] & 15) | (((H[l] >> 0) & 3) << 4)) - 32
            q2 = ((L[l + 32] & 15) | (((H[l] >> 2) & 3) << 4)) - 32
            q3 = ((L[l] >> 4) | (((H[l] >> 4) & 3) << 4)) - 32
            q4 = ((L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4)) - 32
            y[128 * n + l] = d * S[i] * f32(q1)
            y[128 * n + l + 32] = d * S[i + 2] * f32(q2)
            y[128 * n + l + 64] = d * S[i + 4] * f32(q3)
            y[128 * n + l + 96] = d * S[i + 6] * f32(q4)
    return y


KVALUES_IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=f32)


def dq_iq4_nl(b):  # dequantize_row_iq4_nl: d·kvalues_iq4nl[q], low nibbles first
    d, qs = half(b[0:2])[0], b[2:18]
    return np.concatenate([d * KVALUES_IQ4NL[qs & 15], d * KVALUES_IQ4NL[qs >> 4]])


def dq_iq4_xs(b):  # dequantize_row_iq4_xs: 8 sub-blocks of 32, each dl = d·(ls − 32) with a 6-bit ls
    d, sh, sl, qs = half(b[0:2])[0], int(b[2]) | (int(b[3]) << 8), b[4:8], b[8:136]
    y = []
    for ib in range(8):
        ls = ((int(sl[ib // 2]) >> (4 * (ib % 2))) & 15) | (((sh >> (2 * ib)) & 3) << 4)
        dl = f32(d * f32(ls - 32))
        q = qs[16 * ib:16 * ib + 16]
        y += [dl * KVALUES_IQ4NL[q & 15], dl * KVALUES_IQ4NL[q >> 4]]
    return np.concatenate(y)


# ---- the writer's quantization (ggml's reference rounding for the 32-weight types) -----
def f16b(x):
    return np.array([x], dtype="<f2").tobytes()


def quantize(kind, x, rng):
    x = np.asarray(x, dtype=f32).reshape(-1)
    if kind == "F32":
        return x.astype("<f4").tobytes()
    if kind == "F16":
        return x.astype("<f2").tobytes()
    if kind == "BF16":
        return (x.view(np.uint32) >> 16).astype("<u2").tobytes()  # the folder's BF16 values: exact
    out = bytearray()
    per = BLOCK[kind]
    for blk in x.reshape(-1, per):
        if kind == "Q8_0":
            d = f32(np.abs(blk).max() / 127)
            q = np.round(blk / d if d else blk * 0).astype(np.int8)
            out += f16b(d) + q.tobytes()
        elif kind in ("Q4_0", "Q5_0"):
            lim = 8 if kind == "Q4_0" else 16
            mx = blk[np.abs(blk).argmax()]
            d = f32(mx / -lim)
            q = np.minimum(2 * lim - 1, (blk * (1 / d if d else 0) + lim + 0.5).astype(np.int32))
            out += f16b(d) + pack5(q) if kind == "Q5_0" else f16b(d) + nibbles(q)
        elif kind in ("Q4_1", "Q5_1"):
            top = 15 if kind == "Q4_1" else 31
            lo, hi = blk.min(), blk.max()
            d = f32((hi - lo) / top)
            q = np.minimum(top, ((blk - lo) * (1 / d if d else 0) + 0.5).astype(np.int32))
            out += f16b(d) + f16b(lo) + (pack5(q) if kind == "Q5_1" else nibbles(q))
        else:  # the K-quants and IQ4s: codes and 6-bit scales drawn, d and dmin from the values' range
            size = {"Q2_K": 84, "Q3_K": 110, "Q4_K": 144, "Q5_K": 176, "Q6_K": 210, "IQ4_NL": 18, "IQ4_XS": 136}[kind]
            b = bytearray(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
            span = float(np.abs(blk).max())
            d, dmin = f16b(span / 600), f16b(span / 900)
            if kind == "Q2_K":
                b[80:82], b[82:84] = d, dmin
            elif kind == "Q6_K":
                b[208:210] = f16b(span / 4000)
            elif kind == "Q3_K":
                b[108:110] = f16b(span / 1000)
            elif kind == "IQ4_NL":
                b[0:2] = f16b(span / 127)
            elif kind == "IQ4_XS":
                b[0:2] = f16b(span / 4000)
            else:
                b[0:2], b[2:4] = d, dmin
            out += b
    return bytes(out)


def nibbles(q):
    return ((q[:16] & 15) | ((q[16:] & 15) << 4)).astype(np.uint8).tobytes()


def pack5(q):
    qh = 0
    for j in range(16):
        qh |= ((int(q[j]) >> 4) & 1) << j
        qh |= ((int(q[j + 16]) >> 4) & 1) << (j + 16)
    return struct.pack("<I", qh) + nibbles(q)


# ---- GGUF -----------------------------------------------------------------------------
def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gvalue(v):
    kind, x = v
    scalar = {"u32": ("<I", 4), "i32": ("<i", 5), "f32": ("<f", 6), "bool": ("<?", 7), "u64": ("<Q", 10)}
    if kind in scalar:
        fmt, t = scalar[kind]
        return struct.pack("<I", t) + struct.pack(fmt, x)
    if kind == "str":
        return struct.pack("<I", 8) + gstr(x)
    if kind == "strs":
        return struct.pack("<IIQ", 9, 8, len(x)) + b"".join(gstr(s) for s in x)
    if kind == "i32s":
        return struct.pack("<IIQ", 9, 5, len(x)) + b"".join(struct.pack("<i", i) for i in x)
    raise ValueError(kind)


def gguf_header(kv, tensors, align=32):
    """kv: [(key, (type, value))]; tensors: [(name, torch-order shape, kind, size in bytes)].
    The header up to the data (padded to `align`), and each tensor's offset in the data."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for k, v in kv:
        head += gstr(k) + gvalue(v)
    offsets, at = [], 0
    for name, shape, kind, size in tensors:
        at += -at % align
        offsets.append(at)
        at += size
    for (name, shape, kind, size), off in zip(tensors, offsets):
        head += gstr(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in reversed(shape))
        head += struct.pack("<IQ", TYPES[kind], off)
    head += b"\0" * (-len(head) % align)
    return head, offsets


def write_gguf(path, kv, tensors, align=32):
    """kv: [(key, (type, value))]; tensors: [(name, torch-order shape, kind, bytes)]."""
    head, offsets = gguf_header(kv, [(name, shape, kind, len(raw)) for name, shape, kind, raw in tensors], align)
    data = b""
    for (name, shape, kind, raw), off in zip(tensors, offsets):
        data += b"\0" * (off - len(data)) + raw
    pathlib.Path(path).write_bytes(head + data)


def read_folder(d):
    tensors = {}
    index = d / "model.safetensors.index.json"
    files = sorted(set(json.loads(index.read_text())["weight_map"].values())) if index.exists() else ["model.safetensors"]
    for f in files:
        header, body = read_st(d / f)
        for name, e in header.items():
            if name == "__metadata__":
                continue
            b, end = e["data_offsets"]
            raw = body[b:end]
            if e["dtype"] == "F32":
                a = np.frombuffer(raw, "<f4")
            elif e["dtype"] == "BF16":
                a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(f32)
            else:
                a = np.frombuffer(raw, "<f2").astype(f32)
            tensors[name] = (a.reshape(e["shape"]).astype(f32), e["dtype"])
    return tensors


LAYER_PARTS = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
               "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
               "post_attention_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffw_norm", "mlp.gate_proj": "ffn_gate",
               "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def gguf_name(name, arch):
    if name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if name == "model.norm.weight":
        return "output_norm.weight"
    if name == "lm_head.weight":
        return "output.weight"
    parts = name.split(".")
    layer, rest, suffix = parts[2], ".".join(parts[3:-1]), parts[-1]
    part = {"pre_feedforward_layernorm": "ffn_norm"}.get(rest) or LAYER_PARTS[rest]  # Gemma 3's norm before the MLP
    if arch in ("olmo2", "gemma3") and rest == "post_attention_layernorm":
        part = "post_attention_norm"
    return f"blk.{layer}.{part}.{suffix}"


def permute(w, n_head):  # convert_hf_to_gguf.py's LlamaModel.permute
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def tokenizer_kv(d, pre):
    t = json.loads((d / "tokenizer.json").read_text())
    vocab = dict(t["model"]["vocab"])
    special = set()
    for a in t.get("added_tokens", []):
        vocab[a["content"]] = a["id"]
        special.add(a["id"])
    tokens = [None] * (max(vocab.values()) + 1)
    for tok, i in vocab.items():
        tokens[i] = tok
    merges = [m if isinstance(m, str) else " ".join(m) for m in t["model"]["merges"]]
    kv = [("tokenizer.ggml.model", ("str", "gpt2")), ("tokenizer.ggml.pre", ("str", pre)), ("tokenizer.ggml.tokens", ("strs", tokens)),
          ("tokenizer.ggml.token_type", ("i32s", [3 if i in special else 1 for i in range(len(tokens))])),
          ("tokenizer.ggml.merges", ("strs", merges))]
    post = json.dumps(t.get("post_processor"))
    bos = [a["id"] for a in t.get("added_tokens", []) if a["content"] in post and "SpecialToken" in post]
    if bos:
        kv += [("tokenizer.ggml.bos_token_id", ("u32", bos[0])), ("tokenizer.ggml.add_bos_token", ("bool", True))]
    return kv


def rope_factors(cfg, d_h):
    """LlamaModel.generate_extra_tensors: the factors ggml divides RoPE's frequencies by, in
    float32 as torch computes them; the original context from the config's top level (8192)."""
    sc = cfg["rope_scaling"]
    base = cfg.get("rope_theta", 10000.0)
    freqs = f32(1) / (f32(base) ** (np.arange(0, d_h, 2, dtype=f32) / f32(d_h)))
    factor, low, high = sc.get("factor", 8.0), sc.get("low_freq_factor", 1.0), sc.get("high_freq_factor", 4.0)
    old = cfg.get("original_max_position_embeddings", 8192)
    out = []
    for freq in freqs:
        wavelen = f32(2 * np.pi) / freq
        if wavelen < old / high:
            out.append(f32(1))
        elif wavelen > old / low:
            out.append(f32(factor))
        else:
            smooth = (f32(old) / wavelen - f32(low)) / f32(high - low)
            out.append(f32(1) / ((f32(1) - smooth) / f32(factor) + smooth))
    return np.array(out, dtype=f32)


def convert(folder, out, kind, pre=None, config=None):
    d = MODELS / folder
    cfg = json.loads((d / "config.json").read_text())
    cfg.update(config or {})
    arch = {"gemma3_text": "gemma3"}.get(cfg["model_type"], cfg["model_type"])
    C, H = cfg["hidden_size"], cfg["num_attention_heads"]
    G = cfg.get("num_key_value_heads", H)
    d_h = cfg.get("head_dim", C // H)
    kv = [("general.architecture", ("str", arch)), (f"{arch}.context_length", ("u32", cfg["max_position_embeddings"])),
          (f"{arch}.embedding_length", ("u32", C)), (f"{arch}.block_count", ("u32", cfg["num_hidden_layers"])),
          (f"{arch}.feed_forward_length", ("u32", cfg["intermediate_size"])), (f"{arch}.attention.head_count", ("u32", H)),
          (f"{arch}.attention.head_count_kv", ("u32", G)), (f"{arch}.attention.key_length", ("u32", d_h)),
          (f"{arch}.attention.value_length", ("u32", d_h)), (f"{arch}.rope.freq_base", ("f32", cfg.get("rope_theta", 10000.0))),
          (f"{arch}.attention.layer_norm_rms_epsilon", ("f32", cfg["rms_norm_eps"]))]
    if "sliding_window" in cfg:
        kv.append((f"{arch}.attention.sliding_window", ("u32", cfg["sliding_window"])))
    if pre:
        kv += tokenizer_kv(d, pre)
    rng = np.random.default_rng(61)
    tensors, reference, dtypes = [], {}, {}
    for name, (w, dtype) in sorted(read_folder(d).items()):
        g = gguf_name(name, arch)
        if arch == "llama" and g.endswith(("attn_q.weight", "attn_k.weight")):
            w = permute(w, H if ".attn_q." in g else G)
        stored = w
        if arch == "gemma3" and name.endswith("norm.weight"):  # Gemma3Model.modify_tensors: the norms' 1 + w
            stored = (w + f32(1)).astype(f32)
        k = kind if (kind in ("F32", "F16", "BF16") or (w.ndim == 2 and w.shape[-1] % BLOCK[kind] == 0)) else "F32"
        if w.ndim == 1 and kind not in ("F16", "BF16"):
            k = "F32"  # llama.cpp keeps norms in F32
        raw = quantize(k, stored, rng)
        tensors.append((g, list(w.shape), k, raw))
        back = dequantize(k, raw, w.size).reshape(w.shape) if stored is w else w
        if arch == "llama" and g.endswith(("attn_q.weight", "attn_k.weight")):  # the reference folder holds HF's rows
            n = H if ".attn_q." in g else G
            back = back.reshape(n, w.shape[0] // n // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
        reference[name] = back
    if (cfg.get("rope_scaling") or {}).get("rope_type") == "llama3":
        tensors.append(("rope_freqs.weight", [d_h // 2], "F32", rope_factors(cfg, d_h).astype("<f4").tobytes()))
        ref = OUT / (out[:-5] + "_ref")  # the folder: the weights of `folder`, this config
        ref.mkdir(exist_ok=True)
        (ref / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    write_gguf(OUT / out, kv, tensors)
    if kind not in ("F32", "F16", "BF16"):  # the same weights, dequantized by the reference, as a folder
        ref = OUT / (out[:-5] + "_ref")
        shutil.rmtree(ref, ignore_errors=True)
        ref.mkdir()
        if pre:  # the file's tokenizer
            shutil.copy(d / "tokenizer.json", ref / "tokenizer.json")
        if arch == "gemma3":  # what llama.cpp takes for Gemma 3: a scale of 1/√d_h, every sixth layer global
            cfg["query_pre_attn_scalar"] = d_h
            del cfg["layer_types"]
        (ref / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
        header, body = {}, b""
        for name, a in reference.items():
            raw = a.astype("<f4").tobytes()
            header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [len(body), len(body) + len(raw)]}
            body += raw
        write_st(ref / "model.safetensors", header, body)


# ---- GPT-2 ------------------------------------------------------------------------------
GPT2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 300, "n_positions": 32, "n_ctx": 32,
        "n_embd": 32, "n_layer": 2, "n_head": 2, "n_inner": None, "activation_function": "gelu_new",
        "layer_norm_epsilon": 1e-5, "bos_token_id": 299, "eos_token_id": 299, "torch_dtype": "float32"}


def gpt2_tokenizer(size):
    """GPT-2's kind of tokenizer.json: byte-level BPE on GPT-2's own split (ByteLevel, use_regex),
    <|endoftext|> last, no BOS added; trained on the goldens' corpus."""
    from reference.tokenizer import CORPUS, byte_chars, train_bpe
    bc = byte_chars()
    words = ["".join(bc[b] for b in (("" if i == 0 else " ") + w).encode()) for i, w in enumerate(CORPUS.split())]
    vocab, merges = train_bpe(words, [bc[b] for b in range(256)], size - 257)
    ids = {t: i for i, t in enumerate(vocab)}
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": len(vocab), "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": True, "special": True}],
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                      "fuse_unk": False, "byte_fallback": False, "vocab": ids, "merges": [a + " " + b for a, b in merges]}}


def write_st_folder(ref, tensors, dtypes=None):
    """model.safetensors of float32 arrays, each in F32 or as `dtypes` says (F16: the values exactly)."""
    header, body = {}, b""
    for name, a in tensors.items():
        dtype = (dtypes or {}).get(name, "F32")
        raw = np.ascontiguousarray(a, dtype="<f2" if dtype == "F16" else "<f4").tobytes()
        body += b"\0" * (-len(body) % 8)
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    write_st(ref / "model.safetensors", header, body)


def tiny_gpt2():
    """tiny_gpt2_f32_ref/: a Hugging Face GPT-2 folder (no "transformer." prefix, Conv1D's x·W
    weights, the head tied to wte; as transformers saves it today, without the causal masks
    h.N.attn.bias, which the converter would drop)."""
    c = GPT2
    C, V, P = c["n_embd"], c["vocab_size"], c["n_positions"]
    rng = np.random.default_rng(6102)
    normal = lambda *shape, s=0.1: (rng.standard_normal(shape) * s).astype(f32)  # noqa: E731
    t = {"wte.weight": normal(V, C, s=0.2), "wpe.weight": normal(P, C, s=0.1)}
    for l in range(c["n_layer"]):
        h = f"h.{l}."
        for ln in ("ln_1", "ln_2"):
            t[h + ln + ".weight"] = rng.uniform(0.5, 1.5, C).astype(f32)
            t[h + ln + ".bias"] = normal(C, s=0.05)
        for name, n_in, n_out in (("attn.c_attn", C, 3 * C), ("attn.c_proj", C, C), ("mlp.c_fc", C, 4 * C), ("mlp.c_proj", 4 * C, C)):
            t[h + name + ".weight"] = normal(n_in, n_out, s=0.2)  # Conv1D: [in, out]
            t[h + name + ".bias"] = normal(n_out, s=0.05)
    t["ln_f.weight"] = rng.uniform(0.5, 1.5, C).astype(f32)
    t["ln_f.bias"] = normal(C, s=0.05)
    ref = OUT / "tiny_gpt2_f32_ref"
    shutil.rmtree(ref, ignore_errors=True)
    ref.mkdir()
    (ref / "config.json").write_text(json.dumps(c, indent=2) + "\n")
    (ref / "tokenizer.json").write_text(json.dumps(gpt2_tokenizer(V), ensure_ascii=False, indent=1) + "\n")
    write_st_folder(ref, t)
    return ref


GPT2_NAMES = {"wte": "token_embd", "wpe": "position_embd", "ln_f": "output_norm"}
GPT2_PARTS = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output", "ln_2": "ffn_norm",
              "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}


def convert_gpt2(ref, out, kind):
    """convert_hf_to_gguf.py's GPT2Model (--outtype f32 or f16: position_embd, norms and biases stay F32), and
    for a quantized kind llama-quantize on its F32 output (which quantizes no position_embd either)."""
    c = json.loads((ref / "config.json").read_text())
    kv = [("general.architecture", ("str", "gpt2")), ("general.type", ("str", "model")),  # the converter's metadata, in its order
          ("general.name", ("str", "Tiny_Gpt2_F32_Ref")), ("general.size_label", ("str", "46K")), ("gpt2.block_count", ("u32", c["n_layer"])),
          ("gpt2.context_length", ("u32", c["n_ctx"])), ("gpt2.embedding_length", ("u32", c["n_embd"])),
          ("gpt2.feed_forward_length", ("u32", 4 * c["n_embd"])), ("gpt2.attention.head_count", ("u32", c["n_head"])),
          ("gpt2.attention.layer_norm_epsilon", ("f32", c["layer_norm_epsilon"])),
          ("general.file_type", ("u32", {"F32": 0, "F16": 1, "Q8_0": 7}[kind]))]
    t = json.loads((ref / "tokenizer.json").read_text())  # get_vocab_base: the vocabulary, its added tokens CONTROL
    vocab = dict(t["model"]["vocab"], **{a["content"]: a["id"] for a in t["added_tokens"]})
    tokens = [None] * c["vocab_size"]
    for tok, i in vocab.items():
        tokens[i] = tok
    special = {a["id"] for a in t["added_tokens"] if a["special"]}
    kv += [("tokenizer.ggml.model", ("str", "gpt2")), ("tokenizer.ggml.pre", ("str", "gpt-2")), ("tokenizer.ggml.tokens", ("strs", tokens)),
           ("tokenizer.ggml.token_type", ("i32s", [3 if i in special else 1 for i in range(len(tokens))])),
           ("tokenizer.ggml.merges", ("strs", t["model"]["merges"])),  # gguf.SpecialVocab: merges, then config.json's ids
           ("tokenizer.ggml.bos_token_id", ("u32", c["bos_token_id"])), ("tokenizer.ggml.eos_token_id", ("u32", c["eos_token_id"])),
           ("general.quantization_version", ("u32", 2))]
    rng = np.random.default_rng(61)
    tensors, reference, dtypes = [], {}, {}
    for name, (w, _) in read_folder(ref).items():  # in the file's order, as the converter takes them
        if name.endswith((".attn.bias", ".attn.masked_bias")):  # "we don't need these"
            continue
        stem, suffix = name.rsplit(".", 1)
        if stem in GPT2_NAMES:
            g = f"{GPT2_NAMES[stem]}.{suffix}"
        else:
            _, layer, part = stem.split(".", 2)
            g = f"blk.{layer}.{GPT2_PARTS[part]}.{suffix}"
        stored = w.T.copy() if name.endswith((".c_attn.weight", ".c_proj.weight", ".c_fc.weight")) else w  # to [out, in]
        k = kind if w.ndim == 2 and g != "position_embd.weight" and stored.shape[-1] % BLOCK[kind] == 0 else "F32"
        raw = quantize(k, stored, rng)
        tensors.append((g, list(stored.shape), k, raw))
        back = dequantize(k, raw, w.size).reshape(stored.shape)
        reference[name] = back.T.copy() if stored is not w else back
        dtypes[name] = "F16" if k == "F16" else "F32"
        if g == "token_embd.weight":  # "GPT2 output is tied to (same as) wte in original model": a copy as output.weight
            tensors.append(("output.weight", list(stored.shape), k, raw))
    write_gguf(OUT / out, kv, tensors)
    if kind != "F32":  # the same weights, dequantized by the reference (F16: as they are), as a folder
        q = OUT / (out[:-5] + "_ref")
        shutil.rmtree(q, ignore_errors=True)
        q.mkdir()
        shutil.copy(ref / "config.json", q / "config.json")
        shutil.copy(ref / "tokenizer.json", q / "tokenizer.json")
        write_st_folder(q, reference, dtypes)


def blocks():
    rng = np.random.default_rng(2026)
    tensors, expected = [], b""
    for kind in BLOCK:
        x = (rng.standard_normal(512) * 0.05).astype(f32)
        raw = quantize(kind, x, rng)
        tensors.append((kind.lower(), [2, 256], kind, raw))
        expected += dequantize(kind, raw, 512).astype("<f4").tobytes()
    write_gguf(OUT / "blocks.gguf", [("general.architecture", ("str", "blocks"))], tensors)
    (OUT / "blocks.f32").write_bytes(expected)
    (OUT / "blocks.json").unlink(missing_ok=True)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    llama3 = {"rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                      "original_max_position_embeddings": 8192}}
    convert("tiny_smollm2", "tiny_llama3_f32.gguf", "F32", config=llama3)
    convert("tiny_qwen3", "tiny_qwen3_bf16.gguf", "BF16", pre="qwen2")
    convert("tiny_qwen3", "tiny_qwen3_q8_0.gguf", "Q8_0", pre="qwen2")
    convert("tiny_olmo2", "tiny_olmo2_q4_0.gguf", "Q4_0")
    convert("tiny_qwen2", "tiny_qwen2_q5_1.gguf", "Q5_1")
    convert("tiny_gemma3", "tiny_gemma3_q8_0.gguf", "Q8_0")
    d = MODELS / "tiny_llama"
    write_gguf(OUT / "tiny_llama_tokenizer.gguf", [("general.architecture", ("str", "llama"))] + tokenizer_kv(d, "llama-bpe"), [])
    ref = tiny_gpt2()
    convert_gpt2(ref, "tiny_gpt2_f32.gguf", "F32")
    convert_gpt2(ref, "tiny_gpt2_f16.gguf", "F16")
    convert_gpt2(ref, "tiny_gpt2_q8_0.gguf", "Q8_0")
    blocks()


if __name__ == "__main__":
    main()
