#!/usr/bin/python3
"""attnwalk against llama.cpp on the same GGUF files: the next token, the logits, the
dequantized weights (docs/gguf.md, "Checked against llama.cpp"). Not run in CI.

    /usr/bin/python3 tests/bench/gguf_llamacpp.py --llama LLAMA_DIR [--attnwalk BINARY]
        [--folder-check] [--ggml-check] [--source DIR] [--blocks 3] [--threads 2]
        [--max-memory 8G] [--json OUT.json] FILE.gguf ...

LLAMA_DIR is a llama.cpp source tree built as docs/gguf.md says (build/bin/libllama.so); its
gguf-py (numpy) is the reference dequantization. The files are llama.cpp's own: made by its
convert_hf_to_gguf.py and llama-quantize. For each file:

  - types: the tensor types the file holds (gguf-py's count) and attnwalk's header (`dtype`);
  - the next token for two prompts of random ids below the vocabulary's size (10 and 128 ids,
    seed 1, the same for both tools, no BOS added by either): llama.cpp's logits of the last
    position (tests/bench/llamacpp_logits.cpp, compiled here against LLAMA_DIR; its KV cache
    float32, not llama.cpp's default F16, which rounds each key and value) beside
    attnwalk's (`model --ids … --top-k V --npy`): top-1 the same, the top-5 sets the same, and
    the largest |difference| over the whole vocabulary;
  - blocks: for each type `attnwalk quant` takes apart (Q8_0, Q4_0, Q4_K), --blocks blocks
    (first, middle, last) of the first, middle and last tensor of that type: attnwalk's bytes
    and floats (`quant --json`) against gguf-py's `dequantize` of the same bytes, bit for bit;
  - --folder-check: every tensor dequantized by gguf-py into a float32 Hugging Face folder
    (q and k rows put back from the converter's permutation, the source folder's config.json
    and tokenizer.json beside: --source, else FILE's name without its last "-TYPE.gguf",
    e.g. /tmp/llama/smollm360 for /tmp/llama/smollm360-Q4_K_M.gguf), and attnwalk's
    logits from that folder against its logits from the GGUF, bit for bit: the whole model's
    dequantization checked through the forward (the llama architecture);
  - --ggml-check: the file turned into float32 by ggml's own C (`llama-quantize
    --allow-requantize FILE OUT F32`: dequantize_row_* as llama.cpp compiled them): its
    weights against gguf-py's, bit for bit; attnwalk's logits from it against those from FILE,
    bit for bit; and llama.cpp's logits from it (float32 arithmetic throughout) against
    attnwalk's: what is left of the difference once llama.cpp's quantized activations are
    out of it.

Prints a Markdown table. Timings: tests/bench/compare_llamacpp.py --gguf FILE (no --folder):
both tools then read the same file.
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_MEMORY = "8G"


def load_gguf_py(llama):
    """llama.cpp's gguf-py, importable without sentencepiece (its vocab.py imports it at the top;
    nothing here uses it)."""
    if "sentencepiece" not in sys.modules:
        try:
            import sentencepiece  # noqa: F401
        except ImportError:
            stub = types.ModuleType("sentencepiece")

            class SentencePieceProcessor:
                def __init__(self, *a, **k):
                    raise RuntimeError("sentencepiece is not installed")
            stub.SentencePieceProcessor = SentencePieceProcessor
            sys.modules["sentencepiece"] = stub
    sys.path.insert(0, os.path.join(llama, "gguf-py"))
    import gguf
    from gguf.quants import dequantize
    return gguf, dequantize


def build_logits_tool(llama):
    out = os.path.join(llama, "build", "bin", "llamacpp_logits")
    src = os.path.join(ROOT, "tests", "bench", "llamacpp_logits.cpp")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        lib = os.path.join(llama, "build", "bin")
        subprocess.run(["g++", "-O2", "-std=c++17", src, "-I", os.path.join(llama, "include"),
                        "-I", os.path.join(llama, "ggml", "include"), "-L", lib, "-lllama", "-lggml", "-lggml-base",
                        "-Wl,-rpath," + lib, "-o", out], check=True)
    return out


def field(reader, key):
    f = reader.fields.get(key)
    if f is None:
        return None
    v = f.parts[f.data[0]]
    return bytes(v).decode() if f.types and f.types[0].name == "STRING" else v.tolist()[0]


def llama_logits(tool, gguf_path, ids, threads, scratch):
    out = os.path.join(scratch, "llama.f32")
    subprocess.run([tool, gguf_path, ids, str(threads), out], check=True, capture_output=True, text=True)
    return np.fromfile(out, dtype=np.float32)


def attnwalk_logits(attnwalk, model, ids, vocab, scratch):
    """attnwalk's logits of the last position (every one, as the top V), in id order."""
    d = os.path.join(scratch, "npy")
    shutil.rmtree(d, ignore_errors=True)
    p = subprocess.run([attnwalk, "model", "--model", model, "--ids", ids, "--top-k", str(vocab),
                        "--steps", "top_k_ids,top_k_logits", "--npy", d, "--max-memory", MAX_MEMORY], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"attnwalk model --model {model}: exit {p.returncode}: {p.stderr.strip()}")
    out = np.full(vocab, np.nan, dtype=np.float32)
    out[np.load(os.path.join(d, "top_k_ids.npy"))] = np.load(os.path.join(d, "top_k_logits.npy"))
    return out


