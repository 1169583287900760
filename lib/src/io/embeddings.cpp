#include "attnwalk/io/embeddings.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <utility>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/json_input.hpp"
#include "attnwalk/io/npy.hpp"
#include "attnwalk/io/safetensors.hpp"

namespace attnwalk {

namespace {

// The textbook's sentence, compiled in so that every command runs with no arguments.
// data/your_journey.json holds the same text (a test checks that they agree).
const char* const builtin_json_text = R"({
  "tokens": ["Your", "journey", "starts", "with", "one", "step"],
  "embeddings": [
    [0.43, 0.15, 0.89],
    [0.55, 0.87, 0.66],
    [0.57, 0.85, 0.64],
    [0.22, 0.58, 0.33],
    [0.77, 0.25, 0.10],
    [0.05, 0.80, 0.55]
  ]
}
)";

}  // namespace

std::string source_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

std::string read_text_file(const std::string& path, bool regular_only) {
    const std::string name = source_name(path);
    // Every file is opened without waiting: a FIFO with no writer must not block the open.
    const bool standard_input = path == "-";  // (not fd 0: with stdin closed, open() may return 0)
    const int fd = standard_input ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw InputError(path, "", std::string("cannot open file: ") + std::strerror(errno));
    struct Closer {
        int fd;
        bool keep;
        ~Closer() {
            if (!keep) ::close(fd);
        }
    } closer{fd, standard_input};
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw InputError(name, "", std::string("cannot read: ") + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw InputError(name, "", "cannot read: it is a directory");
    if (regular_only && !S_ISREG(st.st_mode)) throw InputError(name, "", "not a regular file");
    // A pipe the user named (a FIFO, `<(command)`) is then read as a stream: to its end when
    // a writer holds it, and at once empty when none does.
    if (!standard_input && !S_ISREG(st.st_mode)) {
        const int flags = ::fcntl(fd, F_GETFL);
        if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
            throw InputError(name, "", std::string("cannot read: ") + std::strerror(errno));
    }
    const std::string too_large = "larger than " + std::to_string(max_input_bytes >> 20) + " MiB: attnwalk reads input files up to that size";
    std::string text;
    if (S_ISREG(st.st_mode)) {  // the size is known: refuse before reading, read in one allocation
        if (static_cast<std::uint64_t>(st.st_size) > max_input_bytes) throw InputError(name, "", too_large);
        text.reserve(static_cast<std::size_t>(st.st_size) + 1);
    }
    // In chunks, so that an endless stream stops at the limit.
    char chunk[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            throw InputError(name, "", std::string("cannot read: ") + std::strerror(errno));
        }
        text.append(chunk, static_cast<std::size_t>(n));
        if (text.size() > max_input_bytes) throw InputError(name, "", too_large);
    }
    if (text.empty() && !standard_input && !S_ISREG(st.st_mode))
        throw InputError(name, "", "nothing to read: a pipe or device that gave no bytes (a FIFO is read only if a writer holds it "
                                   "already: attnwalk does not wait for one; - reads standard input)");
    return text;
}

namespace {

// A T×d or B×T×d tensor as embeddings, always B×T×d (B = 1 for one sequence); `where` and
// `levels` word the error for the reader that read it.
Embeddings batch_of(Tensor x, const std::string& source, const std::string& where, const std::string& levels) {
    Embeddings out;
    out.source = source;
    if (x.shape.size() == 2) {
        x.shape.insert(x.shape.begin(), 1);  // one sequence: B = 1
    } else if (x.shape.size() == 3) {
        out.batched = true;
    } else {
        throw InputError(source, where,
                         "expected a T×d array (or B×T×d for a batch), got " + std::to_string(x.shape.size()) + " " + levels + " (" +
                             json_input::shape_string(x.shape) + ")");
    }
    out.x = std::move(x);
    return out;
}

// Tokens without names: t1, t2, … (positions count from 1).
void name_by_position(Embeddings& e) {
    for (std::size_t i = 0; i < e.tokens_count(); ++i) e.tokens.push_back("t" + std::to_string(i + 1));
}

}  // namespace

