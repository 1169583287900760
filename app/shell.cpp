#include "shell.hpp"
#include "data_files.hpp"
#include "help.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/npy.hpp"
#include "attnwalk/io/vocab.hpp"
#include "attnwalk/ops/work.hpp"

namespace attnwalk::app {

// "4G", "512M", "100000": bytes with an optional K, M, G or T suffix (powers of 1024).
double parse_bytes(const std::string& text) {
    std::size_t used = 0;
    double value = -1.0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
    }
    const std::string suffix = text.substr(std::min(used, text.size()));
    const std::string units = "KMGT";
    double scale = 1.0;
    if (suffix.size() == 1 && units.find(static_cast<char>(std::toupper(suffix[0]))) != std::string::npos)
        scale = std::pow(1024.0, static_cast<double>(units.find(static_cast<char>(std::toupper(suffix[0]))) + 1));
    else if (!suffix.empty())
        value = -1.0;
    if (!(value > 0.0) || !std::isfinite(value))
        throw UsageError("--max-memory '" + text + "' is not a size: give bytes, or a number with K, M, G or T");
    return value * scale;
}

std::string bytes_text(double bytes) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    std::size_t u = 0;
    while (bytes >= 1024.0 && u + 1 < std::size(units)) {
        bytes /= 1024.0;
        ++u;
    }
    std::ostringstream os;
    os.precision(bytes < 10 ? 2 : 3);
    os << bytes << ' ' << units[u];
    return os.str();
}

CLI::Validator number_check(const char* name, bool (*ok)(double), const std::string& expected) {
    return CLI::Validator(
        [ok, expected](std::string& text) {
            char* end = nullptr;
            const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);  // subnormals too
            if (text.empty() || end != text.c_str() + text.size() || std::isnan(v)) return "'" + text + "' is not a number";
            return ok(v) ? std::string() : expected + ", got " + text;
        },
        name, name);
}

CLI::Validator whole_number(std::uint64_t min) {
    return CLI::Validator(
        [min](std::string& text) -> std::string {
            if (text.empty()) return "is empty: give a number";
            std::uint64_t v = 0;
            const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
            if (r.ptr != text.data() + text.size() || text.find_first_not_of("0123456789") != std::string::npos)
                return "'" + text + "' is not a whole number (decimal digits only)";
            if (r.ec == std::errc::result_out_of_range) return text + " is larger than 18446744073709551615";
            if (v < min) return "must be at least " + std::to_string(min) + ", got " + text;
            return {};
        },
        min ? "N>=" + std::to_string(min) : "N", "whole number");
}

CLI::Validator non_empty() {
    return CLI::Validator([](std::string& text) { return text.empty() ? std::string("is empty") : std::string(); }, "", "non-empty");
}

