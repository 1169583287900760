// What the tests that run the binary share: its JSON output, one step of it, a step's data
// flattened (with "nan", "inf", "-inf" read back).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace test {

using nlohmann::json;

inline json run_json(const std::string& args) {
    const auto r = run(args + " --json");
    INFO("attnwalk " << args << "\nstderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
}

inline const json& step(const json& doc, const std::string& id) {
    for (const auto& s : doc.at("steps"))
        if (s.at("id") == id) return s;
    FAIL("no step " << id);
    static json none;
    return none;
}

inline std::vector<double> flat(const json& data) {
    std::vector<double> out;
    if (data.is_array()) {
        for (const auto& v : data) {
            const auto inner = flat(v);
            out.insert(out.end(), inner.begin(), inner.end());
        }
    } else if (data.is_string()) {
        const auto s = data.get<std::string>();
        out.push_back(s == "nan" ? NAN : s == "-inf" ? -INFINITY : INFINITY);
    } else {
        out.push_back(data.get<double>());
    }
    return out;
}

}  // namespace test
