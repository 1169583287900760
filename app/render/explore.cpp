// attnwalk explore: see explore.hpp.
#include "explore.hpp"

#if defined(ATTNWALK_EXPLORE)
#include <curses.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <clocale>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "attnwalk/errors.hpp"
#include "heatmap.hpp"
#include "text.hpp"

namespace attnwalk::app {

std::vector<std::size_t> explorable_steps(const Trace& trace) {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        const Step& s = trace.steps[i];
        if (s.kind == StepKind::result && s.tensor.shape.size() >= 2 && !s.tensor.data.empty()) out.push_back(i);
    }
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

ExploreView press(ExploreView v, ExploreKey key, const std::vector<ExploreShape>& shapes) {
    if (shapes.empty()) return v.quit = key == ExploreKey::quit, v;
    const ExploreShape& s = shapes[v.step];
    const std::size_t heads = std::max<std::size_t>(1, s.heads), layers = std::max<std::size_t>(1, s.panels / heads);
    const std::size_t head = v.panel % heads, layer = v.panel / heads;
    const ExploreView before = v;
    switch (key) {
        case ExploreKey::up: v.row = v.row ? v.row - 1 : 0; break;
        case ExploreKey::down: v.row = std::min(v.row + 1, s.rows - 1); break;
        case ExploreKey::left: v.col = v.col ? v.col - 1 : 0; break;
        case ExploreKey::right: v.col = std::min(v.col + 1, s.cols - 1); break;
        case ExploreKey::next_head: v.panel = layer * heads + (head + 1) % heads; break;
        case ExploreKey::previous_head: v.panel = layer * heads + (head + heads - 1) % heads; break;
        case ExploreKey::next_layer: v.panel = ((layer + 1) % layers) * heads + head; break;
        case ExploreKey::previous_layer: v.panel = ((layer + layers - 1) % layers) * heads + head; break;
        case ExploreKey::next_step:
        case ExploreKey::previous_step: {
            v.step = key == ExploreKey::next_step ? (v.step + 1) % shapes.size() : (v.step + shapes.size() - 1) % shapes.size();
            const ExploreShape& n = shapes[v.step];
            v.panel = std::min(v.panel, n.panels - 1);
            v.row = std::min(v.row, n.rows - 1);
            v.col = std::min(v.col, n.cols - 1);
            break;
        }
        case ExploreKey::scroll_down: ++v.scroll; break;
        case ExploreKey::scroll_up: v.scroll = v.scroll ? v.scroll - 1 : 0; break;
        case ExploreKey::help: v.help = !v.help; break;
        case ExploreKey::quit: v.quit = true; break;
        case ExploreKey::other: break;
    }
    if (v.step != before.step || v.panel != before.panel || v.row != before.row || v.col != before.col) v.scroll = 0;
    return v;
}

namespace {

std::string number(float v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[32];
    std::snprintf(buf, sizeof buf, std::fabs(v) < 1e10f ? "%.4f" : "%.4e", static_cast<double>(v));
    return buf;
}

// The label of entry i along axis a (the last two: rows and columns), counted from 1 where
// a person reads a position.
std::string axis_label(const Trace& trace, const Step& s, std::size_t a, std::size_t i) {
    const std::size_t r = s.axes.size();
    if (a + 1 == r && i < s.labels.size()) return s.labels[i];
    const Axis axis = s.axes[a];
    if (axis == Axis::token) {
        const std::size_t t = i + (a + 1 == r ? s.first_key : a + 2 == r ? s.first_row : 0);
        return t < trace.tokens.size() ? trace.tokens[t] : "t" + std::to_string(t + 1);
    }
    if (axis == Axis::feature) return "d" + std::to_string(i);
    return std::to_string(i + 1);
}

// "layer 2, head 3" for a panel.
std::string panel_name(const Step& s, std::size_t panel) {
    const std::size_t r = s.tensor.shape.size();
    std::string name;
    for (std::size_t a = r - 2; a-- > 0;) {
        const std::size_t n = s.tensor.shape[a];
        name = std::string(axis_name(s.axes[a])) + " " + std::to_string(panel % n + 1) + (name.empty() ? "" : ", " + name);
        panel /= n;
    }
    return name;
}

float at(const Step& s, std::size_t panel, std::size_t row, std::size_t col) {
    const ExploreShape e = explore_shape(s);
    return s.tensor.data[(panel * e.rows + row) * e.cols + col];
}

}  // namespace

std::vector<std::string> cell_path(const Trace& trace, const std::vector<std::size_t>& steps, const ExploreView& v) {
    const Step& s = trace.steps[steps[v.step]];
    const ExploreShape e = explore_shape(s);
    const std::size_t r = s.axes.size();
    std::vector<std::string> lines;
    const bool tokens = s.axes[r - 2] == Axis::token;
    const auto quoted = [](const std::string& t) { return "\"" + t + "\""; };
    lines.push_back((tokens ? "query " + std::to_string(s.first_row + v.row + 1) + " " : "row ") + quoted(axis_label(trace, s, r - 2, v.row)) + ", " +
                    (s.axes[r - 1] == Axis::token ? "key " + std::to_string(s.first_key + v.col + 1) + " " : "column ") +
                    quoted(axis_label(trace, s, r - 1, v.col)));
    if (e.panels > 1) lines.push_back(panel_name(s, v.panel));
    lines.push_back("");
    lines.push_back("this cell in each step:");
    for (std::size_t i : steps) {
        const Step& t = trace.steps[i];
        const ExploreShape f = explore_shape(t);
        if (f.rows != e.rows || f.cols != e.cols || t.axes.back() != s.axes.back()) continue;
        const std::size_t p = f.panels == e.panels ? v.panel : f.panels == 1 ? 0 : e.panels;
        if (p == e.panels) continue;
        lines.push_back(std::string(&t == &s ? "> " : "  ") + t.id + "  " + number(at(t, p, v.row, v.col)));
    }
    if (!s.row_sum.data.empty() && s.row_sum.data.size() == e.panels * e.rows)
        lines.push_back("row sum " + number(s.row_sum.data[v.panel * e.rows + v.row]));
    return lines;
}

#if !defined(ATTNWALK_EXPLORE)
int explore(const Trace&, const std::vector<std::string>&) {
    throw UsageError("this attnwalk was built without ncurses (ATTNWALK_EXPLORE=OFF): no explore; add --html FILE to the command for a page");
}
#else
namespace {

volatile std::sig_atomic_t stop_requested = 0;
extern "C" void request_stop(int) { stop_requested = 1; }

// The terminal in curses mode while this lives: restored however the explorer ends.
struct Screen {
    Screen() {
        std::signal(SIGTERM, request_stop);
        std::signal(SIGHUP, request_stop);
        std::setlocale(LC_ALL, "");  // UTF-8 tokens and symbols, through ncursesw
        initscr();
        raw();  // Ctrl-C arrives as a key, and quits like q
        noecho();
        keypad(stdscr, TRUE);
        curs_set(0);
        timeout(200);  // wake up to see a stop request
        if (has_colors()) {
            start_color();
            use_default_colors();
        }
    }
    ~Screen() { endwin(); }
    Screen(const Screen&) = delete;
    Screen& operator=(const Screen&) = delete;
};

ExploreKey key_of(int c) {
    switch (c) {
        case KEY_UP: case 'k': return ExploreKey::up;
        case KEY_DOWN: case 'j': return ExploreKey::down;
        case KEY_LEFT: return ExploreKey::left;
        case KEY_RIGHT: return ExploreKey::right;
        case 's': case '\t': return ExploreKey::next_step;
        case 'S': case KEY_BTAB: return ExploreKey::previous_step;
        case 'h': return ExploreKey::next_head;
        case 'H': return ExploreKey::previous_head;
        case 'l': return ExploreKey::next_layer;
        case 'L': return ExploreKey::previous_layer;
        case KEY_NPAGE: case ' ': return ExploreKey::scroll_down;
        case KEY_PPAGE: case 'b': return ExploreKey::scroll_up;
        case '?': return ExploreKey::help;
        case 'q': case 'Q': case 3: case 27: return ExploreKey::quit;  // q, Ctrl-C, Esc
        default: return ExploreKey::other;
    }
}

// The written-out cell, as `COMMAND … --explain I,J` prints it, or nothing where the command
// has no --explain. Run as a child of the same binary, its text view at the panel's width.
std::vector<std::string> written_out(const std::vector<std::string>& command_line, const Trace& trace, const Step& s,
                                     const ExploreView& v, std::size_t width) {
    const std::size_t r = s.axes.size();
    if (r < 2 || s.axes[r - 1] != Axis::token || s.axes[r - 2] != Axis::token || trace.batched) return {};
    const ExploreShape e = explore_shape(s);
    if (e.panels != e.heads) return {};  // layers: a model, which has no --explain
    char self[4096];  // this binary (in the child shell, /proc/self/exe would be the shell)
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return {};
    std::string cmd = "COLUMNS=" + std::to_string(std::max<std::size_t>(width, 20)) + " " + shell_word(std::string(self, static_cast<std::size_t>(n)));
    for (const std::string& word : command_line) cmd += " " + shell_word(word);
    cmd += " --explain " + std::to_string(s.first_row + v.row + 1) + "," + std::to_string(s.first_key + v.col + 1);
    if (e.heads > 1) cmd += " --head " + std::to_string(v.panel + 1);
    cmd += " --steps 'explain_*' --no-heatmap --color never 2>/dev/null";
    std::vector<std::string> lines;
    FILE* pipe = ::popen(cmd.c_str(), "r");
    if (!pipe) return {};
    std::string line;
    char buf[512];
    while (std::fgets(buf, sizeof buf, pipe)) {
        line += buf;
        if (!line.empty() && line.back() == '\n') {
            line.pop_back();
            lines.push_back(line);
            line.clear();
        }
    }
    if (::pclose(pipe) != 0) return {};
    // drop the header (the command's parameters): the explanation starts at its first step
    const auto first = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("[", 0) == 0; });
    return std::vector<std::string>(first, lines.end());
}

