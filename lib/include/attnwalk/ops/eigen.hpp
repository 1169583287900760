#pragma once
// The eigenvalues of a general (non-symmetric) real matrix, in double precision, as EISPACK
// computes them (no LAPACK needed): balanced (balanc), reduced to upper Hessenberg form by
// Gaussian elimination with pivoting (elmhes), then Francis's double-shift QR (hqr), which
// splits off each real eigenvalue and each complex conjugate pair.
//   A (n×n, row-major) -> λ_1 … λ_n   (complex; a pair a ± bi for each 2×2 block)
// The circuits' OV copying score (lessons/model/circuits.cpp) reads them.
#include <complex>
#include <cstddef>
#include <vector>

namespace attnwalk {

// The n eigenvalues of the n×n matrix `a` (row-major, n·n values), sorted by their real part,
// largest first, then by their imaginary part, largest first (a pair: +b before −b).
// Throws RuntimeError on a value that is not finite, or when QR has not split a block off
// after 30 sweeps.
std::vector<std::complex<double>> eigenvalues(std::vector<double> a, std::size_t n);

}  // namespace attnwalk
