#include "attnwalk/ops/linear.hpp"

#include <stdexcept>

#include <xtensor/xview.hpp>

#include "attnwalk/ops/blas.hpp"

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

Mat Linear::matrix() const {
    if (!ext) return w;
    Mat m = Mat::from_shape({ext_in, ext_out});
    for (std::size_t r = 0; r < ext_in; ++r)
        for (std::size_t c = 0; c < ext_out; ++c) m(r, c) = ext_transposed ? ext[c * ext_ld + r] : ext[r * ext_ld + c];
    return m;
}

Cube project(const Cube& x, const Linear& layer) {
    Cube out;
    if (layer.ext) {  // straight from where the floats lie
        const std::size_t rows = x.shape(0) * x.shape(1);
        out = Cube::from_shape({x.shape(0), x.shape(1), layer.ext_out});
        sgemm(false, layer.ext_transposed, rows, layer.ext_out, layer.ext_in, 1.0f, x.data(), x.shape(2), layer.ext, layer.ext_ld, 0.0f,
              out.data(), layer.ext_out);
    } else {
        out = matmul_each(x, layer.w);  // (B,T,d_out)
    }
    if (layer.b.size() != 0) {  // + b on every row (a plain loop: xtensor's broadcast is far slower here)
        const std::size_t n = layer.b.size(), rows = out.size() / n;
        const float* b = layer.b.data();
        float* y = out.data();
        for (std::size_t r = 0; r < rows; ++r, y += n)
            for (std::size_t c = 0; c < n; ++c) y[c] += b[c];
    }
    return out;
}

Linear output_columns(const Linear& layer, std::size_t first, std::size_t count) {
    if (!layer.ext) throw std::logic_error("output_columns reads an external layer");
    Linear part = external_linear(layer.ext_transposed ? layer.ext + first * layer.ext_ld : layer.ext + first, layer.ext_in, count,
                                  layer.ext_ld, layer.ext_transposed, layer.owner);
    if (layer.b.size() != 0) part.b = xt::view(layer.b, xt::range(first, first + count));
    return part;
}

Mat project_row(const Linear& layer, const float* x) {
    if (!layer.ext || !layer.ext_transposed) throw std::logic_error("project_row needs a layer in nn.Linear's layout");
    const std::size_t out = layer.ext_out, in = layer.ext_in;
    Mat y = Mat::from_shape({1, out});
    sgemm(false, false, out, 1, in, 1.0f, layer.ext, layer.ext_ld, x, 1, 0.0f, y.data(), 1);  // W·x: d_out rows
    if (layer.b.size() != 0) y += xt::view(layer.b, xt::newaxis(), xt::all());
    return y;
}

}  // namespace attnwalk
