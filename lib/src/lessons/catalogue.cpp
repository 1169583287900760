// The registry of the lessons (found by the build), and what is derived from their
// declarations: the step catalogue, the compact view's headlines. Each lesson declares its
// steps in its own file (catalogue.hpp).
#include "attnwalk/lessons/catalogue.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace attnwalk {

// Every lesson the build found (cmake/registry.cmake: its ATTNWALK_LESSON line), declared.
#undef ATTNWALK_LESSON
#define ATTNWALK_LESSON(name, place) const LessonDecl& name##_lesson();
#include "lesson_registry.inc"

namespace {

// The registry: each lesson's command, its place and the function that declares it, so
// that a process builds the declarations of its own lesson alone (a start costs what the
// command uses).
struct Entry {
    const char* name;
    int place;
    const LessonDecl& (*declare)();
};
#undef ATTNWALK_LESSON
#define ATTNWALK_LESSON(name, place) Entry{#name, place, name##_lesson},
const std::vector<Entry>& registry() {
    static const std::vector<Entry> entries = [] {
        std::vector<Entry> out{
#include "lesson_registry.inc"
        };
        std::stable_sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.place < b.place; });
        for (std::size_t i = 1; i < out.size(); ++i)
            if (out[i].place == out[i - 1].place)
                throw std::logic_error(std::string("the lessons ") + out[i - 1].name + " and " + out[i].name + " have one place");
        return out;
    }();
    return entries;
}

}  // namespace

const std::vector<const LessonDecl*>& lessons() {
    static const std::vector<const LessonDecl*> all = [] {
        std::vector<const LessonDecl*> out;
        for (const Entry& e : registry()) out.push_back(&e.declare());
        return out;
    }();
    return all;
}

const std::vector<std::string>& lesson_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const Entry& e : registry()) out.push_back(e.name);
        return out;
    }();
    return names;
}

const LessonDecl* find_lesson(const std::string& name) {
    for (const Entry& e : registry())
        if (name == e.name) {
            const LessonDecl& lesson = e.declare();
            if (lesson.name != name) throw std::logic_error("the registry's lesson '" + name + "' declares itself as '" + lesson.name + "'");
            return &lesson;
        }
    return nullptr;
}

std::vector<StepDecl> joined(std::initializer_list<std::vector<StepDecl>> parts) {
    std::vector<StepDecl> out;
    for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
    return out;
}

std::vector<std::string> headline_of(const LessonDecl& lesson, bool view) {
    std::vector<std::string> out;
    for (const StepDecl& s : lesson.steps)
        if (s.compact & (view ? view_headline : headline)) {
            std::string id = s.id;  // a numbered family as a glob of the step selection: "stepN.weights" -> "step*.weights"
            const std::size_t n = id.find("N.");
            if (n != std::string::npos && n > 0 && std::isalpha(static_cast<unsigned char>(id[n - 1]))) id.replace(n, 1, "*");
            out.push_back(id);
        }
    return out;
}

const std::vector<StepInfo>& step_catalogue() {
    static const std::vector<StepInfo> steps = [] {
        std::vector<StepInfo> all;
        std::unordered_map<std::string_view, std::size_t> seen;  // every process records steps: no quadratic search at its start
        for (const LessonDecl* l : lessons())
            for (const StepDecl& s : l->steps)
                if (seen.emplace(s.id, all.size()).second) all.push_back({s.id, s.meaning});
        return all;
    }();
    return steps;
}

namespace {

// headN.name -> headN.name with the literal N: the key of a numbered step's family.
std::string family_key(const std::string& id) {
    for (const std::string prefix : {"head", "step", "block", "layer"}) {
        if (id.rfind(prefix, 0) != 0) continue;
        std::size_t end = prefix.size();
        while (end < id.size() && std::isdigit(static_cast<unsigned char>(id[end]))) ++end;
        if (end > prefix.size() && end < id.size() && id[end] == '.') return prefix + "N" + id.substr(end);
    }
    return id;
}

}  // namespace

const StepInfo* find_step(const std::string& id) {
    static const std::unordered_map<std::string_view, const StepInfo*> by_id = [] {
        std::unordered_map<std::string_view, const StepInfo*> m;
        for (const StepInfo& s : step_catalogue()) m.emplace(s.id, &s);
        return m;
    }();
    const auto it = by_id.find(family_key(id));
    return it == by_id.end() ? nullptr : it->second;
}

const StepDecl* declaration(const LessonDecl& lesson, const std::string& id) {
    const std::string key = family_key(id);
    const auto s = std::find_if(lesson.steps.begin(), lesson.steps.end(), [&](const StepDecl& d) { return key == d.id; });
    return s == lesson.steps.end() ? nullptr : &*s;
}

bool declares(const LessonDecl& lesson, const std::string& id) { return declaration(lesson, id) != nullptr; }

}  // namespace attnwalk
