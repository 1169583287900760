#!/usr/bin/env python3
"""The fifth hostile round (docs/robustness.md, "The fifth round"): files written through a
link in --npy's folder; rotations and windows applied where the model has none; a choice
bias that is not a number; a RoPE type that is not a name; subnormal numbers in config.json;
the line that says where a file was written, with escapes in its name; values named where they stand; a regular file on standard input counted before it is read.

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
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from hostile_fourth_round import Round as FourthRound, both, equals_run, never_says, says  # noqa: E402
import hostile_fourth_round  # noqa: E402
from hostile_model_path import ERROR, RESULT  # noqa: E402


def steps_of(out):
    return [s["id"] for s in json.loads(out)["steps"]]


class Round(FourthRound):
    def build(self):
        self.npy_links()
        self.rotations_and_windows()
        self.choice_bias()
        self.subnormals()
        self.wrote_lines()
        self.named_where_they_stand()
        self.counted_before_read()

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
