#!/usr/bin/env python3
"""The include graph of attnwalk's rooms, measured from the #include lines of lib/ and app/.

    python3 tests/include_graph.py            # print it
    python3 tests/include_graph.py --check    # exit 1 unless docs/architecture.md shows it as printed

A room is a folder of the library or the app (lib/include/attnwalk/X and lib/src/X are one
room X); an arrow A -> B says a file of A includes a header of B, with the number of such
#include lines. docs/architecture.md keeps the printed graph between its two markers.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"', re.M)
BEGIN, END = "<!-- include graph: tests/include_graph.py -->", "<!-- end of the include graph -->"


def room_of(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT).as_posix()
    for prefix in ("lib/include/attnwalk/", "lib/src/"):
        if rel.startswith(prefix):
            parts = rel[len(prefix):].split("/")
            room = "/".join(parts[:-1]) or parts[-1].split(".")[0]  # trace.hpp -> trace, ops/x.hpp -> ops
            return "stats" if room == "stats_sums" else room  # stats' own header of the sums ops computes for it
    if rel.startswith("lib/openblas/"):
        return "openblas"
    if rel.startswith("app/"):
        parts = rel.split("/")
        return "/".join(parts[:-1])
    return rel


def resolve(include: str, source: pathlib.Path):
    if include.startswith("attnwalk/"):
        p = ROOT / "lib" / "include" / include
    else:
        p = (source.parent / include).resolve()
        if not p.exists():  # app/'s own headers are found from app/
            p = ROOT / "app" / include
    return p if p.exists() else None


def graph():
    edges = {}
    files = [p for d in ("lib", "app") for p in (ROOT / d).rglob("*") if p.suffix in (".hpp", ".cpp", ".inc", ".h")]
    for f in files:
        a = room_of(f)
        for inc in INCLUDE.findall(f.read_text(errors="replace")):
            target = resolve(inc, f)
            if target is None:
                continue
            b = room_of(target)
            if a != b:
                edges[(a, b)] = edges.get((a, b), 0) + 1
    lines = []
    for a in sorted({a for a, _ in edges}):
        targets = sorted((b, n) for (x, b), n in edges.items() if x == a)
        lines.append(f"{a:16} -> " + ", ".join(f"{b} ({n})" for b, n in targets))
    return "\n".join(lines)


def main():
    text = graph()
    if "--check" in sys.argv:
        doc = (ROOT / "docs" / "architecture.md").read_text()
        if BEGIN not in doc or END not in doc:
            print("docs/architecture.md has no include graph between its markers")
            return 1
        block = doc.split(BEGIN, 1)[1].split(END, 1)[0]
        shown = "\n".join(line for line in block.strip().splitlines() if not line.startswith("```"))
        if shown != text:
            print("docs/architecture.md's include graph is not the measured one; run python3 tests/include_graph.py:\n" + text)
            return 1
        print("the include graph in docs/architecture.md is the measured one")
        return 0
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
