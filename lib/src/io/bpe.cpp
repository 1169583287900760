#include "attnwalk/io/bpe.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/io/json_input.hpp"
#include "byte_level.hpp"

namespace attnwalk {

namespace {

struct CodeRange {
    std::uint32_t first, last;
};
#include "unicode_tables.inc"

template <std::size_t N>
bool in(const CodeRange (&table)[N], std::uint32_t cp) {
    const auto it = std::upper_bound(std::begin(table), std::end(table), cp,
                                     [](std::uint32_t c, const CodeRange& r) { return c < r.first; });
    return it != std::begin(table) && cp <= (it - 1)->last;
}

bool is_letter(std::uint32_t cp) { return in(letter_ranges, cp); }
bool is_number(std::uint32_t cp) { return in(number_ranges, cp); }
// JavaScript's \s (the npm encoder's rule): WhiteSpace and LineTerminator.
bool is_space(std::uint32_t cp) {
    switch (cp) {
        case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0xA0: case 0x1680:
        case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000: case 0xFEFF: return true;
        default: return cp >= 0x2000 && cp <= 0x200A;
    }
}

// One code point of UTF-8 at `i` (invalid bytes read as one code point each, U+FFFD-like).
struct CodePoint {
    std::uint32_t cp;
    std::size_t length;
};
CodePoint next_code_point(const std::string& s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return {0xFFFD, 1};
    std::uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (std::size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return {0xFFFD, 1};
        cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    return {cp, n};
}

using json_input::utf8;

}  // namespace

std::vector<std::string> Bpe::pretokenize(const std::string& text) {
    std::vector<std::string> out;
    std::size_t i = 0;
    const auto cp_at = [&](std::size_t k) { return k < text.size() ? next_code_point(text, k) : CodePoint{0, 0}; };
    // the end of a run of code points from `k` that satisfy `pred`
    const auto run = [&](std::size_t k, auto pred) {
        while (k < text.size()) {
            const CodePoint c = next_code_point(text, k);
            if (!pred(c.cp)) break;
            k += c.length;
        }
        return k;
    };
    const auto other = [](std::uint32_t c) { return !is_space(c) && !is_letter(c) && !is_number(c); };
    while (i < text.size()) {
        // 's 't 're 've 'm 'll 'd
        if (text[i] == '\'') {
            std::size_t len = 0;
            for (const char* suffix : {"s", "t", "re", "ve", "m", "ll", "d"}) {
                const std::string s = suffix;
                if (text.compare(i + 1, s.size(), s) == 0) {
                    len = 1 + s.size();
                    break;
                }
            }
            if (len) {
                out.push_back(text.substr(i, len));
                i += len;
                continue;
            }
        }
        // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`
        const std::size_t start = i, body = text[i] == ' ' ? i + 1 : i;
        const CodePoint first = cp_at(body);
        if (first.length) {
            std::size_t end = body;
            if (is_letter(first.cp)) end = run(body, is_letter);
            else if (is_number(first.cp)) end = run(body, is_number);
            else if (other(first.cp)) end = run(body, other);
            if (end > body) {
                out.push_back(text.substr(start, end - start));
                i = end;
                continue;
            }
        }
        // `\s+(?!\S)|\s+`: a run of whitespace, leaving its last character to the next
        // piece when something other than whitespace follows
        const std::size_t end = run(i, is_space);
        if (end > i) {
            std::size_t stop = end;
            if (end < text.size()) {  // followed by \S: give back one code point, if the run has two or more
                std::size_t last = i, k = i;
                while (k < end) {
                    last = k;
                    k += next_code_point(text, k).length;
                }
                if (last > i) stop = last;
            }
            out.push_back(text.substr(i, stop - i));
            i = stop;
            continue;
        }
        // nothing matched (cannot happen: every code point is a space, letter, number or other)
        const std::size_t n = next_code_point(text, i).length;
        out.push_back(text.substr(i, n));
        i += n;
    }
    return out;
}

namespace {

// encoder.json is one flat object {"piece": id, ...} of 50,257 members: read with a small
// reader of its own (the general JSON reader builds a tree, four times slower here).
class EncoderReader {
public:
    EncoderReader(const std::string& text, const std::string& file) : t_(text), file_(file) {}