Embeddings parse_embeddings(const std::string& text, const std::string& source) {
    using json_input::Value;
    static const std::vector<std::string> keys{"tokens", "embeddings"};  // anything else is skipped unbuilt
    const Value doc = json_input::parse(text, source, &keys);
    if (!doc.is_object())
        throw InputError(source, "$", "expected a JSON object with \"embeddings\", got " + json_input::type_name(doc));
    const Value* embeddings = doc.find("embeddings");
    if (!embeddings) throw InputError(source, "$", "missing \"embeddings\" (a T×d or B×T×d array of numbers)");

    Embeddings out = batch_of(json_input::tensor_of(*embeddings, source, "$.embeddings"), source, "$.embeddings", "levels of nesting");
    const std::size_t T = out.tokens_count();

    if (const Value* tokens = doc.find("tokens")) {
        if (tokens->type == Value::Type::tensor)  // read as numbers: its first element is not a string
            throw InputError(source, "$.tokens[0]", std::string("expected a string, got ") +
                                                        (tokens->tensor && tokens->tensor->shape.size() > 1 ? "an array" : "a number"));
        if (tokens->type != Value::Type::array)
            throw InputError(source, "$.tokens", "expected an array of strings, got " + json_input::type_name(*tokens));
        if (tokens->array.size() != T)
            throw InputError(source, "$.tokens", "expected " + std::to_string(T) + " tokens (one per embedding row), got " +
                                                     std::to_string(tokens->array.size()));
        for (std::size_t i = 0; i < T; ++i) {
            const Value& token = tokens->array[i];
            const std::string path = "$.tokens[" + std::to_string(i) + "]";
            if (token.type != Value::Type::string) throw InputError(source, path, "expected a string, got " + json_input::type_name(token));
            if (token.string.size() > max_token_bytes)
                throw InputError(source, path, "token is " + std::to_string(token.string.size()) + " bytes long; at most " +
                                                   std::to_string(max_token_bytes) + " are allowed");
            out.tokens.push_back(token.string);
        }
    } else {
        name_by_position(out);
    }
    return out;
}

Tensor parse_attn_mask(std::string text, const std::string& name, bool is_bool) {
    // true/false read as 1/0 (a mask holds no strings)
    for (const auto& [word, digit] : {std::pair<std::string, std::string>{"true", "1"}, {"false", "0"}})
        for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at)) text.replace(at, word.size(), digit);
    const json_input::Value copy = json_input::parse(text, name);
    Tensor mask = json_input::tensor_of(copy, name, "$");
    if (mask.shape.size() != 2)
        throw InputError(name, "$", "the attn_mask is a matrix (queries × keys): expected 2 levels of arrays, got " +
                                        std::to_string(mask.shape.size()));
    for (std::size_t i = 0; is_bool && i < mask.data.size(); ++i) {
        const float v = mask.data[i];
        if (v != 0.0f && v != 1.0f) {
            std::ostringstream number;
            number << v;
            throw InputError(name, "$[" + std::to_string(i / mask.shape[1]) + "][" + std::to_string(i % mask.shape[1]) + "]",
                             "a bool mask holds true/false or 1/0, got " + number.str() +
                                 " (values to add to the scores make a float mask)");
        }
    }
    return mask;
}

