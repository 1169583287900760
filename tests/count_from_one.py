#!/usr/bin/env python3
"""Everything a person reads counts from 1: tokens, queries, keys, heads, layers, features,
positions. Runs every command docs/teaching.md's lesson plan and the docs' examples show,
and each test model with a written-out cell, the model view and a streaming cache, and
fails on a 0-based word in their text: "query 0", "head 0", "d0", "y_0", "0 … 5", "[0, …".

JSON keeps PyTorch's 0-based `*_index` keys; the text's "(index 1)" beside a position
says so, and is not a count. Files the commands write go to a temporary folder.
Usage: count_from_one.py BINARY
"""
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

NOUN = r"(?:quer(?:y|ies)|keys?|tokens?|heads?|layers?|positions?|rows?|columns?|features?|batch|blocks?|pairs?)"
ZERO_BASED = re.compile(
    r"\b" + NOUN + r"\s+0\b(?!\.\d)"  # "query 0" (not "row 0.25")
    r"|(?-i:(?<![<\w])d0\b)"             # the first feature's column (not a byte token "<D0>")
    r"|(?<![\w.])[a-zA-Zα-ω]_0\b"      # y_0, t_0
    r"|(?<![\w.\d])0 …"                # "0 … 5"
    r"|\[0, ",                         # "[0, start)"
    re.IGNORECASE)


def commands():
    """The lesson plan's commands, the docs' examples and the test models' walks."""
    seen = []
    for text in [(ROOT / "docs/teaching.md").read_text()]:
        seen += re.findall(r"`attnwalk ([^`]*)`", text)
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        seen += [m.split("|")[0].strip() for m in re.findall(r"^<!-- attnwalk (.*?) -->", page.read_text(), re.M)]
    text = "'the cat sat on the mat the cat'"
    for folder in sorted(p for p in (ROOT / "tests/data/models").iterdir() if p.is_dir()):
        model = f"model --model {folder.relative_to(ROOT)} --text {text}"
        seen += [f"{model} --explain 4,2", f"{model} --view --compact", f"{model} --generate 4 --streaming-cache 2,3 --compact"]
    return list(dict.fromkeys(seen))


def main():
    binary = sys.argv[1]
    out_dir = pathlib.Path(tempfile.mkdtemp(prefix="count_from_one_"))
    found = 0
    ran = 0
    for spec in commands():
        args = shlex.split(spec)
        # a file the command writes goes to the temporary folder
        for i, a in enumerate(args[:-1]):
            if a in ("--svg", "--html", "--npy", "--torch-script", "-o", "--output"):
                args[i + 1] = str(out_dir / pathlib.Path(args[i + 1]).name)
        run = subprocess.run([binary] + args, cwd=ROOT, capture_output=True, text=True, env={"COLUMNS": "120", "PATH": "/usr/bin:/bin"})
        ran += 1
        for line in (run.stdout + run.stderr).splitlines():
            m = ZERO_BASED.search(line)
            if m:
                found += 1
                print(f"FAIL attnwalk {spec}\n     {line.strip()[:160]}\n     ({m.group(0)!r} counts from 0)")
    # a table of places: the streaming cache's kept positions, read from 1 (the JSON keeps 0)
    kept = subprocess.run([binary, "model", "--model", "tests/data/models/tiny_llama", "--ids", "5,17,3,250,9,42,7,8", "--generate", "6",
                           "--streaming-cache", "2,3", "--steps", "cache_kept", "--no-heatmap"], cwd=ROOT, capture_output=True, text=True)
    rows = [line.split() for line in kept.stdout.splitlines() if re.fullmatch(r"\s*[\d ]+", line)]
    if not rows or rows[0][:2] != ["1", "2"]:
        found += 1
        print(f"FAIL the streaming cache's kept places do not start at 1 2: {rows}")
    print(f"{ran} commands, {found} lines counting from 0")
    return 1 if found or ran < 100 else 0


if __name__ == "__main__":
    sys.exit(main())
