#include "attnwalk/ops/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnwalk {

std::vector<double> token_probabilities(const float* logits, std::size_t vocab, double temperature) {
    std::vector<double> p(vocab);
    const double mx = *std::max_element(logits, logits + vocab);
    double sum = 0.0;
    for (std::size_t v = 0; v < vocab; ++v) sum += (p[v] = std::exp((logits[v] - mx) / temperature));
    for (double& v : p) v /= sum;
    return p;
}

std::vector<std::size_t> top_k(const float* logits, std::size_t vocab, std::size_t k) {
    std::vector<std::size_t> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    k = std::min(k, vocab);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](std::size_t a, std::size_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    order.resize(k);
    return order;
}

Nucleus nucleus(const std::vector<double>& p, const std::vector<std::size_t>& order, double top_p) {
    Nucleus n;
    while (n.count < order.size() && n.mass < top_p) n.mass += p[order[n.count++]];
    return n;
}

std::size_t argmax(const float* logits, std::size_t vocab) {
    return static_cast<std::size_t>(std::max_element(logits, logits + vocab) - logits);
}

}  // namespace attnwalk