namespace {

// Whether a regular file begins as a safetensors file: a little-endian u64 header length,
// then '{'. A pipe or a FIFO is never sniffed: its bytes would be gone, or the open would wait.
bool starts_as_safetensors(const std::string& path) {
    struct stat st {};
    if (path == "-" || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    unsigned char head[9] = {};
    const ssize_t got = ::read(fd, head, sizeof head);
    ::close(fd);
    if (got != static_cast<ssize_t>(sizeof head) || head[8] != '{') return false;
    std::uint64_t n = 0;
    for (std::size_t i = 8; i-- > 0;) n = (n << 8) | head[i];
    return n >= 2 && n < (std::uint64_t{1} << 40);
}

// "name, name, …" of a file's tensors: the first eight, then how many more.
std::string some_names(const SafeTensors& file) {
    std::string names;
    std::size_t shown = 0;
    for (const auto& [n, e] : file.entries()) {
        if (shown == 8) return names + " and " + std::to_string(file.entries().size() - shown) + " more";
        names += (names.empty() ? "" : ", ") + n;
        ++shown;
    }
    return names;
}

// "[i, j]": the index of element i of a tensor of `shape`, as numpy writes it.
std::string element_index(std::size_t i, const std::vector<std::size_t>& shape) {
    std::vector<std::size_t> index(shape.size());
    for (std::size_t a = shape.size(); a-- > 0;) {
        index[a] = i % shape[a];
        i /= shape[a];
    }
    std::string out;
    for (std::size_t a = 0; a < index.size(); ++a) out += (a ? ", " : "") + std::to_string(index[a]);
    return "[" + out + "]";
}

// A safetensors file's tensor as the embeddings: its only tensor, or the one named after
// "FILE:" (T×d or B×T×d, F32, F16 or BF16), counted against `memory_budget` before its
// numbers are read: its bytes where they lie, while they are copied, and the float32 copy.
// Throws InputError; MemoryBudgetError.
Embeddings embeddings_of_safetensors(const std::string& path, const std::string& name, double memory_budget) {
    const SafeTensors file(path, memory_budget);
    std::string chosen = name;
    if (chosen.empty()) {
        if (file.entries().size() != 1)
            throw InputError(path, "$", "holds " + std::to_string(file.entries().size()) + " tensors (" + some_names(file) +
                                            "): name the one to read as " + path + ":NAME");
        chosen = file.entries().begin()->first;
    }
    const std::string source = path + ":" + chosen;
    const SafeTensors::Entry* entry = file.find(chosen);
    if (!entry) throw InputError(path, json_input::member_path("$", chosen), "no such tensor (it holds " + some_names(file) + ")");
    double count = 1.0;
    for (std::size_t size : entry->shape) count *= static_cast<double>(size);
    const double need = static_cast<double>(entry->end - entry->begin) + 4.0 * count;
    if (need > memory_budget)
        throw MemoryBudgetError("reading " + source + " (" + entry->dtype + " " + json_input::shape_string(entry->shape) + ", " +
                                    json_input::size_text(static_cast<double>(entry->end - entry->begin)) + ") as float32 would take about " + json_input::size_text(need),
                                json_input::size_text(memory_budget));
    Tensor x = file.get(chosen);
    for (std::size_t i = 0; i < x.data.size(); ++i)  // as a .npy or JSON input: every number finite, or the one that is not named
        if (!std::isfinite(x.data[i]))
            throw InputError(path, json_input::member_path("$", chosen) + element_index(i, x.shape),
                             "expected a finite number, got " + json_input::number_text(static_cast<double>(x.data[i])) + " (element " +
                                 std::to_string(i) + " of " + entry->dtype + " " + json_input::shape_string(entry->shape) + ")");
    return embeddings_of_npy(std::move(x), source);
}

}  // namespace

InputSource input_source(const std::string& path) {
    if (starts_as_safetensors(path)) return {path, "", true};
    if (struct stat st {}; path == "-" || ::stat(path.c_str(), &st) == 0) return {path, "", false};  // a file of another kind, as named
    // FILE:NAME: FILE is the longest part before a colon that is a safetensors file (a name
    // may hold colons: FILE:y:z is tensor "y:z" of FILE when FILE:y is no such file)
    for (std::size_t colon = path.rfind(':'); colon != std::string::npos && colon > 0; colon = path.rfind(':', colon - 1)) {
        const std::string file = path.substr(0, colon);
        if (starts_as_safetensors(file)) return {file, path.substr(colon + 1), true};
    }
    return {path, "", false};
}

Embeddings load_embeddings(const std::string& path, double memory_budget) {
    const InputSource from = input_source(path);
    if (from.safetensors) return embeddings_of_safetensors(from.file, from.tensor, memory_budget);
    const std::string bytes = read_text_file(path);
    if (is_npy(bytes)) return embeddings_of_npy(parse_npy(bytes, source_name(path)), source_name(path));
    return parse_embeddings(bytes, source_name(path));
}

Embeddings embeddings_of_npy(Tensor x, const std::string& source) {
    Embeddings out = batch_of(std::move(x), source, "shape", "axes");
    for (std::size_t size : out.x.shape)  // (JSON has no empty arrays to give)
        if (size == 0) throw InputError(source, "shape", "expected a non-empty array, got " + json_input::shape_string(out.x.shape));
    name_by_position(out);
    return out;
}

const std::string& builtin_embeddings_json() {
    static const std::string text = builtin_json_text;
    return text;
}

Embeddings builtin_embeddings() { return parse_embeddings(builtin_embeddings_json(), "<built-in>"); }

Embeddings stack_batch(const Embeddings& input, std::size_t n) {
    Embeddings out = input;
    out.batched = true;
    out.x.shape[0] = input.x.shape[0] * n;
    out.x.data.clear();
    for (std::size_t i = 0; i < n; ++i)
        out.x.data.insert(out.x.data.end(), input.x.data.begin(), input.x.data.end());
    return out;
}

}  // namespace attnwalk