void add_shell_options(OptionBuilder sub, Shell& s, bool walk, InputKind kind) {
    if (kind == InputKind::prompt) {
        sub.add_option("--text", s.sentence, "The text, cut into tokens by the tokenizer (UTF-8)")->check(non_empty())->group(input_group);
    } else {
        MaybeOption input =
            sub.add_option("-i,--input", s.input, "Input: a JSON file ({\"tokens\", \"embeddings\"}), a NumPy .npy of the embeddings (T×d or B×T×d), or a safetensors file's tensor (FILE, or FILE:NAME of several; FILE is the longest part before a colon that is a safetensors file, so a NAME may hold colons); - reads stdin. Default: the built-in sentence")
                ->check(non_empty())
                ->group(input_group);
        sub.add_option("--text", s.sentence, "A sentence instead of -i: split at whitespace, each word looked up in --vocab")
            ->check(non_empty())
            ->excludes(input)
            ->group(input_group);
        sub.add_option("--vocab", s.vocab, "JSON object {\"word\": [numbers], ...} for --text (data/vocab.json covers the docs' sentences)")
            ->check(non_empty())
            ->group(input_group);
    }
    MaybeOption json = sub.add_flag("--json", s.json, "Print the whole trace as one JSON document (see docs/json.md)")->group(output_group);
    sub.add_option("--json-nonfinite", s.json_nonfinite,
                   "How --json writes inf and NaN: string (\"inf\"), null, or literal (Python's Infinity, NaN)")
        ->check(CLI::IsMember({"string", "null", "literal"}))
        ->needs(json)
        ->capture_default_str()
        ->group(output_group);
    // The text view's options mean nothing to the JSON.
    json->excludes(sub.add_option("--precision", s.text.precision, "Decimals in text output")->check(CLI::Range(0, 12))->capture_default_str()->group(output_group));
    json->excludes(sub.add_option("--format", s.format, "text: labelled tables; torch: tensors printed the way PyTorch prints them")
                       ->check(CLI::IsMember({"text", "torch"}))->capture_default_str()->group(output_group));
    json->excludes(sub.add_option("--color", s.color, "Colour heatmaps: auto (a terminal, NO_COLOR unset), always, never")
                       ->check(CLI::IsMember({"auto", "always", "never"}))->capture_default_str()->group(output_group));
    sub.add_option("--color-scale", s.color_scale,
                   "How heatmap colours map values: auto (weights on 0…1, or each row on its own scale past 16 tokens; values of "
                   "both signs symmetric about 0; else min…max), range (min…max, shared by every head), each (each head its own "
                   "min…max), unit (0…1), symmetric (−m…m), row (each row 0…its max)")
        ->check(CLI::IsMember({"auto", "range", "each", "unit", "symmetric", "row"}))
        ->capture_default_str()
        ->group(output_group);
    json->excludes(sub.add_flag("--no-heatmap", s.no_heatmap, "Numbers only: no heatmaps under the token×token steps")->group(output_group));
    json->excludes(sub.add_flag("--full", s.text.full, "Print every row and column (tables with more than 16 are elided otherwise)")->group(output_group));
    if (walk && kind == InputKind::prompt)  // a model's commands: the header says the model in one line unless asked
        json->excludes(sub.add_flag("--show-config", s.text.show_config,
                                    "The model's every field in the header (its config.json as read, the file's naming, layout, dtype); "
                                    "default: one line")
                           ->group(output_group));
    MaybeOption compact = sub.add_flag("--compact", s.compact, "Only the steps the command is about (its headline tensors)")->group(output_group);
    json->excludes(compact);
    sub.add_option("--max-memory", s.max_memory, "Refuse inputs that would need more memory (bytes, or with K/M/G/T)")
        ->check(CLI::Validator(
            [](std::string& text) {  // refused as it is parsed, by every command, whether it reads input or not
                try {
                    parse_bytes(text);
                } catch (const UsageError&) {
                    return "'" + text + "' is not a size: give bytes, or a number with K, M, G or T";
                }
                return std::string();
            },
            ""))
        ->type_name("SIZE")
        ->capture_default_str()
        ->group(limits_group);
    sub.add_option("--max-work", s.max_work, "Refuse inputs that would take more multiply-adds (an exp counts 16)")
        ->check(number_check("N", [](double v) { return v > 0.0 && std::isfinite(v); }, "must be a positive number"))
        ->capture_default_str()
        ->group(limits_group);
    if (!walk) return;
    sub.add_option("--steps", s.steps, "Show only these steps: ids as in docs/json.md, globs (explain_*), ranges A..B, or last; "
                                       "e.g. --steps weights or --steps 'explain_*'")
        ->delimiter(',')
        ->excludes(compact)
        ->group(output_group);
    if (kind == InputKind::embeddings)
        sub.add_option("--batch", s.batch, "Stack the input N times along a batch axis (the textbook uses 2)")->check(whole_number(1))->group(input_group);
    MaybeOption svg = sub.add_option("--svg", s.svg, "Also write the heatmap of the final weights as an SVG file (for slides)")
                           ->check(non_empty())
                           ->group(output_group);
    sub.add_option("--svg-step", s.svg_step, "The step --svg draws (a token×token id, e.g. scores_masked; default: the final weights)")
        ->check(non_empty())
        ->needs(svg)
        ->group(output_group);
    sub.add_option("--html", s.html,
                   "Also write the whole trace as one self-contained HTML page: heatmaps with values on hover, a head view, "
                   "the path of a clicked cell (no network needed)")
        ->check(non_empty())
        ->group(output_group);
    MaybeOption npy = sub.add_option("--npy", s.npy,
                                      "Also write each step's tensor as DIR/ID.npy (NumPy's format: numpy.load reads it, no text to "
                                      "parse); with --json the steps name their files instead of holding the numbers")
                           ->check(non_empty())
                           ->type_name("DIR")
                           ->group(output_group);
    sub.add_flag("--summary", s.recording.summary, "Big inputs: per step only the shape, min/max/mean, row sums, a checksum and the time")
        ->excludes(npy)
        ->group(output_group);
    sub.add_flag("--timing", s.recording.timing,
                 "After the trace, the wall time of each step; from " + std::to_string(static_cast<long long>(limit_least_flop / 1e9)) +
                     " GFLOP of matrix products, each step's work and its time over the least this machine takes for it (measured after "
                     "the walk)")->group(output_group);
}

