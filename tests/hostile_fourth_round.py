#!/usr/bin/env python3
"""The fourth hostile round (docs/robustness.md, "The fourth round"): output paths that are
links, devices or system files; windows and counts at the edge of 64 bits; FIFOs wherever
a file is read; JSON whose parse would outgrow --max-memory; config.json values that must
be named where they stand; internals that must not leak; values that must not be taken
silently; characters an SVG cannot hold; the context checked before the memory.

Each case runs the real binary and must end as its class says (an error: exit 1 or 2 and
one line starting "attnwalk: error:"; or a result: exit 0), never by a signal or a hang
(20 s), never changing a file it read; a case may also check what it printed (the message
names the file, the field and the value; the weights equal the run without a window; the
SVG parses as XML; /dev/stdout is still a link).

Usage: hostile_fourth_round.py BINARY [--list]    (python3 only; every file is made here)
"""
import json
import os
import pathlib
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import xml.dom.minidom

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from hostile_model_path import ERROR, RESULT, MODELS, ROOT, digest, read_st, report, verdict, write_st  # noqa: E402

U64 = str(2**64 - 1)
SYSTEM_LINKS = {"/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2"}
BINARY = None


def run(args, env=None, cwd=None, stdout=None, stdin=None):
    """(exit code or "hang", stdout, stderr) of the binary on `args` (stdin: an open file, else none)."""
    full_env = dict(os.environ, **(env or {}))
    out_target = subprocess.PIPE if stdout is None else stdout
    proc = subprocess.Popen([BINARY] + args, stdin=subprocess.DEVNULL if stdin is None else stdin, stdout=out_target, stderr=subprocess.PIPE,
                            env=full_env, cwd=cwd)
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return "hang", "", ""
    return proc.returncode, (out or b"").decode("utf-8", "replace"), err.decode("utf-8", "replace")


def says(*words):
    """A check: stderr names every word (the file, the field, the value)."""
    def check(code, out, err):
        missing = [w for w in words if w not in err]
        return f"the message does not name {missing}: {err.strip()[:300]!r}" if missing else None
    return check


def never_says(*words):
    def check(code, out, err):
        found = [w for w in words if w in err]
        return f"the message says {found}: {err.strip()[:300]!r}" if found else None
    return check


def both(*checks):
    def check(code, out, err):
        for c in checks:
            why = c(code, out, err)
            if why:
                return why
        return None
    return check


def step_data(out, step_id):
    trace = json.loads(out)
    for s in trace["steps"]:
        if s["id"] == step_id:
            return s["data"]
    raise KeyError(step_id)


def equals_run(reference_args, step_id):
    """A check: the step's numbers equal those of the reference command line (bit for bit)."""
    def check(code, out, err):
        c2, ref, err2 = run(reference_args, cwd=tempfile.gettempdir())
        if c2 != 0:
            return f"the reference run failed: {err2.strip()[:200]}"
        mine, theirs = step_data(out, step_id), step_data(ref, step_id)
        return None if mine == theirs else f"{step_id} differs from {' '.join(reference_args)}"
    return check


