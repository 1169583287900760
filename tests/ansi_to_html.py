"""A terminal screen as tmux's `capture-pane -e -p` prints it, as one HTML page.

Reads the capture (SGR escapes: reset, bold, dim, reverse, 256-colour backgrounds and
foregrounds) and writes a <pre> with one styled span per run, so that a headless browser
can take a screenshot of what the terminal showed (tests/explore_in_tmux.sh makes the
README's picture of `attnwalk explore` this way).

Usage: python3 ansi_to_html.py CAPTURE [ROWS] > PAGE.html
"""
import html
import re
import sys

# xterm's 16 colours, then the 6×6×6 cube and the grey ramp of its 256.
BASE16 = [(0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205), (229, 229, 229),
          (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255), (255, 0, 255), (0, 255, 255), (255, 255, 255)]
LEVELS = [0, 95, 135, 175, 215, 255]
INK, PAPER = (30, 30, 30), (250, 250, 250)


def xterm256(n):
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        return (LEVELS[n // 36], LEVELS[(n // 6) % 6], LEVELS[n % 6])
    v = 8 + 10 * (n - 232)
    return (v, v, v)


def fresh():
    return {"fg": None, "bg": None, "bold": False, "dim": False, "reverse": False}


def apply(state, codes):
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            state.update(fresh())
        elif c == 1:
            state["bold"] = True
        elif c == 2:
            state["dim"] = True
        elif c == 22:
            state["bold"] = state["dim"] = False
        elif c == 7:
            state["reverse"] = True
        elif c == 27:
            state["reverse"] = False
        elif 30 <= c <= 37 or 90 <= c <= 97:
            state["fg"] = BASE16[c - 30 if c < 90 else c - 90 + 8]
        elif c == 39:
            state["fg"] = None
        elif 40 <= c <= 47 or 100 <= c <= 107:
            state["bg"] = BASE16[c - 40 if c < 100 else c - 100 + 8]
        elif c == 49:
            state["bg"] = None
        elif c in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
            state["fg" if c == 38 else "bg"] = xterm256(codes[i + 2])
            i += 2
        i += 1


def span(state, text):
    fg, bg = state["fg"] or INK, state["bg"]
    if state["reverse"]:
        fg, bg = bg or PAPER, fg
    style = ["color:rgb%s" % (fg,)]
    if bg:
        style.append("background:rgb%s" % (bg,))
    if state["bold"]:
        style.append("font-weight:bold")
    if state["dim"]:
        style.append("opacity:0.6")
    return '<span style="%s">%s</span>' % (";".join(style), html.escape(text))


def main():
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 24
    lines = open(sys.argv[1], encoding="utf-8").read().split("\n")[:rows]
    out = []
    for line in lines:
        state, row = fresh(), ""
        for part in re.split(r"(\x1b\[[0-9;]*m)", line):
            m = re.fullmatch(r"\x1b\[([0-9;]*)m", part)
            if m:
                apply(state, [int(c) if c else 0 for c in m.group(1).split(";")])
            elif part:
                row += span(state, part)
        out.append(row)
    print('<!doctype html><meta charset="utf-8"><body style="margin:0;background:#fafafa">'
          '<pre style="margin:8px;font:14px/1.25 DejaVu Sans Mono,monospace">' + "\n".join(out) + "</pre>")


if __name__ == "__main__":
    main()