namespace {
// A count as a person would type it: 1000, 1e12, 2.5e9 (`significant` digits at most).
std::string count_text(double n, int significant) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.*g", significant, n);
    std::string out = buf;
    const std::size_t e = out.find('e');
    if (e == std::string::npos) return out;
    std::string exponent = out.substr(e + 1);  // "+12", "-05"
    const bool negative = exponent[0] == '-';
    exponent.erase(0, exponent.find_first_not_of("+-0"));
    return out.substr(0, e + 1) + (negative ? "-" : "") + (exponent.empty() ? "0" : exponent);
}
}  // namespace

void check_cost(const Shell& s, const Cost& need) {
    const double budget = parse_bytes(s.max_memory);
    if (need.bytes > budget)
        throw UsageError("this walk would need about " + bytes_text(need.bytes) + " of memory, more than --max-memory " +
                         bytes_text(budget) + " (raise --max-memory, or use a smaller input or options)");
    if (need.work > s.max_work) {
        int digits = need.work < 1e6 ? 6 : 2;  // a few, but enough to read as more than the limit
        while (digits < 17 && !(std::strtod(count_text(need.work, digits).c_str(), nullptr) > s.max_work)) ++digits;
        throw UsageError("this walk would take about " + count_text(need.work, digits) + " multiply-adds, more than --max-work " +
                         count_text(s.max_work, std::max(digits, 6)) + " (raise --max-work, or use a smaller input or options)");
    }
}

namespace {
// Whether a regular file begins with NumPy's magic string (read only for the size check).
bool starts_as_npy(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // without waiting, as every open
    if (fd < 0) return false;
    std::string head(6, '\0');
    const ssize_t got = ::read(fd, head.data(), head.size());
    ::close(fd);
    return got == 6 && is_npy(head);
}
}  // namespace

std::string input_file(const Shell& s) { return s.input.empty() || s.input == "-" ? s.input : user_path(s.input); }

