// The safetensors reader: a well-formed file read back in each dtype, and every kind of
// malformed file refused with one InputError that names the place.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <unistd.h>
#include <cstring>
#include <string>
#include <vector>

#include "attnwalk/errors.hpp"
#include "attnwalk/lessons/lessons.hpp"
#include "attnwalk/model/model.hpp"
#include "attnwalk/io/json_input.hpp"
#include "attnwalk/io/safetensors.hpp"
#include "test_util.hpp"

using namespace attnwalk;

namespace {

// A file from a header text and raw data bytes.
std::string file_of(const std::string& header, const std::string& data, std::uint64_t claimed = 0) {
    const std::uint64_t n = claimed ? claimed : header.size();
    std::string bytes;
    for (int i = 0; i < 8; ++i) bytes += static_cast<char>((n >> (8 * i)) & 0xFF);
    return test::temp_file(bytes + header + data, ".safetensors");
}

std::string f32(const std::vector<float>& v) {
    std::string out(v.size() * 4, '\0');
    if (!v.empty()) std::memcpy(&out[0], v.data(), out.size());  // little-endian hosts (x86-64, aarch64)
    return out;
}

// A GPT-2 checkpoint with Hugging Face's names: width C, L layers, vocab 8, context 4,
// every weight `value`; the tensors named in `drop` left out, those in `extra` added
// (value 2·`value`).
using Shapes = std::vector<std::pair<std::string, std::vector<std::size_t>>>;
std::string gpt2_file(std::size_t C, std::size_t L, const std::vector<std::string>& drop = {}, const Shapes& extra = {},
                      float value = 0.01f) {
    Shapes t = {{"wte.weight", {8, C}}, {"wpe.weight", {4, C}}, {"ln_f.weight", {C}}, {"ln_f.bias", {C}}};
    for (std::size_t l = 0; l < L; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        for (const auto& [name, shape] : Shapes{{"ln_1.weight", {C}}, {"ln_1.bias", {C}}, {"ln_2.weight", {C}}, {"ln_2.bias", {C}},
                                                 {"attn.c_attn.weight", {C, 3 * C}}, {"attn.c_attn.bias", {3 * C}},
                                                 {"attn.c_proj.weight", {C, C}}, {"attn.c_proj.bias", {C}},
                                                 {"mlp.c_fc.weight", {C, 4 * C}}, {"mlp.c_fc.bias", {4 * C}},
                                                 {"mlp.c_proj.weight", {4 * C, C}}, {"mlp.c_proj.bias", {C}}})
            t.emplace_back(h + name, shape);
    }
    std::string header = "{", data;
    const auto add = [&](const std::string& name, const std::vector<std::size_t>& shape, float v) {
        std::size_t n = 1;
        std::string dims;
        for (std::size_t d : shape) {
            n *= d;
            dims += (dims.empty() ? "" : ", ") + std::to_string(d);
        }
        header += std::string(header.size() > 1 ? ", " : "") + "\"" + name + "\": {\"dtype\": \"F32\", \"shape\": [" + dims +
                  "], \"data_offsets\": [" + std::to_string(data.size()) + ", " + std::to_string(data.size() + 4 * n) + "]}";
        data += f32(std::vector<float>(n, v));
    };
    for (const auto& [name, shape] : t)
        if (std::find(drop.begin(), drop.end(), name) == drop.end()) add(name, shape, value);
    for (const auto& [name, shape] : extra) add(name, shape, 2 * value);
    return file_of(header + "}", data);
}

std::string error_of(const std::string& path) {
    try {
        SafeTensors st(path);
        (void)st.get("a");
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_SUITE("safetensors") {
    TEST_CASE("safetensors.reads_f32_f16_bf16") {
        const std::string data = f32({1.0f, -2.5f, 3.0f, 0.25f}) + std::string("\x00\x3C\x00\xC0\xFF\x7B\x01\x00", 8) +
                                 std::string("\x80\x3F\x20\xC0", 4);
        const std::string path = file_of(
            R"({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},)"
            R"( "h": {"dtype": "F16", "shape": [4], "data_offsets": [16, 24]},)"
            R"( "b": {"dtype": "BF16", "shape": [2], "data_offsets": [24, 28]}, "__metadata__": {"format": "pt"}})",
            data);
        const SafeTensors st(path);
        CHECK(st.entries().size() == 3);
        const Tensor a = st.get("a");
        CHECK(a.shape == std::vector<std::size_t>{2, 2});
        CHECK(a.data == std::vector<float>{1.0f, -2.5f, 3.0f, 0.25f});
        CHECK(st.get("h").data == std::vector<float>{1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24)});
        CHECK(st.get("b").data == std::vector<float>{1.0f, -2.5f});
        CHECK(half_to_float(0x7C00) == INFINITY);
        CHECK(std::isnan(half_to_float(0x7E00)));
        CHECK(half_to_float(0x8000) == 0.0f);
        CHECK(std::signbit(half_to_float(0x8000)));
    }

    TEST_CASE("safetensors.sixteen_bit_values_at_an_odd_offset_read_as_they_are") {
        // one byte before "b": its BF16 values lie at an odd offset, which direct16 cannot hand
        // out; read_raw16 gives the same 16-bit values, unconverted
        const std::string data = std::string("\x07", 1) + std::string("\x80\x3F\x20\xC0", 4) + std::string("\x00\x3C\x00\xC0", 4);
        const std::string path = file_of(R"({"b": {"dtype": "BF16", "shape": [2], "data_offsets": [1, 5]},)"
                                         R"( "h": {"dtype": "F16", "shape": [2], "data_offsets": [5, 9]}})",
                                         data);
        const SafeTensors st(path);
        std::uint16_t b[2] = {}, h[2] = {};
        st.read_raw16("b", b);
        st.read_raw16("h", h);
        CHECK(b[0] == 0x3F80);
        CHECK(b[1] == 0xC020);
        CHECK(h[0] == 0x3C00);
        CHECK(h[1] == 0xC000);
        CHECK(st.get("b").data == std::vector<float>{1.0f, -2.5f});
        CHECK_THROWS_WITH_AS(st.read_raw16("x", b), doctest::Contains("missing tensor"), InputError);
    }

    TEST_CASE("safetensors.a_header_of_many_entries_is_read_as_it_is_parsed") {
        // each tensor's entry taken as its member is read: the same checks, names given twice refused
        CHECK_THROWS_WITH_AS(SafeTensors(file_of(R"({"a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]},)"
                                                 R"( "a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}})",
                                                 "")),
                             doctest::Contains("duplicate key \"a\""), InputError);
        CHECK_THROWS_WITH_AS(SafeTensors(file_of(R"({"__metadata__": {}, "__metadata__": {}})", "")), doctest::Contains("duplicate key"),
                             InputError);
        CHECK_THROWS_WITH_AS(SafeTensors(file_of(R"([1, 2])", "")), doctest::Contains("must be a JSON object"), InputError);
        CHECK_THROWS_WITH_AS(SafeTensors(file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", std::string(4, '\0'))),
                             doctest::Contains("needs 8 bytes"), InputError);
    }

    TEST_CASE("safetensors.touching_the_pages_in_the_background_changes_nothing_and_stops_with_the_file") {
        std::vector<float> big(300000);  // 1.2 MB: some 290 pages
        for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 1000) * 0.5f;
        const std::string path = file_of(R"({"w": {"dtype": "F32", "shape": [300000], "data_offsets": [0, 1200000]}})", f32(big));
        {
            const SafeTensors st(path);
            st.touch_in_background();  // nothing handed out yet: nothing to do
            const float* w = st.direct("w");
            REQUIRE(w != nullptr);
            st.touch_in_background();
            st.touch_in_background();  // once
            CHECK(std::equal(big.begin(), big.end(), w));
        }
        for (int i = 0; i < 20; ++i) {  // gone at once: the thread is stopped and joined
            const SafeTensors st(path);
            (void)st.direct("w");
            st.touch_in_background();
        }
    }

    TEST_CASE("safetensors.weights_held_in_memory_read_the_same_at_the_same_addresses") {
        // 2.5 M floats (10 MB, so at least three whole 2 MiB ranges wherever the file is
        // mapped: four where the mapping starts near a boundary), and a BF16 tensor after
        // them: the pointers handed out before the move read the same values after it; a
        // float32 read after it leaves the pages alone (on moved memory MADV_DONTNEED would
        // zero them); a second call moves nothing
        const std::size_t n = 2500000;
        std::vector<float> big(n);
        for (std::size_t i = 0; i < n; ++i) big[i] = static_cast<float>(i % 4099) * 0.25f - 3.0f;
        std::string data = f32(big);
        const std::vector<std::uint16_t> b16 = {0x3f80, 0xc000, 0x7f80, 0x0001};  // 1, -2, inf, the least subnormal
        for (std::uint16_t v : b16) data += std::string{static_cast<char>(v & 0xFF), static_cast<char>(v >> 8)};
        const std::string header = R"({"w": {"dtype": "F32", "shape": [2500000], "data_offsets": [0, 10000000]},)"
                                   R"( "h": {"dtype": "BF16", "shape": [4], "data_offsets": [10000000, 10000008]}})";
        const SafeTensors st(file_of(header + std::string((8 - header.size() % 8) % 8, ' '), data));  // the data 8-byte aligned: read in place
        const float* w = st.direct("w");
        const std::uint16_t* h = st.direct16("h");
        REQUIRE(w != nullptr);
        REQUIRE(h != nullptr);
        st.touch_in_background();  // stopped by the move
        const std::size_t moved = st.hold_in_memory();
        CHECK(moved >= (std::size_t{6} << 20));
        CHECK(moved % (std::size_t{2} << 20) == 0);
        CHECK(moved <= st.file_size());
        CHECK(st.direct("w") == w);
        CHECK(std::equal(big.begin(), big.end(), w));
        CHECK(std::equal(b16.begin(), b16.end(), h));
        std::vector<float> copy(n);
        st.read_into("w", copy.data());
        CHECK(copy == big);
        CHECK(std::equal(big.begin(), big.end(), w));  // still there after the float32 read
        CHECK(st.hold_in_memory() == 0);  // once
        const SafeTensors small(file_of(R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", f32({1.0f, 2.0f})));
        CHECK(small.hold_in_memory() == 0);  // no whole 2 MiB range: nothing moved
        CHECK(small.get("x").data == std::vector<float>{1.0f, 2.0f});
    }

    TEST_CASE("safetensors.malformed_files_are_one_input_error") {
        const std::string ok = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
        struct Bad {
            std::string path, message;
        };
        const std::vector<Bad> cases = {
            {test::temp_file("abc", ".safetensors"), "too short for a safetensors file: 3 bytes"},
            {file_of(ok, f32({1, 2}), 1ull << 40), "the header claims 1099511627776 bytes"},
            {file_of("{not json", ""), "not valid JSON"},
            {file_of("[1, 2]", ""), "the header must be a JSON object"},
            {file_of(R"({"a": {"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}})", f32({1, 2})), "unknown dtype \"F33\""},
            {file_of(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", f32({1, 2})), "needs 12 bytes, data_offsets give 8"},
            {file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}})", f32({1, 2})), "is not a range inside the 8 bytes"},
            {file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", f32({1, 2})), "is not a range"},
            {file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                     f32({1, 2})),
             "overlaps the data of \"a\""},
            {file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
                     f32({1, 2})),
             "duplicate"},
            {file_of(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", f32({1, 2})), "expected a whole number"},
            {file_of(R"({"a": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]}})", f32({1, 2})), "expected a whole number"},
            {file_of(R"({"a": {"dtype": "F32", "shape": [1e300], "data_offsets": [0, 8]}})", f32({1, 2})), "expected a whole number ≥ 0, got 1e+300"},
            {file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", f32({1, 2})), "expected [begin, end]"},
            {file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8], "extra": 1}})", f32({1, 2})), "extra"},
            {file_of(R"({"a": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}})", f32({1, 2})), "dtype I64 cannot be read as float32"},
            {file_of(R"({"b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", f32({1, 2})), "missing tensor \"a\""},
            {"/nonexistent.safetensors", "cannot open file"},
            {"/tmp", "not a regular file"},
        };
        for (const Bad& b : cases) {
            CAPTURE(b.message);
            const std::string e = error_of(b.path);
            CHECK(e.find(b.message) != std::string::npos);
            CAPTURE(e);
        }
    }

    TEST_CASE("safetensors.gpt2_checkpoints") {
        const Model m = load_gpt2(test::source_path("tests/data/tiny_gpt2_nano_f32.safetensors"), 3);
        const ModelInfo& c = info_of(*m);
        CHECK(c.naming == "nanogpt");
        CHECK(c.layout == "nn.Linear [out, in]");
        CHECK((c.vocab == 40 && c.context == 12 && c.width == 24 && c.layers == 3 && c.heads == 3));
        CHECK(info_of(*load_gpt2(test::source_path("tests/data/tiny_gpt2_hf_f16.safetensors"), 2)).dtype == "F16");
        // C = 16 is no multiple of GPT-2's head size 64: the heads must be given
        CHECK_THROWS_AS(load_gpt2(test::source_path("tests/data/tiny_gpt2_hf_f32.safetensors")), UsageError);
        // a safetensors file that is no GPT-2
        const std::string other = file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", f32({1, 2}));
        CHECK_THROWS_WITH_AS(load_gpt2(other), doctest::Contains("not a GPT-2 checkpoint"), InputError);
    }

    TEST_CASE("safetensors.gpt2_files_that_would_run_silently_wrong_are_refused") {
        CHECK_NOTHROW(load_gpt2(gpt2_file(4, 3), 1));
        // a layer missing, whole or in part: a missing tensor, never a shorter model
        std::vector<std::string> layer1;
        for (const char* n : {"ln_1.weight", "ln_1.bias", "ln_2.weight", "ln_2.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                              "attn.c_proj.weight", "attn.c_proj.bias", "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight",
                              "mlp.c_proj.bias"})
            layer1.push_back(std::string("h.1.") + n);
        CHECK_THROWS_WITH_AS(load_gpt2(gpt2_file(4, 3, layer1), 1), doctest::Contains("missing tensor \"h.1.ln_1.weight\""), InputError);
        CHECK_THROWS_WITH_AS(load_gpt2(gpt2_file(4, 3, {"h.1.ln_1.weight"}), 1), doctest::Contains("missing tensor \"h.1.ln_1.weight\""),
                             InputError);
        // a width of 0: one line, not a division by zero
        CHECK_THROWS_WITH_AS(load_gpt2(gpt2_file(0, 1), 1), doctest::Contains("a width C of 0"), InputError);
        // both naming schemes in one file
        CHECK_THROWS_WITH_AS(load_gpt2(gpt2_file(4, 1, {}, {{"transformer.h.0.ln_1.weight", {4}}}), 1),
                             doctest::Contains("mixes two naming schemes"), InputError);
        // what the model does not read is named
        const Model extra = load_gpt2(gpt2_file(4, 1, {}, {{"h.0.attn.bias", {1, 1, 4, 4}}, {"notes.weight", {2}}}), 1);
        CHECK(info_of(*extra).unused == std::vector<std::string>{"h.0.attn.bias", "notes.weight"});
    }

    TEST_CASE("safetensors.a_nan_weight_is_named_with_its_file") {
        const std::string path = gpt2_file(4, 1, {}, {}, std::nanf(""));
        const Model m = load_gpt2(path, 1);
        const std::string expected = path + ": at $[\"h.0.attn.c_attn.bias\"]: holds NaN";
        CHECK_THROWS_WITH_AS(walk_model(m, {1, 2}, {"a", "b"}, ModelSpec{}, {}), doctest::Contains(expected.c_str()), InputError);
    }

    TEST_CASE("safetensors.a_checkpoint_without_biases_reads_them_as_zeros") {
        std::vector<std::string> biases = {"ln_f.bias"};
        for (const char* n : {"ln_1.bias", "ln_2.bias", "attn.c_attn.bias", "attn.c_proj.bias", "mlp.c_fc.bias", "mlp.c_proj.bias"})
            for (const char* l : {"h.0.", "h.1."}) biases.push_back(std::string(l) + n);
        const Model none = load_gpt2(gpt2_file(4, 2, biases), 1);
        CHECK_FALSE(info_of(*none).biases);
        const Trace a = walk_model(none, {1, 2, 3}, {"a", "b", "c"}, ModelSpec{}, {});
        CHECK(a.steps.back().id == "top_k_probs");
        // one bias missing among the others is a missing tensor
        CHECK_THROWS_WITH_AS(load_gpt2(gpt2_file(4, 2, {"h.1.mlp.c_fc.bias"}), 1), doctest::Contains("missing tensor \"h.1.mlp.c_fc.bias\""),
                             InputError);
    }

    TEST_CASE("safetensors.other_formats_are_named") {
        CHECK_THROWS_WITH_AS(SafeTensors{test::temp_file(std::string("PK\x03\x04") + std::string(60, 'x'), ".pt")},
                             doctest::Contains("zip archive (PyTorch's torch.save format"), InputError);
        CHECK_THROWS_WITH_AS(SafeTensors{test::temp_file(std::string("\x80\x02") + std::string(60, 'x'), ".bin")},
                             doctest::Contains("a Python pickle"), InputError);
        CHECK_THROWS_WITH_AS(SafeTensors{test::temp_file(std::string("GGUF") + std::string(60, 'x'), ".gguf")}, doctest::Contains("GGUF"),
                             InputError);
    }

    TEST_CASE("safetensors.a_fifo_is_refused_without_waiting_for_a_writer") {
        const std::string fifo = test::scratch() + "/st_fifo";
        REQUIRE(test::run_shell("mkfifo " + fifo).exit_code == 0);
        CHECK_THROWS_WITH_AS(SafeTensors{fifo}, doctest::Contains("not a regular file"), InputError);
        std::remove(fifo.c_str());
    }

    TEST_CASE("safetensors.a_header_is_parsed_only_within_the_memory_budget") {
        std::string header = "{";
        for (int i = 0; i < 2000; ++i) header += "\"t" + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},";
        header.back() = '}';
        const std::string path = file_of(header, "");
        CHECK(SafeTensors(path).entries().size() == 2000);  // no budget: read
        const double need = static_cast<double>(header.size()) * SafeTensors::header_bytes_per_byte;
        CHECK(SafeTensors(path, need).entries().size() == 2000);
        CHECK_THROWS_WITH_AS(SafeTensors(path, need - 1.0), doctest::Contains("its header of"), MemoryBudgetError);
        CHECK_THROWS_AS(load_gpt2(path, 2, 1024.0), MemoryBudgetError);
    }
}
