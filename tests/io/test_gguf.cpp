// The GGUF reader: each type's blocks dequantized exactly as the reference written from
// ggml's dequantize_row_* (tests/make_gguf.py: blocks.gguf and the bits of its floats in
// blocks.f32), and malformed files refused with one InputError naming the key or tensor.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/gguf.hpp"
#include "test_util.hpp"

using namespace attnwalk;

namespace {

std::string u32(std::uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
std::string u64(std::uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }
std::string str(const std::string& s) { return u64(s.size()) + s; }

// A GGUF v3 file of one F32 tensor "t" of 4 weights (unless `tensor` says otherwise) after `kv`.
std::string gguf(const std::string& kv, std::uint64_t n_kv, const std::string& tensor = str("t") + u32(1) + u64(4) + u32(0) + u64(0),
                 std::uint32_t version = 3, std::size_t data = 16) {
    std::string head = "GGUF" + u32(version) + u64(1) + u64(n_kv) + kv + tensor;
    head.resize((head.size() + 31) / 32 * 32, '\0');
    return test::temp_file(head + std::string(data, '\0'), ".gguf");
}

std::string refusal(const std::string& path) {
    try {
        const GgufFile g(path, 1e6);
        return "";
    } catch (const InputError& e) {
        return e.what();
    } catch (const UsageError& e) {
        return std::string("usage: ") + e.what();
    }
}

}  // namespace

TEST_SUITE("io") {
    TEST_CASE("gguf.each_type_dequantizes_as_ggml_does") {
        const GgufFile g(test::source_path("tests/data/gguf/blocks.gguf"));
        const std::string expected = test::read_file(test::source_path("tests/data/gguf/blocks.f32"));  // each tensor's 512 floats, in order
        REQUIRE(g.tensors().size() == 15);
        REQUIRE(expected.size() == 15 * 512 * 4);
        std::size_t k = 0;
        for (const GgufFile::TensorInfo& t : g.tensors()) {
            CAPTURE(t.name);
            REQUIRE(t.count == 512);
            std::vector<float> out(512);
            g.dequantize(t, out.data());
            double max_diff = 0;
            std::size_t differ = 0;
            for (std::size_t i = 0; i < 512; ++i, ++k) {
                std::uint32_t b;
                std::memcpy(&b, expected.data() + 4 * k, 4);  // little-endian, as the machines that run these tests
                float want;
                std::memcpy(&want, &b, 4);
                std::uint32_t got;
                std::memcpy(&got, &out[i], 4);
                differ += got != b;
                max_diff = std::max(max_diff, static_cast<double>(std::fabs(out[i] - want)));
            }
            CHECK_MESSAGE(differ == 0, t.name << ": " << differ << " of 512 floats differ from the reference, max |diff| " << max_diff);
        }
    }

    TEST_CASE("gguf.reads_the_header_and_its_metadata") {
        const GgufFile g(test::source_path("tests/data/gguf/tiny_qwen3_q8_0.gguf"));
        CHECK(g.version() == 3);
        CHECK(g.alignment() == 32);
        CHECK(g.text("general.architecture") == "qwen3");
        CHECK(g.whole("qwen3.embedding_length") == 32);
        CHECK(g.texts("tokenizer.ggml.tokens").size() == 300);
        const GgufFile::TensorInfo* embed = g.tensor("token_embd.weight");
        REQUIRE(embed);
        CHECK(embed->shape() == std::vector<std::size_t>{300, 32});
        CHECK(embed->type == GgmlType::q8_0);
        CHECK(GgufFile::is_gguf(test::source_path("tests/data/gguf/tiny_qwen3_q8_0.gguf")));
        CHECK_FALSE(GgufFile::is_gguf(test::source_path("tests/data/models/tiny_qwen3/config.json")));
    }

    TEST_CASE("gguf.malformed_files_are_refused_by_name") {
        const std::string arch = str("general.architecture") + u32(8) + str("x");
        CHECK(refusal(gguf(arch, 1)).empty());
        CHECK(refusal(gguf(arch, 1, str("t") + u32(1) + u64(4) + u32(0) + u64(0), 4)).find("version 4") != std::string::npos);
        CHECK(refusal(gguf(arch, 1, str("t") + u32(1) + u64(4) + u32(99) + u64(0))).find("ggml type 99") != std::string::npos);
        // a type ggml has but attnwalk does not read is named (IQ2_XXS: a 2-bit type of llama-quantize)
        CHECK(refusal(gguf(arch, 1, str("t") + u32(1) + u64(256) + u32(16) + u64(0))).find("ggml type 16 (IQ2_XXS) is not supported") != std::string::npos);
        CHECK(refusal(gguf(arch, 1, str("t") + u32(1) + u64(33) + u32(20) + u64(0))).find("blocks of 32") != std::string::npos);  // IQ4_NL
        CHECK(refusal(gguf(arch, 1, str("t") + u32(1) + u64(32) + u32(23) + u64(0))).find("IQ4_XS blocks of 256") != std::string::npos);
        CHECK(refusal(gguf(arch, 1, str("t") + u32(1) + u64(8) + u32(0) + u64(0))).find("pass the end") != std::string::npos);
        CHECK(refusal(gguf(arch, 1, str("t") + u32(1) + u64(4) + u32(0) + u64(3))).find("alignment") != std::string::npos);
        CHECK(refusal(gguf(arch, 1, str("t") + u32(1) + u64(33) + u32(8) + u64(0))).find("blocks of 32") != std::string::npos);
        CHECK(refusal(gguf(arch, 1, str("t") + u32(5) + u64(4) + u32(0) + u64(0))).find("1 to 4 dimensions") != std::string::npos);
        const std::string two = str("a") + u32(1) + u64(4) + u32(0) + u64(0) + str("b") + u32(1) + u64(4) + u32(0) + u64(0);
        std::string head = "GGUF" + u32(3) + u64(2) + u64(0) + two;
        head.resize((head.size() + 31) / 32 * 32, '\0');
        CHECK(refusal(test::temp_file(head + std::string(16, '\0'), ".gguf")).find("overlaps") != std::string::npos);
        const std::string huge = str("tokenizer.ggml.tokens") + u32(9) + u32(8) + u64(1ull << 60);
        CHECK(refusal(gguf(huge, 1)).find("tokenizer.ggml.tokens") != std::string::npos);
        CHECK(refusal(gguf(str("general.alignment") + u32(8) + str("x"), 1)).find("expected a u32") != std::string::npos);
        const std::string text = refusal(test::temp_file("GGUF" + u32(3) + u64(0) + u64(1) + str("k") + u32(4), ".gguf"));
        CHECK(text.find("ends inside") != std::string::npos);
        const std::string big = str("k") + u32(9) + u32(4) + u64(1000);  // 1000 u32s: 4 KB in the file
        CHECK(refusal(gguf(big + std::string(4000, '\0'), 1, str("t") + u32(1) + u64(4) + u32(0) + u64(0), 3)).find("usage") == std::string::npos);
        const GgufFile g(gguf(arch, 1));
        CHECK_THROWS_AS(g.whole("general.architecture"), InputError);
        CHECK_THROWS_WITH_AS(g.text("missing.key"), doctest::Contains("missing.key"), InputError);
    }
}

// The quant lesson's blocks: taken apart, their parts rebuild the dequantizer's floats bit
// for bit (walk_quant checks each weight), and ggml's reference quantizers round-trip.
#include "attnwalk/lessons/quant.hpp"

TEST_SUITE("io") {
    TEST_CASE("gguf.blocks_taken_apart_rebuild_the_dequantizer") {
        const std::string path = test::source_path("tests/data/gguf/blocks.gguf");
        const GgufFile g(path);
        for (const char* name : {"q8_0", "q4_0", "q4_k"}) {
            const GgufFile::TensorInfo* t = g.tensor(name);
            REQUIRE(t != nullptr);
            std::vector<float> all(t->count);
            g.dequantize(*t, all.data());
            const std::size_t per = ggml_block_weights(t->type), blocks = t->count / per;
            for (std::size_t b = 0; b < blocks; ++b) {
                CAPTURE(name);
                CAPTURE(b);
                const Trace trace = walk_quant(quant_block_of_file(path, name, b, 1e9));
                const Step* w = nullptr;
                for (const Step& s : trace.steps)
                    if (s.id == "quant_weights") w = &s;
                REQUIRE(w != nullptr);
                REQUIRE(w->tensor.data.size() == per);
                CHECK(std::memcmp(w->tensor.data.data(), all.data() + b * per, per * sizeof(float)) == 0);
            }
        }
        CHECK_THROWS_AS(quant_block_of_file(path, "q6_k", 0, 1e9), InputError);
        CHECK_THROWS_AS(quant_block_of_file(path, "q8_0", 16, 1e9), InputError);
        CHECK_THROWS_AS(quant_block_of_file(path, "nothing", 0, 1e9), InputError);
    }

    TEST_CASE("gguf.reference_quantizers_round_trip") {
        std::vector<float> x(64);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.03f * std::sin(0.37f * static_cast<float>(i)) + (i == 40 ? -0.09f : 0.0f);
        for (GgmlType type : {GgmlType::q8_0, GgmlType::q4_0}) {
            const std::vector<std::uint8_t> q = ggml_quantize(type, x.data(), x.size());
            REQUIRE(q.size() == 2 * ggml_block_bytes(type));
            std::vector<float> back(x.size());
            ggml_dequantize(type, q.data(), back.data(), x.size());
            for (std::size_t b = 0; b < 2; ++b) {
                const float d = std::fabs(ggml_block_parts(type, q.data() + b * ggml_block_bytes(type)).scales[0]);
                for (std::size_t i = 32 * b; i < 32 * b + 32; ++i) {
                    CAPTURE(i);
                    CHECK(std::fabs(back[i] - x[i]) <= (type == GgmlType::q8_0 ? 0.6f : 1.1f) * d);  // half a step (Q4_0: a step at +max)
                }
            }
        }
        CHECK(walk_quant(quant_block_builtin("Q8_0")).steps.size() == 5);
        CHECK(walk_quant(quant_block_builtin("Q4_0")).steps.size() == 5);
        CHECK_THROWS_AS(quant_block_builtin("Q4_K"), UsageError);
    }
}
