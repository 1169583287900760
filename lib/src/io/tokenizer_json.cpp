// Hugging Face's tokenizer.json, model type BPE, as the `tokenizers` library runs it:
//
//   added tokens are cut out of the raw text first (<|begin_of_text|>, <|im_start|>, …);
//   each remaining span: normalizer (NFC, Replace, Prepend, Sequence) -> pre-tokenizer
//   (Split on a regex or a string, ByteLevel, Digits, Sequence) -> BPE on each piece
//   (merges by rank, lowest first and leftmost among equals, through a heap: O(n log n);
//   ignore_merges; byte fallback <0xNN>; unk) -> post-processor (TemplateProcessing's
//   special tokens, ByteLevel).
//
// The regexes are Oniguruma's in the file; PCRE2 (UTF, Unicode properties) reads the ones
// today's tokenizers use (\p{L}, \p{N}, (?i:…), (?!…)). NFC is utf8proc's.
//
// Over 600 lines on purpose: the reading of the file and the running of its pipeline check
// each other (a normalizer or pre-tokenizer is accepted only in the forms the runner
// implements, with the place in the file named), and they share one class's state; split,
// each half would restate the other's list of supported forms.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <unordered_map>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/io/json_input.hpp"
#include "attnwalk/io/tokenizer.hpp"
#include "attnwalk/io/bpe_merge.hpp"
#include "byte_level.hpp"
#include "attnwalk/io/string_ids.hpp"
#include "tokenizer_parts.hpp"

namespace attnwalk {

namespace {

using json_input::Value;

// The length of the UTF-8 character at `i` of valid text.
std::size_t char_length(const std::string& s, std::size_t i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    return c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
}

void check_utf8(const std::string& text) {
    utf8proc_int32_t cp;
    for (std::size_t i = 0; i < text.size();) {
        const utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
                                                    static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
        if (n <= 0) throw UsageError("the text is not UTF-8 (byte " + std::to_string(i) + "): a tokenizer.json tokenizer reads Unicode text");
        i += static_cast<std::size_t>(n);
    }
}

// One compiled PCRE2 pattern.
class Regex {
public:
    Regex(const std::string& pattern, const std::string& file, const std::string& path) : file_(file), path_(path) {
        int code = 0;
        PCRE2_SIZE offset = 0;
        re_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), pattern.size(), PCRE2_UTF | PCRE2_UCP, &code, &offset, nullptr);
        if (!re_) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(code, message, sizeof message);
            throw InputError(file, path, "the regex does not compile at offset " + std::to_string(offset) + ": " +
                                             reinterpret_cast<const char*>(message));
        }
        data_ = pcre2_match_data_create_from_pattern(re_, nullptr);
    }
    ~Regex() {
        pcre2_match_data_free(data_);
        pcre2_code_free(re_);
    }
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;
    // Every match of valid UTF-8 text as [begin, end) (empty matches skipped).
    std::vector<std::pair<std::size_t, std::size_t>> matches(const std::string& text) const {
        std::vector<std::pair<std::size_t, std::size_t>> out;
        std::size_t at = 0;
        while (at <= text.size()) {
            const int rc = pcre2_match(re_, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), at, PCRE2_NO_UTF_CHECK, data_, nullptr);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) {  // e.g. the match limit of a pattern that backtracks without end
                PCRE2_UCHAR message[256];
                pcre2_get_error_message(rc, message, sizeof message);
                throw InputError(file_, path_, std::string("the regex fails on this text: ") + reinterpret_cast<const char*>(message));
            }
            const PCRE2_SIZE* v = pcre2_get_ovector_pointer(data_);
            if (v[1] > v[0]) {
                out.emplace_back(v[0], v[1]);
                at = v[1];
            } else {
                if (v[0] >= text.size()) break;
                at = v[0] + char_length(text, v[0]);
            }
        }
        return out;
    }

private:
    std::string file_, path_;
    pcre2_code* re_ = nullptr;
    pcre2_match_data* data_ = nullptr;  // one tokenizer is used by one thread at a time
};

const char* const gpt2_pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    if (from.empty()) return s;
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    return s;
}

struct Normalizer {
    enum class Kind { nfc, nfkc, nfd, replace, prepend };
    Kind kind;
    std::string from, to;  // replace; prepend: `to`
};

struct PreTokenizer {
    enum class Kind { split, byte_level, digits };
    enum class Behavior { isolated, removed, merged_with_previous, merged_with_next };
    Kind kind;
    std::shared_ptr<const Regex> regex;  // split (a regex, or a string escaped), byte_level with use_regex
    Behavior behavior = Behavior::isolated;
    bool add_prefix_space = false, individual_digits = false;
};

