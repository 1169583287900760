#include "attnwalk/io/bpe_merge.hpp"

#include <functional>
#include <queue>

namespace attnwalk::bpe_merge {

void merge(std::vector<std::size_t>& word, const Rules& rules) {
    const long n = static_cast<long>(word.size());
    if (n < 2) return;
    std::vector<long> prev(word.size()), next(word.size());
    std::vector<bool> alive(word.size(), true);
    for (long k = 0; k < n; ++k) {
        prev[static_cast<std::size_t>(k)] = k - 1;
        next[static_cast<std::size_t>(k)] = k + 1 < n ? k + 1 : -1;
    }
    struct Candidate {
        std::size_t rank;
        long at;  // the left symbol's position
        std::size_t left, right, merged;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : at > o.at; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    const auto consider = [&](long at) {
        if (at < 0) return;
        const long right = next[static_cast<std::size_t>(at)];
        if (right < 0) return;
        const std::size_t a = word[static_cast<std::size_t>(at)], b = word[static_cast<std::size_t>(right)];
        if (const Rule* rule = rules.find(key(a, b))) heap.push({rule->rank, at, a, b, rule->merged});
    };
    for (long k = 0; k + 1 < n; ++k) consider(k);
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        const auto at = static_cast<std::size_t>(c.at);
        if (!alive[at] || word[at] != c.left || next[at] < 0) continue;
        const auto right = static_cast<std::size_t>(next[at]);
        if (word[right] != c.right) continue;  // stale: one side was merged since
        word[at] = c.merged;
        alive[right] = false;
        next[at] = next[right];
        if (next[right] >= 0) prev[static_cast<std::size_t>(next[right])] = c.at;
        consider(prev[at]);
        consider(c.at);
    }
    std::vector<std::size_t> out;
    for (long k = 0; k >= 0; k = next[static_cast<std::size_t>(k)]) out.push_back(word[static_cast<std::size_t>(k)]);
    word = std::move(out);
}

}  // namespace attnwalk::bpe_merge
