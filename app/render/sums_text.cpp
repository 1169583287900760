// A written-out sum as the text view prints it: the terms one a line, a vector wrapped
// at the terminal's width under its first number.
#include <algorithm>
#include <string>

#include "text.hpp"
#include "text_parts.hpp"

namespace attnwalk::app {

namespace {

// A written-out sum of vectors, one term a line: a line wider than the terminal breaks
// after a ", " of its vector, the rest aligned under the vector's first number. The first
// line follows the caller's `indent`; the others carry theirs.
std::string wrap_vectors(const std::string& s, std::size_t indent, std::size_t columns) {
    std::string out;
    std::size_t begin = 0;
    for (bool first_line = true;; first_line = false) {
        const std::size_t nl = s.find('\n', begin);
        const std::string line = s.substr(begin, nl == std::string::npos ? std::string::npos : nl - begin);
        const std::size_t lead = first_line ? indent : 0;  // columns before the line's first character
        const std::size_t open = line.find('[');
        if (lead + width(line) <= columns || open == std::string::npos) {
            out += line;
        } else {
            const std::string pad(lead + width(line.substr(0, open + 1)), ' ');
            std::string current;
            std::size_t used = lead, at = 0;
            while (at < line.size()) {
                const std::size_t comma = line.find(", ", at);
                const std::size_t end = comma == std::string::npos ? line.size() : comma + 2;
                const std::string piece = line.substr(at, end - at);
                if (used + width(piece) > columns && used > pad.size()) {  // break, keeping at least one number a line
                    while (!current.empty() && current.back() == ' ') current.pop_back();
                    out += current + "\n";
                    current = pad;
                    used = pad.size();
                }
                current += piece;
                used += width(piece);
                at = end;
            }
            out += current;
        }
        if (nl == std::string::npos) break;
        out += '\n';
        begin = nl + 1;
    }
    return out;
}

}  // namespace

// One written-out sum. Negative factors in parentheses, a named value as (name = value),
// continuation lines aligned under the '='.
std::string expansion_line(const Expansion& e, std::size_t label_width, const std::string& indent, const TextOptions& opt) {
    const int precision = opt.precision;
    const bool scalar = !e.terms.empty() && e.terms[0].value.size() == 1;
    auto vec = [&](const std::vector<float>& v) {
        std::string s = "[";
        for (std::size_t i : shown(v.size(), opt)) s += (s.size() > 1 ? ", " : "") + (i == gap ? "…" : value_text(v[i], precision));
        return s + "]";
    };
    auto factor = [&](float v, bool first) {  // (−0.1234) unless it leads the sum
        const std::string f = value_text(v, precision);
        return v < 0.0f && !first ? "(" + f + ")" : f;
    };
    const std::string cont = "\n" + indent + std::string(label_width + 1, ' ');
    std::string s = pad_right(e.label, label_width) + " = ";
    // one named value multiplying every term (a mean's 1/n): written once, after the sum of the
    // coefficients in parentheses, "(a + b + c)·(1/3 = 0.3333)"
    const bool common = scalar && e.terms.size() > 2 && !e.omitted && !e.terms[0].value_name.empty() &&
                        std::all_of(e.terms.begin(), e.terms.end(), [&](const auto& t) {
                            return t.value_name == e.terms[0].value_name && t.value == e.terms[0].value;
                        });
    if (common) s += "(";
    bool first = true;
    for (std::size_t i : shown(e.terms.size(), opt)) {
        if (e.omitted && i == e.omitted_after && i != gap) {  // the terms the library left out of a long sum
            s += (scalar ? " + " : cont + "+ ") + std::string("… (") + std::to_string(e.omitted) + " more terms)";
        }
        if (!first) s += scalar ? " + " : cont + "+ ";
        if (i == gap) {
            s += "…";
            first = false;
            continue;
        }
        const auto& t = e.terms[i];
        std::string value = scalar ? value_text(t.value[0], precision) : vec(t.value);
        if (!t.value_name.empty()) value = "(" + t.value_name + " = " + value + ")";
        else if (scalar && t.value[0] < 0.0f) value = "(" + value + ")";
        if (scalar && !common && t.coef == 1.0f && !t.value_name.empty()) s += value;  // a sum of named parts: "(content = …) + (position = …)"
        else s += factor(t.coef, first) + (common ? "" : "·" + value);
        first = false;
    }
    if (common) s += ")·(" + e.terms[0].value_name + " = " + value_text(e.terms[0].value[0], precision) + ")";
    s += scalar ? " = " : cont + "= ";
    s += scalar ? value_text(e.result.at(0), precision) : vec(e.result);
    if (!scalar) return wrap_vectors(s, width(indent), opt.columns);
    if (width(indent) + width(s) <= opt.columns) return s;
    // a long sum of numbers: broken before a " + " or the " = ", continuation lines aligned under the '='
    const std::size_t room = opt.columns > width(indent) + label_width + 12 ? opt.columns - width(indent) : label_width + 12;
    std::string out, line;
    std::size_t at = 0;
    const auto next_break = [&](std::size_t from) {
        const std::size_t plus = s.find(" + ", from), equals = s.rfind(" = ");
        return std::min(plus == std::string::npos ? s.size() : plus, equals > from && equals != std::string::npos ? equals : s.size());
    };
    while (at < s.size()) {
        const std::size_t end = next_break(at + 1);
        const std::string piece = s.substr(at, end - at);
        if (!line.empty() && width(line) + width(piece) > room) {
            out += line;
            line = cont.substr(1 + width(indent)) + piece.substr(1);  // the piece's leading space gives way to the alignment
            out += cont.substr(0, 1) + indent;
        } else {
            line += piece;
        }
        at = end;
    }
    return out + line;
}

}  // namespace attnwalk::app
