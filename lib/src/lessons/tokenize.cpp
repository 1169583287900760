// The tokenizer's lesson: GPT-2's byte-level BPE on a text, and the labels of token ids.
#include "attnwalk/io/tokenizer.hpp"
#include "attnwalk/lessons/recorder.hpp"
#include "steps.hpp"

namespace attnwalk {

ATTNWALK_LESSON(tokenize, 230) {
    static const LessonDecl lesson{"tokenize", "Byte-level BPE (GPT-2's, or a tokenizer.json): a text cut into pieces and tokens, with their ids.",
        {
            {"token_ids", "the input's token ids", headline},
        }};
    return lesson;
}

namespace {

using ull = unsigned long long;

// A text for labels: spaces as ␣, and the bytes of an incomplete UTF-8 character (a
// token may hold part of one) as <E6>.
std::string shown(const std::string& text) {
    std::string out;
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    for (std::size_t i = 0; i < text.size();) {
        const unsigned char c = b(i);
        const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        bool ok = n > 0 && i + n <= text.size();
        for (std::size_t k = 1; ok && k < n; ++k) ok = (b(i + k) & 0xC0) == 0x80;
        if (!ok) {
            static const char* hex = "0123456789ABCDEF";
            out += std::string("<") + hex[c >> 4] + hex[c & 15] + ">";
            ++i;
        } else if (c == ' ') {
            out += "␣";
            ++i;
        } else {
            out += text.substr(i, n);
            i += n;
        }
    }
    return out;
}

}  // namespace

std::vector<std::string> token_labels(const std::vector<std::size_t>& ids, const Tokenizer* bpe) {
    std::vector<std::string> out;
    for (std::size_t id : ids) out.push_back(!bpe || id >= bpe->vocab_size() ? "id" + std::to_string(id) : shown(bpe->decode(id)));  // "#N" is a position
    return out;
}

Trace walk_tokenize(const Tokenizer& bpe, const std::string& text) {
    const std::vector<std::size_t> ids = bpe.encode(text);
    Trace trace;
    trace.command = "tokenize";
    trace.tokens = token_labels(ids, &bpe);
    trace.set_param("text", text);
    trace.set_param("num_tokens", static_cast<ull>(ids.size()));
    Recorder rec(trace);
    std::string pieces;
    for (const std::string& p : bpe.pieces(text)) pieces += (pieces.empty() ? "" : " | ") + shown(p);
    rec.add_plain("token_ids", "Token ids", "BPE(pretokenize(text))", integer_tensor({ids.begin(), ids.end()}, {ids.size()}), {Axis::token}).note = "Pre-tokenised as: " + pieces + ". " + bpe.describe();
    steps::check_declared(trace.command, trace.steps);
    return check_finite(std::move(trace));
}

}  // namespace attnwalk
