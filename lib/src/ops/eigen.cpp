// Eigenvalues of a general real matrix: EISPACK's balanc, elmhes and hqr (in the 0-based
// form of Numerical Recipes' Unsymmeig), in double precision.
#include "attnwalk/ops/eigen.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "attnwalk/errors.hpp"

namespace attnwalk {

namespace {

// Row-major n×n, indexed (i, j).
struct Square {
    std::vector<double>& v;
    int n;
    double& operator()(int i, int j) { return v[static_cast<std::size_t>(i) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j)]; }
};

double sign_of(double a, double b) { return b >= 0.0 ? std::abs(a) : -std::abs(a); }

// balanc: rows and columns scaled by powers of 2 until their norms are close (a similarity
// transform: the eigenvalues do not change, their rounding does, for the better).
void balance(Square a) {
    const double radix = std::numeric_limits<double>::radix, sqrdx = radix * radix;
    for (bool done = false; !done;) {
        done = true;
        for (int i = 0; i < a.n; ++i) {
            double r = 0.0, c = 0.0;
            for (int j = 0; j < a.n; ++j)
                if (j != i) {
                    c += std::abs(a(j, i));
                    r += std::abs(a(i, j));
                }
            if (c == 0.0 || r == 0.0) continue;
            double g = r / radix, f = 1.0;
            const double s = c + r;
            while (c < g) {
                f *= radix;
                c *= sqrdx;
            }
            g = r * radix;
            while (c > g) {
                f /= radix;
                c /= sqrdx;
            }
            if ((c + r) / f < 0.95 * s) {
                done = false;
                for (int j = 0; j < a.n; ++j) a(i, j) /= f;
                for (int j = 0; j < a.n; ++j) a(j, i) *= f;
            }
        }
    }
}

// elmhes: upper Hessenberg by stabilised elementary similarity transforms (the largest
// pivot of each column below the subdiagonal); the entries below the subdiagonal zeroed.
void hessenberg(Square a) {
    for (int m = 1; m < a.n - 1; ++m) {
        double x = 0.0;
        int i = m;
        for (int j = m; j < a.n; ++j)
            if (std::abs(a(j, m - 1)) > std::abs(x)) {
                x = a(j, m - 1);
                i = j;
            }
        if (i != m) {
            for (int j = m - 1; j < a.n; ++j) std::swap(a(i, j), a(m, j));
            for (int j = 0; j < a.n; ++j) std::swap(a(j, i), a(j, m));
        }
        if (x == 0.0) continue;
        for (i = m + 1; i < a.n; ++i) {
            double y = a(i, m - 1);
            if (y == 0.0) continue;
            y /= x;
            a(i, m - 1) = y;
            for (int j = m; j < a.n; ++j) a(i, j) -= y * a(m, j);
            for (int j = 0; j < a.n; ++j) a(j, m) += y * a(j, i);
        }
    }
    for (int i = 2; i < a.n; ++i)
        for (int j = 0; j < i - 1; ++j) a(i, j) = 0.0;
}

// hqr: Francis's double-shift QR on the Hessenberg matrix; each split-off 1×1 block is a real
// eigenvalue, each 2×2 block two (real, or a conjugate pair).
std::vector<std::complex<double>> hqr(Square a) {
    const int n = a.n;
    const double eps = std::numeric_limits<double>::epsilon();
    std::vector<std::complex<double>> w(static_cast<std::size_t>(n));
    double anorm = 0.0;
    for (int i = 0; i < n; ++i)
        for (int j = std::max(i - 1, 0); j < n; ++j) anorm += std::abs(a(i, j));
    int nn = n - 1, l = 0;
    double t = 0.0, p = 0.0, q = 0.0, r = 0.0, s = 0.0, x = 0.0, y = 0.0, z = 0.0;
    while (nn >= 0) {
        int its = 0;
        do {
            for (l = nn; l > 0; l--) {  // a small subdiagonal entry splits the matrix
                s = std::abs(a(l - 1, l - 1)) + std::abs(a(l, l));
                if (s == 0.0) s = anorm;
                if (std::abs(a(l, l - 1)) <= eps * s) {
                    a(l, l - 1) = 0.0;
                    break;
                }
            }
            x = a(nn, nn);
            if (l == nn) {  // one root
                w[static_cast<std::size_t>(nn--)] = x + t;
            } else {
                y = a(nn - 1, nn - 1);
                double wv = a(nn, nn - 1) * a(nn - 1, nn);
                if (l == nn - 1) {  // two roots
                    p = 0.5 * (y - x);
                    q = p * p + wv;
                    z = std::sqrt(std::abs(q));
                    x += t;
                    if (q >= 0.0) {  // a real pair
                        z = p + sign_of(z, p);
                        w[static_cast<std::size_t>(nn - 1)] = w[static_cast<std::size_t>(nn)] = x + z;
                        if (z != 0.0) w[static_cast<std::size_t>(nn)] = x - wv / z;
                    } else {  // a complex pair
                        w[static_cast<std::size_t>(nn)] = std::complex<double>(x + p, -z);
                        w[static_cast<std::size_t>(nn - 1)] = std::conj(w[static_cast<std::size_t>(nn)]);
                    }
                    nn -= 2;
                } else {  // no root yet: a double-shift QR sweep
                    if (its == 30) throw RuntimeError("eigenvalues: the QR iteration did not converge in 30 sweeps (a " + std::to_string(n) + "×" + std::to_string(n) + " matrix)");
                    if (its == 10 || its == 20) {  // an exceptional shift
                        t += x;
                        for (int i = 0; i <= nn; ++i) a(i, i) -= x;
                        s = std::abs(a(nn, nn - 1)) + std::abs(a(nn - 1, nn - 2));
                        y = x = 0.75 * s;
                        wv = -0.4375 * s * s;
                    }
                    ++its;
                    int m = nn - 2;
                    for (; m >= l; m--) {  // two consecutive small subdiagonal entries
                        z = a(m, m);
                        r = x - z;
                        s = y - z;
                        p = (r * s - wv) / a(m + 1, m) + a(m, m + 1);
                        q = a(m + 1, m + 1) - z - r - s;
                        r = a(m + 2, m + 1);
                        s = std::abs(p) + std::abs(q) + std::abs(r);
                        p /= s;
                        q /= s;
                        r /= s;
                        if (m == l) break;
                        const double u = std::abs(a(m, m - 1)) * (std::abs(q) + std::abs(r));
                        const double v = std::abs(p) * (std::abs(a(m - 1, m - 1)) + std::abs(z) + std::abs(a(m + 1, m + 1)));
                        if (u <= eps * v) break;
                    }
                    for (int i = m; i < nn - 1; ++i) {
                        a(i + 2, i) = 0.0;
                        if (i != m) a(i + 2, i - 1) = 0.0;
                    }
                    for (int k = m; k < nn; ++k) {  // the double QR step on rows l..nn and columns m..nn
                        if (k != m) {
                            p = a(k, k - 1);
                            q = a(k + 1, k - 1);
                            r = 0.0;
                            if (k + 1 != nn) r = a(k + 2, k - 1);
                            if ((x = std::abs(p) + std::abs(q) + std::abs(r)) != 0.0) {
                                p /= x;
                                q /= x;
                                r /= x;
                            }
                        }
                        if ((s = sign_of(std::sqrt(p * p + q * q + r * r), p)) != 0.0) {
                            if (k == m) {
                                if (l != m) a(k, k - 1) = -a(k, k - 1);
                            } else {
                                a(k, k - 1) = -s * x;
                            }
                            p += s;
                            x = p / s;
                            y = q / s;
                            z = r / s;
                            q /= p;
                            r /= p;
                            for (int j = k; j <= nn; ++j) {  // the rows
                                p = a(k, j) + q * a(k + 1, j);
                                if (k + 1 != nn) {
                                    p += r * a(k + 2, j);
                                    a(k + 2, j) -= p * z;
                                }
                                a(k + 1, j) -= p * y;
                                a(k, j) -= p * x;
                            }
                            const int mmin = nn < k + 3 ? nn : k + 3;
                            for (int i = l; i <= mmin; ++i) {  // the columns
                                p = x * a(i, k) + y * a(i, k + 1);
                                if (k + 1 != nn) {
                                    p += z * a(i, k + 2);
                                    a(i, k + 2) -= p * r;
                                }
                                a(i, k + 1) -= p * q;
                                a(i, k) -= p;
                            }
                        }
                    }
                }
            }
        } while (l + 1 < nn);
    }
    return w;
}

}  // namespace

std::vector<std::complex<double>> eigenvalues(std::vector<double> a, std::size_t n) {
    if (a.size() != n * n) throw std::logic_error("eigenvalues: " + std::to_string(a.size()) + " values for a " + std::to_string(n) + "×" + std::to_string(n) + " matrix");
    for (double v : a)
        if (!std::isfinite(v)) throw RuntimeError("eigenvalues: the " + std::to_string(n) + "×" + std::to_string(n) + " matrix holds a value that is not finite");
    if (n == 0) return {};
    const Square s{a, static_cast<int>(n)};
    balance(s);
    hessenberg(s);
    std::vector<std::complex<double>> w = hqr(s);
    std::sort(w.begin(), w.end(), [](const std::complex<double>& x, const std::complex<double>& y) {
        return x.real() != y.real() ? x.real() > y.real() : x.imag() > y.imag();
    });
    return w;
}

}  // namespace attnwalk
