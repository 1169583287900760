#include "attnwalk/io/did_you_mean.hpp"

#include <algorithm>
#include <utility>

namespace attnwalk {

std::size_t edit_distance(const std::string& a, const std::string& b, bool swaps) {
    // row[j]: the edits from a's first i characters to b's first j; above and before: i − 1, i − 2
    std::vector<std::size_t> before(b.size() + 1), above(b.size() + 1), row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::swap(before, above);
        std::swap(above, row);
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            row[j] = std::min({above[j] + 1, row[j - 1] + 1, above[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (swaps && i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], before[j - 2] + 1);
        }
    }
    return row[b.size()];
}

std::vector<std::string> closest(const std::string& name, const std::vector<std::string>& known, std::size_t n, std::size_t max_distance) {
    std::vector<std::pair<std::size_t, std::string>> ranked;
    for (const auto& k : known) ranked.emplace_back(edit_distance(name, k), k);
    std::sort(ranked.begin(), ranked.end());
    std::vector<std::string> out;
    for (std::size_t i = 0; i < ranked.size() && i < n && ranked[i].first <= max_distance; ++i) out.push_back(ranked[i].second);
    return out;
}

}  // namespace attnwalk