    std::vector<std::pair<std::string, std::size_t>> members() {
        std::vector<std::pair<std::string, std::size_t>> out;
        expect('{');
        space();
        if (peek() == '}') return out;
        for (;;) {
            space();
            std::string key = string();
            space();
            expect(':');
            space();
            out.emplace_back(std::move(key), number());
            space();
            if (peek() == ',') {
                ++i_;
                continue;
            }
            expect('}');
            space();
            if (i_ != t_.size()) fail("unexpected text after the object");
            return out;
        }
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw InputError(file_, "byte " + std::to_string(i_), what + " (encoder.json is one object {\"token\": id, ...})");
    }
    char peek() const { return i_ < t_.size() ? t_[i_] : '\0'; }
    void space() {
        while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t')) ++i_;
    }
    void expect(char c) {
        space();
        if (peek() != c) fail(std::string("expected '") + c + "'");
        ++i_;
    }
    unsigned hex4() {
        if (i_ + 4 > t_.size()) fail("a short \\u escape");
        unsigned v = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = t_[i_++];
            v = v * 16 + (c >= '0' && c <= '9' ? unsigned(c - '0') : c >= 'a' && c <= 'f' ? unsigned(c - 'a' + 10)
                          : c >= 'A' && c <= 'F' ? unsigned(c - 'A' + 10) : (fail("a bad \\u escape"), 0u));
        }
        return v;
    }
    std::string string() {
        if (peek() != '"') fail("expected a string");
        ++i_;
        std::string out;
        for (;;) {
            if (i_ >= t_.size()) fail("an unterminated string");
            const char c = t_[i_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("a control character in a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            const char e = i_ < t_.size() ? t_[i_++] : '\0';
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    std::uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && i_ + 1 < t_.size() && t_[i_] == '\\' && t_[i_ + 1] == 'u') {
                        i_ += 2;
                        const unsigned low = hex4();
                        if (low < 0xDC00 || low > 0xDFFF) fail("a lone surrogate");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    } else if (cp >= 0xD800 && cp < 0xE000) {
                        fail("a lone surrogate");
                    }
                    out += utf8(cp);
                    break;
                }
                default: fail("a bad escape");
            }
        }
    }
    std::size_t number() {
        const std::size_t start = i_;
        std::size_t v = 0;
        while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9' && i_ - start < 9) v = v * 10 + std::size_t(t_[i_++] - '0');
        if (i_ == start) fail("expected a token id (a whole number)");
        if (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') fail("a token id too large");
        return v;
    }

    const std::string& t_;
    const std::string& file_;
    std::size_t i_ = 0;
};

}  // namespace

std::shared_ptr<const Bpe> Bpe::load(const std::string& dir, TokenizerUse use) {
    auto b = std::make_shared<Bpe>();
    b->merges_read_ = use == TokenizerUse::encode;
    const std::string enc_path = dir + "/encoder.json", bpe_path = dir + "/vocab.bpe";
    const auto members = EncoderReader(read_text_file(enc_path, true), enc_path).members();
    if (members.empty()) throw InputError(enc_path, "$", "no tokens");
    b->pieces_.resize(members.size());
    std::vector<bool> seen(members.size(), false);
    b->encoder_.reserve(members.size());
    for (const auto& [piece, id] : members) {
        if (id >= members.size())
            throw InputError(enc_path, json_input::member_path("$", piece), "expected an id from 0 to " + std::to_string(members.size() - 1));
        if (seen[id]) throw InputError(enc_path, json_input::member_path("$", piece), "id " + std::to_string(id) + " is given twice");
        if (!b->encoder_.emplace(piece, id).second) throw InputError(enc_path, json_input::member_path("$", piece), "a duplicate token");
        seen[id] = true;
        b->pieces_[id] = piece;
    }
    const std::string merges = read_text_file(bpe_path, true);
    if (b->merges_read_) b->merges_.reserve(50000);
    const auto symbol = [&](const std::string& text) {
        const auto [it, added] = b->symbol_ids_.emplace(text, b->symbols_.size());
        if (added) b->symbols_.push_back(text);
        return it->second;
    };
    std::size_t rank = 0, number = 0;
    for (std::size_t at = 0; at < merges.size();) {
        std::size_t end = merges.find('\n', at);
        if (end == std::string::npos) end = merges.size();
        std::string line = merges.substr(at, end - at);
        at = end + 1;
        ++number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if ((number == 1 && line.rfind("#version", 0) == 0) || line.empty()) continue;
        if (!json_input::valid_utf8(line)) throw InputError(bpe_path, "line " + std::to_string(number), "not UTF-8 text");
        const auto space = line.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 >= line.size() || line.find(' ', space + 1) != std::string::npos)
            throw InputError(bpe_path, "line " + std::to_string(number), "expected two symbols separated by one space");
        if (!b->merges_read_) continue;  // read for its syntax alone
        const std::string first = line.substr(0, space), second = line.substr(space + 1);
        const std::size_t left = symbol(first), right = symbol(second), merged = symbol(first + second);
        b->merges_.insert(bpe_merge::key(left, right), bpe_merge::Rule{static_cast<std::uint32_t>(rank++), static_cast<std::uint32_t>(merged)});  // the first rank of a pair wins
    }
    return b;
}