def attnwalk_dtype(attnwalk, model, ids):
    doc = subprocess.run([attnwalk, "model", "--model", model, "--ids", ids, "--steps", "token_ids", "--json", "--max-memory", MAX_MEMORY],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(doc)["params"]["dtype"]


def top(logits, k=5):
    # the larger logit first, the smaller id first among equal ones (a stable sort)
    return [int(i) for i in np.argsort(-logits, kind="stable")[:k]]


def compare_next(llama, mine):
    a, b = top(llama), top(mine)
    return {"top1": a[0] == b[0], "top5_set": set(a) == set(b), "top5_order": a == b,
            "max_diff": float(np.max(np.abs(llama.astype(np.float64) - mine.astype(np.float64)))),
            "llama_top5": a, "attnwalk_top5": b,
            "gap": float(np.sort(mine)[-1] - np.sort(mine)[-2])}


def check_blocks(attnwalk, path, reader, gguf, dequantize, nblocks):
    """{type: (blocks, floats equal, floats)} for the types `quant` takes apart."""
    res = {}
    for tname in ("Q8_0", "Q4_0", "Q4_K"):
        ts = [t for t in reader.tensors if t.tensor_type.name == tname]
        if not ts:
            continue
        blocks = equal = floats = 0
        for t in sorted({ts[0].name, ts[len(ts) // 2].name, ts[-1].name}):
            t = next(x for x in ts if x.name == t)
            raw = np.asarray(t.data).reshape(-1)
            _, bbytes = gguf.GGML_QUANT_SIZES[t.tensor_type]
            n = raw.size // bbytes
            for b in sorted({0, n // 2, n - 1})[:max(nblocks, 1)]:
                doc = json.loads(subprocess.run([attnwalk, "quant", "--model", path, "--tensor", t.name, "--block",
                                                 str(b + 1), "--json"], check=True, capture_output=True, text=True).stdout)
                steps = {s["id"]: s for s in doc["steps"]}
                mine_bytes = np.asarray(steps["quant_bytes"]["data"], dtype=np.int64).reshape(-1)
                block = raw[b * bbytes:(b + 1) * bbytes]
                if not np.array_equal(mine_bytes, block.astype(np.int64)):
                    raise RuntimeError(f"{path}: {t.name} block {b + 1}: attnwalk read other bytes than gguf-py")
                ref = dequantize(block.reshape(1, -1), t.tensor_type).reshape(-1).astype(np.float32)
                mine = np.asarray([np.float32(float(x)) for x in np.asarray(steps["quant_weights"]["data"]).reshape(-1)],
                                  dtype=np.float32)
                blocks += 1
                floats += ref.size
                equal += int(np.sum(mine.view(np.uint32) == ref.view(np.uint32)))
        res[tname] = (blocks, equal, floats)
    return res


HF = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
      "output.weight": "lm_head.weight"}
HF_LAYER = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
            "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
            "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def unpermute(w, n_head):
    """The inverse of convert_hf_to_gguf.py's LlamaModel.permute."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, a in tensors:
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for _, a in tensors:
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())


def dequantized_folder(reader, dequantize, source, out):
    """A float32 Hugging Face folder of a llama-architecture GGUF's weights as gguf-py dequantizes them."""
    arch = field(reader, "general.architecture")
    if arch != "llama":
        raise RuntimeError(f"--folder-check maps the llama architecture's tensors only, not {arch}")
    heads, kv = field(reader, "llama.attention.head_count"), field(reader, "llama.attention.head_count_kv")
    tensors = []
    for t in reader.tensors:
        if t.name == "rope_freqs.weight":
            continue
        w = dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32).reshape([int(x) for x in reversed(t.shape)])
        parts = t.name.split(".")
        if t.name in HF:
            name = HF[t.name]
        else:
            name = f"model.layers.{parts[1]}.{HF_LAYER[parts[2]]}.weight"
            if parts[2] == "attn_q":
                w = unpermute(w, heads)
            elif parts[2] == "attn_k":
                w = unpermute(w, kv)
        tensors.append((name, w))
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        if os.path.exists(os.path.join(source, f)):
            shutil.copy(os.path.join(source, f), out)
    return len(tensors)


def ggml_check(attnwalk, llama, tool, reader, dequantize, gguf_mod, path, prompts, mine, vocab, threads, scratch):
    out = os.path.join(scratch, "ggml-f32.gguf")
    subprocess.run([os.path.join(llama, "build", "bin", "llama-quantize"), "--allow-requantize", path, out, "F32", str(threads)],
                   check=True, capture_output=True)
    theirs = {t.name: t for t in gguf_mod.GGUFReader(out).tensors}
    equal = total = 0
    for t in reader.tensors:
        a = np.asarray(theirs[t.name].data).reshape(-1).view(np.uint32)
        b = dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32).reshape(-1).view(np.uint32)
        equal += int(np.sum(a == b))
        total += a.size
    res = {"weights_equal": equal, "weights": total, "attnwalk_bit_equal": True, "llama_f32_max_diff": 0.0}
    for T, ids in prompts.items():
        again = attnwalk_logits(attnwalk, out, ids, vocab, scratch)
        res["attnwalk_bit_equal"] &= bool(np.array_equal(again.view(np.uint32), mine[T].view(np.uint32)))
        res["llama_f32_max_diff"] = max(res["llama_f32_max_diff"],
                                        compare_next(llama_logits(tool, out, ids, threads, scratch), mine[T])["max_diff"])
    os.remove(out)
    return res


def types_held(reader):
    count = {}
    for t in reader.tensors:
        count[t.tensor_type.name] = count.get(t.tensor_type.name, 0) + 1
    return ", ".join(f"{k} ×{v}" for k, v in sorted(count.items(), key=lambda kv: -kv[1]))


def row(path, info):
    def nxt(c):
        gap = "" if c["top1"] else f" (attnwalk's first two {c['gap']:.3g} apart)"
        return (f"{'yes' if c['top1'] else 'NO'}{gap} / {'yes' if c['top5_set'] else 'no'}"
                f"{'' if c['top5_order'] or not c['top5_set'] else ' (order)'} / {c['max_diff']:.3g}")

    blocks = "; ".join(f"{t} {b} blocks, {e}/{f}" for t, (b, e, f) in info["blocks"].items()) or "-"
    folder = info.get("folder")
    fcell = f"{folder['tensors']} tensors, logits {'bit-equal' if folder['logits_bit_equal'] else 'DIFFER'}" if folder else "-"
    g = info.get("ggml")
    gcell = (f"{g['weights_equal']:,}/{g['weights']:,} / logits {'bit-equal' if g['attnwalk_bit_equal'] else 'DIFFER'} / "
             f"{g['llama_f32_max_diff']:.3g}" if g else "-")
    return f"| {os.path.basename(path)} | {info['types']} | {nxt(info['T10'])} | {nxt(info['T128'])} | {blocks} | {fcell} | {gcell} |"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("gguf", nargs="+")
    p.add_argument("--llama", default=os.environ.get("LLAMA_DIR"), help="llama.cpp's source tree, built")
    p.add_argument("--attnwalk", default=os.path.join(ROOT, "build/app/attnwalk"))
    p.add_argument("--max-memory", default="8G", help="attnwalk's --max-memory (default 8G: a 1B model's "
                   "weights in float32 take 4.6 GiB)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--blocks", type=int, default=3, help="blocks per tensor for the quant check (at most 3)")
    p.add_argument("--folder-check", action="store_true", help="the forward of gguf-py's dequantized weights")
    p.add_argument("--ggml-check", action="store_true", help="the file dequantized by ggml's C (llama-quantize to F32)")
    p.add_argument("--source", help="the Hugging Face folder converted, for --folder-check (default: the file's "
                   "name without its last -TYPE.gguf)")
    p.add_argument("--json", help="also write every figure to this file")
    a = p.parse_args()
    global MAX_MEMORY
    MAX_MEMORY = a.max_memory
    if not a.llama:
        print("gguf_llamacpp: skipped, no llama.cpp tree given (--llama or LLAMA_DIR)")
        return 0
    gguf, dequantize = load_gguf_py(a.llama)
    tool = build_logits_tool(a.llama)
    everything = {}
    print("| file | tensor types (gguf-py) | 10 ids: top-1 / top-5 / max abs diff | 128 ids: the same | "
          "blocks bit-equal (floats) | forward of gguf-py's weights | ggml's F32: weights equal / attnwalk / llama.cpp max diff |")
    print("|---|---|---|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory(prefix="gguf_llamacpp.") as scratch:
        for path in a.gguf:
            reader = gguf.GGUFReader(path)
            arch = field(reader, "general.architecture")
            vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
            rng = random.Random(1)
            prompts = {T: ",".join(str(rng.randrange(vocab)) for _ in range(T)) for T in (10, 128)}
            info = {"arch": arch, "types": types_held(reader), "dtype": attnwalk_dtype(a.attnwalk, path, prompts[10])}
            print(f"{os.path.basename(path)}: {info['types']}", file=sys.stderr, flush=True)
            mine = {}
            for T, ids in prompts.items():
                mine[T] = attnwalk_logits(a.attnwalk, path, ids, vocab, scratch)
                info[f"T{T}"] = compare_next(llama_logits(tool, path, ids, a.threads, scratch), mine[T])
            info["blocks"] = check_blocks(a.attnwalk, path, reader, gguf, dequantize, a.blocks)
            if a.folder_check:
                source = a.source or os.path.splitext(path)[0].rsplit("-", 1)[0]
                folder = os.path.join(scratch, "folder")
                shutil.rmtree(folder, ignore_errors=True)
                n = dequantized_folder(reader, dequantize, source, folder)
                same = all(np.array_equal(attnwalk_logits(a.attnwalk, folder, ids, vocab, scratch).view(np.uint32),
                                          mine[T].view(np.uint32)) for T, ids in prompts.items())
                info["folder"] = {"tensors": n, "logits_bit_equal": same}
                shutil.rmtree(folder)
            if a.ggml_check:
                info["ggml"] = ggml_check(a.attnwalk, a.llama, tool, reader, dequantize, gguf, path, prompts, mine, vocab, a.threads, scratch)
            everything[path] = info
            print(row(path, info), flush=True)

    if a.json:
        with open(a.json, "w") as f:
            json.dump(everything, f, indent=1, default=lambda x: list(x) if isinstance(x, tuple) else str(x))
    return 0


if __name__ == "__main__":
    sys.exit(main())
