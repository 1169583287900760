// Row reductions in PyTorch's order: torch.sum of float32 rows, bit for bit.
#include <cstring>

#include <nlohmann/json.hpp>

#include "attnwalk/ops/rows.hpp"
#include "test_util.hpp"

namespace {

float from_bits(std::uint32_t b) {
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}

}  // namespace

TEST_SUITE("rows") {
    TEST_CASE("rows.sum_matches_torch_bit_for_bit") {
        const auto doc = nlohmann::json::parse(test::read_file(test::source_path("tests/golden/torch_sum.json")));
        std::size_t rows = 0, mismatches = 0;
        for (const auto& c : doc.at("rows")) {
            std::vector<float> row;
            for (const auto& b : c.at("row")) row.push_back(from_bits(b.get<std::uint32_t>()));
            const float got = attnwalk::sum_of(row.data(), row.size());
            const float want = from_bits(c.at("sum").get<std::uint32_t>());
            CAPTURE(c.at("n").get<int>());
            CAPTURE(c.at("kind").get<std::string>());
            CHECK(got == want);
            CHECK(from_bits(c.at("sum_dim").get<std::uint32_t>()) == want);  // sum() and sum(dim=-1) agree
            mismatches += got != want;
            ++rows;
        }
        CHECK(rows > 100);
        CHECK(mismatches == 0);
    }
}
