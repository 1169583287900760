#!/usr/bin/env python3
"""The fifth hostile round (docs/robustness.md, "The fifth round"): files written through a
link in --npy's folder; rotations and windows applied where the model has none; a choice
bias that is not a number; a RoPE type that is not a name; subnormal numbers in config.json;
the line that says where a file was written, with escapes in its name; values named where they stand; a regular file on standard input counted before it is read;
an -i safetensors tensor, a text and a header counted before they are read; the same weights at other offsets giving the same bits;
MXFP4 scales and -i tensors that are not numbers named by block and element; tensor names holding colons.

Each case runs the real binary and must end as its class says (an error: exit 1 or 2 and
one line starting "attnwalk: error:"; or a result: exit 0), never by a signal or a hang,
never changing a file it read (nor, here, a file a link points at); a case may also check
what it printed.

Usage: hostile_fifth_round.py BINARY [--list]    (python3 only; every file is made here)
"""
import json
import os
import pathlib
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from hostile_fourth_round import Round as FourthRound, both, equals_run, never_says, says  # noqa: E402
import hostile_fourth_round  # noqa: E402
from hostile_model_path import ERROR, RESULT, read_st, write_st  # noqa: E402


def steps_of(out):
    return [s["id"] for s in json.loads(out)["steps"]]


_SANITIZED = []


def sanitized():
    """Whether the binary was built with AddressSanitizer: its shadow memory and its quarantine
    of freed blocks make a resident size say nothing about what the program holds."""
    if not _SANITIZED:
        _SANITIZED.append(b"__asan_init" in pathlib.Path(hostile_fourth_round.BINARY).read_bytes())
    return _SANITIZED[0]


_PEAK = """import os, sys
quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=quiet)
print(os.wait4(pid, 0)[2].ru_maxrss)
"""


def peak_mib(args):
    """The binary's peak resident memory on `args`, in MiB, from wait4 in a small Python of its
    own (Linux keeps the larger resident size of a child's image before exec: a child of this
    process would start at this one's). At least that small Python's own size, about 10 MiB."""
    out = subprocess.run([sys.executable, "-c", _PEAK, hostile_fourth_round.BINARY] + args, stdin=subprocess.DEVNULL, capture_output=True,
                         cwd=tempfile.gettempdir(), timeout=60).stdout
    return int(out.split()[-1]) / 1024.0


def peak_below(extra_mib, args):
    """A check: run again, the peak stays within `extra_mib` MiB of the built-in example's
    (the process alone), both measured the same way. Not measured in a sanitizer's build."""
    def check(code, out, err):
        if sanitized():
            return None
        base = peak_mib(["scores", "--query", "1"])
        peak = peak_mib(args)
        return None if peak < base + extra_mib else f"its peak was {peak:.0f} MiB, the process alone {base:.0f} MiB: more than {extra_mib} MiB read before it was counted"
    return check


def same_steps(reference_args):
    """A check: every step's numbers equal those of the reference command line, bit for bit."""
    def check(code, out, err):
        c2, ref, err2 = hostile_fourth_round.run(reference_args, cwd=tempfile.gettempdir())
        if c2 != 0:
            return f"the reference run failed: {err2.strip()[:200]}"
        numbers = lambda text: {s["id"]: (s.get("data"), s.get("summary")) for s in json.loads(text)["steps"]}  # a summarised layer: its sums
        mine, theirs = numbers(out), numbers(ref)
        differ = [k for k in theirs if mine.get(k) != theirs[k]]
        return f"steps differ from the file as it was: {differ[:5]}" if differ else None
    return check


def relayout(path, hole=0, first=0, header_extra=0):
    """Writes a safetensors file's tensors again, in the same order: `first` bytes before the
    first, `hole` bytes between each two, the header (padded to 8 bytes, as safetensors
    writes it) longer by `header_extra` spaces."""
    header, body = read_st(path)
    names = sorted((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][0])
    out, new = bytearray(b"\0" * first), {k: v for k, v in header.items() if k == "__metadata__"}
    for i, k in enumerate(names):
        b, e = header[k]["data_offsets"]
        out += b"\0" * (hole if i else 0)
        new[k] = dict(header[k], data_offsets=[len(out), len(out) + e - b])
        out += body[b:e]
    text = json.dumps(new, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8 + header_extra)  # padded to 8 as safetensors writes it, then longer: the data at 8k + header_extra
    write_st(path, None, bytes(out), raw_header=text)


