// attnwalk explore: see explore.hpp.
#include "explore.hpp"

#if defined(ATTNWALK_EXPLORE)
#include <curses.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <clocale>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "attnwalk/errors.hpp"
#include "attnwalk/lessons/explainer.hpp"
#include "heatmap.hpp"
#include "render_text.hpp"
#include "text.hpp"

namespace attnwalk::app {

std::vector<std::size_t> explorable_steps(const Trace& trace) {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < trace.steps.size(); ++i)
        if (drawable(trace.steps[i])) out.push_back(i);
    return out;
}

ExploreShape explore_shape(const Step& step) {
    const auto& shape = step.tensor.shape;
    const std::size_t r = shape.size();
    ExploreShape e;
    e.rows = shape[r - 2];
    e.cols = shape[r - 1];
    for (std::size_t a = 0; a + 2 < r; ++a) e.panels *= shape[a];
    e.heads = r >= 3 && step.axes[r - 3] == Axis::head ? shape[r - 3] : e.panels;
    return e;
}

ExploreShape explore_shape(const Figure& f) {
    ExploreShape e = explore_shape(*f.step);
    e.first_layer = f.panel_layer.empty() ? 0 : f.panel_layer[0];
    return e;
}

std::size_t opening_panel(const Trace& trace, const Figure& f) {
    std::optional<std::size_t> layer, head;
    for (const auto& [name, value] : trace.params)
        if (const Index* at = std::get_if<Index>(&value); at && !at->at.empty()) {
            if (name == "layer_index") layer = static_cast<std::size_t>(at->at[0]);
            if (name == "head_index") head = static_cast<std::size_t>(at->at[0]);
        }
    for (std::size_t p = 0; p < f.panels; ++p)
        if (f.panel_batch[p] == 0 && (!layer || f.panel_layer[p] == *layer) && f.panel_head[p] == head.value_or(0)) return p;
    return 0;
}

ExploreView press(ExploreView v, ExploreKey key, const std::vector<ExploreShape>& shapes) {
    if (shapes.empty()) return v.quit = key == ExploreKey::quit, v;
    const ExploreShape& s = shapes[v.step];
    const std::size_t heads = std::max<std::size_t>(1, s.heads), layers = std::max<std::size_t>(1, s.panels / heads);
    const std::size_t head = v.panel % heads, layer = v.panel / heads;
    const ExploreView before = v;
    if (v.help && (key == ExploreKey::help || key == ExploreKey::escape)) return v.help = false, v;
    if (key != ExploreKey::other) v.help = false;  // a key that acts: the screen shows what it did, not the list over it
    switch (key) {
        case ExploreKey::up: v.row = v.row ? v.row - 1 : 0; break;
        case ExploreKey::down: v.row = std::min(v.row + 1, s.rows - 1); break;
        case ExploreKey::left: v.col = v.col ? v.col - 1 : 0; break;
        case ExploreKey::right: v.col = std::min(v.col + 1, s.cols - 1); break;
        case ExploreKey::home: v.col = 0; break;
        case ExploreKey::end: v.col = s.cols - 1; break;
        case ExploreKey::next_head: v.panel = layer * heads + (head + 1) % heads; break;
        case ExploreKey::previous_head: v.panel = layer * heads + (head + heads - 1) % heads; break;
        case ExploreKey::next_layer: v.panel = ((layer + 1) % layers) * heads + head; break;
        case ExploreKey::previous_layer: v.panel = ((layer + layers - 1) % layers) * heads + head; break;
        case ExploreKey::next_step:
        case ExploreKey::previous_step: {
            v.step = key == ExploreKey::next_step ? (v.step + 1) % shapes.size() : (v.step + shapes.size() - 1) % shapes.size();
            // the same model layer and head where the new step has them
            const ExploreShape& n = shapes[v.step];
            const std::size_t n_heads = std::max<std::size_t>(1, n.heads), n_layers = std::max<std::size_t>(1, n.panels / n_heads);
            const std::size_t model_layer = s.first_layer + layer;
            const std::size_t n_layer = model_layer < n.first_layer ? 0 : std::min(model_layer - n.first_layer, n_layers - 1);
            v.panel = std::min(n_layer * n_heads + std::min(head, n_heads - 1), n.panels - 1);
            v.row = std::min(v.row, n.rows - 1);
            v.col = std::min(v.col, n.cols - 1);
            break;
        }
        case ExploreKey::scroll_down: ++v.scroll; break;
        case ExploreKey::scroll_up: v.scroll = v.scroll ? v.scroll - 1 : 0; break;
        case ExploreKey::wide:
            v.wide = !v.wide;
            v.scroll = 0;
            break;
        case ExploreKey::help: v.help = true; break;
        case ExploreKey::escape:
        case ExploreKey::quit: v.quit = true; break;
        case ExploreKey::other: break;
    }
    if (v.step != before.step || v.panel != before.panel || v.row != before.row || v.col != before.col) v.scroll = 0;
    return v;
}