// One rule for every id: a whole number from 0 to 10^8 − 1, or an error naming it. `at`
// gives the id's place, written out only for an error (not once per entry of a
// 128,000-token vocabulary).
template <class At>
std::size_t token_id(const std::string& file, const Value* id, const At& at) {
    if (!id || id->type != Value::Type::number || !(id->number >= 0.0 && id->number < 1e8) || id->number != std::floor(id->number))
        throw InputError(file, at(), "expected a token id (a whole number from 0 to 99999999), got " +
                                         (id && id->type == Value::Type::number ? json_input::number_text(id->number)
                                                                                : id ? json_input::type_name(*id) : std::string("nothing")));
    return static_cast<std::size_t>(id->number);
}

// $.model.vocab and $.model.merges as the parser hands them over, entry by entry
// (json_input::Stream): no Value is kept for any of them.
struct Tables {
    explicit Tables(const std::string& path) : file(path) {}
    // "token": id
    bool add_token(const std::string& token, const Value& id) {
        const std::size_t i = token_id(file, &id, [&] { return json_input::member_path("$.model.vocab", token); });
        if (!vocab.insert(token, i)) return false;  // the parser names the duplicate key
        if (i >= seen.size()) seen.resize(std::max(i + 1, 2 * seen.size()), false);
        if (seen[i]) throw InputError(file, json_input::member_path("$.model.vocab", token), "id " + std::to_string(i) + " is given twice");
        seen[i] = true;
        size = std::max(size, i + 1);
        return true;
    }
    // "a b" or ["a", "b"], kept as text until the whole vocabulary is known
    void add_merge(std::size_t rank, const Value& m) {
        const auto at = [&] { return "$.model.merges[" + std::to_string(rank) + "]"; };
        if (m.type == Value::Type::string) {
            const std::size_t space = m.string.find(' ');
            if (space == std::string::npos || space == 0 || space + 1 >= m.string.size() || m.string.find(' ', space + 1) != std::string::npos)
                throw InputError(file, at(), "expected two symbols separated by one space");
            merge_text.append(m.string, 0, space);
            merge_ends.push_back(static_cast<std::uint32_t>(merge_text.size()));
            merge_text.append(m.string, space + 1, std::string::npos);
        } else if (m.type == Value::Type::array && m.array.size() == 2 && m.array[0].type == Value::Type::string &&
                   m.array[1].type == Value::Type::string) {
            merge_text.append(m.array[0].string);
            merge_ends.push_back(static_cast<std::uint32_t>(merge_text.size()));
            merge_text.append(m.array[1].string);
        } else {
            throw InputError(file, at(), "expected \"a b\" or [\"a\", \"b\"]");
        }
        if (merge_text.size() > 0xffffffffu) throw InputError(file, at(), "the merges hold more than 4 GiB of text");
        merge_ends.push_back(static_cast<std::uint32_t>(merge_text.size()));
    }

    // Deferred faults: a tokenizer.json is refused in the order its reader checks it (its
    // syntax first, then the model's type, then the vocabulary, then the merges), whatever
    // order the parser meets them in.
    template <class Read>
    void deferred(std::exception_ptr& fault, const Read& read) {
        if (fault) return;
        try {
            read();
        } catch (...) {
            fault = std::current_exception();
        }
    }

    const std::string& file;
    std::string source = "tokenizer.json";  // where the tables came from, for describe()
    std::exception_ptr vocab_fault, merges_fault;
    StringIds vocab;
    std::vector<bool> seen;  // the ids given so far
    std::size_t size = 0;    // 1 + the largest id
    bool merges_read = true;
    std::string merge_text;                 // every merge's two symbols, one after the other
    std::vector<std::uint32_t> merge_ends;  // where each symbol ends in merge_text: two per merge
};

class JsonTokenizer : public Tokenizer {
public:
    JsonTokenizer(const std::string& file, const Value& doc, Tables&& tables);

    std::vector<std::size_t> encode(const std::string& text) const override {
        if (!merges_read_) throw std::logic_error("this tokenizer.json was read to decode ids alone: its merges were not read");
        check_utf8(text);
        std::vector<std::size_t> ids = prefix_;
        for (const Span& span : split_added(text)) {
            if (span.added) {
                ids.push_back(span.id);
                continue;
            }
            for (const std::string& piece : pretokenize(normalize(span.text))) bpe(piece, ids);
        }
        ids.insert(ids.end(), suffix_.begin(), suffix_.end());
        return ids;
    }