def tensor_file(path, tensors, header_extra=0):
    """A safetensors file of (name, dtype, shape, bytes) tensors, one after the other."""
    header, body = {}, bytearray()
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(body), len(body) + len(data)]}
        body += data
    write_st(path, None, bytes(body), raw_header=json.dumps(header, separators=(",", ":")).encode() + b" " * header_extra)


class Round(FourthRound):
    def build(self):
        self.npy_links()
        self.rotations_and_windows()
        self.choice_bias()
        self.subnormals()
        self.wrote_lines()
        self.named_where_they_stand()
        self.counted_before_read()
        self.read_counted_first()
        self.same_bits()
        self.named_by_block_and_element()
        self.names_with_colons()

    # 11 ---- a tensor name that holds colons: FILE is the longest part before a colon that is a safetensors file ----
    def names_with_colons(self):
        row = struct.pack("<6f", 0.43, 0.15, 0.89, 0.55, 0.87, 0.66)
        d = self.work / "colons"
        d.mkdir()
        f = d / "two.safetensors"
        tensor_file(f, [("y:z", "F32", [2, 3], row), ("a:b:c", "F32", [2, 3], row), ("y", "F32", [2, 3], row)])
        wanted = lambda *w: lambda code, out, err: None if all(x in out for x in w) else f"the output does not show {w}: {out[:200]!r}"
        self.add("names with colons", "FILE:y:z reads tensor \"y:z\"", ["scores", "-i", f"{f}:y:z", "--query", "1", "--json"], RESULT,
                 check=wanted(f"{f}:y:z"))
        self.add("names with colons", "FILE:a:b:c reads tensor \"a:b:c\"", ["scores", "-i", f"{f}:a:b:c", "--query", "1", "--json"], RESULT,
                 check=wanted(f"{f}:a:b:c"))
        self.add("names with colons", "FILE:y reads tensor \"y\" beside \"y:z\"", ["scores", "-i", f"{f}:y", "--query", "1", "--json"], RESULT,
                 check=wanted(f"{f}:y\""))
        self.add("names with colons", "FILE:y:w, no such tensor: named, with the names it holds", ["scores", "-i", f"{f}:y:w", "--query", "1"], ERROR,
                 check=says("y:w", "no such tensor", "a:b:c"))
        self.add("names with colons", "FILE alone of three tensors: says FILE:NAME", ["scores", "-i", str(f), "--query", "1"], ERROR,
                 check=says("holds 3 tensors", ":NAME"))
        odd = d / "we:ird.safetensors"  # a colon in the file's own name
        tensor_file(odd, [("x", "F32", [2, 3], row)])
        self.add("names with colons", "a file named we:ird.safetensors, whole", ["scores", "-i", str(odd), "--query", "1"], RESULT)
        self.add("names with colons", "we:ird.safetensors:x", ["scores", "-i", f"{odd}:x", "--query", "1"], RESULT)
        many = d / "many.safetensors"  # the list of names is cut, not a line of 100,000 names
        tensor_file(many, [(f"t{i:06d}", "F32", [0], b"") for i in range(100000)])
        self.add("names with colons", "a file of 100,000 tensors without a name: the message names eight",
                 ["scores", "-i", str(many), "--query", "1"], ERROR,
                 check=lambda code, out, err: None if "and 99992 more" in err and len(err) < 2000 else f"not cut: {len(err)} bytes: {err[:300]!r}")

    # 10 ---- MXFP4 scales and -i tensors that are not numbers, named by block and element ------------------------------------
    def named_by_block_and_element(self):
        name = "model.layers.0.mlp.experts.down_proj_scales"
        for value, code, words in [(255, None, ["255", "NaN", "[0, 1, 0]"]), (254, 0x44, ["254", "beyond float32", "[0, 1, 0]"]),
                                   (255, None, ["255", "[1, 3, 0]"])]:
            d = self.folder("tiny_gpt_oss")
            path = d / "model.safetensors"
            header, body = read_st(path)
            e = header[name]
            shape = e["shape"]  # [E, rows, groups]
            index = (0, 1, 0) if "[0, 1, 0]" in words else (1, 3, 0)
            flat = (index[0] * shape[1] + index[1]) * shape[2] + index[2]
            body = bytearray(body)
            body[e["data_offsets"][0] + flat] = value
            if code is not None:
                blocks = header[name.replace("_scales", "_blocks")]
                body[blocks["data_offsets"][0] + flat * 16] = code
            write_st(path, header, bytes(body))
            self.add("named by block and element", f"gpt-oss: an MXFP4 scale of {value} at {list(index)}" + (" with codes of 2" if code else ""),
                     ["model", "--model", str(d), "--ids", "1,2,3"], ERROR, check=both(says("down_proj_scales", *words), never_says("scale the embeddings")))
        d = self.work / "nonfinite"
        d.mkdir()
        for dtype, bits, word in [("F32", struct.pack("<f", float("nan")), "nan"), ("F32", struct.pack("<f", float("inf")), "inf"),
                                  ("F32", struct.pack("<f", float("-inf")), "-inf"), ("F16", struct.pack("<H", 0x7C00), "inf"),
                                  ("BF16", struct.pack("<H", 0x7FC0), "nan")]:
            width = len(bits)
            values = [struct.pack("<f", 0.5) if width == 4 else struct.pack("<H", 0x3800 if dtype == "F16" else 0x3F00)] * 6
            values[4] = bits  # element [1, 1]
            f = d / f"{dtype}_{word}.safetensors"
            tensor_file(f, [("x", dtype, [2, 3], b"".join(values))])
            self.add("named by block and element", f"-i a {dtype} tensor holding {word} at [1, 1]", ["scores", "-i", str(f), "--query", "1"], ERROR,
                     check=both(says("x", "[1, 1]", word), never_says("scale the embeddings", "finite input")))

    # 9 ---- the same weights at other offsets: the same bits ----------------------------------------------------------
    def same_bits(self):
        ids = ["--ids", "1,2,3,4,5", "--json"]
        for family in ["tiny_qwen3", "tiny_gemma", "tiny_gpt_oss", "tiny_qwen3_next", "tiny_olmo3", "tiny_llama"]:
            for label, layout in [("an odd offset before the first tensor", dict(first=1)), ("a hole of 1 byte between tensors", dict(hole=1)),
                                  ("a hole of 2 bytes", dict(hole=2)), ("a header longer by 1 byte", dict(header_extra=1)),
                                  ("a header longer by 3 bytes", dict(header_extra=3))]:
                if family == "tiny_llama" and label not in ("a hole of 1 byte between tensors", "a hole of 2 bytes"):
                    continue
                d = self.folder(family)
                for f in sorted(d.glob("*.safetensors")):  # every shard (the index names files, not offsets)
                    relayout(f, **layout)
                self.add("same bits", f"{family}: {label}", ["model", "--model", str(d)] + ids, RESULT,
                         check=same_steps(["model", "--model", str(hostile_fourth_round.MODELS / family)] + ids))

    # 8 ---- a tensor, a text and a header counted before they are read -----------------------------------------------
    def read_counted_first(self):
        d = self.work / "counted"
        d.mkdir()
        big = d / "two.safetensors"  # x: 24 MB of float32 beside a small y
        tensor_file(big, [("x", "F32", [1500000, 4], bytes(24000000)), ("y", "F32", [2, 3], struct.pack("<6f", 1, 2, 3, 4, 5, 6))])
        args = ["scores", "-i", f"{big}:x", "--query", "1", "--max-memory", "4M"]
        self.add("read counted first", "-i FILE:NAME of 24 MB F32, --max-memory 4M", args, ERROR,
                 check=both(says(f"{big}:x", "float32", "--max-memory"), never_says("this walk would need")))
        args = ["scores", "-i", f"{big}:y", "--query", "1", "--max-memory", "4M"]
        self.add("read counted first", "-i FILE:NAME of 24 bytes in a file of 24 MB, --max-memory 4M: the other tensor is not read", args, RESULT,
                 check=peak_below(2, args))
        for dtype in ["F16", "BF16"]:  # 1 MB of 16-bit values: 1 MB where they lie and 2 MB of float32
            f = d / f"{dtype}.safetensors"
            tensor_file(f, [("x", dtype, [131072, 4], bytes(1 << 20))])
            args = ["scores", "-i", str(f), "--query", "1", "--max-memory", "2560K"]
            self.add("read counted first", f"-i {dtype} of 1 MiB, --max-memory 2.5M: 3 MiB counted, not 2", args, ERROR,
                     check=both(says(dtype, "3.0 MiB", "--max-memory"), never_says("this walk would need")))
        text = "a" * 100000
        for args in (["tokenize", "--text", text, "--max-memory", "4M"],
                     ["model", "--model", str(hostile_fourth_round.MODELS / "tiny_llama"), "--text", text, "--max-memory", "4M"]):
            self.add("read counted first", f"{args[0]} --text of 100,000 bytes, --max-memory 4M: refused before the tokenizer", args, ERROR,
                     check=both(says("--max-memory"), peak_below(4, args)))
        empty = d / "empty_tensors.safetensors"  # a header of 100,000 empty tensors: 5.8 MB of JSON
        tensor_file(empty, [(f"t{i:07d}", "F32", [0, 4], b"") for i in range(100000)])
        args = ["scores", "-i", f"{empty}:t0000001", "--query", "1"]
        self.add("read counted first", "a header of 100,000 empty tensors: parsed within a few times its size", args, ERROR,
                 check=both(says("non-empty"), peak_below(48, args)))
        args = ["scores", "-i", f"{empty}:t0000001", "--query", "1", "--max-memory", "16M"]
        self.add("read counted first", "the same header under --max-memory 16M: refused before the parse, naming it", args, ERROR,
                 check=both(says("header", "--max-memory"), peak_below(8, args)))

    # 7 ---- memory counted before the input is read ---------------------------------------------------------
    def counted_before_read(self):
        n = 600 * 1000  # 2.4 MB of float32 numbers: more than half of --max-memory 4M
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 16), }" % (n // 16)
        header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
        big = self.work / "big.npy"
        big.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + bytes(4 * n))
        self.add("counted before read", "-i - with a regular file of 2.4 MB on standard input, --max-memory 4M", ["scores", "-i", "-", "--query", "1", "--max-memory", "4M"],
                 ERROR, check=says("reading standard input", "--max-memory"), stdin_file=big)
        self.add("counted before read", "-i FILE of 2.4 MB, --max-memory 4M", ["scores", "-i", str(big), "--query", "1", "--max-memory", "4M"],
                 ERROR, check=says("reading", "big.npy", "--max-memory"))

    # 6 ---- each value named where it stands ------------------------------------------------------------
    def named_where_they_stand(self):
        def yarn(**kw):
            return dict({"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 16, "beta_fast": 32, "beta_slow": 1}, **kw)
        cases = [
            ("tiny_olmo3", "mscale -100", lambda c: c.update(rope_scaling=yarn(mscale=-100, mscale_all_dim=1)), ["rope_scaling.mscale", "-100"], ["attention_factor"]),
            ("tiny_olmo3", "mscale 1e300", lambda c: c.update(rope_scaling=yarn(mscale=1e300, mscale_all_dim=1)), ["rope_scaling.mscale", "1e+300"], ["scale the embeddings"]),
            ("tiny_olmo3", "mscale_all_dim -7.2", lambda c: c.update(rope_scaling=yarn(mscale=1, mscale_all_dim=-7.2)), ["rope_scaling.mscale_all_dim", "-7.2"], ["attention_factor"]),
            ("tiny_olmo3", "attention_factor 1e300", lambda c: c["rope_scaling"].update(attention_factor=1e300), ["rope_scaling.attention_factor", "1e+300"], ["scale the embeddings"]),
            ("tiny_deepseek_v3_f32", "routed_scaling_factor 1e300", lambda c: c.update(routed_scaling_factor=1e300), ["routed_scaling_factor", "1e+300"], ["scale the embeddings"]),
            ("tiny_qwen3_next", "mlp_only_layers [1.5]", lambda c: c.update(mlp_only_layers=[1.5]), ["mlp_only_layers[0]", "1.5"], []),
            ("tiny_qwen3_5", "top-level tie_word_embeddings \"false\"", lambda c: c.update(tie_word_embeddings="false"), ["$.tie_word_embeddings", '"false"'], ["text_config.tie_word_embeddings"]),
        ]
        for family, name, edit, words, never in cases:
            d = self.folder(family)
            config = json.loads((d / "config.json").read_text())
            edit(config)
            (d / "config.json").write_text(json.dumps(config))
            self.add("named where they stand", f"{family}: {name}", ["model", "--model", str(d), "--ids", "1,2,3"], ERROR,
                     check=both(says("config.json", *words), never_says(*never)) if never else says("config.json", *words))

    # 5 ---- the "wrote NAME" line shows a name's escapes as stand-ins ------------------------------------
    def wrote_lines(self):
        def shown(code, out, err):
            if "\x1b" in err or "\x07" in err:
                return "an escape reached the terminal"
            return None if "attnwalk: wrote" in err and "\u241b" in err else f"no stand-in: {err!r}"
        for option, name in [("--html", "p\x1b[31m.html"), ("--svg", "q\x1b]0;title\x07.svg"), ("--npy", "d\x1b[2J")]:
            self.n += 1
            folder = self.work / f"wrote{self.n}"
            folder.mkdir()
            self.add("wrote lines", f"{option} {name!r}", ["scores", option, str(folder / name)], RESULT, check=shown)

    # 4 ---- subnormal numbers are numbers ----------------------------------------------------------------
    def subnormals(self):
        for family, field, value in [("tiny_qwen3", "rms_norm_eps", 1e-310), ("tiny_olmo3", "rms_norm_eps", 5e-324), ("tiny_gemma3", "rope_local_base_freq", 1e-310)]:
            d = self.folder(family)
            config = json.loads((d / "config.json").read_text())
            config[field] = value
            (d / "config.json").write_text(json.dumps(config))
            expect, check = (RESULT, None) if field == "rms_norm_eps" else (ERROR, says(field, "1e-310", "above 1"))
            self.add("subnormals", f"{family}: {field} {value}", ["model", "--model", str(d), "--ids", "1,2,3"], expect,
                     check=both(never_says("stod"), check) if check else never_says("stod"))

    # 1 ---- --npy never writes through a link -----------------------------------------------------
    def npy_links(self):
        for name, target_kind, link_name in [("a step's file, relative link", "npy", "scores.npy"),
                                             ("a step's file, absolute link", "npy-abs", "scores.npy"),
                                             ("a step's file, a link to an empty file", "empty", "scores.npy"),
                                             ("the folder's mark a link", "empty", ".attnwalk-npy"),
                                             ("a link to a link to a file", "chain", "scores.npy")]:
            self.n += 1
            base = self.work / f"npy{self.n}"
            (base / "d").mkdir(parents=True)
            victim = base / "victim.npy"
            victim.write_bytes(b"\x93NUMPY keep")
            empty = base / "empty"
            empty.write_bytes(b"")
            if link_name != ".attnwalk-npy":
                (base / "d" / ".attnwalk-npy").write_bytes(b"")
            target = {"npy": "../victim.npy", "npy-abs": str(victim), "empty": str(empty), "chain": "hop"}[target_kind]
            if target_kind == "chain":
                os.symlink("../victim.npy", base / "d" / "hop")
            os.symlink(target, base / "d" / link_name)

            def unchanged(victim=victim, empty=empty):
                def check(code, out, err):
                    if victim.read_bytes() != b"\x93NUMPY keep":
                        return "the file the link names was replaced"
                    if empty.read_bytes() != b"":
                        return "the empty file the link names was written"
                    return None
                return check
            self.add("npy links", name, ["scores", "--npy", str(base / "d")], ERROR, check=both(says("symbolic link"), unchanged()))

    # 2 ---- rotations and windows only where the model has them -------------------------------------
    def rotations_and_windows(self):
        def config_edit(family, edit):
            d = self.folder(family)
            config = json.loads((d / "config.json").read_text())
            edit(config)
            (d / "config.json").write_text(json.dumps(config))
            return d
        ids = ["--ids", "1,2,3,4,5,6"]
        # layer_types with sliding layers and a window, in families whose Hugging Face class takes no window from them
        for family, layer in [("tiny_llama", 2), ("tiny_qwen3", 2), ("tiny_olmo2", 2), ("tiny_deepseek_v3_f32", 2), ("tiny_qwen2", 2)]:
            config = json.loads((hostile_fourth_round.MODELS / family / "config.json").read_text())
            n = config["num_hidden_layers"]
            d = config_edit(family, lambda c, n=n: c.update(layer_types=["sliding_attention"] * n, sliding_window=2))
            args = ["model", "--model", str(d), "--layer", str(layer), "--json"] + ids
            self.add("windows and rotations", f"{family}: layer_types sliding, sliding_window 2 (its class takes no window)", args, RESULT,
                     check=equals_run(["model", "--model", str(hostile_fourth_round.MODELS / family), "--layer", str(layer), "--json"] + ids, "weights"))
        # a partial rotary factor that turns no feature: no RoPE there (d_h 8: 8 · 0.1 = 0.8 → 0)
        d = config_edit("tiny_qwen3_next", lambda c: c.update(partial_rotary_factor=0.1))
        self.add("windows and rotations", "tiny_qwen3_next: partial_rotary_factor 0.1 turns no feature", ["model", "--model", str(d), "--layer", "4", "--json"] + ids,
                 RESULT, check=lambda code, out, err: "rope_angles is there" if "rope_angles" in steps_of(out) else None)
        d = config_edit("tiny_qwen3", lambda c: c.update(partial_rotary_factor=0.2))  # d_h 16: 3.2 → 3 features, an odd number
        self.add("windows and rotations", "tiny_qwen3: partial_rotary_factor 0.2 turns 3 features", ["model", "--model", str(d)] + ids, ERROR,
                 check=both(says("partial_rotary_factor", "0.2", "3"), never_says("rotary dimension")))
        for family, scaling, words in [("tiny_olmo3", {"type": 5, "factor": 2.0, "original_max_position_embeddings": 8}, ["rope_scaling.type", "5"]),
                                       ("tiny_llama", {"rope_type": 5, "factor": 8.0}, ["rope_scaling.rope_type", "5"]),
                                       ("tiny_qwen3", {"rope_type": ["yarn"], "factor": 2.0}, ["rope_scaling.rope_type", "[yarn]"]),
                                       ("tiny_qwen3", {"rope_type": True}, ["rope_scaling.rope_type", "true"])]:
            d = config_edit(family, lambda c, s=scaling: c.update(rope_scaling=s))
            self.add("windows and rotations", f"{family}: rope_scaling {json.dumps(scaling)}", ["model", "--model", str(d)] + ids, ERROR,
                     check=says("config.json", *words))

    # 3 ---- a choice bias that is not a number ---------------------------------------------------------
    def choice_bias(self):
        name = "model.layers.1.mlp.gate.e_score_correction_bias"
        for value, word in [(float("nan"), "NaN"), (float("inf"), "inf"), (float("-inf"), "inf")]:
            d = self.folder("tiny_deepseek_v3_f32")
            path = d / "model.safetensors"
            blob = bytearray(path.read_bytes())
            n = struct.unpack("<Q", blob[:8])[0]
            header = json.loads(blob[8:8 + n])
            start = 8 + n + header[name]["data_offsets"][0]
            blob[start + 4:start + 8] = struct.pack("<f", value)  # its second expert
            path.write_bytes(bytes(blob))
            self.add("choice bias", f"e_score_correction_bias holding {value}", ["model", "--model", str(d), "--ids", "1,2,3"], ERROR,
                     check=says("e_score_correction_bias", word, "element 1"))


def main():
    return hostile_fourth_round.main(Round, "fifth", __doc__)


if __name__ == "__main__":
    sys.exit(main())
