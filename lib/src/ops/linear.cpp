#include "attnwalk/ops/linear.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <xtensor/xview.hpp>

#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/work.hpp"
#include "kernels.hpp"

namespace attnwalk {

Linear owned_linear(Mat w, Vec b) {
    Linear l;
    l.w = std::move(w);
    l.b = std::move(b);
    return l;
}

Linear external_linear(const float* data, std::size_t d_in, std::size_t d_out, std::size_t ld, bool transposed,
                       std::shared_ptr<const void> owner) {
    Linear l;
    l.ext = data;
    l.ext_in = d_in;
    l.ext_out = d_out;
    l.ext_ld = ld;
    l.ext_transposed = transposed;
    l.owner = std::move(owner);
    return l;
}

Linear external_linear16(const std::uint16_t* data, bool bf16, std::size_t d_in, std::size_t d_out, std::size_t ld, bool transposed,
                         std::shared_ptr<const void> owner) {
    Linear l = external_linear(nullptr, d_in, d_out, ld, transposed, std::move(owner));
    l.ext16 = data;
    l.ext16_bf16 = bf16;
    return l;
}

Linear made_linear(std::shared_ptr<const MadeFloats> made, std::size_t first, std::size_t d_in, std::size_t d_out, std::size_t ld, bool transposed) {
    Linear l = external_linear(nullptr, d_in, d_out, ld, transposed, nullptr);
    l.made = std::move(made);
    l.made_first = first;
    return l;
}

namespace {

// n 16-bit values to float32.
void widen(const std::uint16_t* from, std::size_t n, bool bf16, float* to) {
    if (bf16) {  // the high half of a float32: exact; in runs the compiler vectorises
        constexpr std::size_t run = 256;  // a fixed trip count: vectorised at -O2
        std::uint32_t bits[run];
        std::size_t i0 = 0;
        for (; i0 + run <= n; i0 += run) {
            for (std::size_t i = 0; i < run; ++i) bits[i] = static_cast<std::uint32_t>(from[i0 + i]) << 16;
            std::memcpy(to + i0, bits, sizeof bits);
        }
        for (std::size_t i = i0; i < n; ++i) {
            const std::uint32_t b = static_cast<std::uint32_t>(from[i]) << 16;
            std::memcpy(to + i, &b, sizeof b);
        }
    } else {
        for (std::size_t i = 0; i < n; ++i) to[i] = half_to_float(from[i]);
    }
}

// The stored matrix's row r (d_in of nn.Linear's layout, d_out of x·W's) as float32.
void stored_row(const Linear& l, std::size_t r, std::size_t n, float* dst) {
    if (l.ext) std::copy(l.ext + r * l.ext_ld, l.ext + r * l.ext_ld + n, dst);
    else if (l.made) l.made->read(l.made_first + r * l.ext_ld, n, dst);
    else widen(l.ext16 + r * l.ext_ld, n, l.ext16_bf16, dst);
}

// The floats of a float32 layer, where they lie or made now (`hold` keeps made ones while
// they are used); null for 16-bit and owned layers.
const float* floats_of(const Linear& l, std::shared_ptr<const float>& hold) {
    if (l.ext) return l.ext;
    if (!l.made) return nullptr;
    hold = l.made->get();
    return hold.get() + l.made_first;
}

// 16-bit weights are widened a block of outputs at a time, and each block multiplied as
// it comes: never a float32 copy of the whole matrix. A product with many rows reuses each
// block (about 4 MB of float32); one row through a layer reads it once, so its block
// stays in the core's cache (256 KB).
constexpr std::size_t gemm_block_floats = std::size_t{1} << 20;
constexpr std::size_t row_block_floats = std::size_t{1} << 16;

// The thread's buffer for one widened block, kept across calls (no allocation, no page
// faults, no zeroing per product).
float* widen_buffer(std::size_t floats) {
    thread_local std::vector<float> buffer;
    if (buffer.size() < floats) {
        buffer = std::vector<float>();
        buffer.reserve(floats);
        advise_huge_pages(buffer.data(), floats * sizeof(float));
        buffer.resize(floats);
    }
    return buffer.data();
}

// The work of `rows` rows through a 16-bit layer (ops/work.hpp): its weights read once as
// 16-bit numbers, x read and y written as float32.
void count_16bit(std::size_t rows, std::size_t d_in, std::size_t d_out) {
    const double r = static_cast<double>(rows), i = static_cast<double>(d_in), o = static_cast<double>(d_out);
    count_work(2.0 * r * i * o, 2.0 * i * o + 4.0 * r * (i + o));
}

// A few rows through BF16 weights in nn.Linear's layout: each weight read once and widened
// in registers (fast::bf16_rows: on AVX-512F or AVX2, the same bits), every core its share of the outputs. More rows than direct_rows go through the
// widened blocks and sgemm. With AVX-512 the kernel beats them to 128 rows: a Llama-3.2-1B-
// shaped forward took 0.90× the time at T = 128 and 0.78× at T = 64 against a limit of 32
// (docs/performance.md, section 18). With AVX2 alone 128 costs about what 32 did (0.97× at
// T = 64, 1.03× at 128), and one limit for both keeps a result up to 128 rows the same on
// either CPU. Where OpenBLAS has no AVX-512 kernels on an AVX-512 CPU, the kernel takes every row count,
// direct_rows at a time: the same forward at T = 512 took 4.1-4.2 s against 6.1 s through
// OpenBLAS's Haswell kernels (against 3.8-4.0 s through its AVX-512 ones; section 23).
constexpr std::size_t direct_rows = 128;
bool bf16_direct(const Linear& l, std::size_t rows) {
#if defined(ATTNWALK_HAVE_AVX2)
    return l.ext16 && l.ext16_bf16 && l.ext_transposed && fast::has_avx2_fma() && (rows <= direct_rows || avx512_instead_of_blas());
#else
    (void)l;
    (void)rows;
    return false;
#endif
}
void bf16_rows(const float* x, std::size_t rows, const Linear& l, float* y, std::size_t ldy) {
#if defined(ATTNWALK_HAVE_AVX2)
    const std::size_t d_in = l.ext_in, d_out = l.ext_out;
    note_vector_kernels();
    count_16bit(rows, d_in, d_out);
    std::vector<float> xs(rows * (d_in / 16 * 16));
    fast::deinterleave16(x, rows, d_in, d_in, xs.data());
    on_every_core(rows * d_in * d_out, [&](std::size_t worker, std::size_t workers) {
        const WorkerShare s = worker_share(d_out, worker, workers, 8);
        if (s.end <= s.begin) return;
        for (std::size_t i = 0; i < rows; i += direct_rows)  // at most direct_rows at a time: W read once for each
            fast::bf16_rows(std::min(direct_rows, rows - i), s.begin, s.end, d_in, x + i * d_in, d_in, xs.data() + i * (d_in / 16 * 16),
                            l.ext16, l.ext_ld, y + i * ldy, ldy);
    });
#else
    (void)x, (void)rows, (void)l, (void)y, (void)ldy;
    throw std::logic_error("bf16_rows without AVX2");
#endif
}

}  // namespace

void Linear::copy_out_row(std::size_t j, float* dst) const {
    if (!external() || !ext_transposed) throw std::logic_error("copy_out_row needs a layer in nn.Linear's layout");
    stored_row(*this, j, ext_in, dst);
}

float Linear::at(std::size_t r, std::size_t c) const {
    if (!external()) return w(r, c);
    const std::size_t i = ext_transposed ? c * ext_ld + r : r * ext_ld + c;
    if (ext) return ext[i];
    if (made) {
        float v = 0.0f;
        made->read(made_first + i, 1, &v);
        return v;
    }
    return ext16_bf16 ? bfloat16_to_float(ext16[i]) : half_to_float(ext16[i]);
}

Mat Linear::matrix() const {
    if (!external()) return w;
    Mat m = Mat::from_shape({ext_in, ext_out});
    const std::size_t rows = ext_transposed ? ext_out : ext_in, n = ext_transposed ? ext_in : ext_out;
    std::vector<float> row(n);
    std::shared_ptr<const float> hold;
    const float* floats = floats_of(*this, hold);  // made ones made once, not a row at a time
    for (std::size_t r = 0; r < rows; ++r) {
        if (floats) std::copy(floats + r * ext_ld, floats + r * ext_ld + n, row.data());
        else stored_row(*this, r, n, row.data());
        for (std::size_t c = 0; c < n; ++c) (ext_transposed ? m(c, r) : m(r, c)) = row[c];
    }
    return m;
}

void project_into(const float* x, std::size_t rows, const Linear& layer, float* y, std::size_t ldy) {
    const std::size_t d_in = layer.in(), d_out = layer.out();
    std::shared_ptr<const float> hold;
    if (const float* floats = floats_of(layer, hold)) {  // straight from where the floats lie, or were made
        sgemm(false, layer.ext_transposed, rows, d_out, d_in, 1.0f, x, d_in, floats, layer.ext_ld, 0.0f, y, ldy);
    } else if (bf16_direct(layer, rows)) {
        bf16_rows(x, rows, layer, y, ldy);
    } else if (layer.ext16) {  // each core widens and multiplies its share of the outputs, a block at a time
        count_16bit(rows, d_in, d_out);
        on_every_core([&](std::size_t worker, std::size_t workers) {
            const auto [begin, end] = worker_share(d_out, worker, workers);
            if (begin >= end) return;
            const std::size_t block = std::max<std::size_t>(1, std::min(end - begin, gemm_block_floats / std::max<std::size_t>(d_in, 1)));
            float* w = widen_buffer(block * d_in);
            for (std::size_t j0 = begin; j0 < end; j0 += block) {
                const std::size_t n = std::min(block, end - j0);
                if (layer.ext_transposed) {  // rows j0… of [d_out, d_in]: n×d_in
                    for (std::size_t j = 0; j < n; ++j) stored_row(layer, j0 + j, d_in, w + j * d_in);
                    sgemm_counted_by_caller(false, true, rows, n, d_in, 1.0f, x, d_in, w, d_in, 0.0f, y + j0, ldy);
                } else {  // columns j0… of [d_in, d_out]: d_in×n
                    for (std::size_t r = 0; r < d_in; ++r) widen(layer.ext16 + r * layer.ext_ld + j0, n, layer.ext16_bf16, w + r * n);
                    sgemm_counted_by_caller(false, false, rows, n, d_in, 1.0f, x, d_in, w, n, 0.0f, y + j0, ldy);
                }
            }
        });
    } else {
        sgemm(false, false, rows, d_out, d_in, 1.0f, x, d_in, layer.w.data(), d_out, 0.0f, y, ldy);
    }
    if (layer.b.size() != 0) {  // + b on every row (a plain loop: xtensor's broadcast is far slower here)
        const float* b = layer.b.data();
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < d_out; ++c) y[r * ldy + c] += b[c];
    }
}