std::vector<std::string> wrap_line(const std::string& line, std::size_t width) {
    width = std::max<std::size_t>(width, 12);
    if (app::width(line) <= width) return {line};
    const std::size_t lead = line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' ');
    const std::string indent(std::min<std::size_t>(lead + 2, width / 2), ' ');
    std::vector<std::string> out;
    std::string rest = line;
    bool first = true;
    while (app::width(rest) > width) {
        // the last space that keeps the piece within the width, past the indent
        std::string piece = shorten(rest, width);
        std::size_t cut = piece.rfind(' ');
        const std::size_t floor = first ? lead : indent.size();
        if (cut == std::string::npos || cut <= floor) cut = piece.size();  // no space: cut the word
        out.push_back(rest.substr(0, cut));
        std::size_t next = cut;
        while (next < rest.size() && rest[next] == ' ') ++next;
        rest = indent + rest.substr(next);
        first = false;
    }
    out.push_back(rest);
    return out;
}

namespace {


std::string quoted(const std::string& t) { return "\"" + t + "\""; }

// The explanation engine's steps as the text view prints them, at `width` columns and `precision`.
std::vector<std::string> written_out(const Trace& trace, const std::vector<Step>& steps, std::size_t width, int precision) {
    if (steps.empty()) return {};
    Trace t;
    t.command = trace.command;
    t.tokens = trace.tokens;
    t.batched = trace.batched;
    t.steps = steps;
    TextOptions opt;
    opt.columns = width;
    opt.precision = precision;
    opt.heatmap = false;
    std::ostringstream out;
    render_text(t, opt, out);
    std::vector<std::string> lines;
    std::istringstream in(out.str());
    bool started = false;  // the header (the trace's tokens) is left out: the explanation starts at its first step
    for (std::string line; std::getline(in, line);) {
        started = started || line.rfind("[", 0) == 0;
        if (!started) continue;
        for (std::string& piece : wrap_line(line, width)) lines.push_back(std::move(piece));
    }
    return lines;
}

}  // namespace