void put(int y, int x, const std::string& text, int width) {
    if (y < 0 || y >= LINES || x >= COLS || width <= 0) return;
    mvaddnstr(y, x, text.c_str(), static_cast<int>(std::min<std::size_t>(text.size(), static_cast<std::size_t>(width) * 4)));
    (void)width;
}

const char* const key_help[] = {"arrows (or j/k)  move the cell", "s / S (Tab)      next / previous step", "h / H            next / previous head",
                                "l / L            next / previous layer", "PgDn / PgUp      the explanation's pages", "?                this list",
                                "q, Esc, Ctrl-C   quit"};

}  // namespace

int explore(const Trace& trace, const std::vector<std::string>& command_line) {
    const char* term = std::getenv("TERM");
    if (!::isatty(0) || !::isatty(1) || !term || !*term || std::string(term) == "dumb")
        throw UsageError("explore needs a terminal (standard input and output a terminal, TERM set and not dumb); "
                         "for a page instead, add --html FILE to the command");
    const std::vector<std::size_t> steps = explorable_steps(trace);
    if (steps.empty()) throw UsageError("explore: this command's trace has no matrix to explore (try it without --summary)");
    std::vector<ExploreShape> shapes;
    for (std::size_t i : steps) shapes.push_back(explore_shape(trace.steps[i]));
    ExploreView v;
    for (std::size_t k = 0; k < steps.size(); ++k)  // start at the final weights, as --svg does
        if (trace.steps[steps[k]].id == "weights" || trace.steps[steps[k]].id == "attention_grid") v.step = k;
    Screen screen;
    const bool colour = has_colors() && COLORS >= 256;
    if (colour)
        for (int k = 0; k < 32; ++k) init_pair(static_cast<short>(k + 1), -1, static_cast<short>(xterm256(heat_rgb(k / 31.0))));
    std::string cache_key;
    std::vector<std::string> explanation;
    while (!v.quit && !stop_requested) {
        erase();
        const Step& s = trace.steps[steps[v.step]];
        const ExploreShape e = shapes[v.step];
        const std::size_t r = s.axes.size();
        const int panel_x = std::max(34, COLS / 2), panel_w = COLS - panel_x - 1;
        // the status line
        std::string status = "attnwalk explore · " + s.id + " (" + std::to_string(v.step + 1) + "/" + std::to_string(steps.size()) + ")";
        if (e.panels > 1) status += " · " + panel_name(s, v.panel);
        attron(A_BOLD);
        put(0, 0, shorten(status, static_cast<std::size_t>(COLS)), COLS);
        attroff(A_BOLD);
        // the heatmap: a viewport around the cursor, 2 columns a cell, labels of 8
        const int top = 2, rows_fit = std::max(1, LINES - top - 2), cols_fit = std::max(1, (panel_x - 10) / 2);
        const std::size_t r0 = v.row >= static_cast<std::size_t>(rows_fit) ? v.row - rows_fit + 1 : 0;
        const std::size_t c0 = v.col >= static_cast<std::size_t>(cols_fit) ? v.col - cols_fit + 1 : 0;
        float lo = INFINITY, hi = -INFINITY;
        for (std::size_t i = 0; i < e.rows * e.cols; ++i) {
            const float x = s.tensor.data[v.panel * e.rows * e.cols + i];
            if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
        }
        const bool weights = !s.row_sum.data.empty() || s.id == "attention_grid";
        const ColorScale kind = automatic_scale(weights, std::max(e.rows, e.cols), std::isfinite(lo), lo, hi);
        for (std::size_t i = r0; i < std::min(e.rows, r0 + rows_fit); ++i) {
            const int y = top + static_cast<int>(i - r0);
            put(y, 0, shorten(axis_label(trace, s, r - 2, i), 8), 8);
            float rmax = 0.0f;
            for (std::size_t j = 0; j < e.cols; ++j) rmax = std::max(rmax, std::isfinite(at(s, v.panel, i, j)) ? at(s, v.panel, i, j) : 0.0f);
            for (std::size_t j = c0; j < std::min(e.cols, c0 + cols_fit); ++j) {
                const float x = at(s, v.panel, i, j);
                double t = 0.0;
                if (kind == ColorScale::unit) t = x;
                else if (kind == ColorScale::row) t = rmax > 0 ? x / rmax : 0.0;
                else if (kind == ColorScale::symmetric) { const float m = std::max(std::fabs(lo), std::fabs(hi)); t = m > 0 ? (x + m) / (2 * m) : 0.5; }
                else t = hi > lo ? (x - lo) / (hi - lo) : 0.5;
                t = std::clamp(t, 0.0, 1.0);
                const bool here = i == v.row && j == v.col;
                const std::string cell = !std::isfinite(x) ? "··" : here ? "[]" : colour ? "  " : std::string(1, " .:+#"[std::lround(t * 4)]) + " ";
                int attr = here ? A_REVERSE | A_BOLD : 0;
                if (colour && std::isfinite(x) && !here) attr |= COLOR_PAIR(1 + static_cast<int>(std::lround(t * 31)));
                attron(attr);
                put(y, 9 + 2 * static_cast<int>(j - c0), cell, 2);
                attroff(attr);
            }
        }
        put(1, 9, shorten("keys →  (" + scale_words(kind) + ")", static_cast<std::size_t>(panel_x - 9)), panel_x - 9);
        // the panel: the cell's path, then the written-out cell
        const std::string key = std::to_string(v.step) + "/" + std::to_string(v.panel) + "/" + std::to_string(v.row) + "/" + std::to_string(v.col) + "/" + std::to_string(panel_w);
        if (key != cache_key) {
            explanation = cell_path(trace, steps, v);
            const std::vector<std::string> more = written_out(command_line, trace, s, v, static_cast<std::size_t>(std::max(panel_w, 20)));
            if (!more.empty()) explanation.push_back("");
            explanation.insert(explanation.end(), more.begin(), more.end());
            cache_key = key;
        }
        const std::size_t page = static_cast<std::size_t>(std::max(1, LINES - 3));
        const std::size_t pages = explanation.empty() ? 1 : (explanation.size() + page - 1) / page;
        v.scroll = std::min(v.scroll, pages - 1);
        int y = 1;
        for (std::size_t k = v.scroll * page; k < explanation.size() && y < LINES - 2; ++k)  // the row above the keys: the page
            put(y++, panel_x, shorten(explanation[k], static_cast<std::size_t>(std::max(panel_w, 1))), panel_w);
        if (pages > 1)
            put(LINES - 2, panel_x, "page " + std::to_string(v.scroll + 1) + "/" + std::to_string(pages) + " (PgDn/PgUp, space/b)", panel_w);
        attron(A_DIM);
        put(LINES - 1, 0, shorten("arrows cell · s/S step · h/H head · l/L layer · PgDn more · ? keys · q quit", static_cast<std::size_t>(COLS)), COLS);
        attroff(A_DIM);
        if (v.help) {
            const int w = 44, h = static_cast<int>(std::size(key_help)) + 2, x0 = std::max(0, (COLS - w) / 2), y0 = std::max(0, (LINES - h) / 2);
            for (int k = 0; k < h; ++k) put(y0 + k, x0, std::string(static_cast<std::size_t>(std::min(w, COLS)), ' '), w);
            attron(A_BOLD);
            put(y0, x0 + 1, "keys", w);
            attroff(A_BOLD);
            for (std::size_t k = 0; k < std::size(key_help); ++k) put(y0 + 1 + static_cast<int>(k), x0 + 1, key_help[k], w - 2);
        }
        refresh();
        const int c = getch();
        if (c == ERR || c == KEY_RESIZE) continue;  // a stop request is seen above; a resize redraws
        v = press(v, key_of(c), shapes);
    }
    return 0;
}

#endif

}  // namespace attnwalk::app
