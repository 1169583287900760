// From the logits of the next token to the candidates: the softmax with a temperature,
// the k most likely, nucleus (top-p) sampling's cut, greedy choice.
#pragma once

#include <cstddef>
#include <vector>

namespace attnwalk {

// p = softmax(logits / temperature), in double, max subtracted first.
std::vector<double> token_probabilities(const float* logits, std::size_t vocab, double temperature);
// The k most likely tokens, highest first, ranked by their logits: p = softmax(logits / T)
// follows them at every temperature, and where p rounds to equal values (to 0 at a low
// temperature) the logits still tell them apart. Ties: the smaller id first.
std::vector<std::size_t> top_k(const float* logits, std::size_t vocab, std::size_t k);
// Nucleus sampling: the first `count` of `order` are the smallest prefix whose
// probability `mass` reaches top_p (all of `order` when it never does).
struct Nucleus {
    std::size_t count = 0;
    double mass = 0.0;
};
Nucleus nucleus(const std::vector<double>& p, const std::vector<std::size_t>& order, double top_p);
// Greedy decoding: the id of the largest logit (the first of equals).
std::size_t argmax(const float* logits, std::size_t vocab);

}  // namespace attnwalk
