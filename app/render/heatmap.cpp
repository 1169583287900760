// Heatmaps: the terminal view and the SVG view of token×token steps.
#include "heatmap.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "attnwalk/errors.hpp"
#include "text.hpp"

namespace attnwalk::app {

ColorScale automatic_scale(bool weights, std::size_t longest, bool any_finite, float min, float max) {
    if (weights) return longest <= 16 ? ColorScale::unit : ColorScale::row;  // past 16 tokens no cell carries its number, and 0…1 shows little
    return any_finite && min < 0.0f && max > 0.0f ? ColorScale::symmetric : ColorScale::range;
}

std::string scale_words(ColorScale kind) {
    switch (kind) {
        case ColorScale::unit: return "weights on 0…1";
        case ColorScale::symmetric: return "symmetric about 0";
        case ColorScale::row: return "each row on 0 … its max";
        case ColorScale::each: return "each head on its own min … max";
        default: return "min … max";
    }
}

namespace {

const std::array<const char*, 4> shades = {"░", "▒", "▓", "█"};

std::string repeat(const std::string& s, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out += s;
    return out;
}

}  // namespace

namespace {

// A cell of width w: a colour background, or a shade block when colour is off.
std::string paint(double t, std::size_t w, Palette palette, bool diverging) {
    if (palette == Palette::none) return repeat(shades[static_cast<std::size_t>(std::lround(std::clamp(t, 0.0, 1.0) * 3.0))], w);
    const Rgb c = diverging ? diverging_rgb(t) : heat_rgb(t);
    char esc[48];
    if (palette == Palette::truecolor)
        std::snprintf(esc, sizeof esc, "\x1b[48;2;%d;%d;%dm", c.r, c.g, c.b);
    else
        std::snprintf(esc, sizeof esc, "\x1b[48;5;%dm", xterm256(c));
    return esc + std::string(w, ' ') + "\x1b[0m";
}

std::string centred(const std::string& glyph, std::size_t w) {
    const std::size_t left = (w - 1) / 2;
    return std::string(left, ' ') + glyph + std::string(w - 1 - left, ' ');
}

std::string xml_escape(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (s.compare(i, 2, "\xEF\xBF") == 0 && i + 2 < s.size() && (s[i + 2] == '\xBE' || s[i + 2] == '\xBF')) {
            out += "?";  // U+FFFE, U+FFFF: characters XML 1.0 forbids (printable() writes them as \uFFFE first)
            i += 2;
            continue;
        }
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default:
                // control characters are not allowed in XML 1.0
                if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') out += c;
                else out += "?";
        }
    }
    return out;
}

std::string hex(Rgb c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
    return buf;
}

}  // namespace