Embeddings prepare_input(const Shell& s, const std::function<Cost(const InputShape&)>& cost,
                         std::optional<std::size_t> context_length) {
    if (s.sentence && !s.input.empty()) throw UsageError("--text and -i/--input exclude each other");
    if (s.sentence && !s.vocab) throw UsageError("--text needs --vocab FILE (for example data/vocab.json)");
    if (s.vocab && !s.sentence) throw UsageError("--vocab goes with --text");
    if (s.sentence && s.sentence->find_first_not_of(" \t\n\r\f\v") == std::string::npos)
        throw UsageError("--text has no words");
    const double budget = parse_bytes(s.max_memory);
    // Reading a file holds its text and then its numbers: refuse one whose text alone
    // would take half the budget, before reading it.
    std::error_code ec;
    const std::string file = input_file(s);
    // a safetensors tensor (FILE or FILE:NAME) is counted by the reader, from its header, before its numbers are read
    const bool safetensors = !s.preloaded && !file.empty() && file != "-" && input_source(file).safetensors;
    std::uintmax_t text_bytes = !s.preloaded && !file.empty() && file != "-" && !safetensors ? std::filesystem::file_size(file, ec) : 0;
    // a .npy holds its bytes and then float32 numbers: float16 ones take twice the file again
    bool npy = !ec && text_bytes > 0 && starts_as_npy(file);
    if (!s.preloaded && file == "-") {  // standard input from a regular file: its size is known before reading it too
        struct stat in {};
        const off_t at = ::lseek(STDIN_FILENO, 0, SEEK_CUR);
        if (::fstat(STDIN_FILENO, &in) == 0 && S_ISREG(in.st_mode) && at >= 0 && in.st_size > at) {
            text_bytes = static_cast<std::uintmax_t>(in.st_size - at);
            std::string head(6, '\0');
            npy = ::pread(STDIN_FILENO, head.data(), head.size(), at) == 6 && is_npy(head);
        }
    }
    const double times = npy ? 3.0 : 2.0;
    if (!ec && times * static_cast<double>(text_bytes) > budget)
        throw UsageError("reading " + (file == "-" ? std::string("standard input") : file) + " (" + bytes_text(static_cast<double>(text_bytes)) +
                         ") would take more than --max-memory " + bytes_text(budget) + " (raise --max-memory)");
    Embeddings input = s.preloaded         ? *s.preloaded
                       : s.sentence        ? embed_text(*s.sentence, load_vocab(user_path(*s.vocab)), "--text")
                       : s.input.empty()   ? builtin_embeddings()
                                           : load_embeddings(file, budget);
    check_cost(s, cost({input.batch() * s.batch.value_or(1), input.tokens_count(), input.dim()}));
    if (context_length && input.tokens_count() > *context_length)
        throw UsageError("the input has " + std::to_string(input.tokens_count()) + " tokens, more than --context-length " +
                         std::to_string(*context_length));
    return s.batch ? stack_batch(input, *s.batch) : std::move(input);  // as PyTorch: torch.stack keeps the axis even for one
}

std::size_t resolve_token(const std::string& name, const std::vector<std::string>& tokens, const std::string& option) {
    // A number is a position as the book counts, x_1 … x_T; the index returned is 0-based.
    const std::size_t T = tokens.size();
    const bool hashed = name.size() > 1 && name[0] == '#';
    const std::string digits = hashed ? name.substr(1) : name;
    const bool numeric = !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos;
    std::vector<std::size_t> named;  // the tokens whose text is `name`
    for (std::size_t i = 0; i < T; ++i)
        if (tokens[i] == name) named.push_back(i);
    if (numeric) {
        const std::size_t first = digits.find_first_not_of('0');
        const std::string plain = first == std::string::npos ? "0" : digits.substr(first);
        const std::size_t position = plain.size() > 18 ? T + 1 : static_cast<std::size_t>(std::stoull(plain));
        if ((position == 0 || position > T) && named.size() == 1 && !hashed) return named[0];  // a token named "0"
        if (position == 0 || position > T)
            throw UsageError(option + " " + name + " is out of range: the input has " + std::to_string(T) +
                             " tokens, counted from 1, so the position must be 1.." + std::to_string(T));
        const std::size_t index = position - 1;
        for (std::size_t i : named)  // digits that are also a token's text elsewhere (not with #N)
            if (i != index && !hashed)
                throw UsageError(option + " '" + name + "' is ambiguous: position " + std::to_string(position) + " is \"" +
                                 tokens[index] + "\", and token " + std::to_string(i + 1) + " is \"" + name + "\" too: write #" +
                                 std::to_string(position) + " or #" + std::to_string(i + 1));
        return index;
    }
    if (named.size() == 1) return named[0];
    if (named.size() > 1) {
        std::string where;
        for (std::size_t i : named) where += (where.empty() ? "#" : " or #") + std::to_string(i + 1);
        throw UsageError(option + " '" + name + "' is ambiguous: the input has it " + std::to_string(named.size()) +
                         " times; give its position, " + where);
    }
    std::string known;
    for (std::size_t i = 0; i < T; ++i) known += (i ? ", " : "") + tokens[i];
    throw UsageError(option + " '" + name + "' is not a token of the input (tokens: " + known +
                     "; or give a position, 1.." + std::to_string(T) + ")");
}

