// --format torch: tensors printed exactly as PyTorch 1.13 prints a float32 CPU tensor
// with the default print options (torch/_tensor_str.py): precision 4, line width 80,
// summarised to 3 edge items per axis above 1000 elements. tests/make_goldens.py
// records torch's own output for the test of this file.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "render_torch.hpp"

namespace attnwalk::app {

namespace {

constexpr int precision = 4;
constexpr std::size_t threshold = 1000;
constexpr std::size_t edge_items = 3;
constexpr std::size_t line_width = 80;

std::string printf_string(const char* format, int width, double value) {
    char buf[512];
    std::snprintf(buf, sizeof buf, format, width, precision, value);
    return buf;
}

// Python's str.format of a float: like printf, but NaN is always "nan".
std::string python_format(char conversion, int width, double value) {
    if (std::isnan(value)) return std::string(static_cast<std::size_t>(std::max(0, width - 3)), ' ') + "nan";
    const char* format = conversion == 'e' ? "%*.*e" : "%*.*f";
    return printf_string(format, width, value);
}

// "{:.0f}." — how torch writes a whole number in a float tensor ("1.", "-3.").
std::string integer(double value) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.0f.", value);
    return buf;
}

// torch's _Formatter: picks integer, fixed or scientific notation from the nonzero
// finite values, and one width for every element.
class Formatter {
public:
    explicit Formatter(const std::vector<float>& values) {
        std::vector<float> nonzero;
        for (float v : values)
            if (std::isfinite(v) && v != 0.0f) nonzero.push_back(v);
        if (nonzero.empty()) return;
        double min = INFINITY, max = 0.0;
        for (float v : nonzero) {
            min = std::min(min, std::fabs(static_cast<double>(v)));
            max = std::max(max, std::fabs(static_cast<double>(v)));
            if (v != std::ceil(v)) int_mode_ = false;
        }
        const bool wide = max / min > 1000.0 || max > 1.0e8;
        sci_ = int_mode_ ? wide : wide || min < 1.0e-4;
        for (float v : nonzero) {
            const double d = v;
            const std::size_t len = sci_ ? python_format('e', 0, d).size()
                                    : int_mode_ ? integer(d).size()
                                                : python_format('f', 0, d).size();
            width_ = std::max(width_, len);
        }
    }

    std::size_t width() const { return width_; }
    std::string at(const Tensor& t, std::size_t i) const { return format(t.data[i]); }

    std::string format(float value) const {
        const double d = value;
        std::string s;
        if (sci_) {
            s = python_format('e', static_cast<int>(width_), d);
        } else if (int_mode_) {
            s = std::isnan(d) ? "nan" : std::isinf(d) ? (d > 0 ? "inf" : "-inf") : integer(d);
        } else {
            s = python_format('f', 0, d);
        }
        return std::string(width_ > s.size() ? width_ - s.size() : 0, ' ') + s;
    }

private:
    bool int_mode_ = true;
    bool sci_ = false;
    std::size_t width_ = 1;
};

// An integer tensor's elements (ids, counts): whole numbers right-aligned to one width.
struct IntegerFormatter {
    std::size_t width_;
    std::size_t width() const { return width_; }
    std::string at(const Tensor& tensor, std::size_t i) const {
        const std::string s = std::to_string(tensor.integers[i]);
        return std::string(width_ > s.size() ? width_ - s.size() : 0, ' ') + s;
    }
};

struct View {
    const Tensor& t;
    bool summarize;

    std::size_t stride(std::size_t axis) const {
        std::size_t s = 1;
        for (std::size_t a = axis + 1; a < t.shape.size(); ++a) s *= t.shape[a];
        return s;
    }
    // The indices shown along an axis: all, or the edge items around a gap (npos).
    std::vector<std::size_t> shown(std::size_t axis) const {
        const std::size_t n = t.shape[axis];
        std::vector<std::size_t> idx;
        if (summarize && n > 2 * edge_items) {
            for (std::size_t i = 0; i < edge_items; ++i) idx.push_back(i);
            idx.push_back(std::string::npos);
            for (std::size_t i = n - edge_items; i < n; ++i) idx.push_back(i);
        } else {
            for (std::size_t i = 0; i < n; ++i) idx.push_back(i);
        }
        return idx;
    }
    // The values the formatter sees: every shown element.
    void collect(std::size_t axis, std::size_t offset, std::vector<float>& out) const {
        if (axis == t.shape.size()) {
            out.push_back(t.data[offset]);
            return;
        }
        for (std::size_t i : shown(axis))
            if (i != std::string::npos) collect(axis + 1, offset + i * stride(axis), out);
    }

    template <class F>
    std::string str(std::size_t axis, std::size_t offset, std::size_t indent, const F& f) const {
        const std::size_t dim = t.shape.size() - axis;
        if (dim == 0) return f.at(t, offset);
        if (dim == 1) {
            const std::size_t per_line = std::max<std::size_t>(
                1, line_width > indent ? (line_width - indent) / (f.width() + 2) : 0);
            std::vector<std::string> items;
            for (std::size_t i : shown(axis)) items.push_back(i == std::string::npos ? " ..." : f.at(t, offset + i));
            std::string s = "[";
            for (std::size_t k = 0; k < items.size(); ++k) {
                if (k) s += k % per_line == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ";
                s += items[k];
            }
            return s + "]";
        }
        const std::string sep = "," + std::string(dim - 1, '\n') + std::string(indent + 1, ' ');
        std::string s = "[";
        bool first = true;
        for (std::size_t i : shown(axis)) {
            if (!first) s += sep;
            first = false;
            s += i == std::string::npos ? "..." : str(axis + 1, offset + i * stride(axis), indent + 1, f);
        }
        return s + "]";
    }
};

}  // namespace

std::string torch_repr(const Tensor& tensor) {
    if (tensor.size() == 0 && !tensor.shape.empty()) return "tensor([])";
    if (tensor.is_integer()) {  // an int64 tensor, as torch prints one: whole numbers, one width
        std::size_t width = 1;
        for (unsigned long long v : tensor.integers) width = std::max(width, std::to_string(v).size());
        const View view{tensor, tensor.size() > threshold};
        return "tensor(" + view.str(0, 0, 7, IntegerFormatter{width}) + ")";
    }
    const View view{tensor, tensor.size() > threshold};
    std::vector<float> values;
    view.collect(0, 0, values);
    const Formatter formatter(values);
    return "tensor(" + view.str(0, 0, 7, formatter) + ")";
}

}  // namespace attnwalk::app
