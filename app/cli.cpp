// The command line: parse options, load input, call one walk, render.
// Exit codes: 0 ok, 1 bad input or runtime error, 2 usage error.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <iostream>
#include <new>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "attnwalk/embeddings.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/vocab.hpp"
#include "attnwalk/walk.hpp"
#include "cli.hpp"
#include "output_file.hpp"
#include "render.hpp"

namespace {

using namespace attnwalk;

struct Options {
    std::string input;  // empty = the built-in example
    std::optional<std::string> sentence;
    std::optional<std::string> vocab;
    bool json = false;
    app::TextOptions text;
    WalkOptions walk;
    std::optional<std::string> init;
    std::optional<std::size_t> d_out;
    std::string variant = "fused";
    std::optional<double> dropout;
    std::string max_memory = "4G";
    std::string format = "text";
    std::string color = "auto";
    bool no_heatmap = false;
    bool step = false;
    std::optional<std::string> svg;
};

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

struct Command {
    const char* name;
    const char* description;
    const char* examples;
    WalkFn walk;      // null for walkthrough, which runs them all
    bool query;       // --query
    bool projection;  // --weights, --seed, --init, --d-out, --qkv-bias, --scale
    bool masking;     // --context-length (causal, dropout, mha)
    bool explain;     // --explain I,J
};

const Command commands[] = {
    {"walkthrough", "The whole chapter in order: scores, softmax, context, projections, causal, dropout, multi-head.",
     "  attnwalk walkthrough                 # every section with the textbook's numbers\n"
     "  attnwalk walkthrough --step          # pause after each section (press Enter)\n"
     "  attnwalk walkthrough --text \"cats climb trees during\" --vocab data/vocab.json\n",
     nullptr, false, false, false, false},
    {"scores", "Dot-product attention scores: one query with every token, or the full ω = X·Xᵀ (Q·Kᵀ with projections).",
     "  attnwalk scores                      # the full 6×6 score matrix of the built-in sentence\n"
     "  attnwalk scores --query journey      # one query, each dot product written out\n"
     "  attnwalk scores --seed 123 --init rand --query 1\n",
     walk_scores, true, true, false, true},
    {"softmax", "From scores to weights: divide by the sum vs naive softmax vs stable softmax, each row's sum shown.",
     "  attnwalk softmax --query journey     # the three normalisations side by side\n"
     "  attnwalk softmax -i data/large_scores.json   # naive softmax overflows, the stable one does not\n"
     "  attnwalk softmax --scale 2           # divide the scores by 2 first\n"
     "  attnwalk softmax --explain journey,starts   # one weight, every number that goes into it\n",
     walk_softmax, true, true, false, true},
    {"context", "Context vectors: each token's weighted sum of the embeddings (or of the values, with projections).",
     "  attnwalk context --query journey     # the weighted sum, term by term\n"
     "  attnwalk context --seed 123 --init rand     # the textbook's SelfAttention_v1\n"
     "  attnwalk context --seed 789          # SelfAttention_v2 (nn.Linear initialisation)\n"
     "  attnwalk context --explain 1,2 --seed 123 --init rand   # one cell, through W_query and W_key\n",
     walk_context, true, true, false, true},
    {"causal", "The causal mask two ways: mask after the softmax and renormalise, or −∞ before the softmax.",
     "  attnwalk causal --seed 789           # the textbook's causal weights\n"
     "  attnwalk causal --batch 2 --seed 123 # CausalAttention on a batch of two\n"
     "  attnwalk causal --explain 2,4        # a future cell: masked, weight 0\n",
     walk_causal, false, true, true, true},
    {"dropout", "Dropout on the attention weights: the keep mask, the 1/(1−p) scaling, train vs eval.",
     "  attnwalk dropout --ones 6 --dropout-seed 123   # the textbook's 6×6 matrix of ones\n"
     "  attnwalk dropout --seed 789 --dropout-seed 123 # dropout on causal weights\n"
     "  attnwalk dropout --eval              # nothing changes at inference\n",
     walk_dropout, false, true, true, false},
    {"mha", "Multi-head attention: the fused split/view/transpose form with out_proj, or stacked heads (wrapper).",
     "  attnwalk mha --batch 2 --seed 123 --heads 2          # the textbook's MultiHeadAttention\n"
     "  attnwalk mha --variant wrapper --batch 2 --seed 123  # MultiHeadAttentionWrapper\n",
     walk_mha, false, true, true, false},
};

void add_options(CLI::App& sub, const Command& cmd, Options& o) {
    sub.add_option("-i,--input", o.input, "Input JSON file ({\"tokens\", \"embeddings\"}); - reads stdin. Default: the built-in sentence");
    sub.add_option("--text", o.sentence, "A sentence instead of -i: split at whitespace, each word looked up in --vocab");
    sub.add_option("--vocab", o.vocab, "JSON object {\"word\": [numbers], ...} for --text (data/vocab.json covers the docs' sentences)");
    sub.add_flag("--json", o.json, "Print the whole trace as one JSON document (see docs/json.md)");
    sub.add_option("--precision", o.text.precision, "Decimals in text output")->check(CLI::Range(0, 12))->capture_default_str();
    sub.add_option("--format", o.format, "text: labelled tables; torch: tensors printed the way PyTorch prints them")
        ->check(CLI::IsMember({"text", "torch"}))->capture_default_str();
    sub.add_option("--color", o.color, "Colour heatmaps: auto (a terminal, NO_COLOR unset), always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}))->capture_default_str();
    sub.add_flag("--no-heatmap", o.no_heatmap, "Numbers only: no heatmaps under the token×token steps");
    sub.add_flag("--full", o.text.full, "Print every row and column (tables with more than 16 are elided otherwise)");
    sub.add_option("--max-memory", o.max_memory, "Refuse inputs whose tensors would need more (bytes, or with K/M/G/T)")->capture_default_str();
    const std::string name = cmd.name;
    if (name == "walkthrough") {
        sub.add_flag("--step", o.step, "Pause after each section until Enter (only when stdin is a terminal)");
    } else {
        sub.add_option("--batch", o.walk.batch, "Stack the input N times along a batch axis (the textbook uses 2)");
        sub.add_option("--svg", o.svg, "Also write the heatmap of the final weights as an SVG file (for slides)");
        sub.add_flag("--summary", o.walk.summary, "Big inputs: per step only the shape, min/max/mean, row sums, a checksum and the time");
        sub.add_flag("--timing", o.walk.timing, "After the trace, the wall time of each step");
    }
    if (cmd.query)
        sub.add_option("--query", o.walk.query, "Show one query only: a 0-based index or a token's text");
    if (cmd.explain)
        sub.add_option("--explain", o.walk.explain, "Write out one cell I,J (query row, key column; indices or tokens): "
                                                    "the dot product term by term, the scaling, each exp, the sum, the division, the weighted sum");
    if (cmd.projection) {
        sub.add_option("--weights", o.walk.projection.weights_file, "JSON file with W_query, W_key, W_value (d_in×d_out, x·W layout); see docs/weights.md");
        sub.add_option("--seed", o.walk.projection.seed, "Draw the weights like torch.manual_seed(N) would, bit for bit");
        sub.add_option("--init", o.init, "How seeded weights are drawn: rand | randn | linear (default: linear)");
        sub.add_option("--d-out", o.d_out, "Output size of the seeded projections (default 2, as in the textbook)");
        sub.add_flag("--qkv-bias", o.walk.projection.qkv_bias, "Seeded nn.Linear projections get a bias");
        sub.add_flag("--show-weights", o.text.show_weights, "Print the weight matrices used (the JSON always has them)");
        if (std::string(cmd.name) != "mha")
            sub.add_option("--scale", o.walk.scale, "Divide the scores by S first (default: 1, or √d_k with projections)");
    }
    if (cmd.masking)
        sub.add_option("--context-length", o.walk.context_length, "Longest input allowed (error if there are more tokens)");
    if (name == "dropout" || name == "mha") {
        sub.add_option("--dropout", o.dropout, name == "dropout" ? "Dropout rate p in [0, 1) (default 0.5)" : "Dropout rate p in [0, 1) (default 0)");
        sub.add_option("--dropout-seed", o.walk.dropout_seed, "Reseed the generator right before the dropout draw, like torch.manual_seed(S); dropout(...)");
        sub.add_flag("--eval", o.walk.eval, "Inference mode: dropout is the identity");
        sub.add_flag("--causal,!--no-causal", o.walk.causal, "Mask future tokens (default: on)");
    }
    if (name == "dropout")
        sub.add_option("--ones", o.walk.ones, "Apply dropout to an N×N matrix of ones instead (the textbook's example)");
    if (name == "mha") {
        sub.add_option("--heads", o.walk.heads, "Number of heads H")->capture_default_str();
        sub.add_option("--variant", o.variant, "fused (MultiHeadAttention) or wrapper (MultiHeadAttentionWrapper)")
            ->check(CLI::IsMember({"fused", "wrapper"}))->capture_default_str();
    }
}

// Shell-quoted when needed, so that a printed command can be pasted back.
std::string shell_word(const std::string& word) {
    if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,") == std::string::npos)
        return word;
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

// The input options, for the "run this part alone" lines of the walkthrough.
std::string rerun_suffix(const Options& o) {
    if (o.sentence) return " --text " + shell_word(*o.sentence) + " --vocab " + shell_word(*o.vocab);
    if (!o.input.empty()) return " -i " + shell_word(o.input);
    return "";
}

int run(const Command& cmd, Options& o, std::ostream& out, const app::Terminal& term) {
    o.text.torch = o.format == "torch";
    o.text.heatmap = !o.no_heatmap;
    o.text.columns = term.columns;
    const bool colour = o.color == "always" || (o.color == "auto" && term.stdout_is_tty && !term.no_color);
    o.text.palette = !colour ? app::Palette::none : term.truecolor ? app::Palette::truecolor : app::Palette::ansi256;
    if (o.init) o.walk.projection.init = parse_init(*o.init);
    if (o.d_out) o.walk.projection.d_out = *o.d_out;
    o.walk.wrapper = o.variant == "wrapper";
    o.walk.max_memory = parse_bytes(o.max_memory);
    o.walk.dropout = o.dropout.value_or(std::string(cmd.name) == "dropout" ? 0.5 : 0.0);
    if (o.sentence && !o.input.empty()) throw UsageError("--text and -i/--input exclude each other");
    if (o.sentence && !o.vocab) throw UsageError("--text needs --vocab FILE (for example data/vocab.json)");
    if (o.vocab && !o.sentence) throw UsageError("--vocab goes with --text");
    const Embeddings input = o.sentence ? embed_text(*o.sentence, load_vocab(*o.vocab))
                             : o.input.empty() ? builtin_embeddings() : load_embeddings(o.input);
    if (cmd.walk) {
        const Trace trace = cmd.walk(input, o.walk);
        if (o.svg) {
            std::vector<std::string> inputs{o.input};
            if (o.vocab) inputs.push_back(*o.vocab);
            if (o.walk.projection.weights_file) inputs.push_back(*o.walk.projection.weights_file);
            app::write_file_atomically(*o.svg, app::svg_of_weights(trace, o.text), inputs);
        }
        if (o.json) app::render_json(trace, out);
        else app::render_text(trace, o.text, out);
    } else {
        const auto sections = walk_through(input, o.walk);
        if (o.json) {
            app::render_json(sections, out);
        } else {
            const auto pause = [&](const Section& next) {
                if (!o.step || !term.stdin_is_tty) return true;
                out << "\n-- Enter: " << next.title << " · q then Enter: stop --" << std::flush;
                std::string line;
                return static_cast<bool>(std::getline(std::cin, line)) && line != "q";
            };
            app::render_text(sections, o.text, rerun_suffix(o), pause, out);
        }
    }
    out.flush();
    if (!out) {
        if (errno == EPIPE) return 0;  // the reader stopped early (`| head`): nothing more to say
        throw RuntimeError(std::string("cannot write the output: ") + std::strerror(errno));
    }
    return 0;
}

}  // namespace

int attnwalk::app::run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
                           const Terminal& terminal) {
    CLI::App cli{"attnwalk — the attention mechanism of transformers, one printed step at a time.\n"
                 "Every command runs on the built-in sentence \"Your journey starts with one step\" unless given -i FILE."};
    cli.set_version_flag("--version", "attnwalk 0.1.0");
    cli.require_subcommand(1);
    cli.footer("Examples:\n"
               "  attnwalk softmax --query journey\n"
               "  attnwalk context --text \"cats climb trees\" --vocab data/vocab.json\n"
               "  attnwalk context --seed 123 --init rand\n"
               "  attnwalk mha --batch 2 --seed 123 --heads 2 --json\n"
               "Run 'attnwalk COMMAND --help' for a command's options and examples.\n"
               "Exit codes: 0 ok, 1 bad input or runtime error, 2 usage error.");
    Options options;
    const Command* chosen = nullptr;
    for (const Command& cmd : commands) {
        CLI::App* sub = cli.add_subcommand(cmd.name, cmd.description);
        sub->footer(std::string("Examples:\n") + cmd.examples);
        add_options(*sub, cmd, options);
        sub->callback([&chosen, &cmd]() { chosen = &cmd; });
    }
    try {
        cli.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return cli.exit(e, out, err);  // --help, --version
        err << "attnwalk: error: " << e.what() << "\nRun 'attnwalk --help' (or 'attnwalk COMMAND --help') for the options.\n";
        return 2;
    }
    try {
        return run(*chosen, options, out, terminal);
    } catch (const UsageError& e) {
        err << "attnwalk: error: " << e.what() << '\n';
        return 2;
    } catch (const std::bad_alloc&) {
        err << "attnwalk: error: out of memory: the input and options ask for larger tensors than this machine can hold\n";
        return 1;
    } catch (const std::exception& e) {
        err << "attnwalk: error: " << e.what() << '\n';
        return 1;
    }
}
