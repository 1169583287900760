#!/usr/bin/env python3
"""The hostile round on the model path (docs/robustness.md, "The third round"): broken
model folders, checkpoints, tokenizer files and option values, each run through the real
binary. Every case must end as its class says — an error (exit 1 or 2, one line on stderr
starting "attnwalk: error:") or a result (exit 0) — and never with a signal, a hang (20 s)
or a changed input file. (Memory against --max-memory: cli.memory_estimates_cover_the_measured_peak.)

Usage: hostile_model_path.py BINARY [--list]    (python3 only; every file is made here)
"""
import hashlib
import json
import os
import pathlib
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "data" / "models"
GPT2_FILE = ROOT / "tests" / "data" / "tiny_gpt2_hf_f32.safetensors"
ERROR, RESULT, EITHER = "error", "result", "either"


def read_st(path):
    data = pathlib.Path(path).read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def write_st(path, header, body, raw_header=None):
    text = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    pathlib.Path(path).write_bytes(struct.pack("<Q", len(text)) + text + body)


class Round:
    def __init__(self, binary, work):
        self.binary, self.work, self.cases = binary, pathlib.Path(work), []
        self.n = 0

    def folder(self, family="tiny_qwen3"):
        self.n += 1
        d = self.work / f"case{self.n}"
        shutil.copytree(MODELS / family, d)
        return d

    def add(self, klass, name, args, expect):
        self.cases.append((klass, name, args, expect))

    # ---- config.json ------------------------------------------------------------------
    def configs(self):
        edits = {
            "model_type unknown": lambda c: c.update(model_type="mamba"),
            "model_type gemma3 (multimodal)": lambda c: c.update(model_type="gemma3"),
            "model_type missing": lambda c: c.pop("model_type"),
            "model_type a number": lambda c: c.update(model_type=3),
            "hidden_size 0": lambda c: c.update(hidden_size=0),
            "hidden_size -1": lambda c: c.update(hidden_size=-1),
            "hidden_size 1e30": lambda c: c.update(hidden_size=1e30),
            "hidden_size a string": lambda c: c.update(hidden_size="32"),
            "hidden_size 31.5": lambda c: c.update(hidden_size=31.5),
            "hidden_size other than the tensors'": lambda c: c.update(hidden_size=64),
            "num_attention_heads 0": lambda c: c.update(num_attention_heads=0),
            "num_attention_heads 3 (not dividing kv)": lambda c: c.update(num_attention_heads=3),
            "num_key_value_heads 3": lambda c: c.update(num_key_value_heads=3),
            "num_key_value_heads 0": lambda c: c.update(num_key_value_heads=0),
            "num_key_value_heads 8 > heads": lambda c: c.update(num_key_value_heads=8),
            "head_dim 0": lambda c: c.update(head_dim=0),
            "head_dim 15": lambda c: c.update(head_dim=15),
            "head_dim 1e9": lambda c: c.update(head_dim=1e9),
            "num_hidden_layers 0": lambda c: c.update(num_hidden_layers=0),
            "num_hidden_layers 3 (one missing)": lambda c: c.update(num_hidden_layers=3),
            "num_hidden_layers 1 (one unused)": lambda c: c.update(num_hidden_layers=1),
            "num_hidden_layers 1e18": lambda c: c.update(num_hidden_layers=1e18),
            "vocab_size 299": lambda c: c.update(vocab_size=299),
            "vocab_size 0": lambda c: c.update(vocab_size=0),
            "intermediate_size 47": lambda c: c.update(intermediate_size=47),
            "max_position_embeddings 0": lambda c: c.update(max_position_embeddings=0),
            "max_position_embeddings 2": lambda c: c.update(max_position_embeddings=2),
            "rms_norm_eps -1": lambda c: c.update(rms_norm_eps=-1),
            "rms_norm_eps a string": lambda c: c.update(rms_norm_eps="1e-6"),
            "rope_theta 0": lambda c: c.update(rope_theta=0),
            "rope_theta -10000": lambda c: c.update(rope_theta=-10000),
            "rope_theta 1e309 (inf in JSON text)": None,
            "rope_scaling of an unknown type": lambda c: c.update(rope_scaling={"rope_type": "longrope", "factor": 4.0}),
            "rope_scaling yarn with beta_fast 0": lambda c: c.update(rope_scaling={"rope_type": "yarn", "factor": 4.0, "beta_fast": 0}),
            "rope_scaling yarn with attention_factor -1": lambda c: c.update(rope_scaling={"rope_type": "yarn", "factor": 4.0, "attention_factor": -1}),
            "rope_scaling llama3 without its fields": lambda c: c.update(rope_scaling={"rope_type": "llama3"}),
            "rope_scaling linear factor 0": lambda c: c.update(rope_scaling={"rope_type": "linear", "factor": 0}),
            "rope_scaling a list": lambda c: c.update(rope_scaling=[1, 2]),
            "tie_word_embeddings a string": lambda c: c.update(tie_word_embeddings="yes"),
            "tie_word_embeddings false without lm_head": lambda c: c.update(tie_word_embeddings=False),
            "hidden_act unknown": lambda c: c.update(hidden_act="relu6"),
            "attention_bias true without biases": lambda c: c.update(attention_bias=True),
            "config an array": lambda c: (c.clear(), c.update({"_array": True})),
        }
        for name, edit in edits.items():
            d = self.folder()
            path = d / "config.json"
            config = json.loads(path.read_text())
            if edit is None:
                path.write_text(path.read_text().replace('"rope_theta": 1000000.0', '"rope_theta": 1e309'))
            elif name == "config an array":
                path.write_text("[1, 2, 3]")
            else:
                edit(config)
                path.write_text(json.dumps(config))
            self.add("config.json", name, ["model", "--model", str(d), "--ids", "1,2,3"], ERROR)
        gem = {
            "gemma3: sliding_window 0": lambda c: c.update(sliding_window=0),
            "gemma3: layer_types too short": lambda c: c.update(layer_types=["sliding_attention"]),
            "gemma3: layer_types unknown kind": lambda c: c.update(layer_types=["local", "global"]),
            "gemma3: query_pre_attn_scalar 0": lambda c: c.update(query_pre_attn_scalar=0),
            "gemma3: rope_local_base_freq -1": lambda c: c.update(rope_local_base_freq=-1),
        }
        for name, edit in gem.items():
            d = self.folder("tiny_gemma3")
            config = json.loads((d / "config.json").read_text())
            edit(config)
            (d / "config.json").write_text(json.dumps(config))
            self.add("config.json", name, ["model", "--model", str(d), "--ids", "1,2,3"], ERROR)
        for name, text in {"empty": "", "not JSON": "{model_type: qwen3}", "truncated": '{"model_type": "qwen3", "hidden_',
                           "a BOM and JSON": None, "deeply nested": "[" * 100000 + "]" * 100000}.items():
            d = self.folder()
            if text is None:
                (d / "config.json").write_bytes(b"\xef\xbb\xbf" + (MODELS / "tiny_qwen3" / "config.json").read_bytes())
                self.add("config.json", "config " + name, ["model", "--model", str(d), "--ids", "1,2,3"], EITHER)
                continue
            (d / "config.json").write_text(text)
            self.add("config.json", "config " + name, ["model", "--model", str(d), "--ids", "1,2,3"], ERROR)
        d = self.folder()
        (d / "config.json").unlink()
        self.add("config.json", "no config.json", ["model", "--model", str(d), "--ids", "1,2,3"], ERROR)

    # ---- checkpoints ------------------------------------------------------------------
    def checkpoints(self):
        header, body = read_st(MODELS / "tiny_qwen3" / "model.safetensors")
        names = [k for k in header if k != "__metadata__"]
        some = names[len(names) // 2]

        def case(name, mutate, expect=ERROR):
            d = self.folder()
            h = json.loads(json.dumps(header))
            result = mutate(h, bytearray(body), d / "model.safetensors")
            if isinstance(result, tuple):  # (raw header or None, data): the file is written from them
                raw, b = result
                write_st(d / "model.safetensors", h, bytes(b), raw)
            self.add("checkpoint", name, ["model", "--model", str(d), "--ids", "1,2,3"], expect)

        size = len(body)
        for cut in [0, 1, 7, 8, 100, size // 3, size - 1]:
            case(f"truncated to {cut} bytes of data", lambda h, b, p, cut=cut: (None, b[:cut]))
        case("file of 0 bytes", lambda h, b, p: p.write_bytes(b""))
        case("file of 7 bytes", lambda h, b, p: p.write_bytes(b"\x01" * 7))
        case("header length 2^63", lambda h, b, p: p.write_bytes(struct.pack("<Q", 2**63) + b"{}"))
        case("header length past the end", lambda h, b, p: p.write_bytes(struct.pack("<Q", 10**6) + b"{}"))
        case("header not JSON", lambda h, b, p: (b"{not json", b))
        case("header a JSON array", lambda h, b, p: (b"[1,2,3]", b))
        case("header with a NUL", lambda h, b, p: (json.dumps(h).encode().replace(b"{", b"{\x00", 1), b))
        case("a zip (torch.save)", lambda h, b, p: p.write_bytes(b"PK\x03\x04" + b"\x00" * 100))
        case("a pickle", lambda h, b, p: p.write_bytes(b"\x80\x02" + b"\x00" * 100))
        case("a GGUF file", lambda h, b, p: p.write_bytes(b"GGUF" + b"\x00" * 100))
        case("dtype unknown", lambda h, b, p: (h[some].update(dtype="Q4_0"), (None, b))[1])
        case("dtype F64 for a weight", lambda h, b, p: (h[some].update(dtype="F64"), (None, b))[1])
        case("dtype I8 for a weight", lambda h, b, p: (h[some].update(dtype="I8"), (None, b))[1])
        case("shape not matching the bytes", lambda h, b, p: (h[some].update(shape=[3, 3]), (None, b))[1])
        case("shape with a negative size", lambda h, b, p: (h[some].update(shape=[-1, 4]), (None, b))[1])
        case("shape of 1e300", lambda h, b, p: (h[some].update(shape=[1e300]), (None, b))[1])
        case("offsets reversed", lambda h, b, p: (h[some].update(data_offsets=h[some]["data_offsets"][::-1]), (None, b))[1])
        case("offsets beyond the data", lambda h, b, p: (h[some].update(data_offsets=[size, size + 64]), (None, b))[1])
        case("offsets overlapping another tensor",
             lambda h, b, p: (h[some].update(data_offsets=[0, h[some]["data_offsets"][1] - h[some]["data_offsets"][0]]), (None, b))[1],
             EITHER)
        case("a tensor missing", lambda h, b, p: (h.pop(some), (None, b))[1])
        case("an extra tensor", lambda h, b, p: (h.update({"extra.weight": {"dtype": "BF16", "shape": [0], "data_offsets": [0, 0]}}), (None, b))[1],
             RESULT)
        case("a tensor with unknown keys", lambda h, b, p: (h[some].update(extra=1), (None, b))[1])
        case("NaN in a weight (BF16 0x7fc0)", lambda h, b, p: (None, b[:h[some]["data_offsets"][0]] + b"\xc0\x7f" + b[h[some]["data_offsets"][0] + 2:]))
        case("inf in a weight (BF16 0x7f80)", lambda h, b, p: (None, b[:h[some]["data_offsets"][0]] + b"\x80\x7f" + b[h[some]["data_offsets"][0] + 2:]))
        # x² overflows in RMSNorm: mean(x²) = inf, rsqrt(inf) = 0, so the norm is 0, exactly as
        # PyTorch's float32 RMSNorm computes it; the run ends with uniform probabilities
        case("every weight 3.4e38 (BF16 0x7f7f)", lambda h, b, p: (None, b"\x7f\x7f" * (len(b) // 2)), EITHER)
        case("model.safetensors a directory", lambda h, b, p: (p.unlink(), p.mkdir())[1] and None)
        case("model.safetensors missing", lambda h, b, p: p.unlink())
        case("model.safetensors a FIFO", lambda h, b, p: (p.unlink(), os.mkfifo(p))[1] and None)
        case("model.safetensors a symlink loop", lambda h, b, p: (p.unlink(), os.symlink(p.name, p))[1] and None)
        case("model.safetensors -> /dev/zero", lambda h, b, p: (p.unlink(), os.symlink("/dev/zero", p))[1] and None)
        # the sharded llama folder
        for name, mutate in {
            "index not JSON": lambda d, i: (d / "model.safetensors.index.json").write_text("{"),
            "index without weight_map": lambda d, i: (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}})),
            "index names a missing shard": lambda d, i: (d / "model-00002-of-00002.safetensors").unlink(),
            "index puts a tensor in the wrong shard": lambda d, i: (
                i["weight_map"].update({k: ("model-00002-of-00002.safetensors" if v.endswith("00001-of-00002.safetensors") else v)
                                        for k, v in list(i["weight_map"].items())[:1]}),
                (d / "model.safetensors.index.json").write_text(json.dumps(i))),
            "index shard path escapes the folder": lambda d, i: (
                i["weight_map"].update({k: "../../../etc/passwd" for k in list(i["weight_map"])[:1]}),
                (d / "model.safetensors.index.json").write_text(json.dumps(i))),
            "index shard is a directory": lambda d, i: (
                (d / "model-00002-of-00002.safetensors").unlink(), (d / "model-00002-of-00002.safetensors").mkdir()),
        }.items():
            d = self.folder("tiny_llama")
            index = json.loads((d / "model.safetensors.index.json").read_text())
            mutate(d, index)
            self.add("checkpoint", name, ["model", "--model", str(d), "--ids", "1,2,3"], ERROR)

    # ---- tokenizer.json -----------------------------------------------------------------
    def tokenizers(self):
        base = json.loads((MODELS / "tiny_qwen3" / "tokenizer.json").read_text())
        edits = {
            "model type WordPiece": lambda t: t["model"].update(type="WordPiece"),
            "model type Unigram": lambda t: t["model"].update(type="Unigram"),
            "model missing": lambda t: t.pop("model"),
            "vocab an array": lambda t: t["model"].update(vocab=[1, 2]),
            "vocab with a negative id": lambda t: t["model"]["vocab"].update({"zz": -1}),
            "vocab with a huge id": lambda t: t["model"]["vocab"].update({"zz": 2**62}),
            "vocab with a duplicate id": lambda t: t["model"]["vocab"].update({"zz": 0}),
            "merges not an array": lambda t: t["model"].update(merges="a b"),
            "a merge of one symbol": lambda t: t["model"]["merges"].insert(0, "ab"),
            "a merge of unknown tokens": lambda t: t["model"]["merges"].insert(0, "qqq rrr"),
            "a merge of three": lambda t: t["model"]["merges"].insert(0, ["a", "b", "c"]),
            "a merge a number": lambda t: t["model"]["merges"].insert(0, 5),
            "normalizer unknown": lambda t: t.update(normalizer={"type": "Lowercase"}),
            "normalizer a string": lambda t: t.update(normalizer="NFC"),
            "pre_tokenizer unknown": lambda t: t.update(pre_tokenizer={"type": "Whitespace"}),
            "a Split regex that does not compile": lambda t: t.update(pre_tokenizer={"type": "Split", "pattern": {"Regex": "(["}, "behavior": "Isolated", "invert": False}),
            "a Split regex with catastrophic backtracking": lambda t: t.update(pre_tokenizer={"type": "Split", "pattern": {"Regex": "(a+)+$"}, "behavior": "Isolated", "invert": False}),
            "a Split with invert": lambda t: t.update(pre_tokenizer={"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated", "invert": True}),
            "a Split of an unknown behavior": lambda t: t.update(pre_tokenizer={"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways", "invert": False}),
            "added_tokens not an array": lambda t: t.update(added_tokens={}),
            "an added token with an id beyond the vocabulary": lambda t: t["added_tokens"].append({"id": 10**6, "content": "<x>", "special": True}),
            "an empty added token": lambda t: t["added_tokens"].append({"id": 0, "content": "", "special": True}),
            "post_processor unknown": lambda t: t.update(post_processor={"type": "RobertaProcessing"}),
            "decoder unknown": lambda t: t.update(decoder={"type": "WordPiece"}),
            "byte_fallback without byte tokens": lambda t: t["model"].update(byte_fallback=True),
            "unk_token not in the vocabulary": lambda t: t["model"].update(unk_token="<never>"),
        }
        for name, edit in edits.items():
            d = self.folder()
            t = json.loads(json.dumps(base))
            edit(t)
            (d / "tokenizer.json").write_text(json.dumps(t))
            text = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab hello" if "backtracking" in name else "hello there"
            # checked when a text needs them, as Hugging Face's tokenizers do: "hello there" does not
            lazy = ("a merge of unknown tokens", "a Split regex with catastrophic backtracking", "an added token with an id beyond the vocabulary",
                    "byte_fallback without byte tokens")
            expect = EITHER if name in lazy else ERROR
            self.add("tokenizer.json", name, ["model", "--model", str(d), "--text", text], expect)
        for name, text in {"empty": "", "not JSON": "{", "a number": "3", "deeply nested": "[" * 100000 + "]" * 100000}.items():
            d = self.folder()
            (d / "tokenizer.json").write_text(text)
            self.add("tokenizer.json", "tokenizer.json " + name, ["model", "--model", str(d), "--text", "hello"], ERROR)
        d = self.folder()
        (d / "tokenizer.json").unlink()
        self.add("tokenizer.json", "no tokenizer.json, --text", ["model", "--model", str(d), "--text", "hello"], ERROR)
        self.add("tokenizer.json", "no tokenizer.json, --ids", ["model", "--model", str(d), "--ids", "1,2"], RESULT)

    # ---- GPT-2's own tokenizer files --------------------------------------------------------
    def gpt2_files(self):
        encoder = (ROOT / "data" / "gpt2" / "encoder.json").read_text()
        merges = (ROOT / "data" / "gpt2" / "vocab.bpe").read_text()
        cases = {
            "encoder.json empty": ("", merges),
            "encoder.json not an object": ("[1, 2]", merges),
            "encoder.json an id twice": ('{"a": 0, "b": 0}', "#version: 0.2\na b\n"),
            "encoder.json a string id": ('{"a": "0"}', "#version: 0.2\n"),
            "encoder.json an id beyond the count": ('{"a": 5}', "#version: 0.2\n"),
            "vocab.bpe a line of three": (encoder, "#version: 0.2\nĠ t h\n"),
            "vocab.bpe a line of one": (encoder, "#version: 0.2\nĠt\n"),
            "vocab.bpe two spaces": (encoder, "#version: 0.2\nĠ  t\n"),
            "vocab.bpe empty": (encoder, ""),
            "vocab.bpe invalid UTF-8": (encoder, "#version: 0.2\n\xff \xfe\n"),
            "vocab.bpe only a version line": (encoder, "#version: 0.2\n"),
        }
        for name, (enc, bpe) in cases.items():
            self.n += 1
            d = self.work / f"gpt2tok{self.n}"
            d.mkdir()
            (d / "encoder.json").write_text(enc, errors="surrogateescape") if "\xff" not in enc else None
            (d / "vocab.bpe").write_bytes(bpe.encode("utf-8", "surrogateescape") if "\xff" not in bpe else bpe.encode("latin-1"))
            expect = RESULT if name in ("vocab.bpe empty", "vocab.bpe only a version line") else ERROR
            self.add("GPT-2 tokenizer files", name, ["tokenize", "--tokenizer", str(d), "--text", "Hello world"], expect)
        self.add("GPT-2 tokenizer files", "--tokenizer missing folder", ["tokenize", "--tokenizer", str(self.work / "nowhere"), "--text", "hi"], ERROR)
        self.add("GPT-2 tokenizer files", "--tokenizer a file that is no tokenizer", ["tokenize", "--tokenizer", str(GPT2_FILE), "--text", "hi"], ERROR)

    # ---- option values -------------------------------------------------------------------------
    def options(self):
        qwen = str(MODELS / "tiny_qwen3")
        gemma = str(MODELS / "tiny_gemma3")
        bad_ids = ["", ",", "1,,2", "1,2,", "-1", "1.5", "0x10", "300", "18446744073709551616", "1 2", "a", "1;2", "٣"]
        for ids in bad_ids:
            self.add("options", f"--ids {ids!r}", ["model", "--model", qwen, "--ids", ids], ERROR)
        for ids in ["0", "299", "1,2,3", " 1, 2", ",".join(["5"] * 64)]:
            self.add("options", f"--ids {ids[:20]!r}", ["model", "--model", qwen, "--ids", ids], RESULT)
        self.add("options", "--ids 65 tokens (context 64)", ["model", "--model", qwen, "--ids", ",".join(["5"] * 65)], ERROR)
        for text in ["hello", "\x1b[2J\x07", "\u202e\u2028", "a" * 40, "<|im_start|>user", "🙂" * 5, "\t\n\r "]:
            self.add("options", f"--text {text[:12]!r}", ["model", "--model", qwen, "--text", text], RESULT)
        for text in ["a" * 5000, "🙂" * 50]:  # more tokens than the context of 64
            self.add("options", f"--text {text[:12]!r}… beyond the context", ["model", "--model", qwen, "--text", text], ERROR)
        self.add("options", "--text invalid UTF-8", ["model", "--model", qwen, "--text", b"ab\xff\xfe".decode("latin-1")], EITHER)
        self.add("options", "--text empty", ["model", "--model", qwen, "--text", ""], ERROR)
        self.add("options", "--text and --ids", ["model", "--model", qwen, "--text", "hi", "--ids", "1"], ERROR)
        for gen, expect in [("0", EITHER), ("1", RESULT), ("1000", RESULT), ("18446744073709551615", RESULT), ("18446744073709551616", ERROR), ("-1", ERROR)]:
            self.add("options", f"--generate {gen}", ["model", "--model", qwen, "--ids", "1,2", "--generate", gen], expect)
        for layer, expect in [("0", ERROR), ("1", RESULT), ("2", RESULT), ("3", ERROR), ("-1", ERROR), ("99999999999999999999", ERROR)]:
            self.add("options", f"--layer {layer}", ["model", "--model", qwen, "--ids", "1,2", "--layer", layer], expect)
        for head, expect in [("0", ERROR), ("1", RESULT), ("4", RESULT), ("5", ERROR)]:
            self.add("options", f"--head {head}", ["model", "--model", qwen, "--ids", "1,2", "--head", head], expect)
        for k, expect in [("1", RESULT), ("300", RESULT), ("100000", RESULT), ("0", ERROR)]:
            self.add("options", f"--top-k {k}", ["model", "--model", qwen, "--ids", "1,2", "--top-k", k], expect)
        for t, expect in [("1e-30", RESULT), ("1e30", RESULT), ("0", ERROR), ("nan", ERROR), ("inf", ERROR), ("-1", ERROR)]:
            self.add("options", f"--temperature {t}", ["model", "--model", qwen, "--ids", "1,2", "--temperature", t], expect)
        for p, expect in [("1e-9", RESULT), ("1", RESULT), ("0", ERROR), ("1.5", ERROR)]:
            self.add("options", f"--top-p {p}", ["model", "--model", qwen, "--ids", "1,2", "--top-p", p], expect)
        for sort, expect in [("entropy", RESULT), ("diagonal", RESULT), ("nonsense", ERROR)]:
            self.add("options", f"--view --sort {sort}", ["model", "--model", gemma, "--ids", "1,2,3,4,5,6", "--view", "--sort", sort], expect)
        for mem, expect in [("1K", ERROR), ("0", ERROR), ("garbage", ERROR), ("-5M", ERROR), ("1e400", ERROR), ("64M", RESULT)]:
            self.add("options", f"--max-memory {mem}", ["model", "--model", qwen, "--ids", "1,2,3", "--max-memory", mem], expect)
        for work, expect in [("1", ERROR), ("0", ERROR), ("nan", ERROR), ("1e12", RESULT)]:
            self.add("options", f"--max-work {work}", ["model", "--model", qwen, "--ids", "1,2,3", "--max-work", work], expect)
        self.add("options", "--view --all-layers --generate 3", ["model", "--model", gemma, "--ids", "1,2,3,4,5,6,7,8,9", "--view", "--all-layers", "--generate", "3"], RESULT)
        self.add("options", "--steps unknown", ["model", "--model", qwen, "--ids", "1,2", "--steps", "nonsense"], ERROR)
        self.add("options", "--svg-step unknown", ["model", "--model", qwen, "--ids", "1,2", "--svg", str(self.work / "o.svg"), "--svg-step", "nonsense"], ERROR)
        self.add("options", "--svg with --summary", ["model", "--model", qwen, "--ids", "1,2", "--svg", str(self.work / "o2.svg"), "--summary"], ERROR)
        self.add("options", "--json --summary --timing", ["model", "--model", qwen, "--ids", "1,2", "--json", "--summary", "--timing"], RESULT)
        # gpt2 on its checkpoint file
        g = str(GPT2_FILE)
        for args, expect in [(["--heads", "4", "--ids", "1,2"], RESULT), (["--heads", "3", "--ids", "1,2"], ERROR), (["--heads", "0", "--ids", "1"], ERROR),
                             (["--ids", "1,2"], EITHER), (["--heads", "4", "--ids", "50"], ERROR), (["--heads", "4", "--ids", "1", "--generate", "100"], RESULT),
                             (["--heads", "4", "--text", "hello"], EITHER), (["--heads", "4", "--ids", "1", "--layer", "3"], ERROR)]:
            self.add("options", "gpt2 " + " ".join(args), ["gpt2", "--model", g] + args, expect)

    # ---- files that are not what they claim, and inputs that must survive -----------------------
    def special_files(self):
        qwen = MODELS / "tiny_qwen3"
        fifo = self.work / "fifo"
        os.mkfifo(fifo)
        empty = self.work / "empty_dir"
        empty.mkdir()
        for name, path, expect in [("--model a FIFO", fifo, ERROR), ("--model /dev/null", "/dev/null", ERROR), ("--model an empty folder", empty, ERROR),
                                   ("--model a config.json itself", qwen / "config.json", ERROR), ("--model a tokenizer.json", qwen / "tokenizer.json", ERROR),
                                   ("--model a folder's safetensors file", qwen / "model.safetensors", ERROR), ("--model /", "/", ERROR),
                                   ("--model a path of 5000 bytes", "/" + "x" * 5000, ERROR), ("--model with a newline", str(empty) + "\n", ERROR)]:
            self.add("special files", name, ["model", "--model", str(path), "--ids", "1"], expect)
        self.add("special files", "--tokenizer a FIFO", ["tokenize", "--tokenizer", str(fifo), "--text", "hi"], ERROR)
        d = self.folder()
        (d / "tokenizer.json").unlink()
        os.mkfifo(d / "tokenizer.json")
        self.add("special files", "tokenizer.json a FIFO in the folder", ["model", "--model", str(d), "--text", "hi"], ERROR)
        d = self.folder()
        (d / "config.json").unlink()
        os.mkfifo(d / "config.json")
        self.add("special files", "config.json a FIFO in the folder", ["model", "--model", str(d), "--ids", "1"], ERROR)
        # --svg onto every file the command reads: refused, the file unchanged
        d = self.folder()
        for target in ["config.json", "tokenizer.json", "model.safetensors"]:
            self.add("inputs kept", f"--svg onto {target}", ["model", "--model", str(d), "--ids", "1,2", "--svg", str(d / target)], ERROR)
        gd = self.work / "gpt2tok_copy"
        shutil.copytree(ROOT / "data" / "gpt2", gd)
        for target in ["encoder.json", "vocab.bpe"]:
            self.add("inputs kept", f"--svg onto GPT-2's {target}", ["gpt2", "--model", str(GPT2_FILE), "--heads", "4", "--ids", "1,2",
                                                                      "--tokenizer", str(gd), "--svg", str(gd / target)], ERROR)

    def build(self):
        self.configs()
        self.checkpoints()
        self.tokenizers()
        self.gpt2_files()
        self.options()
        self.special_files()


def digest(paths):
    out = {}
    for root in paths:
        for p in sorted(pathlib.Path(root).rglob("*")):
            try:
                if p.is_file() and not p.is_symlink() and stat.S_ISREG(p.stat().st_mode):
                    out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            except OSError:
                pass
    return out


def run_case(binary, args):
    argv = [binary] + args
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return "hang", ""
    return proc.returncode, err.decode("utf-8", "replace")


def verdict(code, err, expect):
    """Why a case that exited with `code` and printed `err` failed its class, or None."""
    lines = [l for l in err.splitlines() if l]
    if code == "hang":
        return "no answer within 20 s"
    if code < 0:
        return f"killed by {signal.Signals(-code).name}"
    if code not in (0, 1, 2):
        return f"exit {code}"
    if expect == ERROR and code == 0:
        return "exit 0 where an error was due (silently accepted)"
    if expect == RESULT and code != 0:
        return f"exit {code}: {err.strip()[:200]}"
    if code != 0 and (not lines or not lines[0].startswith("attnwalk: error: ") or "terminate called" in err):
        return f"not a one-line message: {err.strip()[:200]!r}"
    return None


def report(counts, total, failures, changed):
    """Prints the round's counts and failures; the exit code."""
    for klass, n in counts.items():
        print(f"  {n:4d}  {klass}")
    print(f"{total} cases; {len(failures)} failed; {len(changed)} input files changed")
    for f in failures:
        print("FAIL", f)
    for p in changed:
        print("CHANGED", p)
    return 1 if failures or changed else 0


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="attnwalk_hostile_") as work:
        r = Round(binary, work)
        r.build()
        if "--list" in sys.argv:
            for klass, name, args, expect in r.cases:
                print(f"{klass}: {name} -> {expect}")
            return 0
        before = digest([work, ROOT / "tests" / "data", ROOT / "data"])
        failures, counts = [], {}
        for klass, name, args, expect in r.cases:
            code, err = run_case(binary, args)
            counts[klass] = counts.get(klass, 0) + 1
            why = verdict(code, err, expect)
            if why:
                failures.append(f"{klass}: {name}: {why}")
        after = digest([work, ROOT / "tests" / "data", ROOT / "data"])
        changed = [p for p in before if after.get(p) != before[p]]
        return report(counts, len(r.cases), failures, changed)


if __name__ == "__main__":
    sys.exit(main())
