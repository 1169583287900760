// The lessons' declarations: each lesson declares, once, in its own file, the steps it
// records — each id, what it means, and whether the compact view shows it — and a line saying
// what it teaches. Everything else that lists steps is derived from or checked against
// these: the step catalogue (the union: the JSON contract, which the Recorder and every
// finished trace are held to), docs/json.md's tables and the JSON Schema (tests), the
// compact view's headlines and the commands' one-line help (app/), bash completion's ids
// (the binary lists them). Light: app/ includes it.
#pragma once

#include <string>
#include <vector>

namespace attnwalk {

// What the views make of a step: the compact view shows its headline (the default view's)
// or the model view's; the drawings (the SVG, the page, the explorer) open on the last step
// marked `opening` that the trace has (after the model view's grid, Step::heads_grid).
enum Headline : unsigned { detail = 0, headline = 1, view_headline = 2, opening = 4 };

// Which models record a step of the model lessons: every one, or only today's families
// (RoPE, QK-norm, norms after the sublayers, sinks, experts, latent attention, a
// start-and-recent cache), which the gpt2 lesson therefore leaves out.
enum class Models : unsigned char { all, beyond_gpt2 };

struct StepDecl {
    const char* id;        // "weights"; "stepN.weights" for one of a numbered family
    const char* meaning;   // one line
    unsigned compact = detail;  // Headline bits
    Models models = Models::all;
};

struct LessonDecl {
    std::string name;     // its command: "mha"
    std::string summary;  // what it teaches, in a line (the command's help says it)
    std::vector<StepDecl> steps;
};

// Declares lesson `name` (its command): `ATTNWALK_LESSON(mla, 120) { static const LessonDecl
// lesson{"mla", …}; return lesson; }`, at the start of a line of a file of lib/src/lessons/.
// The build finds these lines and makes the registry of them (cmake/registry.cmake): a new
// lesson is its own file, with no list to edit. `place` orders lessons(), and so the
// commands: the chapter 10–60, beyond it 100–199, real models 200–299.
#define ATTNWALK_LESSON(name, place) const ::attnwalk::LessonDecl& name##_lesson()

// Groups of steps several lessons record, declared once: a head's projections as
// parameters (W_query, …, b_value) and their results (queries, keys, values), and the
// explanation engine's written-out cell.
const std::vector<StepDecl>& parameter_steps();
const std::vector<StepDecl>& projection_steps();  // queries, keys, values
const std::vector<StepDecl>& explain_steps();
// Concatenated declarations, for a lesson made of groups and its own steps.
std::vector<StepDecl> joined(std::initializer_list<std::vector<StepDecl>> parts);

// Every lesson, in the order of the chapter and beyond it (their places).
const std::vector<const LessonDecl*>& lessons();
// The lessons' names in that order, without building their declarations.
const std::vector<std::string>& lesson_names();
// The lesson of a command, or null.
const LessonDecl* find_lesson(const std::string& name);
// The ids the compact view shows (`view`: the model view's).
std::vector<std::string> headline_of(const LessonDecl& lesson, bool view = false);

// The catalogue: every step id of every lesson, each once (its first lesson's meaning).
struct StepInfo {
    const char* id;
    const char* meaning;
};
const std::vector<StepInfo>& step_catalogue();
// The entry for `id`; ids of numbered steps ("head1.W_query", "layer12.mlp") are found
// under their family's ("headN.W_query"). Null when the id is not in the catalogue.
const StepInfo* find_step(const std::string& id);
// Whether `lesson` declares `id` (numbered ids as above); its declaration, or null.
bool declares(const LessonDecl& lesson, const std::string& id);
const StepDecl* declaration(const LessonDecl& lesson, const std::string& id);

}  // namespace attnwalk