std::vector<std::string> comma_items(const std::string& text) {
    std::vector<std::string> items(1);
    for (char c : text) {
        if (c == ',') items.emplace_back();
        else items.back() += c;
    }
    return items;
}

Cell parse_cell(const std::string& text, const std::vector<std::string>& tokens) {
    // Tokens may hold commas themselves: every split at a comma whose two sides both name
    // a token is a reading, and there must be exactly one.
    std::vector<Cell> readings;
    std::string first_error;
    for (std::size_t comma = text.find(','); comma != std::string::npos; comma = text.find(',', comma + 1)) {
        try {
            readings.push_back({resolve_token(text.substr(0, comma), tokens, "--explain"),
                                resolve_token(text.substr(comma + 1), tokens, "--explain")});
        } catch (const UsageError& e) {
            if (first_error.empty()) first_error = e.what();
        }
    }
    if (readings.size() == 1) return readings[0];
    if (readings.size() > 1)
        throw UsageError("--explain '" + text + "' can be read at more than one comma: give the cell as positions, e.g. #" +
                         std::to_string(readings[0].i + 1) + ",#" + std::to_string(readings[0].j + 1));
    if (!first_error.empty() && text.find(',') == text.rfind(',')) throw UsageError(first_error);
    throw UsageError("--explain '" + text + "' is not a cell: give I,J (query row, key column), e.g. --explain 2,3 or --explain journey,starts");
}

constexpr Init default_init = Init::linear;

void add_weights_options(OptionBuilder sub, WeightsOptions& o, Shell& shell, bool default_seed) {
    MaybeOption file = sub.add_option("--weights", o.file, "JSON file with W_query, W_key, W_value (d_in×d_out, x·W layout); see docs/weights.md")
                            ->check(non_empty());
    MaybeOption seed = sub.add_option("--seed", o.seed, "Draw the weights like torch.manual_seed(N) would, bit for bit")
                            ->check(whole_number(0))
                            ->excludes(file);
    MaybeOption drawn[] = {
        sub.add_option("--init", o.init, std::string("How seeded weights are drawn: rand | randn | linear (default: ") +
                                             init_name(default_init) + ")")
            ->check(CLI::IsMember({"rand", "randn", "linear"})),
        sub.add_option("--d-out", o.d_out, "Output size of the seeded projections (default " + std::to_string(default_d_out) +
                                               ", as in the textbook)")
            ->check(whole_number(1)),
        sub.add_flag("--qkv-bias", o.qkv_bias, "Seeded nn.Linear projections get a bias"),
    };
    for (MaybeOption& option : drawn) {  // they say how weights are drawn: not for a file
        option->excludes(file);
        if (!default_seed) option->needs(seed);
    }
    sub.add_flag("--show-weights", shell.text.show_weights, "Print the weight matrices used (the JSON always has them)");
}

CLI::Validator positive_float32(const char* name) {
    return number_check(name, is_positive_float32, "must be a positive number that float32 holds (about 1.2e-38 to 3.4e38)");
}

CLI::Validator dropout_rate() {
    return number_check("P", is_dropout_rate,
                        std::string("must be ") + dropout_rate_range +
                            " (a smaller rate leaves 1 − p at 1; a larger one is 1 in float32, as the trace keeps it)");
}

void add_scale_option(OptionBuilder sub, std::optional<double>& scale) {
    sub.add_option("--scale", scale, "Divide the scores by S first (default: 1, or √d_k with projections)")->check(positive_float32("S"));
}

MaybeOption add_explain_option(OptionBuilder sub, std::optional<std::string>& explain) {
    return sub.add_option("--explain", explain, "Write out one cell I,J (query row, key column; positions from 1, or tokens): "
                                         "the dot product term by term, the scaling, each exp, the sum, the division, the weighted sum");
}

MaybeOption add_counted_option(OptionBuilder sub, const std::string& name, std::size_t& index, const std::string& description) {
    return sub.add_option_function<std::size_t>(name, [&index](const std::size_t& n) { index = n - 1; }, description)
        ->check(whole_number(1))
        ->default_str(std::to_string(index + 1));
}