std::vector<std::string> panel_lines(const Trace& trace, const Figure& f, const ExploreView& v, std::size_t width, int precision) {
    const auto number = [&](float x) { return value_text(x, precision); };  // as the text view writes it
    std::vector<std::string> lines;
    const auto add = [&](const std::string& line) {
        for (std::string& piece : wrap_line(line, width)) lines.push_back(std::move(piece));
    };
    const Step& s = *f.step;
    const std::size_t rank = s.axes.size();
    const std::size_t row_n = v.row + (s.axes[rank - 2] == Axis::token ? s.first_row : 0) + 1;
    const std::size_t col_n = v.col + (s.axes[rank - 1] == Axis::token ? s.first_key : 0) + 1;
    const bool numbered = s.axes[rank - 2] == Axis::token;  // tokens are named by position and text; heads, ranks by their label
    // token columns named by the step itself (a cache that kept some tokens): their positions are not first_key + j
    const bool own_keys = s.axes[rank - 1] == Axis::token && !s.labels.empty();
    // a label that names its axis already ("head 2", "layer 1") is not prefixed again
    const auto named = [](const std::string& axis, const std::string& label) { return label.rfind(axis + " ", 0) == 0 ? label : axis + " " + label; };
    add((numbered ? f.row_axis + " " + std::to_string(row_n) + " " + quoted(f.row_labels[v.row]) : named(f.row_axis, f.row_labels[v.row])) + ", " +
        (s.axes[rank - 1] != Axis::token ? named(f.col_axis, f.col_labels[v.col])
         : own_keys                      ? f.col_axis + " " + quoted(f.col_labels[v.col])
                                         : f.col_axis + " " + std::to_string(col_n) + " " + quoted(f.col_labels[v.col])));
    if (f.panels > 1 && !f.panel_names[v.panel].empty()) add(f.panel_names[v.panel]);
    const std::optional<CellRef> cell = f.cell(trace, v.panel, v.row, v.col);
    lines.push_back("");
    if (cell) {
        add("this cell in each step:");
        for (const PathEntry& e : cell_path(trace, *cell)) {
            const Step& t = trace.steps[e.step];
            std::string where;
            if (e.step != f.index && (e.row != v.row || e.col != v.col)) where = " (at " + std::to_string(e.row + 1) + "," + std::to_string(e.col + 1) + ")";
            // a mask's 1 and 0 said in words (1 keeps a key here; the textbook's triu uses 1 for blocked)
            const std::string legend = t.legend.empty() ? "" : " (" + t.legend + ")";
            // its title after its number, abbreviated to the line: what the step is, not only its id
            const std::string entry = std::string(e.step == f.index ? "> " : "  ") + t.id + where + "  " + number(e.value) + legend;
            const std::size_t room = width > app::width(entry) + 4 ? width - app::width(entry) - 4 : 0;
            add(entry + (t.title.empty() || room < 6 ? "" : "  · " + abbreviate(t.title, room)));
        }
    } else {
        add("value " + number(f.value(v.panel, v.row, v.col)));
    }
    const ExploreShape e = explore_shape(s);
    if (!s.row_sum.data.empty() && s.row_sum.data.size() == e.panels * e.rows) add("row sum " + number(s.row_sum.data[v.panel * e.rows + v.row]));
    {  // an attention's cell, or an entry with arithmetic of its own (a patching cell, an attribution term)
        const std::vector<std::string> more = written_out(trace, explain_at(trace, s, v.panel, v.row, v.col), width, precision);
        if (!more.empty()) {
            lines.push_back("");
            lines.insert(lines.end(), more.begin(), more.end());
        } else if (cell && trace.explainer) {
            lines.push_back("");
            add("(this cell is not among those the run kept to write out: the layer shown, --layer, holds them)");
        }
    }
    return lines;
}

ExploreLayout explore_layout(const Figure& f, int columns, int lines, std::size_t extra_lines) {
    ExploreLayout l;
    for (const auto& label : f.row_labels) l.label_w = std::max(l.label_w, std::min<std::size_t>(width(label), 10));
    const int left = static_cast<int>(l.label_w) + 1;
    const int half = std::max(34, columns / 2);  // the heatmap's part of the screen
    const std::size_t room = static_cast<std::size_t>(std::max(4, half - left - 1));
    const std::size_t cols = std::max<std::size_t>(f.cols, 1), rows = std::max<std::size_t>(f.rows, 1);
    l.cell_w = std::clamp<std::size_t>(room / cols, 2, 8);
    l.numbers = l.cell_w - 1 >= 4;  // "0.21", "-0.5", "1.00": never ".45"
    bool all_fit = true;  // every label whole in its cell
    for (const auto& label : f.col_labels) all_fit = all_fit && width(label) <= l.cell_w - 1;
    l.label_rows = all_fit || l.cell_w - 1 >= 4 ? 1 : 2;
    l.top = 3 + static_cast<int>(l.label_rows);
    l.bottom = std::max(l.top + 1, lines - 4 - static_cast<int>(extra_lines));
    const std::size_t tall = static_cast<std::size_t>(std::max(1, l.bottom - l.top));
    l.cell_h = std::clamp<std::size_t>(tall / rows, 1, std::max<std::size_t>(1, l.cell_w / 2));  // about square: a character is twice as tall as wide
    l.rows_fit = std::max<std::size_t>(1, tall / l.cell_h);
    l.cols_fit = std::max<std::size_t>(1, room / l.cell_w);
    const int heat_w = left + static_cast<int>(std::min(cols, l.cols_fit) * l.cell_w);
    l.panel_x = std::max(heat_w + 2, std::min(40, half));  // room for the axes line and the colour bar
    l.panel_w = std::max(1, columns - l.panel_x - 1);
    return l;
}