    std::string decode(std::size_t id) const override {
        if (id >= pieces_.size()) return "";
        const std::string& piece = pieces_[id];
        if (byte_level_decoder_) return byte_level::decode(piece);
        if (byte_fallback_ && !added_ids_.count(id) && piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>' &&
            std::isxdigit(static_cast<unsigned char>(piece[3])) && std::isxdigit(static_cast<unsigned char>(piece[4])))
            return std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));  // a byte of byte fallback
        std::string out = piece;
        for (const auto& [from, to] : decode_replace_) out = replace_all(out, from, to);
        return out;
    }

    std::size_t vocab_size() const override { return pieces_.size(); }

    std::vector<std::string> pieces(const std::string& text) const override {
        if (!merges_read_) throw std::logic_error("this tokenizer.json was read to decode ids alone");
        check_utf8(text);
        std::vector<std::string> out;
        for (const Span& span : split_added(text)) {
            if (span.added) {
                out.push_back(span.text);
                continue;
            }
            for (const std::string& piece : pretokenize(normalize(span.text)))
                out.push_back(byte_level_pre_ ? byte_level::decode(piece) : piece);  // shown as the bytes they stand for
        }
        return out;
    }

    std::string describe() const override { return description_; }

private:
    struct Span {
        std::string text;
        bool added = false;
        std::size_t id = 0;
    };
    struct Added {
        std::string content;
        std::size_t id;
        bool lstrip, rstrip;
    };

    // The text cut at the added tokens: at each position the longest one that starts there.
    std::vector<Span> split_added(const std::string& text) const {
        std::vector<Span> out;
        std::string plain;
        for (std::size_t i = 0; i < text.size();) {
            const Added* best = nullptr;
            const auto range = added_by_first_.equal_range(static_cast<unsigned char>(text[i]));
            for (auto it = range.first; it != range.second; ++it) {
                const Added& a = added_[it->second];
                if (text.compare(i, a.content.size(), a.content) == 0 && (!best || a.content.size() > best->content.size())) best = &a;
            }
            if (!best) {
                plain += text[i++];
                continue;
            }
            if (best->lstrip)
                while (!plain.empty() && std::isspace(static_cast<unsigned char>(plain.back()))) plain.pop_back();
            if (!plain.empty()) out.push_back({std::move(plain), false, 0});
            plain.clear();
            out.push_back({best->content, true, best->id});
            i += best->content.size();
            if (best->rstrip)
                while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
        }
        if (!plain.empty()) out.push_back({std::move(plain), false, 0});
        return out;
    }

    std::string normalize(std::string s) const {
        for (const Normalizer& n : normalizers_) {
            switch (n.kind) {
                case Normalizer::Kind::nfc:
                case Normalizer::Kind::nfkc:
                case Normalizer::Kind::nfd: {
                    utf8proc_uint8_t* out = nullptr;
                    const int options = UTF8PROC_STABLE | (n.kind == Normalizer::Kind::nfd ? UTF8PROC_DECOMPOSE : UTF8PROC_COMPOSE) |
                                        (n.kind == Normalizer::Kind::nfkc ? UTF8PROC_COMPAT : 0);
                    const utf8proc_ssize_t len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                                              static_cast<utf8proc_ssize_t>(s.size()), &out, static_cast<utf8proc_option_t>(options));
                    if (len < 0) throw UsageError(std::string("the text cannot be normalised: ") + utf8proc_errmsg(len));
                    s.assign(reinterpret_cast<char*>(out), static_cast<std::size_t>(len));
                    std::free(out);
                    break;
                }
                case Normalizer::Kind::replace: s = replace_all(s, n.from, n.to); break;
                case Normalizer::Kind::prepend:
                    if (!s.empty()) s = n.to + s;
                    break;
            }
        }
        return s;
    }

    std::vector<std::string> pretokenize(const std::string& text) const {
        std::vector<std::string> pieces = {text};
        for (const PreTokenizer& p : pre_) {
            std::vector<std::string> next;
            for (const std::string& piece : pieces) {
                if (p.kind == PreTokenizer::Kind::byte_level) {
                    std::string s = p.add_prefix_space && !piece.empty() && piece[0] != ' ' ? " " + piece : piece;
                    std::vector<std::string> parts = p.regex ? split(s, *p.regex, PreTokenizer::Behavior::isolated) : std::vector<std::string>{s};
                    for (const std::string& part : parts) next.push_back(byte_level::encode(part));
                } else if (p.kind == PreTokenizer::Kind::digits) {
                    for (std::string& part : split_digits(piece, p.individual_digits)) next.push_back(std::move(part));
                } else {
                    for (std::string& part : split(piece, *p.regex, p.behavior)) next.push_back(std::move(part));
                }
            }
            pieces = std::move(next);
        }
        return pieces;
    }

    static std::vector<std::string> split(const std::string& s, const Regex& re, PreTokenizer::Behavior behavior) {
        using B = PreTokenizer::Behavior;
        std::vector<std::string> out;
        std::size_t at = 0;
        bool merge_next = false;
        const auto push = [&](std::string piece, bool is_match) {
            if (piece.empty()) return;
            if (merge_next && !out.empty()) {
                out.back() += piece;
                merge_next = false;
                return;
            }
            out.push_back(std::move(piece));
            merge_next = is_match && behavior == B::merged_with_next;
        };
        for (const auto& [b, e] : re.matches(s)) {
            push(s.substr(at, b - at), false);
            const std::string m = s.substr(b, e - b);
            if (behavior == B::isolated) push(m, true);
            else if (behavior == B::merged_with_previous && !out.empty() && at < b) out.back() += m;
            else if (behavior == B::merged_with_previous) push(m, true);
            else if (behavior == B::merged_with_next) {
                merge_next = false;
                out.push_back(m);
                merge_next = true;
            }
            at = e;
        }
        if (merge_next && at < s.size()) {
            out.back() += s.substr(at);
            return out;
        }
        if (at < s.size()) out.push_back(s.substr(at));
        return out;
    }

    static std::vector<std::string> split_digits(const std::string& s, bool individual) {
        std::vector<std::string> out;
        for (std::size_t i = 0; i < s.size();) {
            const bool digit = s[i] >= '0' && s[i] <= '9';
            std::size_t j = i + 1;
            if (!digit || !individual)
                while (j < s.size() && (s[j] >= '0' && s[j] <= '9') == digit) ++j;
            out.push_back(s.substr(i, j - i));
            i = j;
        }
        return out;
    }

    // BPE on one piece, its ids appended to `ids`.
    void bpe(const std::string& piece, std::vector<std::size_t>& ids) const {
        if (piece.empty()) return;
        if (ignore_merges_) {
            if (const auto whole = vocab_.find(piece)) {
                ids.push_back(*whole);
                return;
            }
        }
        std::vector<std::size_t> word;  // the piece's symbols, as token ids
        for (std::size_t i = 0; i < piece.size();) {
            const std::size_t n = char_length(piece, i);
            const std::string ch = piece.substr(i, n);
            i += n;
            if (const auto id = vocab_.find(ch)) {
                word.push_back(*id);
            } else if (byte_fallback_) {
                for (unsigned char c : ch) {
                    static const char* hex = "0123456789ABCDEF";
                    const auto b = vocab_.find(std::string("<0x") + hex[c >> 4] + hex[c & 15] + ">");
                    if (!b) throw InputError(file_, "$.model.vocab", "byte_fallback needs the tokens <0x00> … <0xFF>");
                    word.push_back(*b);
                }
            } else if (unk_) {
                if (!(fuse_unk_ && !word.empty() && word.back() == *unk_)) word.push_back(*unk_);
            } else {
                throw UsageError("the tokenizer has no token for \"" + ch + "\" (no byte fallback, no unk_token)");
            }
        }
        bpe_merge::merge(word, merges_);
        ids.insert(ids.end(), word.begin(), word.end());
    }