double Bpe::memory_bytes() const {
    const auto keyed = [](const auto& entry) { return string_bytes(entry.first); };
    double bytes = hash_map_bytes(encoder_, keyed) + hash_map_bytes(symbol_ids_, keyed) +
                   merges_.memory_bytes();
    for (const std::string& p : pieces_) bytes += string_bytes(p);
    for (const std::string& p : symbols_) bytes += string_bytes(p);
    return bytes;
}

std::vector<std::string> Bpe::bpe(const std::string& piece) const {
    std::vector<std::string> chars;  // its characters (each a UTF-8 string)
    std::vector<std::size_t> word;   // as symbols; one no merge names gets a number of its own
    for (std::size_t i = 0; i < piece.size();) {
        const std::size_t n = next_code_point(piece, i).length;
        chars.push_back(piece.substr(i, n));
        const auto it = symbol_ids_.find(chars.back());
        word.push_back(it != symbol_ids_.end() ? it->second : symbols_.size() + chars.size() - 1);
        i += n;
    }
    bpe_merge::merge(word, merges_);
    std::vector<std::string> out;
    out.reserve(word.size());
    for (std::size_t s : word) out.push_back(s < symbols_.size() ? symbols_[s] : chars[s - symbols_.size()]);
    return out;
}

namespace {
const std::string end_of_text = "<|endoftext|>";  // GPT-2's one special token, matched before the rest (as Hugging Face does)

// The text cut at <|endoftext|>: the pieces between, the token itself as its own piece.
std::vector<std::string> split_special(const std::string& text) {
    std::vector<std::string> out;
    std::size_t at = 0;
    for (std::size_t found = text.find(end_of_text); found != std::string::npos; found = text.find(end_of_text, at)) {
        if (found > at) out.push_back(text.substr(at, found - at));
        out.push_back(end_of_text);
        at = found + end_of_text.size();
    }
    if (at < text.size()) out.push_back(text.substr(at));
    return out;
}
}  // namespace

std::vector<std::string> Bpe::pieces(const std::string& text) const {
    if (!merges_read_) throw std::logic_error("this GPT-2 tokenizer was read to decode ids alone");
    std::vector<std::string> out;
    for (const std::string& part : split_special(text)) {
        if (part == end_of_text && encoder_.count(end_of_text)) {
            out.push_back(part);
            continue;
        }
        for (std::string& p : pretokenize(part)) out.push_back(std::move(p));
    }
    return out;
}

std::vector<std::size_t> Bpe::encode(const std::string& text) const {
    if (!merges_read_) throw std::logic_error("this GPT-2 tokenizer was read to decode ids alone: its merges were not read");
    std::vector<std::size_t> ids;
    const auto special = encoder_.find(end_of_text);
    for (const std::string& part : split_special(text)) {
        if (part == end_of_text && special != encoder_.end()) {
            ids.push_back(special->second);
            continue;
        }
        for (const std::string& piece : pretokenize(part)) {
            for (const std::string& symbol : bpe(byte_level::encode(piece))) {
                const auto it = encoder_.find(symbol);
                if (it == encoder_.end()) throw InputError("encoder.json", "$", "no id for the BPE symbol \"" + symbol + "\"");
                ids.push_back(it->second);
            }
        }
    }
    return ids;
}

std::string Bpe::describe() const {
    return "Each piece's UTF-8 bytes are merged by rank (vocab.bpe) into tokens (encoder.json); ␣ is a space, which GPT-2's tokens carry in "
           "front; <|endoftext|> is one token (50256), as in Hugging Face's tokenizer.";
}

std::string Bpe::decode(std::size_t id) const {
    return id < pieces_.size() ? byte_level::decode(pieces_[id]) : "";  // special tokens spell themselves
}

}  // namespace attnwalk