std::string key_label(const Figure& f, std::size_t c, std::size_t room) {
    const std::string& label = f.col_labels[c];
    if (width(label) > room && label.rfind("head ", 0) == 0) return cell_label(label, room);  // h12
    return abbreviate(label, room);
}

std::string key_bar(const ExploreShape& s, std::size_t steps, bool more_pages) {
    const std::size_t heads = std::max<std::size_t>(1, s.heads), layers = std::max<std::size_t>(1, s.panels / heads);
    std::string bar = "arrows cell";
    if (steps > 1) bar += " · s/S step";
    if (heads > 1) bar += " · h/H head";
    if (layers > 1) bar += " · l/L layer";
    if (more_pages) bar += " · PgDn more";
    return bar + " · ? keys · q quit";
}

std::vector<std::string> key_list(const ExploreShape& s, std::size_t steps, bool more_pages) {
    const std::size_t heads = std::max<std::size_t>(1, s.heads), layers = std::max<std::size_t>(1, s.panels / heads);
    std::vector<std::string> lines{"arrows (or j/k)  move the cell", "Home / End       first / last column"};
    if (steps > 1) lines.push_back("s / S (Tab)      next / previous step");
    if (heads > 1) lines.push_back("h / H            next / previous head");
    if (layers > 1) lines.push_back("l / L            next / previous layer");
    if (more_pages) lines.push_back("PgDn / PgUp      the explanation's pages");
    if (more_pages) lines.push_back("w                explanation full width");
    lines.push_back("q, Ctrl-C        quit");
    lines.push_back("");
    lines.push_back("? or Esc         close this list");
    return lines;
}