Cube project(const Cube& x, const Linear& layer) {
    if (!layer.external()) {
        Cube out = matmul_each(x, layer.w);  // (B,T,d_out)
        if (layer.b.size() != 0) {
            const std::size_t n = layer.b.size(), rows = out.size() / n;
            const float* b = layer.b.data();
            float* y = out.data();
            for (std::size_t r = 0; r < rows; ++r, y += n)
                for (std::size_t c = 0; c < n; ++c) y[c] += b[c];
        }
        return out;
    }
    Cube out = fresh<3>({x.shape(0), x.shape(1), layer.ext_out});
    project_into(x.data(), x.shape(0) * x.shape(1), layer, out.data(), layer.ext_out);
    return out;
}

Linear output_columns(const Linear& layer, std::size_t first, std::size_t count) {
    if (!layer.external()) throw std::logic_error("output_columns reads an external layer");
    const std::size_t offset = layer.ext_transposed ? first * layer.ext_ld : first;
    Linear part = layer.made ? made_linear(layer.made, layer.made_first + offset, layer.ext_in, count, layer.ext_ld, layer.ext_transposed)
                : layer.ext  ? external_linear(layer.ext + offset, layer.ext_in, count, layer.ext_ld, layer.ext_transposed, layer.owner)
                            : external_linear16(layer.ext16 + offset, layer.ext16_bf16, layer.ext_in, count, layer.ext_ld, layer.ext_transposed,
                                                layer.owner);
    if (layer.b.size() != 0) part.b = xt::view(layer.b, xt::range(first, first + count));
    return part;
}

