// The renderers of app/: --format torch against PyTorch's own repr().
#include <cmath>
#include <sstream>

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

    TEST_CASE("render.whole_numbers_print_without_decimals_and_huge_ones_in_scientific_notation") {
        attnwalk::Trace trace;
        trace.command = "test";
        attnwalk::Step table;
        table.id = "table";
        table.tensor.shape = {2, 3};
        table.tensor.data = {2, 1, 3.4e38f, 10, 12, -0.25f};
        table.tensor.integer_columns = 2;  // layer, head, then a measured number
        table.axes = {attnwalk::Axis::rank, attnwalk::Axis::feature};
        table.labels = {"layer", "head", "value"};
        trace.steps.push_back(table);
        std::ostringstream text, json;
        attnwalk::app::render_text(trace, {}, text);
        CAPTURE(text.str());
        CHECK(text.str().find("3.4000e+38") != std::string::npos);  // not 39 digits
        CHECK(text.str().find("-0.2500") != std::string::npos);
        CHECK(text.str().find("2.0000") == std::string::npos);
        CHECK(text.str().find("1.      2     1") != std::string::npos);  // rank 1., layer 2, head 1
        attnwalk::app::render_json(trace, json);
        const auto doc = nlohmann::json::parse(json.str());
        const auto& data = doc.at("steps").at(0).at("data");
        CHECK(data.at(1).at(0).is_number_unsigned());
        CHECK(data.at(1).at(0) == 10);
        CHECK(data.at(1).at(2).is_number_float());
        CHECK(doc.at("steps").at(0).at("axes").at(0) == "rank");
    }
}
