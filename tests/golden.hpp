// The one golden checker: a case of tests/golden/*.json (made by tests/make_goldens.py
// from PyTorch) against the steps a run produced, whether the library was called
// (tests/lessons, tests/model) or the binary run (tests/cli). Drawn weights and dropout
// masks (the case's "exact" ids) must be equal bit for bit, every other value within
// 1e-5 relative.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attnwalk/trace.hpp"
#include "test_util.hpp"

namespace test {

// One step as a run gave it.
struct GotStep {
    std::vector<std::size_t> shape;
    std::vector<double> data;
};
using StepLookup = std::function<std::optional<GotStep>(const std::string& id)>;

inline nlohmann::json golden_cases(const std::string& file) {
    return nlohmann::json::parse(read_file(source_path("tests/golden/" + file))).at("cases");
}

inline void check_golden_case(const nlohmann::json& c, const StepLookup& lookup) {
    std::set<std::string> exact;
    for (const auto& e : c.at("exact")) exact.insert(e.get<std::string>());
    for (const auto& [id, expected] : c.at("expect").items()) {
        CAPTURE(id);
        const std::optional<GotStep> got = lookup(id);
        REQUIRE_MESSAGE(got.has_value(), "missing step " << id);
        CHECK(got->shape == expected.at("shape").get<std::vector<std::size_t>>());
        std::vector<double> want;
        const std::function<void(const nlohmann::json&)> flatten = [&](const nlohmann::json& v) {
            if (v.is_array())
                for (const auto& x : v) flatten(x);
            else if (v.is_string()) want.push_back(v == "nan" ? NAN : v == "-inf" ? -INFINITY : INFINITY);
            else want.push_back(v.get<double>());
        };
        flatten(expected.at("data"));
        REQUIRE(got->data.size() == want.size());
        if (exact.count(id)) {
            // JSON carries the shortest text that reads back to the same float32.
            for (std::size_t i = 0; i < want.size(); ++i) CHECK(static_cast<float>(got->data[i]) == static_cast<float>(want[i]));
        } else {
            CHECK_CLOSE_ALL(got->data, want, 1e-5);
        }
    }
}

// The same for a trace the library returned.
inline void check_golden_case(const nlohmann::json& c, const attnwalk::Trace& trace) {
    check_golden_case(c, [&](const std::string& id) -> std::optional<GotStep> {
        for (const attnwalk::Step& s : trace.steps)
            if (s.id == id) return GotStep{s.tensor.shape, std::vector<double>(s.tensor.data.begin(), s.tensor.data.end())};
        return std::nullopt;
    });
}

}  // namespace test
