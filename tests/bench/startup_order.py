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

The list goes stale as the code changes: the functions a command runs change, and so do the
names of the static initialisers (`_GLOBAL__sub_I_` and the first function of their file).
On 2026-11-30 a list three weeks old missed 78 of the 779 functions `softmax` and its siblings
run: `softmax` took 182 page faults against 143 with the list written again (section 26).
`--check` says how many are missed and fails past `--most` of them (2 % by default); CTest
runs it where valgrind is installed and the build is the ordered Release one
(perf.startup_order_is_current).

Usage (valgrind installed; a Release build of attnwalk):
    python3 tests/bench/startup_order.py build/app/attnwalk app/startup_order.txt
    python3 tests/bench/startup_order.py --check [--most FRACTION] build/app/attnwalk app/startup_order.txt
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


def ordered_functions(binary):
    """The binary's own functions that the command lines above run, sorted by name."""
    ran = set()
    with tempfile.TemporaryDirectory() as scratch:
        for args in COMMANDS:
            ran |= functions_run(binary, args, scratch)
    ours = sorted(ran & defined_functions(binary))
    if not ours:
        sys.exit("no function of " + binary + " seen running: is it the binary valgrind ran, with its symbols?")
    return ours


def check(binary, listed_path, most):
    """Fails if more than `most` of the functions run are not in the list."""
    with open(listed_path) as f:
        listed = {line.strip() for line in f if line.strip()}
    ours = ordered_functions(binary)
    missed = [name for name in ours if name not in listed]
    share = len(missed) / len(ours)
    print(f"{listed_path}: {len(missed)} of the {len(ours)} functions the chapter commands run are not listed ({100 * share:.1f} %)")
    for name in missed[:20]:
        print("  not listed: " + name)
    if share > most:
        sys.exit(f"more than {100 * most:g} % missed: write the list again with "
                 f"python3 tests/bench/startup_order.py {binary} {listed_path} (a Release build), and commit it")


def main():
    args = sys.argv[1:]
    if args[:1] == ["--check"]:
        most = 0.02
        if len(args) >= 3 and args[1] == "--most":
            most = float(args[2])
            args = args[3:]
        else:
            args = args[1:]
        if len(args) != 2:
            sys.exit(__doc__)
        check(args[0], args[1], most)
        return
    if len(args) != 2:
        sys.exit(__doc__)
    binary, target = args
    ours = ordered_functions(binary)
    partial = target + ".part"  # the old list stays until the new one is whole
    with open(partial, "w") as f:
        f.write("".join(name + "\n" for name in ours))
    os.replace(partial, target)
    print(f"{target}: {len(ours)} functions", file=sys.stderr)


if __name__ == "__main__":
    main()