public:
    double memory_bytes() const override {
        double bytes = vocab_.memory_bytes() + merges_.memory_bytes();
        for (const std::string& p : pieces_) bytes += string_bytes(p);
        return bytes;
    }

private:
    std::string file_, description_;
    StringIds vocab_;
    std::vector<std::string> pieces_;  // id -> token text
    bpe_merge::Rules merges_;  // (left id, right id) -> (rank, merged id)
    std::vector<Added> added_;
    std::multimap<unsigned char, std::size_t> added_by_first_;
    std::unordered_map<std::size_t, bool> added_ids_;
    std::vector<Normalizer> normalizers_;
    std::vector<PreTokenizer> pre_;
    std::vector<std::size_t> prefix_, suffix_;  // the post-processor's special tokens
    bool merges_read_ = true;  // false: read to decode ids alone
    bool ignore_merges_ = false, byte_fallback_ = false, fuse_unk_ = false, byte_level_decoder_ = false, byte_level_pre_ = false;
    std::optional<std::size_t> unk_;
    std::vector<std::pair<std::string, std::string>> decode_replace_;
};

std::string escape_regex(const std::string& s) {
    std::string out = "\\Q";
    for (std::size_t at = 0;;) {  // \Q…\E, with any \E inside split out
        const std::size_t e = s.find("\\E", at);
        if (e == std::string::npos) {
            out += s.substr(at);
            break;
        }
        out += s.substr(at, e - at) + "\\E\\\\E\\Q";
        at = e + 2;
    }
    return out + "\\E";
}