#if !defined(ATTNWALK_EXPLORE)
int explore(const Trace&, const std::vector<std::string>&, int) {
    throw UsageError("this attnwalk was built without ncurses (ATTNWALK_EXPLORE=OFF): no explore; add --html FILE to the command for a page");
}
#else
namespace {

volatile std::sig_atomic_t stop_requested = 0;
extern "C" void request_stop(int signal) { stop_requested = signal; }

// The terminal in curses mode while this lives: restored however the explorer ends.
struct Screen {
    explicit Screen(const char* term) {
        std::signal(SIGTERM, request_stop);
        std::signal(SIGHUP, request_stop);
        std::setlocale(LC_ALL, "");  // UTF-8 tokens and symbols, through ncursesw
        screen = newterm(term, stdout, stdin);  // null, not an exit, for a terminal terminfo does not know
        if (!screen)
            throw UsageError(std::string("explore: the terminal type TERM=") + term + " is not known to this system's terminfo; "
                             "try TERM=xterm-256color, or add --html FILE to the command for a page");
        set_term(screen);
        raw();  // Ctrl-C arrives as a key, and quits like q
        noecho();
        keypad(stdscr, TRUE);
        // Esc acts at once: ncurses waits ESCDELAY for a sequence after it, a second by
        // default; 50 ms still takes a terminal's sequences whole. The environment's is kept.
        if (!std::getenv("ESCDELAY")) set_escdelay(50);
        curs_set(0);
        timeout(200);  // wake up to see a stop request
        if (has_colors()) {
            start_color();
            use_default_colors();
        }
    }
    ~Screen() {
        endwin();
        if (screen) delscreen(screen);
    }
    Screen(const Screen&) = delete;
    Screen& operator=(const Screen&) = delete;
    SCREEN* screen = nullptr;
};

// A key, with the escape sequences terminfo does not name read whole: Home and End as
// tmux sends them under TERM=xterm-256color (ESC [ 1 ~, ESC [ 4 ~, ESC [ H, ESC O F, …)
// must not read as a lone Esc, which quits.
ExploreKey read_key(int c) {
    switch (c) {
        case KEY_UP: case 'k': return ExploreKey::up;
        case KEY_DOWN: case 'j': return ExploreKey::down;
        case KEY_LEFT: return ExploreKey::left;
        case KEY_RIGHT: return ExploreKey::right;
        case KEY_HOME: return ExploreKey::home;
        case KEY_END: return ExploreKey::end;
        case 's': case '\t': return ExploreKey::next_step;
        case 'S': case KEY_BTAB: return ExploreKey::previous_step;
        case 'h': return ExploreKey::next_head;
        case 'H': return ExploreKey::previous_head;
        case 'l': return ExploreKey::next_layer;
        case 'L': return ExploreKey::previous_layer;
        case KEY_NPAGE: case ' ': return ExploreKey::scroll_down;
        case KEY_PPAGE: case 'b': return ExploreKey::scroll_up;
        case 'w': return ExploreKey::wide;
        case '?': return ExploreKey::help;
        case 'q': case 'Q': case 3: return ExploreKey::quit;  // q, Ctrl-C
        case 27: {  // Esc alone quits (or closes the list of keys); Esc and more is a key's sequence
            timeout(30);
            std::string seq;
            for (int n; seq.size() < 8 && (n = getch()) != ERR;) seq += static_cast<char>(n);
            timeout(200);
            if (seq.empty()) return ExploreKey::escape;
            if (seq == "[1~" || seq == "[7~" || seq == "[H" || seq == "OH") return ExploreKey::home;
            if (seq == "[4~" || seq == "[8~" || seq == "[F" || seq == "OF") return ExploreKey::end;
            if (seq == "[A" || seq == "OA") return ExploreKey::up;
            if (seq == "[B" || seq == "OB") return ExploreKey::down;
            if (seq == "[C" || seq == "OC") return ExploreKey::right;
            if (seq == "[D" || seq == "OD") return ExploreKey::left;
            if (seq == "[5~") return ExploreKey::scroll_up;
            if (seq == "[6~") return ExploreKey::scroll_down;
            return ExploreKey::other;
        }
        default: return ExploreKey::other;
    }
}

void put(int y, int x, const std::string& text, int width) {
    if (y < 0 || y >= LINES || x >= COLS || width <= 0) return;
    const std::string shown = shorten(text, static_cast<std::size_t>(std::min(width, COLS - x)));
    mvaddstr(y, x, shown.c_str());
}

// A value that fits `w` characters: written as everywhere (value_text) with as many
// decimals as fit (up to `precision`), "…" when none does.
std::string fit(float v, std::size_t w, int precision) {
    if (!std::isfinite(v)) return value_text(v, 0);
    for (int d = std::min(precision, 4); d >= 0; --d) {
        const std::string s = value_text(v, d);
        if (s.size() <= w) return s;
    }
    return "…";
}

// Two ends of a scale, each in `w` characters, with the same decimals (0.0720 … 0.0716, not
// -0.072 … 0.0716): the most that both fit.
std::pair<std::string, std::string> fit_both(float lo, float hi, std::size_t w, int precision) {
    for (int d = std::min(precision, 4); d >= 0; --d) {
        const std::string a = std::isfinite(lo) ? value_text(lo, d) : value_text(lo, 0);
        const std::string b = std::isfinite(hi) ? value_text(hi, d) : value_text(hi, 0);
        if (a.size() <= w && b.size() <= w) return {a, b};
    }
    return {fit(lo, w, precision), fit(hi, w, precision)};
}


// Colour pairs: 32 levels of each scale, with dark or light text on them.
constexpr int levels = 32;
int pair_of(double t, bool diverging) {
    const int level = static_cast<int>(std::lround(std::clamp(t, 0.0, 1.0) * (levels - 1)));
    return 1 + (diverging ? levels : 0) + level;
}
void init_pairs() {
    for (int k = 0; k < levels; ++k) {
        const double t = k / static_cast<double>(levels - 1);
        for (int d = 0; d < 2; ++d) {
            const Rgb c = d ? diverging_rgb(t) : heat_rgb(t);
            const bool light = 0.299 * c.r + 0.587 * c.g + 0.114 * c.b > 140.0;
            init_pair(static_cast<short>(1 + d * levels + k), light ? COLOR_BLACK : COLOR_WHITE, static_cast<short>(xterm256(c)));
        }
    }
}

}  // namespace