MaybeOption add_counted_option(OptionBuilder sub, const std::string& name, std::optional<std::size_t>& index, const std::string& description) {
    return sub.add_option_function<std::size_t>(name, [&index](const std::size_t& n) { index = n - 1; }, description)
        ->check(whole_number(1));
}

void add_context_length_option(OptionBuilder sub, std::optional<std::size_t>& context_length) {
    sub.add_option("--context-length", context_length, "Longest input allowed (error if there are more tokens)")->check(whole_number(1));
}

void add_dropout_options(OptionBuilder sub, DropoutOptions& o, bool causal_flag) {
    sub.add_option("--dropout", o.p, "Dropout rate p in [0, 1)")
        ->check(dropout_rate())
        ->capture_default_str();
    sub.add_option("--dropout-seed", o.seed, "Reseed the generator right before the dropout draw, like torch.manual_seed(S); dropout(...)")
        ->check(whole_number(0));
    sub.add_flag("--eval", o.eval, "Inference mode: dropout is the identity");
    if (causal_flag) sub.add_flag("--causal,!--no-causal", o.causal, "Mask future tokens (default: on)");
}

Randomness::Randomness(std::optional<std::uint64_t> seed, std::optional<std::uint64_t> dropout_seed)
    : dropout_seed_(dropout_seed) {
    if (seed) gen_.emplace(*seed);
}

DropoutDraw Randomness::dropout(double p, bool train, bool shows_eval) {
    if (dropout_seed_ && (train ? p == 0.0 : !shows_eval))  // no dropout step to say so: an error
        throw UsageError(std::string("--dropout-seed seeds the dropout draw, and there is none: ") +
                         (train ? "the rate is 0 (give --dropout P)" : "--eval draws nothing"));
    DropoutDraw d;
    d.p = p;
    d.train = train;
    if (!train || p == 0.0) {  // nothing is drawn
        d.gen = weights_stream();
        // eval shows the identity: the seed, a follow-up's leftover, is said to do nothing
        if (dropout_seed_) d.note = "--dropout-seed " + std::to_string(*dropout_seed_) + " has nothing to seed: --eval draws nothing.";
        return d;
    }
    if (dropout_seed_ || !gen_) {
        const std::uint64_t seed = dropout_seed_.value_or(default_dropout_seed);
        dropout_gen_.emplace(seed);
        d.gen = &*dropout_gen_;
        d.reseeded = true;
        d.note = dropout_seed_ ? "The generator was reseeded with " + std::to_string(seed) + " right before the draw."
                               : "No --seed or --dropout-seed given: the draw uses seed " + std::to_string(seed) + ".";
    } else {
        d.gen = &*gen_;
        d.note = "The draw continues the --seed stream after the weights, as a PyTorch script would.";
    }
    return d;
}

Weights make_weights(const WeightsOptions& o, WeightsShape shape, Randomness& random) {
    // Which options go together is CLI11's (add_weights_options); what is left depends on values.
    const Init init = o.init ? *init_from_name(*o.init) : default_init;
    if (o.qkv_bias && init != Init::linear)
        throw UsageError("--qkv-bias needs --init linear (torch.rand/randn matrices have no bias)");
    if (o.file) return load_weights(user_path(*o.file), shape);
    Generator* gen = random.weights_stream();
    if (!gen) return nullptr;
    shape.d_out = o.d_out.value_or(default_d_out);
    return draw_weights(*gen, shape, init, o.qkv_bias);
}

OneHead prepare_one_head(const Shell& shell, const WeightsOptions& options, Randomness& random, bool one_row,
                         std::optional<std::size_t> context_length, double square_tensors) {
    OneHead out;
    out.input = prepare_input(
        shell,
        [&](const InputShape& s) {
            return walk_cost(s.batch, s.tokens, s.d_in, options.width(), 1, one_row ? 1 : s.tokens, square_tensors);
        },
        context_length);
    out.weights = make_weights(options, {out.input.dim(), default_d_out, 1, HeadLayout::fused, false}, random);
    return out;
}

}  // namespace attnwalk::app
