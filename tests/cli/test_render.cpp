// The renderers of app/: --format torch against PyTorch's own repr().
#include <cmath>

#include <nlohmann/json.hpp>

#include "render_json.hpp"
#include "render_text.hpp"
#include "render_torch.hpp"
#include "test_util.hpp"

namespace {

attnwalk::Tensor tensor_of(const nlohmann::json& j) {
    attnwalk::Tensor t;
    t.shape = j.at("shape").get<std::vector<std::size_t>>();
    for (const auto& v : j.at("data"))
        t.data.push_back(v.is_string() ? (v == "nan" ? NAN : v == "inf" ? INFINITY : -INFINITY) : v.get<float>());
    return t;
}

}  // namespace

TEST_SUITE("render") {
    TEST_CASE("render.torch_repr_matches_pytorch") {
        const auto golden = nlohmann::json::parse(test::read_file(test::source_path("tests/golden/torch_repr.json")));
        for (const auto& g : golden.at("tensors")) {
            const std::string expected = g.at("repr");
            INFO("expected:\n" << expected);
            CHECK(attnwalk::app::torch_repr(tensor_of(g)) == expected);
        }
    }
}