JsonTokenizer::JsonTokenizer(const std::string& file, const Value& doc, Tables&& tables) : file_(file) {
    vocab_ = std::move(tables.vocab);
    merges_read_ = tables.merges_read;
    if (!doc.is_object()) throw InputError(file, "$", "expected a JSON object (a tokenizer.json)");
    const auto member = [&](const Value& v, const std::string& key) -> const Value* {
        const Value* m = v.find(key);
        return m && m->type != Value::Type::null ? m : nullptr;
    };
    const auto text_of = [&](const Value* v, const std::string& path) {
        if (!v || v->type != Value::Type::string) throw InputError(file, path, "expected a string");
        return v->string;
    };
    const auto flag = [&](const Value& v, const std::string& key) {
        const Value* m = member(v, key);
        return m && m->type == Value::Type::boolean && m->boolean;
    };
    const auto type_of = [&](const Value& v, const std::string& path) { return text_of(v.is_object() ? v.find("type") : nullptr, path + ".type"); };
    // a Split's or Replace's pattern: {"Regex": "…"} or {"String": "…"}, as a regex
    const auto pattern = [&](const Value& v, const std::string& path) {
        const Value* p = v.find("pattern");
        if (!p || !p->is_object()) throw InputError(file, path + ".pattern", "expected {\"Regex\": …} or {\"String\": …}");
        if (const Value* r = p->find("Regex")) return text_of(r, path + ".pattern.Regex");
        return escape_regex(text_of(p->find("String"), path + ".pattern.String"));
    };

    // the model
    const Value* model = member(doc, "model");
    if (!model || !model->is_object()) throw InputError(file, "$.model", "expected the tokenizer's model");
    const std::string kind = type_of(*model, "$.model");
    if (kind != "BPE") throw InputError(file, "$.model.type", "model type \"" + kind + "\" is not supported: BPE is");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
        if (const Value* v = member(*model, key); v && !(v->type == Value::Type::string && v->string.empty()))
            throw InputError(file, std::string("$.model.") + key, "is not supported: expected null or \"\"");
    if (const Value* d = member(*model, "dropout"); d && !(d->type == Value::Type::number && d->number == 0.0))
        throw InputError(file, "$.model.dropout", "BPE dropout is not supported: expected null");
    ignore_merges_ = flag(*model, "ignore_merges");
    byte_fallback_ = flag(*model, "byte_fallback");
    fuse_unk_ = flag(*model, "fuse_unk");
    const Value* vocab = member(*model, "vocab");
    if (!vocab || !vocab->is_object()) throw InputError(file, "$.model.vocab", "expected {\"token\": id, ...}");
    if (tables.vocab_fault) std::rethrow_exception(tables.vocab_fault);
    const auto token_id = [&](const Value* id, const auto& at) { return attnwalk::token_id(file, id, at); };
    std::size_t size = tables.size;
    const Value* added = member(doc, "added_tokens");
    if (added && added->type != Value::Type::array) throw InputError(file, "$.added_tokens", "expected an array");
    if (added)
        for (std::size_t k = 0; k < added->array.size(); ++k)
            size = std::max(size, token_id(added->array[k].find("id"), [&] { return "$.added_tokens[" + std::to_string(k) + "].id"; }) + 1);
    pieces_.assign(size, "");
    vocab_.for_each([&](std::string_view token, std::size_t i) { pieces_[i] = token; });
    if (const Value* unk = member(*model, "unk_token")) {
        const auto id = vocab_.find(text_of(unk, "$.model.unk_token"));
        if (!id) throw InputError(file, "$.model.unk_token", "is not in the vocabulary");
        unk_ = *id;
    }
    const Value* merges = member(*model, "merges");
    if (!merges || merges->type != Value::Type::array) throw InputError(file, "$.model.merges", "expected an array of merges");
    if (tables.merges_fault) std::rethrow_exception(tables.merges_fault);
    // Each merge's three symbols looked up, then its rule inserted. Both tables are larger
    // than the caches (Llama 3's 280,147 merges: 8 MiB of rules), so each pass hashes a few
    // merges ahead and prefetches their slots: the misses overlap instead of queueing.
    const std::size_t count = tables.merge_ends.size() / 2;
    const std::string_view text(tables.merge_text);
    struct Symbols {
        std::string_view left, right;
        std::string both;
        std::uint64_t hashes[3];
    };
    constexpr std::size_t ahead = 8;
    std::vector<Symbols> ring(ahead);
    std::vector<std::uint64_t> pairs(count);
    std::vector<std::uint32_t> merged_ids(count);
    const auto stage = [&](std::size_t rank) {  // the symbols of merge `rank`, hashed and prefetched
        Symbols& s = ring[rank % ahead];
        const std::size_t start = rank ? tables.merge_ends[2 * rank - 1] : 0, middle = tables.merge_ends[2 * rank], end = tables.merge_ends[2 * rank + 1];
        s.left = text.substr(start, middle - start);
        s.right = text.substr(middle, end - middle);
        s.both.assign(s.left).append(s.right);
        s.hashes[0] = StringIds::hash(s.left);
        s.hashes[1] = StringIds::hash(s.right);
        s.hashes[2] = StringIds::hash(s.both);
        for (const std::uint64_t h : s.hashes) vocab_.prefetch(h);
    };
    for (std::size_t rank = 0; rank < std::min(ahead, count); ++rank) stage(rank);
    for (std::size_t rank = 0; rank < count; ++rank) {
        const Symbols& s = ring[rank % ahead];
        const auto l = vocab_.find(s.left, s.hashes[0]), r = vocab_.find(s.right, s.hashes[1]), merged = vocab_.find(s.both, s.hashes[2]);
        if (!l || !r || !merged)
            throw InputError(file, "$.model.merges[" + std::to_string(rank) + "]",
                             "\"" + std::string(!l ? s.left : !r ? s.right : std::string_view(s.both)) + "\" is not in the vocabulary");
        pairs[rank] = bpe_merge::key(*l, *r);
        merged_ids[rank] = static_cast<std::uint32_t>(*merged);
        if (rank + ahead < count) stage(rank + ahead);
    }
    merges_.reserve(count);
    for (std::size_t rank = 0; rank < count; ++rank) {
        if (rank + ahead < count) merges_.prefetch(pairs[rank + ahead]);
        merges_.insert(pairs[rank], bpe_merge::Rule{static_cast<std::uint32_t>(rank), merged_ids[rank]});  // the first rank of a pair wins
    }

    // added tokens, matched in the raw text before anything else
    if (added)
        for (std::size_t k = 0; k < added->array.size(); ++k) {
            const Value& a = added->array[k];
            const std::string at = "$.added_tokens[" + std::to_string(k) + "]";
            const std::string content = text_of(a.find("content"), at + ".content");
            const std::size_t i = token_id(a.find("id"), [&] { return at + ".id"; });
            if (content.empty()) throw InputError(file, at + ".content", "an added token cannot be empty");
            if (pieces_[i].empty()) pieces_[i] = content;
            added_ids_[i] = true;
            added_.push_back({content, i, flag(a, "lstrip"), flag(a, "rstrip")});
            added_by_first_.emplace(static_cast<unsigned char>(content[0]), added_.size() - 1);
        }

    // normalizer
    std::function<void(const Value&, const std::string&)> add_normalizer = [&](const Value& n, const std::string& path) {
        const std::string t = type_of(n, path);
        if (t == "Sequence") {
            const Value* list = n.find("normalizers");
            if (!list || list->type != Value::Type::array) throw InputError(file, path + ".normalizers", "expected an array");
            for (std::size_t k = 0; k < list->array.size(); ++k) add_normalizer(list->array[k], path + ".normalizers[" + std::to_string(k) + "]");
        } else if (t == "NFC") {
            normalizers_.push_back({Normalizer::Kind::nfc, "", ""});
        } else if (t == "NFKC") {
            normalizers_.push_back({Normalizer::Kind::nfkc, "", ""});
        } else if (t == "NFD") {
            normalizers_.push_back({Normalizer::Kind::nfd, "", ""});
        } else if (t == "Replace") {
            const Value* p = n.find("pattern");
            const Value* s = p && p->is_object() ? p->find("String") : nullptr;
            if (!s) throw InputError(file, path + ".pattern", "Replace with a regex is not supported: {\"String\": …} is");
            normalizers_.push_back({Normalizer::Kind::replace, text_of(s, path + ".pattern.String"), text_of(n.find("content"), path + ".content")});
        } else if (t == "Prepend") {
            normalizers_.push_back({Normalizer::Kind::prepend, "", text_of(n.find("prepend"), path + ".prepend")});
        } else {
            throw InputError(file, path + ".type", "normalizer \"" + t + "\" is not supported (NFC, NFKC, NFD, Replace, Prepend, Sequence are)");
        }
    };
    if (const Value* n = member(doc, "normalizer")) add_normalizer(*n, "$.normalizer");

    // pre-tokenizer
    std::function<void(const Value&, const std::string&)> add_pre = [&](const Value& p, const std::string& path) {
        const std::string t = type_of(p, path);
        PreTokenizer step;
        if (t == "Sequence") {
            const Value* list = p.find("pretokenizers");
            if (!list || list->type != Value::Type::array) throw InputError(file, path + ".pretokenizers", "expected an array");
            for (std::size_t k = 0; k < list->array.size(); ++k) add_pre(list->array[k], path + ".pretokenizers[" + std::to_string(k) + "]");
            return;
        }
        if (t == "Split") {
            step.kind = PreTokenizer::Kind::split;
            step.regex = std::make_shared<const Regex>(pattern(p, path), file, path + ".pattern");
            const std::string b = text_of(p.find("behavior"), path + ".behavior");
            if (b == "Isolated") step.behavior = PreTokenizer::Behavior::isolated;
            else if (b == "Removed") step.behavior = PreTokenizer::Behavior::removed;
            else if (b == "MergedWithPrevious") step.behavior = PreTokenizer::Behavior::merged_with_previous;
            else if (b == "MergedWithNext") step.behavior = PreTokenizer::Behavior::merged_with_next;
            else throw InputError(file, path + ".behavior", "\"" + b + "\" is not supported (Isolated, Removed, MergedWithPrevious, MergedWithNext are)");
            if (flag(p, "invert")) throw InputError(file, path + ".invert", "an inverted Split is not supported");
        } else if (t == "ByteLevel") {
            step.kind = PreTokenizer::Kind::byte_level;
            step.add_prefix_space = flag(p, "add_prefix_space");
            const Value* use = p.find("use_regex");
            if (!use || use->type != Value::Type::boolean || use->boolean) step.regex = std::make_shared<const Regex>(gpt2_pattern, file, path);
            byte_level_pre_ = true;
        } else if (t == "Digits") {
            step.kind = PreTokenizer::Kind::digits;
            step.individual_digits = flag(p, "individual_digits");
        } else {
            throw InputError(file, path + ".type", "pre-tokenizer \"" + t + "\" is not supported (Split, ByteLevel, Digits, Sequence are)");
        }
        pre_.push_back(std::move(step));
    };
    if (const Value* p = member(doc, "pre_tokenizer")) add_pre(*p, "$.pre_tokenizer");

    // post-processor: the special tokens it adds around a single text
    std::function<void(const Value&, const std::string&)> add_post = [&](const Value& p, const std::string& path) {
        const std::string t = type_of(p, path);
        if (t == "ByteLevel") return;  // offsets only
        if (t == "Sequence") {
            const Value* list = p.find("processors");
            if (!list || list->type != Value::Type::array) throw InputError(file, path + ".processors", "expected an array");
            for (std::size_t k = 0; k < list->array.size(); ++k) add_post(list->array[k], path + ".processors[" + std::to_string(k) + "]");
            return;
        }
        if (t != "TemplateProcessing") throw InputError(file, path + ".type", "post-processor \"" + t + "\" is not supported (TemplateProcessing, ByteLevel, Sequence are)");
        const Value* single = p.find("single");
        const Value* specials = p.find("special_tokens");
        if (!single || single->type != Value::Type::array) throw InputError(file, path + ".single", "expected an array");
        bool after = false;
        for (std::size_t k = 0; k < single->array.size(); ++k) {
            const Value& item = single->array[k];
            const std::string at = path + ".single[" + std::to_string(k) + "]";
            if (item.find("Sequence")) {
                after = true;
                continue;
            }
            const Value* special = item.find("SpecialToken");
            if (!special) throw InputError(file, at, "expected {\"SpecialToken\": …} or {\"Sequence\": …}");
            const std::string name = text_of(special->find("id"), at + ".SpecialToken.id");
            const Value* entry = specials && specials->is_object() ? specials->find(name) : nullptr;
            const Value* ids = entry ? entry->find("ids") : nullptr;
            if (!ids || ids->type != Value::Type::array) throw InputError(file, path + ".special_tokens", "no ids for \"" + name + "\"");
            for (const Value& id : ids->array) {
                if (id.type != Value::Type::number || id.number < 0 || id.number >= static_cast<double>(pieces_.size()))
                    throw InputError(file, path + ".special_tokens", "an id of \"" + name + "\" is not a token id");
                (after ? suffix_ : prefix_).push_back(static_cast<std::size_t>(id.number));
            }
        }
    };
    if (const Value* p = member(doc, "post_processor")) add_post(*p, "$.post_processor");

    // decoder: ByteLevel, or SentencePiece's Replace(▁ → space) + ByteFallback + Fuse (+ Strip)
    std::function<void(const Value&, const std::string&)> add_decoder = [&](const Value& d, const std::string& path) {
        const std::string t = type_of(d, path);
        if (t == "ByteLevel") byte_level_decoder_ = true;
        else if (t == "Sequence") {
            const Value* list = d.find("decoders");
            if (!list || list->type != Value::Type::array) throw InputError(file, path + ".decoders", "expected an array");
            for (std::size_t k = 0; k < list->array.size(); ++k) add_decoder(list->array[k], path + ".decoders[" + std::to_string(k) + "]");
        } else if (t == "Replace") {
            const Value* p = d.find("pattern");
            const Value* s = p && p->is_object() ? p->find("String") : nullptr;
            if (!s) throw InputError(file, path + ".pattern", "Replace with a regex is not supported");
            decode_replace_.emplace_back(text_of(s, path + ".pattern.String"), text_of(d.find("content"), path + ".content"));
        } else if (t != "ByteFallback" && t != "Fuse" && t != "Strip") {
            throw InputError(file, path + ".type", "decoder \"" + t + "\" is not supported (ByteLevel, Replace, ByteFallback, Fuse, Strip, Sequence are)");
        }
    };
    if (const Value* d = member(doc, "decoder")) add_decoder(*d, "$.decoder");

    description_ = std::string(byte_level_pre_ ? "Byte-level BPE" : "BPE") + " from " + tables.source + " (" + std::to_string(vocab_.size()) +
                   " tokens, " + (merges_read_ ? std::to_string(merges_.size()) + " merges" : std::string("merges not read")) + (byte_fallback_ ? ", byte fallback" : "") + ")" +
                   (prefix_.empty() ? "" : "; the post-processor puts \"" + pieces_[prefix_.front()] + "\" first") + ".";
}

}  // namespace

