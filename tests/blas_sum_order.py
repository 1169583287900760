#!/usr/bin/python3
"""In which order does this machine's OpenBLAS sum a product, against attnwalk's plain loop?

    /usr/bin/python3 tests/blas_sum_order.py            # the environment as it is
    env -u OPENBLAS_CORETYPE /usr/bin/python3 tests/blas_sum_order.py

attnwalk multiplies products under 64³ multiply-adds itself (lib/src/ops/kernels.hpp,
sgemm_loop_body): each element one chain of fused multiply-adds over k in order. PyTorch's
CPU matmul hands the same product to the BLAS it was built with (Debian's: OpenBLAS, through
libblas.so.3), whose kernel depends on the CPU and on OPENBLAS_CORETYPE. This script calls
that OpenBLAS the way torch.matmul does for x·W (row-major: cblas_sgemm(RowMajor, NoTrans,
NoTrans)), computes the plain loop's bits with NumPy (fma32: each step's product exact in
float64 and its sum rounded once to float32, as a fused multiply-add rounds), and counts the
elements whose bits differ, with the
largest difference over the product's largest value (a sum that cancels to near 0 can differ
in many of its own last places while the numbers a table prints agree). It needs NumPy and OpenBLAS (Debian's
python3-numpy, libopenblas0), not torch; CI does not run it. docs/performance.md quotes it.
"""
import ctypes
import ctypes.util
import os
import sys

import numpy as np

SHAPES = [  # (rows, k, columns): the chapter's, attention heads', and products around 64³
    (6, 3, 2), (6, 2, 6), (6, 6, 2), (2, 64, 3), (12, 16, 12), (64, 8, 64), (200, 16, 32),
    (16, 256, 16), (32, 128, 32), (37, 64, 29), (8, 512, 8), (12, 400, 50), (40, 150, 40),
    (10, 100, 200), (64, 64, 64), (50, 100, 70), (20, 768, 24), (100, 500, 100),
]


def openblas():
    for name in ("/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
                 "/usr/lib/aarch64-linux-gnu/openblas-pthread/libopenblas.so.0",
                 ctypes.util.find_library("openblas")):
        if name and (os.path.exists(name) or not name.startswith("/")):
            try:
                return ctypes.CDLL(name)
            except OSError:
                continue
    sys.exit("blas_sum_order.py: no OpenBLAS library found (apt-get install libopenblas0)")


def fma32(a, b, c):
    """float32(a·b + c) rounded once, elementwise, for float32 arrays: the product is exact in
    float64; the sum p + c is float64's s plus an exact error e (TwoSum); rounding s to
    float32 is then right unless s falls exactly halfway between two float32s while e is not
    0, and there the result is the neighbour on e's side."""
    p = a.astype(np.float64) * b.astype(np.float64)
    c = c.astype(np.float64)
    s = p + c
    v = s - c
    e = (p - v) + (c - (s - v))
    near = s.astype(np.float32)
    other = np.nextafter(near, np.where(near.astype(np.float64) < s, np.float32(np.inf), np.float32(-np.inf)))
    halfway = (near.astype(np.float64) != s) & ((near.astype(np.float64) + other.astype(np.float64)) / 2 == s)
    s = np.where(halfway & (e != 0), np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return s.astype(np.float32)


def main():
    lib = openblas()
    lib.openblas_get_corename.restype = ctypes.c_char_p
    lib.openblas_set_num_threads(1)
    pointer = ctypes.POINTER(ctypes.c_float)
    lib.cblas_sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, pointer, ctypes.c_int, pointer, ctypes.c_int,
                                                     ctypes.c_float, pointer, ctypes.c_int]
    print(f"OpenBLAS kernel: {lib.openblas_get_corename().decode()}; "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    print(f"{'rows×k×columns':>16}  {'< 64³':>5}  {'differ':>12}  {'largest difference / largest |value|':>36}")
    rng = np.random.default_rng(0)
    for m, k, n in SHAPES:
        x = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        w = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        c = np.zeros((m, n), np.float32)
        lib.cblas_sgemm(101, 111, 111, m, n, k, 1.0, x.ctypes.data_as(pointer), k, w.ctypes.data_as(pointer), n,
                        0.0, c.ctypes.data_as(pointer), n)
        plain = np.zeros((m, n), np.float32)
        for p in range(k):  # one fused multiply-add per step, over k in order
            plain = fma32(np.broadcast_to(x[:, p:p + 1], (m, n)), np.broadcast_to(w[p:p + 1, :], (m, n)), plain)
        differ = int((c.view(np.int32) != plain.view(np.int32)).sum())
        largest = float(np.abs(c.astype(np.float64) - plain).max() / np.abs(plain).max())
        print(f"{f'{m}×{k}×{n}':>16}  {'yes' if m * k * n < 64 ** 3 else 'no':>5}  "
              f"{f'{differ} of {c.size}':>12}  {largest:>36.1e}")


if __name__ == "__main__":
    main()
