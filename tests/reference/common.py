"""What every reference file shares: the paths, the cases' JSON (a case names the attnwalk command
line that must reproduce it), the inputs, the safetensors files and the tiny Hugging Face folders
they go into, and the cases the model families share: a layer's steps for a prompt of ids, a text,
greedy decoding."""
import json
import math
import os
import struct

import torch

from .tokenizer import tiny_tokenizer

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
OUT = os.path.join(HERE, "golden")

BUILTIN = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
           [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]


def bits(t):
    return [struct.unpack("<I", struct.pack("<f", float(v)))[0] for v in t.flatten().tolist()]


def tensor_json(t):
    t = t.detach().float()
    return {"shape": list(t.shape), "data": [float(v) if math.isfinite(v) else str(v) for v in t.flatten().tolist()]}


def random_input(seed, T, d, batch=None):
    g = torch.Generator().manual_seed(10_000 + seed)
    shape = (batch, T, d) if batch else (T, d)
    x = (torch.rand(shape, generator=g) * 2 - 1)
    x = torch.round(x * 1000) / 1000  # short decimals, exactly representable in JSON text
    return x


def case(name, args, x, expect, exact=(), tokens=None):
    c = {"name": name, "args": args, "expect": {k: tensor_json(v) for k, v in expect.items()}, "exact": list(exact)}
    if x is not None:
        c["input"] = {"embeddings": x.tolist()}
        if tokens:
            c["input"]["tokens"] = tokens
    return c


def write_safetensors(path, tensors, dtype):
    names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}
    header, blobs, offset = {"__metadata__": {"format": "pt", "made_by": "tests/make_goldens.py"}}, [], 0
    for name, t in tensors.items():
        if t.dtype == torch.uint8:  # bytes as they are (MXFP4's blocks and scales)
            raw = t.contiguous().numpy().tobytes()
            header[name] = {"dtype": "U8", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
            blobs.append(raw)
            offset += len(raw)
            continue
        t = t.detach().to(dtype).contiguous()
        raw = t.view(torch.int16).numpy().tobytes() if dtype != torch.float32 else t.numpy().tobytes()
        header[name] = {"dtype": names[dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_tensors(folder, tensors, dtype, shards):
    """model.safetensors, or `shards` files and their model.safetensors.index.json."""
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), tensors, dtype)
        return
    names = list(tensors)
    weight_map = {}
    for k in range(shards):
        part = names[k::shards]
        shard = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(os.path.join(folder, shard), {n: tensors[n] for n in part}, dtype)
        weight_map.update({n: shard for n in part})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"made_by": "tests/make_goldens.py"}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)


def write_weights_folder(folder, config, tensors, dtype, shards):
    """config.json and the weights, the folder's old weights and tokenizer.json removed first."""
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        if f.startswith("model") or f == "tokenizer.json":
            os.remove(os.path.join(folder, f))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_tensors(folder, tensors, dtype, shards)


def write_tiny_folder(name, config, tensors, dtype, shards, vocab, family):
    """A tiny test folder of tests/data/models: config.json, the weights, tokenizer.json (the old weights removed first)."""
    folder = os.path.join(HERE, "data", "models", name)
    write_weights_folder(folder, config, tensors, dtype, shards)
    doc, _ = tiny_tokenizer("byte_level", vocab, family)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)


def as_stored(m, dtype, norm_scale):
    """Norms away from their identity, so that a mix-up shows (Gemma's stored around 0); then
    every parameter as the file holds it (rounded to dtype), the model in eval mode."""
    with torch.no_grad():
        for mod in m.modules():
            scale = norm_scale(mod)
            if scale is not None:
                scale.uniform_(-0.5, 0.5) if getattr(mod, "gemma", False) else scale.uniform_(0.5, 1.5)
        for p_ in m.parameters():  # the model computes with what the file holds
            p_.copy_(p_.to(dtype).float())
    m.eval()


def text_case(name, m, encode):
    """A text through the folder's tokenizer.json: its ids, the final norm, the next token."""
    text = "the cat sat on the mat and the bird sang"
    tids = torch.tensor([encode(text)])
    with torch.no_grad():
        tl = m(tids)[0, -1]
    tp = torch.softmax(tl, dim=-1)
    ttop = torch.argsort(tp, descending=True, stable=True)[:5]
    return case(f"{name}_text", ["model", "--model", "@SRC@/tests/data/models/" + name, "--text", text],
                None, {"token_ids": tids[0].float(), "ln_f": m.ln_f[0], "top_k_ids": ttop.float(),
                       "top_k_probs": tp[ttop]}, ["token_ids", "top_k_ids"])


def greedy_case(name, m, ids, args, n):
    """Greedy decoding, the whole sequence run again for every token (attnwalk: through its cache)."""
    T, seq = ids.shape[1], ids
    with torch.no_grad():
        for _ in range(n):
            nxt = torch.argmax(m(seq)[:, -1], dim=-1, keepdim=True)
            seq = torch.cat([seq, nxt], dim=1)
    return case(f"{name}_T{T}_generate{n}", args + ["--generate", str(n)], None,
                {"generated_ids": seq[0, T:].float()}, ["generated_ids"])


def layer_cases(name, m, vocab, seed, plan, expect, encode=None, text_at=None, n_generate=6):
    """For each (T, layer) of `plan`: T random ids through `attnwalk model --ids … --layer …`, expecting the steps
    expect(T, layer) gives (with those of them that must match exactly) and the next token's top 5; a text through
    the folder's tokenizer.json after the case text_at names; greedy decoding from the prompt of 5."""
    cases = []
    g = torch.Generator().manual_seed(seed)
    for T, layer in plan:
        ids = torch.randint(0, vocab, (1, T), generator=g)
        with torch.no_grad():
            logits = m(ids)[0, -1]
        exp, exact = expect(T, layer)
        probs = torch.softmax(logits, dim=-1)
        top = torch.argsort(probs, descending=True, stable=True)[:5]
        exp.update({"top_k_ids": top.float(), "top_k_logits": logits[top], "top_k_probs": probs[top]})
        args = ["model", "--model", "@SRC@/tests/data/models/" + name, "--ids", ",".join(str(i) for i in ids[0].tolist()),
                "--layer", str(layer + 1)]
        cases.append(case(f"{name}_T{T}_layer{layer + 1}", args, None, exp, ["top_k_ids"] + exact))
        if encode and (T, layer) == text_at:
            cases.append(text_case(name, m, encode))
        if T == 5:  # greedy, the whole sequence again for every token; attnwalk decodes through its cache (or state)
            cases.append(greedy_case(name, m, ids, args, n_generate))
    return cases
