#include "reader.hpp"

#include <xtensor/xbuilder.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/moe.hpp"

namespace attnwalk::model_detail {

std::string shape_text(const std::vector<std::size_t>& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

Reader::Reader(Files files, std::string prefix)
    : files_(std::move(files)), prefix_(std::move(prefix)), used_(std::make_shared<std::set<std::string>>()) {}

Reader Reader::with_prefix(std::string prefix) const {
    Reader r = *this;
    r.prefix_ = std::move(prefix);
    return r;
}

const SafeTensors* Reader::file_of(const std::string& name) const {
    for (const auto& f : files_)
        if (f->find(prefix_ + name)) return f.get();
    return nullptr;
}

const SafeTensors::Entry* Reader::find(const std::string& name) const {
    const SafeTensors* f = file_of(name);
    return f ? f->find(prefix_ + name) : nullptr;
}

void Reader::check(const std::string& name, const std::vector<std::size_t>& shape) const {
    used_->insert(prefix_ + name);
    const SafeTensors* f = file_of(name);
    if (!f) throw InputError(files_.front()->file(), "$", "missing tensor \"" + prefix_ + name + "\"");
    const SafeTensors::Entry& e = *f->find(prefix_ + name);
    if (e.shape != shape)
        throw InputError(f->file(), "$[\"" + prefix_ + name + "\"]", "expected shape " + shape_text(shape) + ", got " + shape_text(e.shape));
}

Vec Reader::vec(const std::string& name, std::size_t n) const {
    check(name, {n});
    Vec v = Vec::from_shape({n});
    file_of(name)->read_into(prefix_ + name, v.data());
    return v;
}

Mat Reader::mat(const std::string& name, std::size_t rows, std::size_t cols) const {
    check(name, {rows, cols});
    Mat m = Mat::from_shape({rows, cols});
    file_of(name)->read_into(prefix_ + name, m.data());
    return m;
}

Mat Reader::mat(const std::string& name, const std::vector<std::size_t>& shape, std::size_t rows, std::size_t cols) const {
    check(name, shape);
    Mat m = Mat::from_shape({rows, cols});
    file_of(name)->read_into(prefix_ + name, m.data());
    return m;
}

std::shared_ptr<const void> Reader::owner_of(const SafeTensors* f) const {
    for (const auto& file : files_)
        if (file.get() == f) return file;
    return nullptr;
}

std::vector<Linear> Reader::layers(const std::string& name, std::size_t count, std::size_t d_in, std::size_t d_out, bool transposed) const {
    const SafeTensors* f = file_of(name);
    const std::shared_ptr<const void> owner = owner_of(f);
    const std::size_t ld = transposed ? d_in : d_out, each = d_in * d_out;
    std::vector<Linear> out;
    if (const std::shared_ptr<const MadeFloats> made = f->made(prefix_ + name)) {  // a GGUF's quantized weights: made as they are used
        for (std::size_t e = 0; e < count; ++e) out.push_back(made_linear(made, e * each, d_in, d_out, ld, transposed));
    } else if (const float* data = f->direct(prefix_ + name)) {
        for (std::size_t e = 0; e < count; ++e) out.push_back(external_linear(data + e * each, d_in, d_out, ld, transposed, owner));
    } else if (const std::uint16_t* data16 = f->direct16(prefix_ + name)) {  // BF16 or F16: widened block by block as it is used
        const bool bf16 = f->find(prefix_ + name)->dtype == "BF16";
        for (std::size_t e = 0; e < count; ++e) out.push_back(external_linear16(data16 + e * each, bf16, d_in, d_out, ld, transposed, owner));
    } else if (const SafeTensors::Entry& entry = *f->find(prefix_ + name); entry.dtype == "BF16" || entry.dtype == "F16") {
        // At an odd offset in its file: its 16-bit values copied as they are, and then used
        // as the values in place are (a float32 copy would go through other products and
        // change the last bits: same weights, same bits wherever they lie)
        auto copy = std::make_shared<std::vector<std::uint16_t>>(count * each);
        f->read_raw16(prefix_ + name, copy->data());
        const bool bf16 = entry.dtype == "BF16";
        for (std::size_t e = 0; e < count; ++e) out.push_back(external_linear16(copy->data() + e * each, bf16, d_in, d_out, ld, transposed, copy));
    } else {  // a big-endian host, or a misaligned F32 tensor (read as the mapped one: the same products)
        auto copy = std::make_shared<std::vector<float>>(count * each);
        f->read_into(prefix_ + name, copy->data());
        for (std::size_t e = 0; e < count; ++e) out.push_back(external_linear(copy->data() + e * each, d_in, d_out, ld, transposed, copy));
    }
    return out;
}

Linear Reader::linear(const std::string& name, std::size_t d_in, std::size_t d_out, bool transposed) const {
    check(name, transposed ? std::vector<std::size_t>{d_out, d_in} : std::vector<std::size_t>{d_in, d_out});
    return layers(name, 1, d_in, d_out, transposed).front();
}

std::vector<Linear> Reader::stacked_linears(const std::string& name, std::size_t E, std::size_t d_in, std::size_t d_out) const {
    check(name, {E, d_in, d_out});
    return layers(name, E, d_in, d_out, false);
}

std::vector<Mxfp4Rows> Reader::mxfp4(const std::string& name, std::size_t E, std::size_t rows, std::size_t cols) const {
    const std::string blocks = name + "_blocks", scales = name + "_scales";
    if (cols % 32 != 0)
        throw InputError(files_.front()->file(), "$[\"" + prefix_ + blocks + "\"]", "MXFP4 groups 32 values: " + std::to_string(cols) + " is not a multiple of 32");
    check(blocks, {E, rows, cols / 32, 16});
    check(scales, {E, rows, cols / 32});
    const SafeTensors* fb = file_of(blocks);
    const SafeTensors* fs = file_of(scales);
    const std::uint8_t* b = fb->direct8(prefix_ + blocks);
    const std::uint8_t* s = fs->direct8(prefix_ + scales);
    if (!b) throw InputError(fb->file(), "$[\"" + prefix_ + blocks + "\"].dtype", "expected U8 (MXFP4's packed 4-bit codes), got " + fb->find(prefix_ + blocks)->dtype);
    if (!s) throw InputError(fs->file(), "$[\"" + prefix_ + scales + "\"].dtype", "expected U8 (MXFP4's exponents), got " + fs->find(prefix_ + scales)->dtype);
    // E8M0 scales: 2^(s − 127) for s up to 254; 255 is NaN. At 254 a code of 2 or more is
    // 2^128 or beyond, past float32. Refused here, naming the block, rather than as a
    // non-finite result far downstream.
    const std::size_t groups = cols / 32, all = E * rows * groups;
    for (std::size_t i = 0; i < all; ++i) {
        if (s[i] < 254) continue;
        const std::string block = "[" + std::to_string(i / (rows * groups)) + ", " + std::to_string(i / groups % rows) + ", " + std::to_string(i % groups) + "]";
        const std::string where = "$[\"" + prefix_ + scales + "\"]" + block;
        if (s[i] == 255)
            throw InputError(fs->file(), where, "an MXFP4 scale of 255 is NaN in E8M0: expected 0 … 254 (the block of 32 values " + block +
                                                    " of " + prefix_ + blocks + " [expert, row, group])");
        for (std::size_t k = 0; k < 16; ++k) {
            const std::uint8_t byte = b[i * 16 + k];
            if ((byte & 0x07) >= 4 || ((byte >> 4) & 0x07) >= 4)
                throw InputError(fs->file(), where, "an MXFP4 scale of 254 (2^127) times a code of 2 or more is beyond float32 (the block of 32 values " +
                                                        block + " of " + prefix_ + blocks + " [expert, row, group])");
        }
    }
    const std::shared_ptr<const void> owner = owner_of(fb);  // both files stay open with the model (LoadedModel::files)
    std::vector<Mxfp4Rows> out;
    for (std::size_t e = 0; e < E; ++e) out.push_back(Mxfp4Rows{b + e * rows * cols / 2, s + e * rows * cols / 32, rows, cols, owner});
    return out;
}

Vec Reader::bias(const std::string& name, std::size_t n) const { return biases_ ? vec(name, n) : Vec(xt::zeros<float>({n})); }

Norm Reader::norm(const std::string& name, std::size_t C, NormKind kind) const {
    if (kind != NormKind::layer_norm) return {vec(name + ".weight", C), {}};  // RMSNorm, or a LayerNorm without a shift
    return {vec(name + ".weight", C), bias(name + ".bias", C)};
}

void Reader::touch_in_background() const {
    for (const auto& f : files_) f->touch_in_background();
}

std::vector<std::string> Reader::unused() const {
    std::vector<std::string> out;
    for (const auto& f : files_)
        for (const auto& [name, entry] : f->entries())
            if (!used_->count(name)) out.push_back(name);
    return out;
}

}  // namespace attnwalk::model_detail
