#include "selection.hpp"

#include <algorithm>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/did_you_mean.hpp"
#include "attnwalk/lessons/catalogue.hpp"

namespace attnwalk::app {

namespace {

// '*' matches any run of characters.
bool glob(const std::string& pattern, const std::string& text) {
    std::size_t p = 0, t = 0, star = std::string::npos, mark = 0;
    while (t < text.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            mark = t;
        } else if (p < pattern.size() && pattern[p] == text[t]) {
            ++p;
            ++t;
        } else if (star != std::string::npos) {
            p = star + 1;
            t = ++mark;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

std::size_t position(const Trace& trace, const std::string& id, const std::string& pattern) {
    for (std::size_t i = 0; i < trace.steps.size(); ++i)
        if (trace.steps[i].id == id) return i;
    std::string ids;
    std::vector<std::string> known;
    for (const Step& s : trace.steps) {
        ids += (ids.empty() ? "" : ", ") + s.id;
        known.push_back(s.id);
    }
    // a typo (a third of its letters or fewer, at least 2): the id it most likely meant first
    const std::vector<std::string> near = closest(id, known, 1, std::max<std::size_t>(2, id.size() / 3));
    const std::string hint = unrecorded_hint(trace, id);
    throw UsageError("--steps '" + pattern + "': this trace has no step '" + id + "'" +
                     (!hint.empty() ? hint : near.empty() ? "" : "; did you mean '" + near.front() + "'?") + " (its steps: " + ids + ")");
}

}  // namespace

std::string unrecorded_hint(const Trace& trace, const std::string& id) {
    const LessonDecl* lesson = find_lesson(trace.command);
    const StepDecl* d = lesson ? declaration(*lesson, id) : nullptr;
    if (!d) return "";
    return "; " + id + " is a step of " + trace.command + " (" + d->meaning + ") that this run did not record: an option records it, or another kind of " +
           "input; see attnwalk " + trace.command + " --help";
}

Trace select_steps(Trace trace, const std::vector<std::string>& patterns) {
    if (patterns.empty()) return trace;
    std::vector<bool> keep(trace.steps.size(), false);
    for (const std::string& pattern : patterns) {
        const auto dots = pattern.find("..");
        bool any = false;
        if (pattern == "last" && !trace.steps.empty()) {
            keep.back() = any = true;
        } else if (dots != std::string::npos) {
            const std::string from = pattern.substr(0, dots), to = pattern.substr(dots + 2);
            const std::size_t a = from.empty() ? 0 : position(trace, from, pattern);
            const std::size_t b = to.empty() ? trace.steps.size() - 1 : to == "last" ? trace.steps.size() - 1 : position(trace, to, pattern);
            for (std::size_t i = a; i <= b && i < keep.size(); ++i) keep[i] = any = true;
        } else {
            for (std::size_t i = 0; i < trace.steps.size(); ++i)
                if (glob(pattern, trace.steps[i].id)) keep[i] = any = true;
        }
        if (!any) position(trace, pattern, pattern);  // names no step: the error lists them
    }
    std::vector<Step> kept;
    for (std::size_t i = 0; i < trace.steps.size(); ++i)
        if (keep[i]) kept.push_back(std::move(trace.steps[i]));
    trace.steps = std::move(kept);
    return trace;
}

Trace compact(Trace trace, const std::vector<std::string>& headline) {
    std::vector<Step> kept;
    for (Step& s : trace.steps)
        if (std::any_of(headline.begin(), headline.end(), [&](const std::string& h) { return glob(h, s.id); }) || s.id.rfind("explain_", 0) == 0)
            kept.push_back(std::move(s));
    trace.steps = std::move(kept);
    return trace;
}

}  // namespace attnwalk::app