std::shared_ptr<const Tokenizer> tokenizer_of_parts(const std::string& file, const Value& doc, const std::vector<std::string>& tokens,
                                                    const std::vector<std::string>& merges, TokenizerUse use, const std::string& where) {
    Tables tables(file);
    tables.source = "a GGUF file's " + where.substr(where.find('"') + 1) + ".*";
    tables.merges_read = use == TokenizerUse::encode;
    Value id;
    id.type = Value::Type::number;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        id.number = static_cast<double>(i);
        if (!tables.add_token(tokens[i], id))
            throw InputError(file, where + ".tokens[" + std::to_string(i) + "]", "the token " + json_input::quote(tokens[i]) + " is given twice");
    }
    Value merge;
    merge.type = Value::Type::string;
    for (std::size_t rank = 0; tables.merges_read && rank < merges.size(); ++rank) {
        merge.string = merges[rank];
        const std::size_t space = merge.string.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 >= merge.string.size() || merge.string.find(' ', space + 1) != std::string::npos)
            throw InputError(file, where + ".merges[" + std::to_string(rank) + "]", "expected two symbols separated by one space");
        tables.add_merge(rank, merge);
    }
    return std::make_shared<const JsonTokenizer>(file, doc, std::move(tables));
}

std::shared_ptr<const Tokenizer> load_tokenizer_json(const std::string& path, double memory_budget, TokenizerUse use) {
    const std::string text = read_text_file(path, true);
    json_input::check_parse_budget(path, "text", static_cast<double>(text.size()), memory_budget);
    Tables tables(path);
    tables.merges_read = use == TokenizerUse::encode;
    // an object's members ("token": id) go to the table; an array (another model type's
    // vocabulary) is left for the model's type to refuse
    const auto token = [&tables](const std::string* key, std::size_t, Value&& id) {
        bool fresh = true;
        if (key) tables.deferred(tables.vocab_fault, [&] { fresh = tables.add_token(*key, id); });
        return fresh;
    };
    // an array's elements; an object in its place is left for the reader to refuse
    const auto merge = [&tables](const std::string* key, std::size_t rank, Value&& m) {
        if (!key) tables.deferred(tables.merges_fault, [&] { tables.add_merge(rank, m); });
        return true;
    };
    std::vector<json_input::Stream> streams{{{"model", "vocab"}, token}, {{"model", "merges"}, nullptr}};
    if (tables.merges_read) streams.back().each = merge;  // else read for its syntax alone
    const Value doc = json_input::parse_plain(text, path, streams);
    return std::make_shared<const JsonTokenizer>(path, doc, std::move(tables));
}

}  // namespace attnwalk