Mat project_row(const Linear& layer, const float* x) {
    if (!layer.external() || !layer.ext_transposed) throw std::logic_error("project_row needs a layer in nn.Linear's layout");
    const std::size_t out = layer.ext_out, in = layer.ext_in;
    Mat y = Mat::from_shape({1, out});
    std::shared_ptr<const float> hold;
    if (bf16_direct(layer, 1)) {
        bf16_rows(x, 1, layer, y.data(), out);
    } else if (const float* floats = floats_of(layer, hold)) {
        sgemm(false, false, out, 1, in, 1.0f, floats, layer.ext_ld, x, 1, 0.0f, y.data(), 1);  // W·x: d_out rows
    } else {  // each core widens its share of the rows, a block small enough to stay in its cache at a time
        count_16bit(1, in, out);
        on_every_core([&](std::size_t worker, std::size_t workers) {
            const auto [begin, end] = worker_share(out, worker, workers);
            if (begin >= end) return;
            const std::size_t least = static_cast<std::size_t>(blas_min_work) / std::max<std::size_t>(in, 1) + 1;  // a product for BLAS
            const std::size_t block = std::min(end - begin, std::max(least, row_block_floats / std::max<std::size_t>(in, 1)));
            float* w = widen_buffer(block * in);
            for (std::size_t j0 = begin; j0 < end; j0 += block) {
                const std::size_t n = std::min(block, end - j0);
                for (std::size_t j = 0; j < n; ++j) stored_row(layer, j0 + j, in, w + j * in);
                sgemm_counted_by_caller(false, false, n, 1, in, 1.0f, w, in, x, 1, 0.0f, y.data() + j0, 1);
            }
        });
    }
    if (layer.b.size() != 0) y += xt::view(layer.b, xt::newaxis(), xt::all());
    return y;
}

}  // namespace attnwalk
