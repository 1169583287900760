#include "attnwalk/io/gguf.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/json_input.hpp"
#include "mapped_file.hpp"

namespace attnwalk {

namespace {

constexpr std::uint64_t max_dims = 4;  // GGML_MAX_DIMS
using VT = GgufValue::Type;

const char* value_type_name(VT t) {
    static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
    return names[static_cast<std::uint32_t>(t)];
}
// Bytes a scalar of the type takes in the file (a string: at least its length).
std::uint64_t file_bytes(VT t) {
    switch (t) {
        case VT::u8: case VT::i8: case VT::boolean: return 1;
        case VT::u16: case VT::i16: return 2;
        case VT::u32: case VT::i32: case VT::f32: return 4;
        default: return 8;
    }
}

// The file read front to back, every read checked against its end; `where` names the
// key or tensor being read, for the message.
class Cursor {
public:
    Cursor(const std::string& file, const std::uint8_t* p, std::size_t size, double budget)
        : file_(file), p_(p), size_(size), budget_(budget) {}
    std::string where = "the header";

    [[noreturn]] void fail(const std::string& what) const { throw InputError(file_, where, what); }
    std::size_t left() const { return size_ - at_; }
    std::size_t at() const { return at_; }
    const std::uint8_t* take(std::uint64_t n, const char* what) {
        if (n > left())
            fail(std::string("the file ends inside ") + what + ": " + std::to_string(n) + " bytes needed at byte " + std::to_string(at_) +
                 ", " + std::to_string(left()) + " left (a truncated file?)");
        const std::uint8_t* p = p_ + at_;
        at_ += static_cast<std::size_t>(n);
        return p;
    }
    std::uint64_t u(unsigned bytes, const char* what) {
        const std::uint8_t* p = take(bytes, what);
        std::uint64_t v = 0;
        for (unsigned i = bytes; i-- > 0;) v = (v << 8) | p[i];  // little-endian
        return v;
    }
    std::string string(const char* what) {
        const std::uint64_t n = u(8, what);
        if (n > left()) fail(std::string(what) + " claims " + std::to_string(n) + " bytes, the file has " + std::to_string(left()) + " left");
        spend(32.0 + static_cast<double>(n), what);
        const std::uint8_t* p = take(n, what);
        return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
    }
    // Memory about to be taken, against the budget.
    void spend(double bytes, const char* what) {
        spent_ += bytes;
        if (spent_ > budget_)
            throw MemoryBudgetError("reading " + file_ + ": its " + what + " (" + where + ") would take " + json_input::size_text(spent_) +
                                        " of memory",
                                    json_input::size_text(budget_));
    }

private:
    const std::string& file_;
    const std::uint8_t* p_;
    std::size_t size_, at_ = 0;
    double budget_, spent_ = 0;
};

void read_scalar(Cursor& c, VT t, GgufValue& v) {
    switch (t) {
        case VT::u8: v.ints.push_back(static_cast<std::int64_t>(c.u(1, "a u8"))); break;
        case VT::i8: v.ints.push_back(static_cast<std::int8_t>(c.u(1, "an i8"))); break;
        case VT::u16: v.ints.push_back(static_cast<std::int64_t>(c.u(2, "a u16"))); break;
        case VT::i16: v.ints.push_back(static_cast<std::int16_t>(c.u(2, "an i16"))); break;
        case VT::u32: v.ints.push_back(static_cast<std::int64_t>(c.u(4, "a u32"))); break;
        case VT::i32: v.ints.push_back(static_cast<std::int32_t>(c.u(4, "an i32"))); break;
        case VT::i64: v.ints.push_back(static_cast<std::int64_t>(c.u(8, "an i64"))); break;
        case VT::u64: {
            const std::uint64_t x = c.u(8, "a u64");
            if (x > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) c.fail("a u64 of " + std::to_string(x) + ", above 2^63");
            v.ints.push_back(static_cast<std::int64_t>(x));
            break;
        }
        case VT::boolean: {
            const std::uint64_t b = c.u(1, "a bool");
            if (b > 1) c.fail("a bool of " + std::to_string(b) + ": expected 0 or 1");
            v.ints.push_back(static_cast<std::int64_t>(b));
            break;
        }
        case VT::f32: {
            const auto bits = static_cast<std::uint32_t>(c.u(4, "an f32"));
            float f;
            std::memcpy(&f, &bits, 4);
            v.floats.push_back(f);
            break;
        }
        case VT::f64: {
            const std::uint64_t bits = c.u(8, "an f64");
            double d;
            std::memcpy(&d, &bits, 8);
            v.floats.push_back(d);
            break;
        }
        case VT::string: v.strings.push_back(c.string("a string")); break;
        case VT::array: c.fail("an array inside an array (not supported)");
    }
}

VT value_type(Cursor& c, const char* what) {
    const std::uint64_t t = c.u(4, what);
    if (t > static_cast<std::uint32_t>(VT::f64)) c.fail("unknown value type " + std::to_string(t) + " (0 to 12 are GGUF's)");
    return static_cast<VT>(t);
}

GgufValue read_value(Cursor& c) {
    GgufValue v;
    v.type = value_type(c, "a value's type");
    if (v.type != VT::array) {
        c.spend(64.0, "metadata");
        read_scalar(c, v.type, v);
        return v;
    }
    v.array = true;
    v.type = value_type(c, "an array's element type");
    if (v.type == VT::array) c.fail("an array of arrays (not supported)");
    const std::uint64_t n = c.u(8, "an array's length");
    // each element takes at least its bytes in the file: a longer array is a lie, refused before it is allocated
    if (n > c.left() / file_bytes(v.type))
        c.fail("an array of " + std::to_string(n) + " " + value_type_name(v.type) + " values, more than the " + std::to_string(c.left()) +
               " bytes left in the file can hold");
    c.spend(64.0 + static_cast<double>(n) * (v.type == VT::string ? 0.0 : 8.0), "metadata");
    if (v.type == VT::string) v.strings.reserve(static_cast<std::size_t>(n));
    else if (v.type == VT::f32 || v.type == VT::f64) v.floats.reserve(static_cast<std::size_t>(n));
    else v.ints.reserve(static_cast<std::size_t>(n));
    for (std::uint64_t i = 0; i < n; ++i) read_scalar(c, v.type, v);
    return v;
}

}  // namespace

std::string gguf_type_text(const GgufValue& v) {
    return (v.array ? "an array of " : std::string()) + value_type_name(v.type);
}

std::vector<std::size_t> GgufFile::TensorInfo::shape() const {
    return std::vector<std::size_t>(ne.rbegin(), ne.rend());
}

bool GgufFile::is_gguf(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    struct stat st {};
    char magic[4] = {};
    const bool yes = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::read(fd, magic, 4) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
    ::close(fd);
    return yes;
}

GgufFile::GgufFile(const std::string& path, double memory_budget) : file_(path) {
    const io_detail::MappedFile mapped = io_detail::map_file(path, "a GGUF file", 24, "its header alone takes 24");
    fd_ = mapped.fd;
    size_ = mapped.size;
    map_ = mapped.map;
    io_detail::note_mapping(map_, size_, path);  // a SIGBUS here names the file
    try {
        if (std::memcmp(map_, "GGUF", 4) != 0) throw InputError(path, "", "not a GGUF file: it does not begin with \"GGUF\"");
        Cursor c(path, map_, size_, memory_budget);
        c.take(4, "the magic");
        version_ = static_cast<std::uint32_t>(c.u(4, "the version"));
        if (version_ != 2 && version_ != 3)
            throw InputError(path, "the header", "GGUF version " + std::to_string(version_) + " is not supported (2 and 3 are)");
        const std::uint64_t n_tensors = c.u(8, "the tensor count"), n_kv = c.u(8, "the metadata count");
        // a key takes at least 12 bytes (its length and type), a tensor's entry at least 24
        if (n_kv > c.left() / 12) c.fail(std::to_string(n_kv) + " metadata entries claimed, more than the file can hold");
        if (n_tensors > c.left() / 24) c.fail(std::to_string(n_tensors) + " tensors claimed, more than the file can hold");
        for (std::uint64_t i = 0; i < n_kv; ++i) {
            c.where = "metadata entry " + std::to_string(i);
            std::string key = c.string("a key");
            c.where = "metadata \"" + key + "\"";
            GgufValue v = read_value(c);
            if (!metadata_.emplace(key, std::move(v)).second) c.fail("the key is given twice");
        }
        if (const GgufValue* a = find("general.alignment")) {
            c.where = "metadata \"general.alignment\"";
            if (a->array || (a->type != VT::u32 && a->type != VT::u64) || a->ints.size() != 1)
                c.fail("expected a u32, got " + gguf_type_text(*a));
            const std::int64_t al = a->ints[0];
            if (al <= 0 || al > (1 << 20) || (al & (al - 1)) != 0) c.fail("expected a power of two up to 2^20, got " + std::to_string(al));
            alignment_ = static_cast<std::size_t>(al);
        }
        c.spend(static_cast<double>(n_tensors) * 96.0, "tensor entries");
        tensors_.reserve(static_cast<std::size_t>(n_tensors));
        for (std::uint64_t i = 0; i < n_tensors; ++i) {
            c.where = "tensor entry " + std::to_string(i);
            TensorInfo t;
            t.name = c.string("a tensor's name");
            c.where = "tensor \"" + t.name + "\"";
            const std::uint64_t dims = c.u(4, "the number of dimensions");
            if (dims < 1 || dims > max_dims) c.fail("expected 1 to 4 dimensions, got " + std::to_string(dims));
            t.count = 1;
            for (std::uint64_t d = 0; d < dims; ++d) {
                const std::uint64_t ne = c.u(8, "a dimension");
                if (ne == 0 || ne > (1ull << 40) || t.count > (1ull << 42) / ne)
                    c.fail("dimension " + std::to_string(d) + " of " + std::to_string(ne) + ": expected 1 to 2^40, and 2^42 weights in all at most");
                t.ne.push_back(ne);
                t.count *= ne;
            }
            const std::uint64_t type = c.u(4, "the type");
            if (!ggml_type_name(static_cast<std::uint32_t>(type)) || type > 0xffffffffu) {
                const char* name = ggml_unread_type_name(static_cast<std::uint32_t>(type));
                c.fail("ggml type " + std::to_string(type) + (name ? std::string(" (") + name + ")" : std::string()) +
                       " is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS are)");
            }
            t.type = static_cast<GgmlType>(type);
            const std::size_t block = ggml_block_weights(t.type);
            if (t.ne[0] % block != 0)
                c.fail("a row of " + std::to_string(t.ne[0]) + " weights is not a whole number of " + ggml_type_name(static_cast<std::uint32_t>(type)) +
                       " blocks of " + std::to_string(block));
            t.bytes = t.count / block * ggml_block_bytes(t.type);  // at most 2^42 · 4 bytes: no overflow
            t.offset = c.u(8, "the offset");
            if (t.offset % alignment_ != 0)
                c.fail("offset " + std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(alignment_));
            if (!by_name_.emplace(t.name, tensors_.size()).second) c.fail("a tensor of this name is given twice");
            tensors_.push_back(std::move(t));
        }
        c.where = "the header";
        data_start_ = (c.at() + alignment_ - 1) / alignment_ * alignment_;
        if (data_start_ > size_) c.fail("the file ends before its data begins (byte " + std::to_string(data_start_) + ")");
        const std::uint64_t data_size = size_ - data_start_;
        std::vector<std::pair<std::uint64_t, std::size_t>> starts;
        for (std::size_t i = 0; i < tensors_.size(); ++i) {
            const TensorInfo& t = tensors_[i];
            if (t.offset > data_size || t.bytes > data_size - t.offset)
                throw InputError(path, "tensor \"" + t.name + "\"", "its " + std::to_string(t.bytes) + " bytes at offset " + std::to_string(t.offset) +
                                                                        " pass the end of the " + std::to_string(data_size) + " bytes of data (a truncated file?)");
            starts.emplace_back(t.offset, i);
        }
        std::sort(starts.begin(), starts.end());
        for (std::size_t i = 1; i < starts.size(); ++i) {
            const TensorInfo& prev = tensors_[starts[i - 1].second];
            if (starts[i].first < prev.offset + prev.bytes)
                throw InputError(path, "tensor \"" + tensors_[starts[i].second].name + "\"", "its data overlaps that of \"" + prev.name + "\"");
        }
    } catch (...) {
        io_detail::forget_mapping(map_);
        if (map_) ::munmap(const_cast<std::uint8_t*>(map_), size_);
        ::close(fd_);
        throw;
    }
}

GgufFile::~GgufFile() {
    io_detail::forget_mapping(map_);
    if (map_) ::munmap(const_cast<std::uint8_t*>(map_), size_);
    if (fd_ >= 0) ::close(fd_);
}

const GgufValue* GgufFile::find(const std::string& key) const {
    const auto it = metadata_.find(key);
    return it == metadata_.end() ? nullptr : &it->second;
}

const GgufFile::TensorInfo* GgufFile::tensor(const std::string& name) const {
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

namespace {

bool is_integer(VT t) { return t != VT::f32 && t != VT::f64 && t != VT::string && t != VT::boolean; }

const GgufValue* typed(const GgufFile& g, const std::string& key, bool present_or_throw, bool array, bool (*ok)(VT), const char* expected) {
    const GgufValue* v = g.find(key);
    if (!v) {
        if (present_or_throw) throw InputError(g.file(), "metadata \"" + key + "\"", std::string("missing: expected ") + expected);
        return nullptr;
    }
    if (v->array != array || !ok(v->type) || (!array && v->size() != 1))
        throw InputError(g.file(), "metadata \"" + key + "\"", std::string("expected ") + expected + ", got " + gguf_type_text(*v));
    return v;
}

}  // namespace

std::string GgufFile::text(const std::string& key, const std::string* fallback) const {
    const GgufValue* v = typed(*this, key, !fallback, false, [](VT t) { return t == VT::string; }, "a string");
    return v ? v->strings[0] : *fallback;
}

std::uint64_t GgufFile::whole(const std::string& key, const std::uint64_t* fallback) const {
    const GgufValue* v = typed(*this, key, !fallback, false, is_integer, "a whole number");
    if (!v) return *fallback;
    if (v->ints[0] < 0) throw InputError(file_, "metadata \"" + key + "\"", "expected a whole number ≥ 0, got " + std::to_string(v->ints[0]));
    return static_cast<std::uint64_t>(v->ints[0]);
}

double GgufFile::number(const std::string& key, const double* fallback) const {
    const GgufValue* v = typed(*this, key, !fallback, false, [](VT t) { return t != VT::string && t != VT::boolean; }, "a number");
    if (!v) return *fallback;
    return v->floats.empty() ? static_cast<double>(v->ints[0]) : v->floats[0];
}

bool GgufFile::flag(const std::string& key, bool fallback) const {
    const GgufValue* v = typed(*this, key, false, false, [](VT t) { return t == VT::boolean; }, "a bool");
    return v ? v->ints[0] != 0 : fallback;
}

const std::vector<std::string>& GgufFile::texts(const std::string& key) const {
    return typed(*this, key, true, true, [](VT t) { return t == VT::string; }, "an array of strings")->strings;
}

const std::vector<std::int64_t>& GgufFile::wholes(const std::string& key) const {
    return typed(*this, key, true, true, is_integer, "an array of whole numbers")->ints;
}

const std::uint8_t* GgufFile::bytes(const TensorInfo& t) const { return map_ + data_start_ + t.offset; }

void GgufFile::dequantize(const TensorInfo& t, float* out) const {
    ggml_dequantize(t.type, bytes(t), out, static_cast<std::size_t>(t.count));
}

void GgufFile::dequantize_rows(const TensorInfo& t, std::size_t first, std::size_t rows, float* out) const {
    const std::size_t length = t.ne.empty() ? 1 : static_cast<std::size_t>(t.ne[0]);
    const std::size_t row_bytes = length / ggml_block_weights(t.type) * ggml_block_bytes(t.type);
    ggml_dequantize(t.type, bytes(t) + first * row_bytes, out, rows * length);
}

}  // namespace attnwalk
