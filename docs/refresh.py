#!/usr/bin/env python3
"""Refreshes the example output in README.md and docs/*.md from the real binary.

A block to refresh is a marker line followed by a fenced block:

    <!-- attnwalk softmax --query journey -->
    ```text
    ...replaced by the output of `attnwalk softmax --query journey`...
    ```

Optional `| head -n N` and `| tail -n N` after the arguments (applied in order) keep part of the output.

The man page's COMMANDS (app/install/attnwalk.1, between its two MAN_MARKS lines) are made
from `attnwalk --help`: each command and its description, which is its lesson's declaration.
Usage: python3 docs/refresh.py [--check] [BINARY]   (default BINARY: build/app/attnwalk)
With --check nothing is written; the exit code is 1 if a page is out of date.
"""
import pathlib
import re
import shlex
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- attnwalk (.*?) -->\n```(\w*)\n.*?^```\n", re.M | re.S)


def run(binary, spec):
    args, *cuts = spec.split("|")
    out = subprocess.run([binary] + shlex.split(args), cwd=ROOT, capture_output=True, text=True)
    lines = (out.stdout + out.stderr).splitlines()
    if out.returncode != 0:
        lines.append(f"[exit code {out.returncode}]")
    for cut in cuts:  # "head -n N" and "tail -n N", applied in order
        verb, _, n = cut.split()
        lines = lines[: int(n)] if verb == "head" else lines[-int(n):]
    return "\n".join(lines) + "\n"


MAN_PAGE = ROOT / "app/install/attnwalk.1"
MAN_MARKS = ('.\\" The commands: made by docs/refresh.py from attnwalk --help (the lessons\' declarations).\n',
             '.\\" The end of the commands made by docs/refresh.py.\n')


def troff(text):
    """Text as troff prints it: backslashes and hyphens escaped, no line read as a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def man_commands(binary):
    """The COMMANDS entries of every command --help lists but explore (written by hand)."""
    out = subprocess.run([binary, "--help"], cwd=ROOT, capture_output=True, text=True, env={"COLUMNS": "1000"}, check=True).stdout
    lines = out.splitlines()
    entries = []
    for line in lines[lines.index("Subcommands:") + 1:]:
        if not line.strip():
            break
        name, description = line.split(None, 1)
        if name != "explore":
            entries.append(f".TP\n.B {name}\n{troff(description.strip())}\n")
    return "".join(entries)


def refresh_man(binary):
    """The man page with its commands made again; the text is unchanged when they are."""
    text = MAN_PAGE.read_text()
    start, end = text.index(MAN_MARKS[0]) + len(MAN_MARKS[0]), text.index(MAN_MARKS[1])
    return text[:start] + man_commands(binary) + text[end:]


def main():
    check = "--check" in sys.argv
    rest = [a for a in sys.argv[1:] if a != "--check"]
    binary = str((ROOT / (rest[0] if rest else "build/app/attnwalk")).resolve())
    stale = []
    for page in [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text()
        new = MARKER.sub(lambda m: f"<!-- attnwalk {m.group(1)} -->\n```{m.group(2)}\n{run(binary, m.group(1))}```\n", text)
        if new != text:
            stale.append(page.name)
            if not check:
                page.write_text(new)
    man = refresh_man(binary)
    if man != MAN_PAGE.read_text():
        stale.append(MAN_PAGE.name)
        if not check:
            MAN_PAGE.write_text(man)
    print(("out of date: " if check else "refreshed: ") + (", ".join(stale) or "nothing"))
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
