// The command line: parse options, let the chosen subcommand build its trace, render.
// Exit codes: 0 ok, 1 bad input or runtime error, 2 usage error.
#include "cli.hpp"

#include <signal.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/did_you_mean.hpp"
#include "attnwalk/io/safetensors.hpp"
#include "commands/commands.hpp"
#include "commands/walkthrough.hpp"
#include "render/explore.hpp"
#include "help.hpp"
#include "output_file.hpp"
#include "render/printable.hpp"
#include "selection.hpp"
#include "render/render_html.hpp"
#include "render/render_json.hpp"
#include "render/render_text.hpp"
#include "render/text.hpp"

namespace attnwalk::app {

namespace {

// The command line with every command, or, given `only` (a command's name), with that one
// command alone: a tiny command's whole process was mostly building fifteen commands'
// options, so a command line that names its command builds just that one (run_cli).
// `only` = "--version" builds none.
void make_cli(CLI::App& cli, Shell& shell, const std::string& only = "") {
    cli.description("attnwalk — the attention mechanism of transformers, one printed step at a time.\n"
                    "Every command runs on the built-in sentence \"Your journey starts with one step\" unless given -i FILE.");
    cli.name("attnwalk");
    cli.set_version_flag("--version", "attnwalk 0.1.0");
    cli.require_subcommand(1);
    cli.footer("Examples:\n"
               "  attnwalk softmax --query journey\n"
               "  attnwalk context --text \"cats climb trees\" --vocab data/vocab.json\n"
               "  attnwalk context --seed 123 --init rand\n"
               "  attnwalk mha --batch 2 --seed 123 --heads 2 --json\n"
               "Run 'attnwalk COMMAND --help' for a command's options and examples.\n"
               "Exit codes: 0 ok, 1 bad input or runtime error, 2 usage error.");
    for (const CommandEntry& command : command_table())
        if (only.empty() || only == command.name) command.add(cli, shell);
    if (!only.empty() && only != "explore") return;
    CLI::App* ex = cli.add_subcommand("explore", "explore COMMAND [OPTIONS]: another command's trace full screen, a cursor over its heatmaps, each cell explained");
    ex->prefix_command();  // everything after it is the command explored
    ex->footer("Keys (the bottom line and ? show those that act on the step shown):\n"
               "  arrows (or j/k)  move the cell\n"
               "  Home / End       first / last column\n"
               "  s / S (Tab)      next / previous step\n"
               "  h / H            next / previous head (a step of several heads)\n"
               "  l / L            next / previous layer (--view's grid of every layer)\n"
               "  PgDn / PgUp      the explanation's pages (also space / b)\n"
               "  w                the explanation over the whole width; w again: the heatmap\n"
               "  ?                the list of keys; ? or Esc closes it\n"
               "  q, Ctrl-C, Esc   quit (Esc closes the list of keys first where it is shown)\n"
               "Examples:\n"
               "  attnwalk explore mha --heads 2 --causal\n"
               "  attnwalk explore causal --seed 789\n"
               "  attnwalk explore gpt2 --model DIR --text \"Hello, world\" --view\n"
               "Needs a terminal; for a page to open in a browser, add --html FILE to the command instead.");
}

// Whether `word` is the name of a command (explore included).
bool names_a_command(const std::string& word) {
    if (word == "explore") return true;
    for (const CommandEntry& command : command_table())
        if (word == command.name) return true;
    return false;
}

// The input options, for the "run this part alone" lines of the walkthrough.
std::string rerun_suffix(const Shell& s) {
    if (s.sentence) return " --text " + shell_word(*s.sentence) + " --vocab " + shell_word(*s.vocab);
    if (!s.input.empty()) return " -i " + shell_word(s.input);
    return "";
}

// One part of the walkthrough: its command line run on the input read once. The parts'
// traces are all kept until the end, so each of the `parts` gets that share of the memory.
Trace trace_of(const SectionPlan& plan, const Shell& outer, const Embeddings& input, std::size_t parts) {
    std::vector<std::string> words{"attnwalk"};
    std::istringstream in(plan.args);
    for (std::string w; in >> w;) words.push_back(w);
    const double share = std::max(1.0, std::floor(parse_bytes(outer.max_memory) / static_cast<double>(parts)));  // a size, even when tiny
    char bytes[32];
    std::snprintf(bytes, sizeof bytes, "%.0f", share);
    words.insert(words.end(), {"--max-memory", bytes, "--max-work", format_number(outer.max_work)});
    std::vector<const char*> argv;
    for (const auto& w : words) argv.push_back(w.c_str());
    CLI::App cli;
    Shell shell;
    make_cli(cli, shell, words.size() > 1 && names_a_command(words[1]) ? words[1] : "");
    cli.parse(static_cast<int>(argv.size()), argv.data());
    shell.preloaded = &input;
    shell.recording.explainable = outer.recording.explainable;  // a page of the walkthrough writes its cells out
    try {  // the part's own --compact or --steps, as when it is run alone
        return outer.compact || shell.compact ? compact(shell.walk(), shell.headline) : select_steps(shell.walk(), shell.steps);
    } catch (const UsageError& e) {
        const std::string message = e.what();
        if (message.find("--max-memory") == std::string::npos) throw;
        throw UsageError("the walkthrough keeps its " + std::to_string(parts) + " parts at once, so each may use 1/" + std::to_string(parts) +
                         " of --max-memory " + outer.max_memory + "; part '" + plan.id + "': " + message);
    }
}

// Why two options do not go together, for CLI11's terse "--a excludes --b" and
// "--a requires --b": the first option of the table that the message names.
std::string why(const std::string& message) {
    if (message.find(" excludes ") == std::string::npos && message.find(" requires ") == std::string::npos) return "";
    static const std::pair<const char*, const char*> reasons[] = {
        {"--ones", "the matrix of ones has no input, weights or scores"},
        {"--npy", "--npy writes every step's numbers; --summary keeps only their statistics"},
        {"--step", "--step pauses the text view"},
        {"--query", "--explain I,J already names the query I"},
        {"--json", "the JSON always holds every number and every field; --format, --precision, --full, --show-config, --color and --no-heatmap shape the text view"},
        {"--ids", "the prompt is a text (--text) or token ids (--ids), not both"},
        {"--text", "the input is a file (-i) or a sentence (--text), not both"},
        {"--init", "--init, --d-out and --qkv-bias say how seeded weights are drawn"},
        {"--d-out", "--init, --d-out and --qkv-bias say how seeded weights are drawn"},
        {"--qkv-bias", "--init, --d-out and --qkv-bias say how seeded weights are drawn"},
        {"--weights", "weights come either from a file or from the seeded generator"},
        {"--is-causal", "scaled_dot_product_attention takes attn_mask or is_causal, not both"},
        {"--mask-dtype", "--mask-dtype says how to read the --attn-mask"},
    };
    const std::string padded = message + " ";  // an option at the end is followed by a space too
    for (const auto& [option, reason] : reasons)
        if (padded.find(std::string(option) + " ") != std::string::npos) return std::string(" (") + reason + ")";
    return "";
}

// For an option the chosen command does not have: the commands that have it.
std::string hint(CLI::App& cli, int argc, const char* const* argv) {
    const CLI::App* chosen = parsed_command(cli);
    std::string out;
    for (int i = 1; i < argc; ++i) {
        std::string name = argv[i];
        if (name.rfind("--", 0) != 0 || name.size() < 3) continue;
        name = name.substr(0, name.find('='));
        if (chosen && chosen->get_option_no_throw(name)) continue;
        std::string owners;
        for (CLI::App* sub : cli.get_subcommands({}))
            if (sub->get_option_no_throw(name)) owners += (owners.empty() ? "" : ", ") + sub->get_name();
        if (!owners.empty()) out += "\n" + printable(name) + " is an option of: " + owners;
    }
    return out;
}

// The closest of `names` to `typed` if it is near enough to be a typo (a third of its
// letters; a swap of two neighbours is one edit), the first of them on a tie.
std::string typo_of(const std::string& typed, const std::vector<std::string>& names) {
    std::string best;
    std::size_t best_distance = std::max<std::size_t>(1, typed.size() / 3) + 1;
    for (const std::string& n : names) {
        const std::size_t d = edit_distance(typed, n, true);
        if (d < best_distance) {
            best_distance = d;
            best = n;
        }
    }
    return best;
}

// What a person meant, for the two mistakes CLI11 words for a parser: an unknown command
// ("A subcommand is required") and an unknown option ("The following arguments were not
// expected"). Empty when it is neither.
std::string typo_message(CLI::App& cli, int argc, const char* const* argv) {
    const CLI::App* chosen = parsed_command(cli);
    if (!chosen) {
        if (argc < 2 || argv[1][0] == '-') return "";
        std::vector<std::string> commands;
        for (CLI::App* sub : cli.get_subcommands({})) commands.push_back(sub->get_name());
        const std::string typed = argv[1], guess = typo_of(typed, commands);
        std::string all;
        for (const std::string& c : commands) all += (all.empty() ? "" : ", ") + c;
        return "unknown command '" + printable(typed) + "'" + (guess.empty() ? "; the commands are: " + all : "; did you mean '" + guess + "'?");
    }
    for (int i = 2; i < argc; ++i) {
        std::string name = argv[i];
        if (name.rfind("--", 0) != 0 || name.size() < 3) continue;
        name = name.substr(0, name.find('='));
        if (chosen->get_option_no_throw(name)) continue;
        std::vector<std::string> own;
        for (const CLI::Option* o : chosen->get_options())
            for (const std::string& l : o->get_lnames()) own.push_back("--" + l);
        const std::string guess = typo_of(name, own);
        std::string owners;  // the commands that have it as it is typed
        for (CLI::App* sub : cli.get_subcommands({}))
            if (sub != chosen && sub->get_option_no_throw(name)) owners += (owners.empty() ? "" : ", ") + sub->get_name();
        std::string message = "unknown option " + printable(name) + " for " + chosen->get_name();
        if (!owners.empty()) message += " (it is an option of: " + owners + ")";
        else if (!guess.empty()) message += "; did you mean " + guess + "?";
        return message;
    }
    return "";
}

NonFinite non_finite_of(const Shell& s) {
    return s.json_nonfinite == "null" ? NonFinite::null : s.json_nonfinite == "literal" ? NonFinite::literal : NonFinite::string;
}

// What --svg or --html wrote, on stderr: a file written silently is easy to miss.
void wrote(std::ostream& err, const std::string& path, const std::string& content, const char* what) {
    err << "attnwalk: wrote " << printable(path) << " (" << what << ", " << bytes_text(static_cast<double>(content.size())) << ")\n";
}

int run(Shell& s, std::ostream& out, std::ostream& err, const Terminal& term) {
    // the explorer and the page write cells out after the walk: the walk keeps its attention
    s.recording.explainable = !s.explore.empty() || s.html.has_value();
    s.text.torch = s.format == "torch";
    s.text.heatmap = !s.no_heatmap;
    s.text.fit_rows = s.compact ? 2 * (term.lines >= 10 ? term.lines : 24) - 2 : 0;  // two screens, less the command and the prompt
    s.text.columns = term.columns;
    s.text.lines = term.lines;
    const bool colour = s.color == "always" || (s.color == "auto" && term.stdout_is_tty && !term.no_color);
    s.text.palette = !colour ? Palette::none : term.truecolor ? Palette::truecolor : Palette::ansi256;
    s.text.color_scale = s.color_scale == "range"       ? ColorScale::range
                         : s.color_scale == "each"      ? ColorScale::each
                         : s.color_scale == "unit"      ? ColorScale::unit
                         : s.color_scale == "symmetric" ? ColorScale::symmetric
                         : s.color_scale == "row"       ? ColorScale::row
                                                        : ColorScale::automatic;
    if (s.walkthrough && s.npy)
        throw UsageError("the walkthrough is several commands: give --npy DIR to one of them (scores, softmax, context, causal, dropout, mha)");
    if (s.walkthrough) {
        const Embeddings input = prepare_input(s, [](const InputShape&) { return Cost{}; });
        std::vector<Section> sections;
        const std::size_t parts = walkthrough_plan().size() + (s.beyond ? beyond_plan().size() : 0);
        for (const SectionPlan& p : walkthrough_plan())
            sections.push_back({p.id, p.title, p.explanation, p.formula, p.args, trace_of(p, s, input, parts)});
        if (s.beyond)
            for (const SectionPlan& p : beyond_plan())
                sections.push_back({p.id, p.title, p.explanation, p.formula, p.args, trace_of(p, s, input, parts)});
        if (s.html) {
            const std::string page = html_of(sections, s.text.color_scale, s.text.precision);
            write_file_atomically(*s.html, page);
            wrote(err, *s.html, page, "a page");
        }
        if (s.json) {
            render_json(sections, out, non_finite_of(s));
        } else {
            // --step: a prompt on the terminal itself (/dev/tty, not a redirected stdout) after
            // every step, then a fresh screen. Through a pager (stdout not a terminal) the
            // pager does the paging and nothing waits.
            std::ifstream keys;  // read and written through separate streams
            std::ofstream prompt;
            if (s.step && term.stdout_is_tty) {
                keys.open("/dev/tty");
                prompt.open("/dev/tty");
            }
            const Pause pause = [&](const std::string& next, bool clear) {
                if (!keys.is_open() || !prompt.is_open()) return PauseAnswer::go_on;
                out << std::flush;
                // below the output; the cursor's place kept (ESC 7) to take the line back
                prompt << "\0337-- Enter: " << next << " · q then Enter: stop --" << std::flush;
                std::string line;
                if (!std::getline(keys, line) || line == "q") return PauseAnswer::stop;
                // a fresh screen (clear, cursor home), or the prompt's line and what Enter
                // echoed erased (ESC 8, then erase below) for the next step to go there
                out << (clear ? "\x1b[2J\x1b[H" : "\0338\033[J");
                return PauseAnswer::next_screen;
            };
            for (Section& section : sections) section.trace = printable(std::move(section.trace));
            if (keys.is_open() && prompt.is_open()) out << "\x1b[2J\x1b[H";  // the first page on a fresh screen too
            render_text(sections, s.text, printable(rerun_suffix(s)), pause, out, keys.is_open() && prompt.is_open());
        }
    } else if (!s.explore.empty()) {
        if (s.json || s.svg || s.html || s.npy || s.recording.summary)
            throw UsageError("explore shows its own screen: give the command without --json, --svg, --html, --npy or --summary");
        // every character as the text view shows it: control and bidi characters as stand-ins
        return explore(printable(s.compact ? compact(s.walk(), s.headline) : select_steps(s.walk(), s.steps)), s.explore, s.text.precision);
    } else {
        Trace trace = s.compact ? compact(s.walk(), s.headline) : select_steps(s.walk(), s.steps);
        if (std::any_of(trace.steps.begin(), trace.steps.end(), [&](const Step& st) {
                return st.kind == StepKind::parameter && !s.steps.empty();
            }))
            s.text.show_weights = true;  // a weight matrix asked for by --steps is shown
        std::string npy_dir;  // first: --npy refuses (the input among its files) before any other file is written
        if (s.npy) {
            const NpyWritten w = write_npy_files(trace, *s.npy, input_file(s));
            npy_dir = w.dir;
            err << "attnwalk: wrote " << printable(w.dir) << "/ (" << w.files << " .npy file" << (w.files == 1 ? "" : "s") << ", "
                << bytes_text(w.bytes) << ")\n";
        }
        if (s.html) {  // the JSON's own text, inside the page
            const std::string page = html_of(trace, s.text.color_scale, s.text.precision);
            write_file_atomically(*s.html, page);
            wrote(err, *s.html, page, "a page");
        }
        const auto svg = [&](const Trace& t) {
            const std::string picture = svg_of_weights(t, s.text, s.svg_step);
            write_file_atomically(*s.svg, picture);
            wrote(err, *s.svg, picture, "an SVG picture");
        };
        if (s.json) {  // the exact text
            if (s.svg) svg(printable(trace));
            render_json(trace, out, non_finite_of(s), false, npy_dir);
        } else {  // every text view shows control and bidi characters as visible stand-ins
            trace = printable(std::move(trace));
            if (s.svg) svg(trace);
            render_text(trace, s.text, out);
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

int run_guarded(Shell& shell, std::ostream& out, std::ostream& err, const Terminal& terminal);

// After a command line parsed: explore's own command parsed as itself, or the command run.
int after_parse(CLI::App& cli, Shell& shell, const char* argv0, std::ostream& out, std::ostream& err, const Terminal& terminal) {
    CLI::App* ex = nullptr;
    for (CLI::App* sub : cli.get_subcommands({}))
        if (sub->get_name() == "explore" && sub->parsed()) ex = sub;
    if (!ex) return run_guarded(shell, out, err, terminal);
    const std::vector<std::string> words = ex->remaining();
    if (!words.empty() && words[0] == "walkthrough") {
        err << "attnwalk: error: explore shows one command's steps; the walkthrough is several commands (scores, softmax, context, "
               "causal, dropout, mha): explore one of them, e.g. attnwalk explore softmax\n";
        return 2;
    }
    if (words.empty() || words[0] == "explore" || words[0].rfind('-', 0) == 0) {
        err << "attnwalk: error: explore needs a command to explore, e.g. attnwalk explore mha --heads 2 --causal\n";
        return 2;
    }
    std::vector<const char*> inner{argv0};
    for (const std::string& w : words) inner.push_back(w.c_str());
    CLI::App again;
    again.formatter(help_formatter(terminal.columns));
    Shell explored;
    make_cli(again, explored, names_a_command(words[0]) ? words[0] : "");
    try {
        again.parse(static_cast<int>(inner.size()), inner.data());
    } catch (const CLI::ParseError&) {  // the command's own help, or its usage error, as without explore
        return run_cli(static_cast<int>(inner.size()), inner.data(), out, err, terminal);
    }
    explored.explore = words;
    return run_guarded(explored, out, err, terminal);
}

namespace {

// --help or --version: CLI11 prints it; a write that fails is an error too.
int print_and_exit(CLI::App& cli, const CLI::ParseError& e, std::ostream& out, std::ostream& err) {
    const int code = cli.exit(e, out, err);
    out.flush();
    if (!out && errno != EPIPE) {
        err << "attnwalk: error: cannot write the output: " << std::strerror(errno) << '\n';
        return 1;
    }
    return code;
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err, const Terminal& terminal) {
    // the named command alone with the options the command line names (options.hpp), or no
    // command for a lone --version; anything else (help, a mistake, an option that needs one
    // not built) again below, every command and option built
    const bool version = argc == 2 && std::string(argv[1]) == "--version";
    if (argc > 1 && (version || names_a_command(argv[1]))) {
        CLI::App cli;
        cli.formatter(help_formatter(terminal.columns));
        NamedOptions named(argc, argv, 2);  // before the shell that points at it
        Shell shell;
        shell.named = &named;
        make_cli(cli, shell, version ? "--version" : argv[1]);
        bool ok = true;
        try {
            cli.parse(argc, argv);
        } catch (const CLI::ParseError& e) {
            if (version && e.get_exit_code() == 0) return print_and_exit(cli, e, out, err);
            ok = false;
        }
        if (ok && named.complete()) return after_parse(cli, shell, argv[0], out, err, terminal);
    }
    CLI::App cli;
    cli.formatter(help_formatter(terminal.columns));  // the subcommands take it over
    Shell shell;
    make_cli(cli, shell);
    try {
        cli.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return print_and_exit(cli, e, out, err);  // --help, --version
        std::string what = e.what();
        if (e.get_name() == "RequiresError" || e.get_name() == "ExcludesError") {  // the pair in declared order
            const std::string pair = failed_requirement(cli);
            if (!pair.empty()) what = pair;
        }
        const bool unknown = what.find("A subcommand is required") != std::string::npos ||
                             what.find("The following argument") != std::string::npos;
        const std::string typo = unknown ? typo_message(cli, argc, argv) : "";
        if (!typo.empty())
            err << "attnwalk: error: " << typo;
        else
            err << "attnwalk: error: " << printable(what) << why(what) << hint(cli, argc, argv);
        err << "\nRun 'attnwalk --help' (or 'attnwalk COMMAND --help') for the options.\n";
        return 2;
    }
    return after_parse(cli, shell, argv[0], out, err, terminal);
}

// run, with the library's errors turned into one line and an exit code.
int run_guarded(Shell& shell, std::ostream& out, std::ostream& err, const Terminal& terminal) {
    try {
        return run(shell, out, err, terminal);
    } catch (const MemoryBudgetError& e) {  // the library's budget is this option
        err << "attnwalk: error: " << printable(e.need()) << ", more than --max-memory " << bytes_text(parse_bytes(shell.max_memory))
            << " (raise --max-memory)\n";
        return 2;
    } catch (const UsageError& e) {
        err << "attnwalk: error: " << printable(e.what()) << '\n';
        return 2;
    } catch (const std::filesystem::filesystem_error& e) {  // a path the library asked about: the path and why, not the call
        err << "attnwalk: error: " << (e.path1().empty() ? std::string() : printable(e.path1().string()) + ": ") << e.code().message() << '\n';
        return 1;
    } catch (const std::bad_alloc&) {
        err << "attnwalk: error: out of memory: the input and options ask for larger tensors than this machine can hold\n";
        return 1;
    } catch (const std::exception& e) {
        err << "attnwalk: error: " << printable(e.what()) << '\n';
        return 1;
    }
}

namespace {

void write_raw(const char* text) { (void)!::write(STDERR_FILENO, text, std::strlen(text)); }

// Writes a file name to stderr from a signal handler: control bytes become '?'.
void write_safely(const char* text) {
    char buf[256];
    std::size_t n = 0;
    for (const char* c = text; *c; ++c) {
        buf[n++] = static_cast<unsigned char>(*c) < 0x20 || *c == 0x7f ? '?' : *c;
        if (n == sizeof buf) {
            (void)!::write(STDERR_FILENO, buf, n);
            n = 0;
        }
    }
    (void)!::write(STDERR_FILENO, buf, n);
}

void on_sigbus(int, siginfo_t* info, void*) {
    const char* file = mapped_file_at(info->si_addr);
    write_raw("attnwalk: error: ");
    if (file) {
        write_safely(file);
        write_raw(": the file shrank while it was being read (it is memory-mapped: it must not change while attnwalk runs)\n");
    } else {
        write_raw("a memory-mapped input shrank while it was being read (SIGBUS)\n");
    }
    ::_exit(1);
}

}  // namespace

void keep_freed_memory() {
#if defined(__GLIBC__)
    // Measured: the Qwen3-0.6B-shaped forward at T = 512 ~4% faster, the same peak RSS
    // (docs/performance.md).
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    // the heap grows 64 MiB at a time (address space only until touched): main's allocator
    // advises each growth for huge pages before the tensors land in it (app/main.cpp)
    mallopt(M_TOP_PAD, 64 << 20);
    // and every thread allocates from that heap: the cores' buffers are few and large, and
    // a thread's own arena (a mapping of its own) would fault them in 4 KiB at a time
    mallopt(M_ARENA_MAX, 1);
#endif
}

void report_shrunk_inputs() {
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, nullptr);
}

}  // namespace attnwalk::app