int explore(const Trace& trace, const std::vector<std::string>& command_line, int precision) {
    const char* term = std::getenv("TERM");
    if (!::isatty(0) || !::isatty(1) || !term || !*term || std::string(term) == "dumb")
        throw UsageError("explore needs a terminal (standard input and output a terminal, TERM set and not dumb); "
                         "for a page instead, add --html FILE to the command");
    const std::vector<std::size_t> steps = explorable_steps(trace);
    if (steps.empty()) throw UsageError("explore: " + trace.command + " has no table of two or more axes to explore (nothing to draw as a heatmap); "
                                        "its steps are printed by the command itself");
    std::vector<ExploreShape> shapes;
    std::vector<Figure> figures;
    for (std::size_t i : steps) {
        figures.push_back(figure_of(trace, i, ColorScale::automatic, PanelScale::apart));
        shapes.push_back(explore_shape(figures.back()));
    }
    ExploreView v;
    const std::optional<std::size_t> opening = opening_step(trace);  // as --svg and the page
    for (std::size_t k = 0; k < steps.size(); ++k)
        if (steps[k] == opening) v.step = k;
    v.panel = opening_panel(trace, figures[v.step]);  // the layer and head the command named
    Screen screen(term);
    const bool colour = has_colors() && COLORS >= 256 && COLOR_PAIRS > 2 * levels;
    if (colour) init_pairs();
    std::string cache_key;
    std::vector<std::string> explanation;
    (void)command_line;
    while (!v.quit && !stop_requested) {
        erase();
        const Figure& f = figures[v.step];
        const ExploreShape& e = shapes[v.step];
        // the title: the step, its layer (and the layer's kind) and head
        std::string title = "attnwalk explore · " + f.step->id + " (" + std::to_string(v.step + 1) + "/" + std::to_string(steps.size()) + ")";
        const bool model_layer = std::any_of(trace.params.begin(), trace.params.end(), [](const auto& p) { return p.first == "layer_index"; });
        if (f.panels > 1 || model_layer) {
            std::string where = f.panel_names[v.panel];
            if (model_layer && where.find("layer") == std::string::npos)
                where = "layer " + std::to_string(f.panel_layer[v.panel] + 1) + (where.empty() ? "" : ", " + where);
            if (!f.panel_marks[v.panel].empty()) {
                const std::size_t comma = where.find(',');
                where = comma == std::string::npos ? where + " (" + f.panel_marks[v.panel] + ")"
                                                   : where.substr(0, comma) + " (" + f.panel_marks[v.panel] + ")" + where.substr(comma);
            }
            if (!where.empty()) title += " · " + where;
        }
        if (v.wide) {  // said in full where the line has room, else short: the title is never cut
            const std::string full = " · the explanation, full width (w: the heatmap)";
            title += app::width(title) + app::width(full) <= static_cast<std::size_t>(std::max(COLS, 0)) ? full : " · full width (w)";
        }
        attron(A_BOLD);
        put(0, 0, title, COLS);
        attroff(A_BOLD);

        // the step's title and formula, the whole width
        put(1, 0, f.step->title + (f.step->formula.empty() ? "" : (f.step->title.empty() ? "" : "   ") + f.step->formula), COLS);
        // the legend of its values where a number alone does not say (a mask's 1 and 0)
        // the heatmap: as large as its half of the screen allows, values in the cells where
        // they fit, every key labelled, a viewport around the cursor; under the colour bar,
        // as wide as the heatmap's part: the scroll's place when it does not all fit, and
        // the legend of its values where a number alone does not say (a mask's 1 and 0)
        ExploreLayout l = explore_layout(f, COLS, LINES);
        const std::size_t note_w = static_cast<std::size_t>(std::max(12, l.panel_x - 1));
        const std::vector<std::string> legend = f.step->legend.empty() ? std::vector<std::string>{} : wrap_line("values: " + f.step->legend, note_w);
        std::vector<std::string> notes;
        std::size_t r0 = 0, c0 = 0, r1 = 0, c1 = 0;
        for (int pass = 0; pass < 2; ++pass) {  // the notes take rows from the heatmap past the two it has
            r0 = v.row >= l.rows_fit ? v.row - l.rows_fit + 1 : 0;
            c0 = v.col >= l.cols_fit ? v.col - l.cols_fit + 1 : 0;
            r1 = std::min(f.rows, r0 + l.rows_fit);
            c1 = std::min(f.cols, c0 + l.cols_fit);
            notes.clear();
            if (r0 > 0 || r1 < f.rows || c0 > 0 || c1 < f.cols)
                notes = wrap_line("rows " + std::to_string(r0 + 1) + "–" + std::to_string(r1) + " of " + std::to_string(f.rows) + ", " + f.col_axis +
                                      "s " + std::to_string(c0 + 1) + "–" + std::to_string(c1) + " of " + std::to_string(f.cols) + " (arrows scroll)",
                                  note_w);
            notes.insert(notes.end(), legend.begin(), legend.end());
            if (notes.size() > 5) notes.resize(5);
            if (pass == 0) l = explore_layout(f, COLS, LINES, notes.size() > 2 ? notes.size() - 2 : 0);
        }
        if (v.wide) {  // w: the explanation over the whole width, the heatmap hidden
            l.panel_x = 0;
            l.panel_w = COLS - 1;
        }
        const int panel_x = l.panel_x, panel_w = l.panel_w;
        const int left = static_cast<int>(l.label_w) + 1, cw = static_cast<int>(l.cell_w), ch = static_cast<int>(l.cell_h);
        const int top = l.top, bottom = l.bottom;
        if (!v.wide) {
            {  // the axes, and the scale's words where they fit with two columns to spare before the panel
                const std::string axes = f.row_axis + " ↓ · " + f.col_axis + " →", full = axes + " · " + scale_words(f.scale(v.panel));
                put(2, 0, width(full) + 2 <= static_cast<std::size_t>(std::max(panel_x, 0)) ? full : axes, panel_x - 2);
            }
            for (std::size_t c = c0; c < c1; ++c) {  // every key: under its cell, or alternating on two rows
                const std::size_t room = static_cast<std::size_t>(l.label_rows == 1 ? cw - 1 : 2 * cw - 1);
                const int y = 3 + (l.label_rows == 1 ? 0 : static_cast<int>(c % 2));
                const int x = left + static_cast<int>(c - c0) * cw;
                put(y, x, key_label(f, c, room), std::min(static_cast<int>(room), panel_x - 1 - x));
            }
            for (std::size_t r = r0; r < r1; ++r) {
                const int y = top + static_cast<int>(r - r0) * ch, mid = y + (ch - 1) / 2;
                if (r == v.row) attron(A_BOLD);
                put(mid, 0, pad_right(abbreviate(f.row_labels[r], l.label_w), l.label_w), static_cast<int>(l.label_w));
                if (r == v.row) attroff(A_BOLD);
                for (std::size_t c = c0; c < c1; ++c) {
                    const float x = f.value(v.panel, r, c);
                    const bool here = r == v.row && c == v.col;
                    const int at = left + static_cast<int>(c - c0) * cw;
                    const std::string blank(static_cast<std::size_t>(cw - 1), ' ');
                    std::string text = blank;
                    int attr = 0;
                    if (f.hidden(v.panel, r, c)) {  // masked: a pattern of its own, never weight 0's colour
                        for (int k = 0; k < cw - 1; k += 2) text[static_cast<std::size_t>(k)] = '/';
                        attr = A_DIM;
                    } else {
                        const double t = f.at(v.panel, r, 1, x);
                        if (l.numbers) text = pad_left(fit(x, static_cast<std::size_t>(cw - 1), precision), static_cast<std::size_t>(cw - 1));
                        if (!colour && !l.numbers) text = std::string(1, " .:+#"[std::lround(std::clamp(t, 0.0, 1.0) * 4)]) + std::string(static_cast<std::size_t>(cw - 2), ' ');
                        if (colour && std::isfinite(x)) attr = COLOR_PAIR(pair_of(t, f.diverging(v.panel)));
                    }
                    if (here) attr = A_REVERSE | A_BOLD;
                    attron(attr);
                    for (int k = 0; k < ch; ++k)  // the value on the cell's middle row, its colour on all
                        put(y + k, at, y + k == mid || f.hidden(v.panel, r, c) ? text : blank, cw - 1);
                    attroff(attr);
                }
            }
            // the colour bar, the scroll's place and the legend
            {
                const ColorScale kind = f.scale(v.panel);
                const bool unit = kind == ColorScale::unit || kind == ColorScale::row;
                const auto ends = fit_both(f.lo[v.panel], f.hi[v.panel], 6, precision);
                const std::string lo = unit ? "0" : ends.first;
                const std::string hi = kind == ColorScale::row ? "row max" : unit ? "1" : ends.second;
                int x = 0;
                put(bottom, x, lo + " ", panel_x);
                x += static_cast<int>(width(lo)) + 1;
                for (int k = 0; k < 10; ++k) {
                    const double t = k / 9.0;
                    if (colour) attron(COLOR_PAIR(pair_of(t, f.diverging(v.panel))));
                    put(bottom, x + k, colour ? " " : std::string(1, " .:+#"[std::lround(t * 4)]), 1);
                    if (colour) attroff(COLOR_PAIR(pair_of(t, f.diverging(v.panel))));
                }
                x += 11;
                put(bottom, x, hi + (f.masked.empty() ? "" : "   / / masked"), panel_x - x - 1);
                for (std::size_t k = 0; k < notes.size(); ++k) put(bottom + 1 + static_cast<int>(k), 0, notes[k], panel_x - 1);
            }
        }
        // the panel: the cell named, its path, the cell written out
        const std::string key = std::to_string(v.step) + "/" + std::to_string(v.panel) + "/" + std::to_string(v.row) + "/" + std::to_string(v.col) + "/" +
                                std::to_string(panel_w);
        if (key != cache_key) {
            explanation = panel_lines(trace, f, v, static_cast<std::size_t>(std::max(panel_w, 12)), precision);
            cache_key = key;
        }
        const std::size_t page = static_cast<std::size_t>(std::max(1, LINES - 4));
        const std::size_t pages = explanation.empty() ? 1 : (explanation.size() + page - 1) / page;
        v.scroll = std::min(v.scroll, pages - 1);
        int y = 2;
        for (std::size_t k = v.scroll * page; k < explanation.size() && y < LINES - 2; ++k) put(y++, panel_x, explanation[k], panel_w);
        if (pages > 1) put(LINES - 2, panel_x, "page " + std::to_string(v.scroll + 1) + "/" + std::to_string(pages) + " (PgDn/PgUp, space/b)", panel_w);
        attron(A_DIM);
        put(LINES - 1, 0, key_bar(e, steps.size(), pages > 1), COLS);
        attroff(A_DIM);
        if (v.help) {  // a box with a border over a cleared background
            const std::vector<std::string> key_help = key_list(e, steps.size(), pages > 1);
            const int w = 46, h = static_cast<int>(key_help.size()) + 4;
            const int x0 = std::max(0, (COLS - w) / 2), y0 = std::max(0, (LINES - h) / 2);
            std::string rule;
            for (int k = 0; k < w - 2; ++k) rule += "─";
            for (int k = 0; k < h; ++k) {
                const bool edge = k == 0 || k == h - 1;
                const std::string line = edge ? (k == 0 ? "┌" : "└") + rule + (k == 0 ? "┐" : "┘") : "│" + std::string(static_cast<std::size_t>(w - 2), ' ') + "│";
                put(y0 + k, x0, line, w);
            }
            attron(A_BOLD);
            put(y0, x0 + 2, " keys ", w - 4);
            attroff(A_BOLD);
            for (std::size_t k = 0; k < key_help.size(); ++k) put(y0 + 2 + static_cast<int>(k), x0 + 2, key_help[k], w - 4);
        }
        refresh();
        const int c = getch();
        if (c == ERR || c == KEY_RESIZE) continue;  // a stop request is seen above; a resize redraws
        v = press(v, read_key(c), shapes);
    }
    return stop_requested ? 128 + stop_requested : 0;
}

#endif

}  // namespace attnwalk::app