void print_heatmap(const Figure& f, std::size_t pi, const TextOptions& opt, std::ostream& out) {
    if (!f.any_shown(pi) || f.rows == 0 || f.cols == 0) return;
    const ColorScale kind = f.scale(pi);
    std::size_t label_w = 1;
    for (const auto& l : f.row_labels) label_w = std::max(label_w, std::min<std::size_t>(width(l), 10));
    const std::string indent = "    ";
    const std::size_t room = opt.columns > indent.size() + label_w + 2 ? opt.columns - indent.size() - label_w - 1 : 1;
    // Cell width 5 leaves room for column labels; narrower cells, then blocks of values
    // averaged into one cell, when the terminal is too narrow or too short.
    std::size_t cw = 1, kc = 1;
    if (f.cols * 5 <= room) cw = 5;
    else if (f.cols * 2 <= room) cw = 2;
    else if (f.cols > room) kc = (f.cols + room - 1) / room;
    const std::size_t max_rows = opt.lines >= 16 ? opt.lines - 8 : 40;  // the heatmap and its legend stay on one screen
    const std::size_t kr = std::max(kc, (f.rows + max_rows - 1) / max_rows);

    bool any_masked = false, any_nan = false;
    for (std::size_t r = 0; r < f.rows; ++r)
        for (std::size_t c = 0; c < f.cols; ++c) {
            any_nan = any_nan || std::isnan(f.value(pi, r, c));
            any_masked = any_masked || f.hidden(pi, r, c);
        }
    std::string legend;
    const int steps = opt.palette == Palette::none ? 3 : 4;
    for (int i = 0; i <= steps; ++i) legend += paint(i / static_cast<double>(steps), opt.palette == Palette::none ? 1 : 2, opt.palette, f.diverging(pi));
    const bool plain = kind == ColorScale::range || kind == ColorScale::each;  // "min 0.29 ░▒▓█ max 1.49"
    out << indent << "heatmap" << (plain ? "" : " (" + scale_words(kind) + ")") << ": " << (plain ? "min " : "")
        << (kind == ColorScale::unit || kind == ColorScale::row ? "0" : value_text(f.lo[pi], opt.precision)) << " " << legend << " "
        << (plain ? "max " + value_text(f.hi[pi], opt.precision)
                  : kind == ColorScale::unit ? std::string("1")
                  : kind == ColorScale::row  ? std::string("row max")
                                             : value_text(f.hi[pi], opt.precision))
        << (any_masked ? ", · masked" : "") << (any_nan ? ", ? NaN" : "") << '\n';
    if (kr > 1 || kc > 1)
        out << indent << "(each cell: the mean of a " << kr << "×" << kc << " block, to fit " << opt.columns << " columns"
            << (kr > kc ? " and " + std::to_string(max_rows) + " rows" : "") << ")\n";
    const std::string margin = indent + std::string(label_w + 1, ' ');
    // Column labels: under every cell when cells are 5 wide; otherwise the label of a cell
    // every so often, at its place, as far as they fit without touching.
    std::string labels = margin;
    const std::size_t cells = (f.cols + kc - 1) / kc;
    for (std::size_t cell = 0; cell < cells; ++cell) {
        const std::size_t at = margin.size() + cell * cw;
        const std::string l = cw == 5 ? cell_label(f.col_labels[cell * kc], 4) : f.col_labels[cell * kc];  // a layers × heads grid: h1, h2, …
        if (width(labels) > at || at + width(l) > opt.columns) continue;
        if (cw != 5 && width(labels) + 1 > at && cell != 0) continue;
        labels += std::string(at - width(labels), ' ') + l;
    }
    out << labels << '\n';
    for (std::size_t r = 0; r < f.rows; r += kr) {
        std::string line = indent + pad_right(abbreviate(f.row_labels[r], label_w), label_w) + " ";
        for (std::size_t c = 0; c < f.cols; c += kc) {
            const Block cell = average(f, pi, r, c, kr, kc);
            if (cell.kind == Block::masked) line += centred("·", cw);
            else if (cell.kind == Block::invalid) line += centred("?", cw);
            else line += paint(f.at(pi, r, kr, cell.mean), cw, opt.palette, f.diverging(pi));
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out << line << '\n';
    }
}

void check_svg_cells(double cells, const std::string& what, const std::string& instead) {
    if (cells <= svg_max_cells) return;
    char size[64];
    std::snprintf(size, sizeof size, "%.0f", cells * 75.0 / 1e6);
    char count[64];
    std::snprintf(count, sizeof count, "%.0f", cells);
    throw UsageError(std::string("--svg would draw ") + count + " cells (" + what + "), about " + size +
                     " MB of SVG; one picture draws at most 1000000 (" + instead + ")");
}

std::string heatmap_svg(const Figure& f, const std::vector<std::size_t>& order, const std::vector<std::string>& titles, const std::string& title,
                        int precision) {
    const ColorScale kind = f.scale(0);  // drawn together: one scale
    const std::size_t count = order.size();
    // Every drawn cell carries its value as a <title> (shown on hover) while the file stays
    // small; beyond that, cells of one colour are one path (a 40-token, 12-head picture:
    // under 200 KB instead of 1.4 MB) and the numbers are in --json.
    std::size_t drawn = 0;
    for (std::size_t p : order)
        for (std::size_t r = 0; r < f.rows; ++r)
            for (std::size_t c = 0; c < f.cols; ++c) drawn += !f.hidden(p, r, c);
    const bool hover = drawn <= 5000;
    std::size_t n = std::max<std::size_t>({1, f.rows, f.cols}), label_chars = 1;
    for (const auto& l : f.row_labels) label_chars = std::max(label_chars, std::min<std::size_t>(width(l), 16));
    // Panels in a grid of at most 4 columns (12 heads: 4×3), cells smaller as panels multiply.
    const std::size_t grid_cols = std::min<std::size_t>(count, 4);
    const std::size_t grid_rows = (count + grid_cols - 1) / grid_cols;
    const double area = count > 1 ? 420.0 : 704.0;  // the side of one panel's cells, at most
    const double cell = static_cast<double>(n) * 44.0 <= area ? 44.0 : std::max(1.0, area / static_cast<double>(n));
    const std::size_t label_every = cell >= 14.0 ? 1 : static_cast<std::size_t>(std::ceil(14.0 / cell));
    const bool numbers = cell >= 40.0;
    const double label_w = 8.0 * static_cast<double>(label_chars) + 30.0;  // row labels and the "query" axis title
    const double col_label_h = 10.0 + 7.0 * static_cast<double>(label_chars);
    std::size_t panel_title_chars = 0;  // a panel's title (8.5 px a character at 14 px bold) never runs into the next
    for (const std::string& t : titles) panel_title_chars = std::max(panel_title_chars, width(t));
    const double panel_w = std::max(label_w + cell * static_cast<double>(n) + 30.0, label_w + 8.5 * static_cast<double>(panel_title_chars) + 16.0);
    const double panel_h = 24.0 + col_label_h + cell * static_cast<double>(n) + 34.0;  // panel title, key labels, cells, "key"
    const double bar_w = 150.0;
    const double width = 20.0 + panel_w * static_cast<double>(grid_cols) + bar_w;
    // The title wrapped to the drawing's width: about 10.5 px a character at 18 px bold (67 characters of a circuit's title
    // measured 690 px in rsvg-convert's PNG; at 9.5 px a line ran to the right edge).
    const std::size_t title_chars = std::max<std::size_t>(20, static_cast<std::size_t>((width - 40.0) / 10.5));
    std::vector<std::string> title_lines;
    {
        const std::string wrapped = wrap(title, title_chars, "", "");
        std::size_t start = 0;
        for (std::size_t end; (end = wrapped.find('\n', start)) != std::string::npos; start = end + 1)
            title_lines.push_back(wrapped.substr(start, end - start));
    }
    const double top = 24.0 + 24.0 * static_cast<double>(title_lines.size());
    const double height = top + panel_h * static_cast<double>(grid_rows) + 10.0;

    std::ostringstream svg;
    svg.precision(6);
    svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
        << "\" viewBox=\"0 0 " << width << ' ' << height << "\" shape-rendering=\"crispEdges\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n"
        << "<defs><pattern id=\"masked\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
        << "<rect width=\"6\" height=\"6\" fill=\"#f2f2f2\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#b0b0b0\" stroke-width=\"2\"/>"
        << "</pattern></defs>\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    for (std::size_t l = 0; l < title_lines.size(); ++l)
        svg << "<text x=\"20\" y=\"" << 30.0 + 24.0 * static_cast<double>(l) << "\" font-size=\"18\" font-weight=\"bold\">"
            << xml_escape(title_lines[l]) << "</text>\n";
    bool any_masked = false, any_nan = false;
    for (std::size_t pi = 0; pi < count; ++pi) {
        const std::size_t p = order[pi];
        const std::string& panel_title = titles[pi];
        const double px = 20.0 + panel_w * static_cast<double>(pi % grid_cols);
        const double py = top + panel_h * static_cast<double>(pi / grid_cols);
        const double x0 = px + label_w, y0 = py + 24.0 + col_label_h;
        if (!panel_title.empty())
            svg << "<text x=\"" << x0 << "\" y=\"" << py + 16.0 << "\" font-size=\"14\" font-weight=\"bold\">" << xml_escape(panel_title)
                << "</text>\n";
        for (std::size_t c = 0; c < f.cols; c += label_every) {
            const double x = x0 + cell * (static_cast<double>(c) + 0.5), y = y0 - 6.0;
            svg << "<text x=\"" << x << "\" y=\"" << y << "\" font-size=\"12\" transform=\"rotate(-60 " << x << ' ' << y
                << ")\">" << xml_escape(abbreviate(f.col_labels[c], 16)) << "</text>\n";
        }
        // the axes: rows are queries, columns are keys (or layers and heads: a grid of the heads)
        const double side = cell * static_cast<double>(f.rows);
        svg << "<text x=\"" << px + 10.0 << "\" y=\"" << y0 + side / 2.0 << "\" font-size=\"12\" fill=\"#555\" text-anchor=\"middle\" "
            << "transform=\"rotate(-90 " << px + 10.0 << ' ' << y0 + side / 2.0 << ")\">← " << xml_escape(f.row_axis) << "</text>\n"  // turned a quarter left: the arrow points down the rows
            << "<text x=\"" << x0 + cell * static_cast<double>(f.cols) / 2.0 << "\" y=\"" << y0 + side + 20.0
            << "\" font-size=\"12\" fill=\"#555\" text-anchor=\"middle\">" << xml_escape(f.col_axis) << " →"
            << (label_every > 1 ? " (every " + std::to_string(label_every) + (label_every == 2 ? "nd" : label_every == 3 ? "rd" : "th") + " token labelled)" : "")
            << "</text>\n";
        bool panel_masked = false;
        for (std::size_t r = 0; r < f.rows; ++r)
            for (std::size_t c = 0; c < f.cols; ++c) panel_masked = panel_masked || f.hidden(p, r, c);
        if (panel_masked)  // the masked cells are the pattern behind the drawn ones
            svg << "<rect x=\"" << x0 << "\" y=\"" << y0 << "\" width=\"" << cell * static_cast<double>(f.cols) << "\" height=\"" << side
                << "\" fill=\"url(#masked)\"/>\n";
        any_masked = any_masked || panel_masked;
        std::map<std::string, std::string> paths;  // without hover: fill -> the unit squares of that colour
        for (std::size_t r = 0; r < f.rows; ++r) {
            const double y = y0 + cell * static_cast<double>(r);
            if (r % label_every == 0)
                svg << "<text x=\"" << x0 - 6.0 << "\" y=\"" << y + cell / 2.0 + 4.0
                    << "\" font-size=\"12\" text-anchor=\"end\">" << xml_escape(abbreviate(f.row_labels[r], 16)) << "</text>\n";
            for (std::size_t c = 0; c < f.cols; ++c) {
                const float v = f.value(p, r, c);
                const double x = x0 + cell * static_cast<double>(c);
                if (f.hidden(p, r, c)) continue;
                const double t = f.at(p, r, 1, v);
                any_nan = any_nan || std::isnan(v);
                const std::string value = value_text(v, precision);
                if (!hover) {
                    const double level = std::round(t * 63.0) / 63.0;  // 64 shades: one path each
                    const std::string fill = std::isnan(v) ? "#d62728" : std::isfinite(v) ? hex(f.colour(p, level)) : "#e6e6e6";
                    paths[fill] += "M" + std::to_string(c) + " " + std::to_string(r) + "h1v1h-1z";
                    continue;
                }
                const std::string fill = std::isnan(v) ? "#d62728" : std::isfinite(v) ? hex(f.colour(p, t)) : "#e6e6e6";
                svg << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell << "\" height=\"" << cell << "\" fill=\"" << fill
                    << "\"><title>" << xml_escape(f.row_labels[r] + " → " + f.col_labels[c] + ": " + value) << "</title></rect>\n";
                if (numbers)  // the value as everywhere, its font small enough for the cell (about 0.62 em a character)
                    svg << "<text x=\"" << x + cell / 2.0 << "\" y=\"" << y + cell / 2.0 + 4.0 << "\" font-size=\""
                        << std::min(10.0, std::floor(10.0 * (cell - 4.0) / (0.62 * static_cast<double>(value.size()))) / 10.0)
                        << "\" text-anchor=\"middle\" pointer-events=\"none\" fill=\""
                        << (f.diverging(p) ? (t < 0.2 || t > 0.8 ? "white" : "black") : t < 0.6 || std::isnan(v) ? "white" : "black") << "\">"
                        << value << "</text>\n";
            }
        }
        if (!paths.empty()) {
            svg << "<g transform=\"translate(" << x0 << ' ' << y0 << ") scale(" << cell << ")\">";
            for (const auto& [fill, d] : paths) svg << "<path fill=\"" << fill << "\" d=\"" << d << "\"/>";
            svg << "</g>\n";
        }
    }
    // the colour bar, next to the first row of panels: max at the top, min at the bottom
    const bool ends_as_words = kind == ColorScale::each || kind == ColorScale::row;
    const std::size_t first = order.empty() ? 0 : order.front();
    const std::string top_text = kind == ColorScale::each ? "its max" : kind == ColorScale::row ? "row max"
                                 : kind == ColorScale::unit ? "1" : value_text(f.hi[first], precision);
    const std::string bottom_text = ends_as_words && kind == ColorScale::each ? "its min"
                                    : kind == ColorScale::unit || kind == ColorScale::row ? "0"
                                                                                          : value_text(f.lo[first], precision);
    const double bx = width - bar_w + 10.0, by = top + 24.0 + col_label_h, bh = cell * static_cast<double>(n);
    svg << "<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
    for (int i = 0; i <= 10; ++i) svg << "<stop offset=\"" << i / 10.0 << "\" stop-color=\"" << hex(f.colour(first, i / 10.0)) << "\"/>";
    svg << "</linearGradient></defs>\n"
        << "<rect x=\"" << bx << "\" y=\"" << by << "\" width=\"16\" height=\"" << bh << "\" fill=\"url(#scale)\"/>\n"
        << "<text x=\"" << bx + 20.0 << "\" y=\"" << by + 10.0 << "\" font-size=\"12\">" << top_text << "</text>\n"
        << "<text x=\"" << bx + 20.0 << "\" y=\"" << by + bh << "\" font-size=\"12\">" << bottom_text << "</text>\n";
    {  // the scale in words, above the bar
        const std::string words = wrap("colour: " + scale_words(kind), 22, "", "");
        double wy = by - 10.0 - 14.0 * static_cast<double>(std::count(words.begin(), words.end(), '\n') - 1);
        for (std::size_t start = 0, end; (end = words.find('\n', start)) != std::string::npos; start = end + 1, wy += 14.0)
            svg << "<text x=\"" << bx << "\" y=\"" << wy << "\" font-size=\"11\" fill=\"#555\">" << xml_escape(words.substr(start, end - start))
                << "</text>\n";
    }
    double ly = by + bh + 24.0;
    if (any_masked) {
        svg << "<rect x=\"" << bx << "\" y=\"" << ly - 12.0 << "\" width=\"16\" height=\"16\" fill=\"url(#masked)\"/>"
            << "<text x=\"" << bx + 20.0 << "\" y=\"" << ly << "\" font-size=\"12\">masked</text>\n";
        ly += 22.0;
    }
    if (any_nan)
        svg << "<rect x=\"" << bx << "\" y=\"" << ly - 12.0 << "\" width=\"16\" height=\"16\" fill=\"#d62728\"/>"
            << "<text x=\"" << bx + 20.0 << "\" y=\"" << ly << "\" font-size=\"12\">NaN</text>\n";
    svg << "</svg>\n";
    return svg.str();
}

}  // namespace attnwalk::app
