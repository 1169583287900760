// NumPy's .npy: what attnwalk writes reads back, and what numpy writes is read, C or
// Fortran order, float32/64/16; a broken file is an InputError naming its part.
#include "test_util.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/npy.hpp"

using namespace attnwalk;

namespace {

// A .npy of version `major` with this header dict and these raw bytes.
std::string npy(const std::string& dict, const std::string& data, unsigned major = 1) {
    std::string header = dict;
    const std::size_t fixed = 6 + 2 + (major == 1 ? 2 : 4);
    header.append((64 - (fixed + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string out("\x93NUMPY", 6);
    out += static_cast<char>(major);
    out += '\0';
    for (std::size_t k = 0; k < (major == 1 ? 2u : 4u); ++k) out += static_cast<char>((header.size() >> (8 * k)) & 0xff);
    return out + header + data;
}

template <typename T>
std::string raw(std::initializer_list<T> values) {
    std::string out;
    for (T v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);  // little-endian here (x86-64, aarch64)
    return out;
}

}  // namespace

TEST_SUITE("npy") {
    TEST_CASE("npy.what_is_written_reads_back") {
        Tensor t;
        t.shape = {2, 3};
        t.data = {0.43f, -0.15f, 1e-30f, 3.0e38f, 0.0f, -2.5f};
        const std::string bytes = npy_bytes(t);
        CHECK(is_npy(bytes));
        CHECK((bytes.size() - t.size() * 4) % 64 == 0);  // the header padded to 64, as numpy pads it
        const Tensor back = parse_npy(bytes, "x.npy");
        CHECK(back.shape == t.shape);
        CHECK(back.data == t.data);
        Tensor scalar;
        scalar.data = {2.0f};
        CHECK(parse_npy(npy_bytes(scalar), "s.npy").data == std::vector<float>{2.0f});
        Tensor one;  // a 1-tuple is written "(3,)"
        one.shape = {3};
        one.data = {1, 2, 3};
        CHECK(npy_bytes(one).find("'shape': (3,)") != std::string::npos);
        CHECK(parse_npy(npy_bytes(one), "o.npy").shape == std::vector<std::size_t>{3});
        Tensor ids;  // whole numbers: int64, exact past 2^24
        ids.shape = {2};
        ids.integers = {16777217ull, 3ull};
        ids.data = {16777216.0f, 3.0f};
        const std::string id_bytes = npy_bytes(ids);
        CHECK(id_bytes.find("'<i8'") != std::string::npos);
        CHECK(id_bytes.substr(id_bytes.size() - 16) == raw<std::int64_t>({16777217, 3}));
    }

    TEST_CASE("npy.numpy_files_of_every_kind_read") {
        const Tensor c = parse_npy(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", raw<double>({1, 2, 3, 4})), "c.npy");
        CHECK(c.data == std::vector<float>{1, 2, 3, 4});
        // Fortran order: the file holds the columns; the tensor is row-major
        const Tensor f = parse_npy(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", raw<float>({1, 4, 2, 5, 3, 6})), "f.npy");
        CHECK(f.shape == std::vector<std::size_t>{2, 3});
        CHECK(f.data == std::vector<float>{1, 2, 3, 4, 5, 6});
        const Tensor h = parse_npy(npy("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", raw<std::uint16_t>({0x3C00, 0xC000})), "h.npy");
        CHECK(h.data == std::vector<float>{1.0f, -2.0f});
        const Tensor v2 = parse_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), }", raw<float>({7}), 2), "v2.npy");
        CHECK(v2.data == std::vector<float>{7.0f});
    }

    TEST_CASE("npy.broken_files_say_where") {
        const auto fails = [](const std::string& bytes, const std::string& where) {
            CHECK_THROWS_WITH_AS(parse_npy(bytes, "b.npy"), doctest::Contains(where.c_str()), InputError);
        };
        fails("not numpy", "does not start with");
        fails(std::string("\x93NUMPY", 6), "ends inside its header");
        fails(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", raw<std::int32_t>({1})), "at descr");
        fails(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", raw<float>({1})), "at descr");
        fails(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", raw<float>({1, 2, 3})), "at data: the shape 2×2");
        fails(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", ""), "more bytes than any file holds");
        fails(npy("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", raw<float>({1, 2})), "at shape");
        fails(npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", raw<float>({1})), "at fortran_order");
        fails(npy("{'descr': '<f4', 'shape': (1,), }", raw<float>({1})), "no 'fortran_order'");
        fails(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1), }", raw<float>({1})), "at most 4 axes");
        fails(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }", raw<double>({1, 1e39})), "at data[0, 1]");
        fails(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", raw<float>({1, 2, NAN, 4})), "at data[0, 1]: expected a finite");
        std::string cut = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", raw<float>({1}));
        cut[8] = '\xff';  // a header longer than the file
        cut[9] = '\x7f';
        fails(cut, "the file ends before");
        std::string v9 = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", raw<float>({1}));
        v9[6] = 9;
        fails(v9, "format version 9.0");
        // a key twice: numpy keeps the last, so either reading would be another array's
        fails(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (2,), }", raw<float>({1, 2})), "'shape' appears twice");
        fails(npy("{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", raw<float>({1, 2})), "'descr' appears twice");
        fails(npy("{\"descr\": '<f4', 'fortran_order': False, 'shape': (1,), 'fortran_order': True, }", raw<float>({1})), "'fortran_order' appears twice");
    }
}
