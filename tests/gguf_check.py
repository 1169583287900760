#!/usr/bin/env python3
"""GGUF files through the binary (tests/data/gguf/, written by tests/make_gguf.py):
the forward on a GGUF equal, bit for bit in --json, to the same weights read from a Hugging
Face folder (the folder itself for F32 and BF16, with Llama 3's rope_scaling for the file that
carries it as rope_freqs.weight; for a quantized file, the folder of its
weights dequantized by the reference); the tokenizer of a GGUF giving tokenizer.json's ids;
broken files refused with one line and exit 1 or 2.

Usage: gguf_check.py BINARY
"""
import json
import re
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
GGUF, MODELS = HERE / "data" / "gguf", HERE / "data" / "models"
failures = []


def run(binary, *args):
    return subprocess.run([binary, *map(str, args)], capture_output=True, text=True, timeout=120)


def forward(binary, model, prompt, *more):
    r = run(binary, "model", "--model", model, *prompt, "--layer", "2", "--json", *more)
    if r.returncode != 0:
        failures.append(f"{model}: exit {r.returncode}: {r.stderr.strip()}")
        return None
    doc = json.loads(r.stdout)
    return doc


def same_forward(binary, gguf, folder, prompt):
    a, b = forward(binary, GGUF / gguf, prompt), forward(binary, folder, prompt)
    if a is None or b is None:
        return
    if a["steps"] != b["steps"] or a.get("tokens") != b.get("tokens"):
        diff = [s["id"] for s, t in zip(a["steps"], b["steps"]) if s != t]
        failures.append(f"{gguf}: the forward differs from {folder.name}'s (steps {diff[:5]})")
    else:
        print(f"ok  {gguf} = {folder.name} ({len(a['steps'])} steps, bit for bit)")
    said = json.dumps(a.get("params", {}), ensure_ascii=False)
    quantized = re.search(r"_i?q\d", gguf) is not None  # tiny_qwen3_q8_0.gguf: dequantized; F32, F16, BF16 files: widened or as they are
    if ("dequantized as ggml does" in said) != quantized:
        failures.append(f"{gguf}: the header {'does not say' if quantized else 'says'} the weights were dequantized")
    if "llama.cpp" not in said:
        failures.append(f"{gguf}: the header does not say how llama.cpp's own products differ")


def tokens(binary, tokenizer, text):
    r = run(binary, "tokenize", "--tokenizer", tokenizer, "--text", text, "--json")
    if r.returncode != 0:
        failures.append(f"{tokenizer}: exit {r.returncode}: {r.stderr.strip()}")
        return None
    return [s["data"] for s in json.loads(r.stdout)["steps"] if s["id"] == "token_ids"]