class Round:
    def __init__(self, work):
        self.work = pathlib.Path(work)
        self.cases = []
        self.n = 0

    def add(self, klass, name, args, expect, check=None, env=None, cwd=None, stdout_file=None, after=None, stdin_file=None):
        self.cases.append(dict(klass=klass, name=name, args=args, expect=expect, check=check, env=env, cwd=cwd or self.work,  # a stray file lands here
                               stdout_file=stdout_file, after=after, stdin_file=stdin_file))

    def folder(self, family="tiny_qwen3"):
        self.n += 1
        d = self.work / f"case{self.n}"
        shutil.copytree(MODELS / family, d)
        return d

    # 1 ---- where --svg and --html write --------------------------------------------------------
    def output_paths(self):
        w = self.work / "out"
        w.mkdir()
        empty = w / "empty_stdout"
        empty.write_bytes(b"")
        def link_still(p):
            def check():
                if os.path.islink(p):
                    return None
                if p in SYSTEM_LINKS and os.geteuid() == 0:  # a regression run as root: put the system's link back
                    os.unlink(p)
                    os.symlink(SYSTEM_LINKS[p], p)
                return f"{p} is no longer a link"
            return check

        def not_created(p):
            def check():
                if not os.path.lexists(p):
                    return None
                os.unlink(p)
                return f"{p} was created"
            return check
        for option in ["--html", "--svg"]:
            self.add("output paths", f"{option} /dev/stdout (stdout an empty file)", ["scores", option, "/dev/stdout"], ERROR,
                     check=says("/dev/stdout"), stdout_file=empty, after=link_still("/dev/stdout"))
            self.add("output paths", f"{option} /dev/stderr", ["scores", option, "/dev/stderr"], ERROR, after=link_still("/dev/stderr"))
            self.add("output paths", f"{option} -", ["scores", option, "-"], ERROR, check=says("file name"))
            self.add("output paths", f"{option} /proc/self/fd/1", ["scores", option, "/proc/self/fd/1"], ERROR)
            self.add("output paths", f"{option} /dev/null", ["scores", option, "/dev/null"], ERROR)
            self.add("output paths", f"{option} a new file in /dev/shm/../", ["scores", option, "/dev/shm/../attnwalk-new.svg"], ERROR,
                     after=not_created("/dev/attnwalk-new.svg"))
        (w / "my_stdout").symlink_to("/proc/self/fd/1")  # a link of our own to the same place
        self.add("output paths", "--html a link of one's own to /proc/self/fd/1 (stdout an empty file)",
                 ["scores", "--html", str(w / "my_stdout")], ERROR, stdout_file=empty, after=link_still(str(w / "my_stdout")))
        (w / "to_devnull").symlink_to("/dev/null")
        self.add("output paths", "--svg a link to /dev/null", ["scores", "--svg", str(w / "to_devnull")], ERROR,
                 after=link_still(str(w / "to_devnull")))
        (w / "devdir").symlink_to("/dev")
        self.add("output paths", "--svg through a folder link into /dev", ["scores", "--svg", str(w / "devdir" / "stdout")], ERROR)
        self.add("output paths", "--svg a new name through a folder link into /dev", ["scores", "--svg", str(w / "devdir" / "new.svg")], ERROR)
        (w / "chain1").symlink_to(w / "chain2")
        (w / "chain2").symlink_to("/dev/stdout")
        self.add("output paths", "--svg a chain of links ending at /dev/stdout", ["scores", "--svg", str(w / "chain1")], ERROR,
                 after=link_still(str(w / "chain2")))
        (w / "dangling.svg").symlink_to(w / "nowhere.svg")
        self.add("output paths", "--svg a link to nothing", ["scores", "--svg", str(w / "dangling.svg")], ERROR,
                 check=says("does not exist"), after=lambda: "the link's target was created" if (w / "nowhere.svg").exists() else None)
        (w / "loop_a").symlink_to(w / "loop_b")
        (w / "loop_b").symlink_to(w / "loop_a")
        self.add("output paths", "--svg a loop of links", ["scores", "--svg", str(w / "loop_a")], ERROR, check=says("loop"))
        (w / "picture.svg").write_bytes(b"")
        (w / "link.svg").symlink_to("picture.svg")

        def wrote_through():
            if not os.path.islink(w / "link.svg"):
                return "the link was replaced by a file"
            return None if (w / "picture.svg").read_bytes().lstrip().startswith(b"<?xml") else "the linked file was not written"
        self.add("output paths", "--svg a link to an empty file: written through, the link kept",
                 ["scores", "--svg", str(w / "link.svg")], RESULT, after=wrote_through)
        (w / "input.json").write_text(json.dumps({"embeddings": [[1, 2], [3, 4]]}))
        (w / "input_link.svg").symlink_to("input.json")
        self.add("output paths", "--svg a link to the input", ["scores", "-i", str(w / "input.json"), "--svg", str(w / "input_link.svg")], ERROR)
        self.add("output paths", "--html a folder", ["scores", "--html", str(w)], ERROR)
        self.add("output paths", "--svg in a folder that does not exist", ["scores", "--svg", str(w / "no" / "x.svg")], ERROR)

    # 2 ---- windows and counts at the edge of 64 bits ------------------------------------------
    def windows(self):
        for window in [U64, str(2**64 - 2), str(2**63), str(2**63 - 1), str(2**32), "6", "7", "1000"]:
            same = lambda cmd, sid: equals_run(cmd, sid)
            self.add("windows", f"kvcache --window {window}", ["kvcache", "--window", window, "--json"], RESULT,
                     check=same(["kvcache", "--json"], "output"))
            self.add("windows", f"mha --causal --window {window}", ["mha", "--causal", "--window", window, "--json"], RESULT,
                     check=same(["mha", "--causal", "--json"], "weights"))
            self.add("windows", f"flash --causal --window {window}", ["flash", "--causal", "--window", window, "--json"], RESULT,
                     check=same(["flash", "--causal", "--json"], "flash_output"))
        self.add("windows", "mha --causal --window 2^64-1 says it masks nothing", ["mha", "--causal", "--window", U64, "--steps", "mask"], RESULT,
                 check=lambda c, out, e: None if "masks nothing" in out else "no note that the window masks nothing")
        self.add("windows", "mha --window 2 (a real window) differs", ["mha", "--causal", "--window", "2", "--json"], RESULT,
                 check=lambda c, out, e: None if equals_run(["mha", "--causal", "--json"], "weights")(c, out, e) else "a window of 2 changed nothing")
        for window in [str(2**64), "0", "-1", "1e3", "nan"]:
            self.add("windows", f"--window {window}", ["mha", "--causal", "--window", window], ERROR)
        for args in [["kvcache", "--layers", U64, "--context", U64, "--steps", "cache_bytes"],
                     ["kvcache", "--layers", U64, "--context", U64, "--d-out", "64", "--heads", "2", "--steps", "cache_bytes"]]:
            self.add("counts", " ".join(args), args, ERROR, check=both(says("too large to represent"), never_says("float32", "NaN")))
        for args in [["kvcache", "--layers", U64, "--steps", "cache_bytes"], ["kvcache", "--context", U64, "--steps", "cache_bytes"],
                     ["params", "--context", U64], ["flash", "--block", U64]]:
            self.add("counts", " ".join(args), args, RESULT)
        for args in [["params", "--layers", U64], ["params", "--d-in", U64], ["mha", "--heads", U64], ["mha", "--batch", U64],
                     ["params", "--context", U64, "--layers", U64]]:
            self.add("counts", " ".join(args), args, ERROR, check=never_says("inf", "NaN"))

    # 3 ---- every file opened without waiting ------------------------------------------------------
    def fifos(self):
        d = self.work / "data_with_fifo"
        (d / "gpt2").mkdir(parents=True)
        os.mkfifo(d / "vocab.json")
        os.mkfifo(d / "gpt2" / "encoder.json")
        shutil.copy(ROOT / "data" / "gpt2" / "vocab.bpe", d / "gpt2" / "vocab.bpe")
        elsewhere = self.work / "elsewhere"
        elsewhere.mkdir()
        env = {"ATTNWALK_DATA": str(d)}
        self.add("FIFOs", "ATTNWALK_DATA's vocab.json a FIFO", ["scores", "--text", "cats climb trees", "--vocab", "data/vocab.json"], ERROR,
                 env=env, cwd=elsewhere, check=says("vocab.json"))
        self.add("FIFOs", "ATTNWALK_DATA's gpt2/encoder.json a FIFO", ["tokenize", "--text", "hi"], ERROR, env=env, cwd=elsewhere)
        fifo = self.work / "a_fifo"
        os.mkfifo(fifo)
        for name, args in {"-i": ["scores", "-i", str(fifo)], "--vocab": ["scores", "--text", "a b", "--vocab", str(fifo)],
                           "--weights": ["context", "--weights", str(fifo)], "--attn-mask": ["sdpa", "--attn-mask", str(fifo)],
                           "--tokenizer (a .json)": ["tokenize", "--tokenizer", str(fifo) + ".json", "--text", "hi"]}.items():
            if name.startswith("--tokenizer"):
                os.mkfifo(str(fifo) + ".json")
            self.add("FIFOs", f"{name} a FIFO with no writer", args, ERROR, check=says(str(fifo)))
        self.add("FIFOs", "-i a pipe with a writer (process substitution)", ["scores", "-i", "/dev/fd/0"], RESULT)  # stdin below

    # 4 ---- JSON whose parse would outgrow the budget ---------------------------------------------------
    def budgets(self):
        header, body = read_st(MODELS / "tiny_qwen3" / "model.safetensors")
        for i in range(60000):
            header[f"padding.{i}.weight"] = {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
        d = self.folder()
        write_st(d / "model.safetensors", header, body)
        size = len(json.dumps(header, separators=(",", ":")))
        # a header's entries are taken as it is parsed: about 4 bytes a byte, counted as 6 (it was a tree: 22, counted as 32)
        self.add("memory budget", f"a header of {size >> 20} MB, 60,000 empty tensors, --max-memory 16M",
                 ["model", "--model", str(d), "--ids", "1,2", "--max-memory", "16M"], ERROR,
                 check=both(says("model.safetensors", "header", "--max-memory"), never_says("filesystem")))
        self.add("memory budget", "the same header under --max-memory 64M", ["model", "--model", str(d), "--ids", "1,2", "--max-memory", "64M"], RESULT)
        self.add("memory budget", "the same header under the default budget", ["model", "--model", str(d), "--ids", "1,2"], RESULT)
        d = self.folder("tiny_llama")
        index = json.loads((d / "model.safetensors.index.json").read_text())
        index["metadata"] = {"padding": "x" * (4 << 20)}
        (d / "model.safetensors.index.json").write_text(json.dumps(index))
        self.add("memory budget", "a 4 MB shard index, --max-memory 64M", ["model", "--model", str(d), "--ids", "1,2", "--max-memory", "64M"],
                 ERROR, check=says("model.safetensors.index.json", "index"))
        d = self.folder()
        tok = json.loads((d / "tokenizer.json").read_text())
        tok["padding"] = ["x" * 100] * 40000
        (d / "tokenizer.json").write_text(json.dumps(tok))
        self.add("memory budget", "a 4 MB tokenizer.json, --max-memory 64M", ["model", "--model", str(d), "--text", "hi", "--max-memory", "64M"],
                 ERROR, check=says("tokenizer.json"))
        gpt2 = self.work / "big_header_gpt2.safetensors"
        h, b = read_st(ROOT / "tests" / "data" / "tiny_gpt2_hf_f32.safetensors")
        for i in range(60000):
            h[f"padding.{i}"] = {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
        write_st(gpt2, h, b)
        self.add("memory budget", "gpt2: a 4 MB header, --max-memory 16M", ["gpt2", "--model", str(gpt2), "--heads", "4", "--ids", "1", "--max-memory", "16M"],
                 ERROR, check=both(says("header"), never_says("--heads H")))

    # 5 ---- config.json values named where they stand ------------------------------------------------
    def config_values(self):
        cases = [
            ("tiny_qwen3", "rope_theta 1e-300", lambda c: c.update(rope_theta=1e-300), ["rope_theta", "1e-300"]),
            ("tiny_qwen3", "rope_theta 1", lambda c: c.update(rope_theta=1), ["rope_theta", "got 1"]),
            ("tiny_qwen3", "rope_theta 0.5", lambda c: c.update(rope_theta=0.5), ["rope_theta", "0.5"]),
            ("tiny_gemma3", "rope_local_base_freq 0", lambda c: c.update(rope_local_base_freq=0), ["rope_local_base_freq", "got 0"]),
            ("tiny_gemma3", "rope_local_base_freq 1e-9", lambda c: c.update(rope_local_base_freq=1e-9), ["rope_local_base_freq", "1e-09"]),
            ("tiny_gemma3", "query_pre_attn_scalar -16", lambda c: c.update(query_pre_attn_scalar=-16), ["query_pre_attn_scalar", "-16"]),
            ("tiny_gemma3", "query_pre_attn_scalar 0", lambda c: c.update(query_pre_attn_scalar=0), ["query_pre_attn_scalar", "got 0"]),
            ("tiny_qwen3", "rope_scaling linear factor 1e-45", lambda c: c.update(rope_scaling={"rope_type": "linear", "factor": 1e-45}),
             ["rope_scaling.factor", "1e-45"]),
            ("tiny_qwen3", "rope_scaling linear factor 0.5", lambda c: c.update(rope_scaling={"rope_type": "linear", "factor": 0.5}),
             ["rope_scaling.factor", "0.5"]),
            ("tiny_llama", "llama3 low_freq_factor 0", lambda c: c["rope_scaling"].update(low_freq_factor=0), ["low_freq_factor", "got 0"]),
            ("tiny_llama", "llama3 high_freq_factor below low", lambda c: c["rope_scaling"].update(high_freq_factor=0.5), ["high_freq_factor", "0.5"]),
            ("tiny_llama", "llama3 original context 0", lambda c: c["rope_scaling"].update(original_max_position_embeddings=0),
             ["original_max_position_embeddings", "got 0"]),
            ("tiny_olmo3", "yarn beta_fast -1", lambda c: c["rope_scaling"].update(beta_fast=-1), ["beta_fast", "-1"]),
            ("tiny_olmo3", "yarn attention_factor 0", lambda c: c["rope_scaling"].update(attention_factor=0), ["attention_factor", "got 0"]),
            ("tiny_qwen3", "rms_norm_eps -1e-06", lambda c: c.update(rms_norm_eps=-1e-6), ["rms_norm_eps", "-1e-06"]),
            ("tiny_qwen3", "partial_rotary_factor 2", lambda c: c.update(partial_rotary_factor=2), ["partial_rotary_factor", "got 2"]),
        ]
        for family, name, edit, words in cases:
            d = self.folder(family)
            config = json.loads((d / "config.json").read_text())
            edit(config)
            (d / "config.json").write_text(json.dumps(config))
            self.add("config.json values", f"{family}: {name}", ["model", "--model", str(d), "--ids", "1,2,3"], ERROR,
                     check=both(says("config.json", *words), never_says("scale the embeddings", "must be a")))
        d = self.folder()
        config = json.loads((d / "config.json").read_text())
        config["rope_scaling"] = {"rope_type": "yarn", "original_max_position_embeddings": 128}  # no factor: 64 / 128 implied
        (d / "config.json").write_text(json.dumps(config))
        self.add("config.json values", "yarn without a factor, original context above the context", ["model", "--model", str(d), "--ids", "1,2"],
                 ERROR, check=both(says("original_max_position_embeddings", "128"), never_says(".factor")))
        for field in ["rms_norm_eps", "rope_theta"]:
            d = self.folder()
            text = (d / "config.json").read_text()
            config = json.loads(text)
            config[field] = 12345.25
            (d / "config.json").write_text(json.dumps(config).replace("12345.25", "1e309"))
            self.add("config.json values", f"{field} 1e309 (inf)", ["model", "--model", str(d), "--ids", "1,2,3"], ERROR,
                     check=both(says("config.json", field, "finite", "inf"), never_says("got a number")))

    # 6 ---- internals that must not leak --------------------------------------------------------------------
    def internals(self):
        for target in ["config.json", "tokenizer.json"]:
            d = self.folder()
            (d / target).unlink()
            (d / target).symlink_to(target)  # a link to itself: a loop
            args = ["model", "--model", str(d)] + (["--text", "hi"] if target == "tokenizer.json" else ["--ids", "1,2"])
            self.add("internals", f"{target} a link loop", args, ERROR, check=both(says(target), never_says("filesystem error", "status:")))
        d = self.folder("tiny_llama")
        (d / "model.safetensors.index.json").rename(d / "real_index.json")
        (d / "model.safetensors.index.json").symlink_to("model.safetensors.index.json")
        self.add("internals", "the shard index a link loop", ["model", "--model", str(d), "--ids", "1,2"], ERROR,
                 check=never_says("filesystem error"))
        d = self.folder()
        self.add("internals", "--tokenizer a link loop", ["model", "--model", str(d), "--ids", "1", "--tokenizer", str(self.work / "tok_loop")],
                 ERROR, check=never_says("filesystem error"))
        os.symlink(self.work / "tok_loop", self.work / "tok_loop")
        for value, shown in [("model-00001-of-00002.safetensors\u0000.txt", "\\u0000"), ("\u0000", "\\u0000"), ("a/b", "a/b")]:
            d = self.folder("tiny_llama")
            index = json.loads((d / "model.safetensors.index.json").read_text())
            first = next(iter(index["weight_map"]))
            index["weight_map"][first] = value
            (d / "model.safetensors.index.json").write_text(json.dumps(index))
            self.add("internals", f"a weight_map value {value!r}", ["model", "--model", str(d), "--ids", "1,2"], ERROR,
                     check=says("weight_map", shown))
        d = self.folder()
        (d / "generation_config.json").symlink_to("nowhere.json")  # optional: a link to nowhere is as good as none
        self.add("internals", "generation_config.json a link to nowhere", ["model", "--model", str(d), "--ids", "1,2"], RESULT)
        d = self.folder("tiny_llama")
        (d / "model.safetensors").symlink_to("nowhere.safetensors")  # stands aside for the index
        self.add("internals", "model.safetensors a link to nowhere beside an index", ["model", "--model", str(d), "--ids", "1,2"], RESULT)
        self.add("internals", "explore with an unknown TERM and no terminal", ["explore", "mha"], ERROR,
                 env={"TERM": "no-such-terminal"}, check=never_says("Error opening terminal"))

    # 7 ---- values not taken silently ------------------------------------------------------------------------
    def silent(self):
        for ident in [297.5, "297", -1, 1e300, True, None]:
            d = self.folder()
            tok = json.loads((d / "tokenizer.json").read_text())
            tok["added_tokens"].append({"id": ident, "content": "<zz>", "special": True})
            (d / "tokenizer.json").write_text(json.dumps(tok))
            self.add("values", f"an added token with id {ident!r}", ["model", "--model", str(d), "--text", "hi"], ERROR,
                     check=says("added_tokens", "id"))
        for command in [["params"], ["kvcache"], ["rope"], ["scores"], ["tokenize", "--text", "hi"], ["walkthrough"]]:
            for limit in ["garbage", "0", "-5M", "1e400", "4Q", ""]:
                self.add("values", f"{command[0]} --max-memory {limit!r}", command + ["--max-memory", limit], ERROR,
                         check=says("--max-memory"))
            self.add("values", f"{command[0]} --max-work garbage", command + ["--max-work", "garbage"], ERROR)
        self.add("values", "params --max-memory 64M", ["params", "--max-memory", "64M"], RESULT)
        self.add("values", "walkthrough --max-memory 1 (each part's share under one byte)", ["walkthrough", "--max-memory", "1"], ERROR,
                 check=both(says("walkthrough", "--max-memory"), never_says("is not a size")))

    # 8 ---- characters an SVG cannot hold ----------------------------------------------------------------------
    def pictures(self):
        tokens = ["a\ufffe", "b\uffff", "\u202ec", "d\u0001", "e\ud7ff", "f\U0010fffd"]
        f = self.work / "odd_tokens.json"
        f.write_text(json.dumps({"tokens": tokens, "embeddings": [[i, i + 1] for i in range(len(tokens))]}), encoding="utf-8")

        def parses(path):
            def check(code, out, err):
                try:
                    xml.dom.minidom.parse(str(path))
                except Exception as e:  # the reason, whatever the parser calls it
                    return f"the SVG is not XML: {e}"
                return None
            return check
        for extra in [[], ["--json"]]:
            svg = self.work / f"odd{len(extra)}.svg"
            self.add("pictures", "U+FFFE and U+FFFF in tokens, --svg " + " ".join(extra), ["scores", "-i", str(f), "--svg", str(svg)] + extra,
                     RESULT, check=parses(svg))
        d = self.folder()
        tok = json.loads((d / "tokenizer.json").read_text())
        tok["added_tokens"].append({"id": 299, "content": "\uffff", "special": False})
        (d / "tokenizer.json").write_text(json.dumps(tok))
        svg = self.work / "model_odd.svg"
        self.add("pictures", "a tokenizer's U+FFFF token in a model's --svg", ["model", "--model", str(d), "--text", "hi\uffffhi", "--svg", str(svg)],
                 RESULT, check=parses(svg))

    # 10 ---- the context before the memory ---------------------------------------------------------------------
    def context_first(self):
        qwen = str(MODELS / "tiny_qwen3")
        self.add("context first", "65,536 --ids", ["model", "--model", qwen, "--ids", ",".join(["5"] * 65536)], ERROR,
                 check=both(says("context"), never_says("--max-memory")))
        self.add("context first", "a 131,071-byte --text", ["model", "--model", qwen, "--text", "a " * 65535 + "a"], ERROR,
                 check=both(says("context"), never_says("--max-memory")))
        gpt2 = str(ROOT / "tests" / "data" / "tiny_gpt2_hf_f32.safetensors")
        self.add("context first", "gpt2: 20,000 --ids", ["gpt2", "--model", gpt2, "--heads", "4", "--ids", ",".join(["5"] * 20000)], ERROR,
                 check=both(says("context"), never_says("--max-memory")))
        self.add("context first", "65 --ids, --max-memory 1M: the context is still the first word",
                 ["model", "--model", qwen, "--ids", ",".join(["5"] * 65), "--max-memory", "1M"], ERROR, check=says("context"))
        self.add("context first", "64 --ids, --max-memory 1M: then the memory", ["model", "--model", qwen, "--ids", ",".join(["5"] * 64),
                 "--max-memory", "1M"], ERROR, check=says("--max-memory"))

    def build(self):
        self.output_paths()
        self.windows()
        self.fifos()
        self.budgets()
        self.config_values()
        self.internals()
        self.silent()
        self.pictures()
        self.context_first()


def main(round_class=None, name="fourth", usage=None):
    """A round's command line: BINARY [--list]; builds its cases in a temporary folder and runs them."""
    global BINARY
    if len(sys.argv) < 2:
        print(usage or __doc__)
        return 2
    BINARY = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix=f"attnwalk_{name}_") as work:
        r = (round_class or Round)(work)
        r.build()
        if "--list" in sys.argv:
            for c in r.cases:
                print(f"{c['klass']}: {c['name']} -> {c['expect']}")
            return 0
        return run_cases(r.cases)


def run_cases(cases):
    """Runs every case, checks how it ended and what it printed, and reports (the exit code)."""
    before = digest([ROOT / "tests" / "data", ROOT / "data"])
    failures, counts = [], {}
    for c in cases:
        counts[c["klass"]] = counts.get(c["klass"], 0) + 1
        if c["name"].startswith("-i a pipe with a writer"):  # its stdin is the writer
            proc = subprocess.run([BINARY] + c["args"], input=json.dumps({"embeddings": [[1, 2], [3, 4]]}).encode(),
                                  capture_output=True, timeout=20, cwd=c["cwd"])
            code, out, err = proc.returncode, proc.stdout.decode(), proc.stderr.decode()
        elif c["stdout_file"]:
            with open(c["stdout_file"], "wb") as sink:
                code, out, err = run(c["args"], c["env"], c["cwd"], stdout=sink)
        elif c.get("stdin_file"):
            with open(c["stdin_file"], "rb") as source:
                code, out, err = run(c["args"], c["env"], c["cwd"], stdin=source)
        else:
            code, out, err = run(c["args"], c["env"], c["cwd"])
        why = verdict(code, err, c["expect"])
        if not why and c["check"]:
            why = c["check"](code, out, err)
        if c["after"]:  # always: it also puts back what a failing binary broke
            why = c["after"]() or why
        if why:
            failures.append(f"{c['klass']}: {c['name']}: {why}")
    after = digest([ROOT / "tests" / "data", ROOT / "data"])
    changed = [p for p in before if after.get(p) != before[p]]
    return report(counts, len(cases), failures, changed)

if __name__ == "__main__":
    sys.exit(main())
