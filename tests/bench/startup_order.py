#!/usr/bin/env python3
"""Writes app/startup_order.txt: the functions the chapter commands run, for the linker.

A chapter command on the built-in sentence runs 500-600 of attnwalk's functions, scattered
over its 4.6 MB of code. The kernel reads a binary's code 64 KB at a time, at the first
touch of each window, so `softmax` paid 36 page faults for its code. lld, given this list
(--symbol-ordering-file, see app/CMakeLists.txt), lays those functions side by side; the
command then touches about ten windows (docs/performance.md, section 19).

The list is what callgrind saw the binary run for each command line below: every function
of the binary itself (libstdc++'s included, as it is linked in) that ran at least once,
sorted by name so that a change of code shows as a small diff. Valgrind's CPU has no
AVX-512, so those kernels are not listed; a chapter command spends nothing in them. A list
gone stale costs speed only: lld skips names it does not find, and the functions it misses
keep their usual place.

Usage (valgrind installed; a Release build of attnwalk):
    python3 tests/bench/startup_order.py build/app/attnwalk app/startup_order.txt
"""
import os
import re
import subprocess
import sys
import tempfile

# The six chapter commands as a teacher types them, their colours as on a terminal, the
# JSON, and --version.
COMMANDS = [["scores"], ["softmax"], ["context"], ["causal"], ["dropout"], ["mha"], ["--version"],
            ["softmax", "--color", "always"], ["mha", "--color", "always"], ["softmax", "--json"]]


def functions_run(binary, args, scratch):
    """The (mangled) names of the functions callgrind saw run for one command line."""
    out = os.path.join(scratch, "callgrind.out")
    subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", "--compress-strings=yes", "--callgrind-out-file=" + out, binary, *args],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ran = set()  # callgrind names a function (fn=, or cfn= for a call) only once it has run
    with open(out) as f:
        for line in f:
            m = re.match(r"^c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
            if m:
                ran.add(m.group(1))
    return ran


def defined_functions(binary):
    """The names of the functions the binary defines (its own code, not a library's)."""
    out = subprocess.run(["nm", "--defined-only", binary], check=True, capture_output=True, text=True).stdout
    return {p[2] for p in (line.split() for line in out.splitlines()) if len(p) == 3 and p[1] in "tTwWiI"}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, target = sys.argv[1], sys.argv[2]
    ran = set()
    with tempfile.TemporaryDirectory() as scratch:
        for args in COMMANDS:
            ran |= functions_run(binary, args, scratch)
    ours = sorted(ran & defined_functions(binary))
    if not ours:
        sys.exit("no function of " + binary + " seen running: is it the binary valgrind ran, with its symbols?")
    partial = target + ".part"  # the old list stays until the new one is whole
    with open(partial, "w") as f:
        f.write("".join(name + "\n" for name in ours))
    os.replace(partial, target)
    print(f"{target}: {len(ours)} functions", file=sys.stderr)


if __name__ == "__main__":
    main()