def refused(binary, name, data, says):
    with tempfile.TemporaryDirectory() as work:
        path = pathlib.Path(work) / "blob"  # an Ollama blob: no extension
        path.write_bytes(data)
        r = run(binary, "model", "--model", path, "--ids", "1,2")
        lines = r.stderr.strip().splitlines()
        if r.returncode not in (1, 2) or len(lines) != 1 or not lines[0].startswith("attnwalk: error:") or says not in lines[0]:
            failures.append(f"{name}: exit {r.returncode}, {r.stderr.strip()!r} (expected one line saying {says!r})")
        else:
            print(f"ok  {name}: {lines[0][:150]}")


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:  # Llama 3's RoPE: tiny_smollm2's weights, the config beside the file
        folder = pathlib.Path(work) / "tiny_llama3_f32_ref"
        folder.mkdir()
        shutil.copy(GGUF / "tiny_llama3_f32_ref" / "config.json", folder / "config.json")
        shutil.copy(MODELS / "tiny_smollm2" / "model.safetensors", folder / "model.safetensors")
        same_forward(binary, "tiny_llama3_f32.gguf", folder, ["--ids", "3,1,4,1,5,9"])
    same_forward(binary, "tiny_qwen3_bf16.gguf", MODELS / "tiny_qwen3", ["--text", "the cat sat on the mat"])
    for q in ("tiny_qwen3_q8_0", "tiny_olmo2_q4_0", "tiny_qwen2_q5_1", "tiny_gemma3_q8_0"):
        prompt = ["--text", "the cat sat on the mat"] if "qwen3" in q else ["--ids", "3,1,4,1,5,9"]
        same_forward(binary, q + ".gguf", GGUF / (q + "_ref"), prompt)
    for text in ("the cat sat on the mat", "Hello, world! 12345", "  spaces\n\nand lines"):
        a = tokens(binary, GGUF / "tiny_llama_tokenizer.gguf", text)
        b = tokens(binary, MODELS / "tiny_llama" / "tokenizer.json", text)
        if a != b:
            failures.append(f"tiny_llama_tokenizer.gguf: {text!r} tokenized otherwise than tokenizer.json")
        else:
            print(f"ok  llama-bpe tokenizer from GGUF = tokenizer.json on {text!r}")
    # GPT-2 as the converter's GPT2Model writes it: Conv1D weights transposed, output.weight a copy of
    # token_embd (read as tied), LayerNorm's eps, the "gpt-2" pre-tokenizer; the F32 file is byte for byte
    # what llama.cpp's convert_hf_to_gguf.py made of tiny_gpt2_f32_ref (and the F16 file with --outtype f16)
    same_forward(binary, "tiny_gpt2_f32.gguf", GGUF / "tiny_gpt2_f32_ref", ["--text", "the cat sat on the mat"])
    same_forward(binary, "tiny_gpt2_f16.gguf", GGUF / "tiny_gpt2_f16_ref", ["--text", "the cat sat on the mat"])
    same_forward(binary, "tiny_gpt2_q8_0.gguf", GGUF / "tiny_gpt2_q8_0_ref", ["--text", "the cat sat on the mat"])
    for text in ("the cat sat on the mat", "Hello, world! 12345", "  spaces\n\nand lines<|endoftext|>it's"):
        a = tokens(binary, GGUF / "tiny_gpt2_f32.gguf", text)
        b = tokens(binary, GGUF / "tiny_gpt2_f32_ref" / "tokenizer.json", text)
        if a != b or not a:
            failures.append(f"tiny_gpt2_f32.gguf: {text!r} tokenized otherwise than tokenizer.json ({a} and {b})")
        else:
            print(f"ok  gpt-2 tokenizer from GGUF = tokenizer.json on {text!r}")
    r = run(binary, "model", "--model", GGUF / "tiny_gpt2_f32.gguf", "--ids", "1,2", "--compact")
    if r.returncode != 0 or "output.weight a copy of token_embd.weight: tied" not in r.stdout:
        failures.append(f"tiny_gpt2_f32.gguf: the header does not say the head is read as tied: {r.stdout[:300]!r} {r.stderr.strip()!r}")
    else:
        print("ok  GPT-2's output.weight, a copy of token_embd, read as tied")
    gpt2 = (GGUF / "tiny_gpt2_f32.gguf").read_bytes()
    with tempfile.TemporaryDirectory() as work:  # an output.weight of its own (fine-tuned, or quantized otherwise): untied
        st = (GGUF / "tiny_gpt2_f32_ref" / "model.safetensors").read_bytes()
        n = struct.unpack("<Q", st[:8])[0]
        begin, end = json.loads(st[8:8 + n])["wte.weight"]["data_offsets"]
        wte = st[8 + n + begin:8 + n + end]
        at = gpt2.index(wte, gpt2.index(wte) + 1)  # the copy, after token_embd
        untied = pathlib.Path(work) / "untied.gguf"
        untied.write_bytes(gpt2[:at] + struct.pack("<f", 5.0) + gpt2[at + 4:])
        a, b = forward(binary, untied, ["--ids", "0,1,2"]), forward(binary, GGUF / "tiny_gpt2_f32.gguf", ["--ids", "0,1,2"])
        logits = lambda doc: [s["data"] for s in doc["steps"] if s["id"] == "top_k_probs"]  # token 0's logit moved: every probability  # noqa: E731
        if a is None or b is None or "a copy of token_embd" in json.dumps(a.get("params", {})) or logits(a) == logits(b):
            failures.append("an untied GPT-2 GGUF: read as tied, or its own output.weight unused")
        else:
            print("ok  GPT-2 with an output.weight of its own: untied, its logits its own")
    r = run(binary, "gpt2", "--model", GGUF / "tiny_gpt2_f32.gguf", "--ids", "1,2")  # the bare-checkpoint command points to model
    if r.returncode != 2 or "attnwalk model --model" not in r.stderr or len(r.stderr.strip().splitlines()) != 1:
        failures.append(f"gpt2 --model FILE.gguf: exit {r.returncode}, {r.stderr.strip()!r} (expected one line pointing to attnwalk model)")
    else:
        print("ok  gpt2 --model on a GGUF: " + r.stderr.strip()[:150])
    width = gpt2.index(b"gpt2.embedding_length") + len(b"gpt2.embedding_length") + 4
    refused(binary, "GPT-2's metadata off its tensors", gpt2[:width] + struct.pack("<I", 48) + gpt2[width + 4:], "expected 32, the width C of the token embeddings, got 48")

    good = (GGUF / "tiny_qwen3_q8_0.gguf").read_bytes()
    refused(binary, "truncated", good[:len(good) // 2], "tensor")
    refused(binary, "wrong version", good[:4] + struct.pack("<I", 7) + good[8:], "version 7")
    refused(binary, "truncated header", good[:40], "more than the file can hold")
    refused(binary, "truncated key", good[:8] + struct.pack("<QQ", 0, 1) + good[24:40], "a key claims 20 bytes")
    arch = good.index(b"qwen3", 24)
    refused(binary, "unknown architecture", good[:arch] + b"qwenX" + good[arch + 5:], 'architecture "qwenX" is not supported')
    key = good.index(b"qwen3.embedding_length")
    kind = key + len(b"qwen3.embedding_length")
    refused(binary, "metadata of the wrong type", good[:kind] + struct.pack("<I", 6) + good[kind + 4:], "qwen3.embedding_length")
    tokens_at = good.index(b"tokenizer.ggml.tokens") + len(b"tokenizer.ggml.tokens") + 8
    refused(binary, "a huge array", good[:tokens_at] + struct.pack("<Q", 1 << 61) + good[tokens_at + 8:], "tokenizer.ggml.tokens")
    name = good.index(b"token_embd.weight")
    type_at = name + len(b"token_embd.weight") + 4 + 16
    refused(binary, "an unknown type", good[:type_at] + struct.pack("<I", 41) + good[type_at + 4:], "ggml type 41")
    llama3 = (GGUF / "tiny_llama3_f32.gguf").read_bytes()
    factors = struct.pack("<4f", 1.0, 1.0, 2.6945300102233887, 8.0)  # rope_freqs.weight, as the converter computes them
    at = llama3.index(factors)
    refused(binary, "rope_freqs off Llama 3's rule", llama3[:at + 8] + struct.pack("<f", 3.0) + llama3[at + 12:], "rope_freqs.weight\"[2]")
    # within a budget below the whole model in float32 (about 114 KiB) but above its largest tensor
    # (the embeddings, 37.5 KiB): its tensors made as the forward reaches them, some given back
    # and made again, the same forward
    ids = ["--ids", "1,2,3"]
    whole, tight = forward(binary, GGUF / "tiny_qwen3_q8_0.gguf", ids), forward(binary, GGUF / "tiny_qwen3_q8_0.gguf", ids, "--max-memory", "60K")
    if whole is not None and tight is not None:
        if whole["steps"] != tight["steps"]:
            failures.append("--max-memory 60K: the forward differs from the unbounded one")
        else:
            print(f"ok  --max-memory 60K: the same {len(whole['steps'])} steps, made a layer at a time")
    r = run(binary, "model", "--model", GGUF / "tiny_qwen3_q8_0.gguf", "--ids", "1,2", "--max-memory", "20K")
    if r.returncode != 2 or "--max-memory" not in r.stderr:
        failures.append(f"--max-memory 20K: exit {r.returncode}, {r.stderr.strip()!r}")
    else:
        print("ok  --max-memory: " + r.stderr.strip()[:150])
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
