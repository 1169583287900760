// The shape of the library: it names no command-line flag, ops/ and model/ write no
// text, and its step catalogue is exactly the list of ids docs/json.md documents.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "attnwalk/lessons/catalogue.hpp"
#include "attnwalk/model/family.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;

namespace {

// Every line of the files under `dirs` (below the source tree) that `pattern` finds, with
// its file and line number; `code_only` looks only before a // comment. `files` counts.
std::string lines_matching(const std::vector<std::string>& dirs, const std::regex& pattern, bool code_only, std::size_t& files) {
    std::string found;
    for (const std::string& dir : dirs)
        for (const auto& entry : fs::recursive_directory_iterator(test::source_path(dir))) {
            if (!entry.is_regular_file()) continue;
            ++files;
            std::ifstream in(entry.path());
            std::size_t n = 0;
            for (std::string line; std::getline(in, line);) {
                ++n;
                const std::string text = code_only ? line.substr(0, line.find("//")) : line;
                if (std::regex_search(text, pattern)) found += entry.path().string() + ":" + std::to_string(n) + ": " + line + "\n";
            }
        }
    return found;
}

}  // namespace

TEST_SUITE("contract") {
    TEST_CASE("contract.lib_names_no_flag") {
        // A flag is two dashes and a letter after a space, a quote or a bracket: "--seed".
        const std::regex flag(R"((^|[\s"'(\[`])--[a-z])");
        std::size_t files = 0;
        const std::string found = lines_matching({"lib"}, flag, false, files);
        CHECK(files > 20);
        CHECK_MESSAGE(found.empty(), "lib/ speaks of the math and takes values; the flags are app/'s:\n" << found);
    }

    TEST_CASE("contract.ops_and_model_compute_and_write_no_text") {
        // ops/ and model/ hand numbers on; only lessons/ records, titles and names steps.
        // Nor does ops/ know what a trace is: no trace header, no Summary (with its prose scope).
        const std::regex narrating(R"(lessons/|Recorder|\bStep\b|set_param|\.title\b|\.note\b|\.scope\b|\bSummary\b)");
        const std::regex trace_header(R"(#include "attnwalk/trace(_tensors)?\.hpp")");
        std::size_t ops_files = 0;
        const std::string includes = lines_matching({"lib/src/ops", "lib/include/attnwalk/ops"}, trace_header, true, ops_files);
        CHECK_MESSAGE(includes.empty(), "ops/ computes on tensors; traces are the lessons' business:\n" << includes);
        std::size_t files = 0;
        const std::string found = lines_matching({"lib/src/ops", "lib/src/model", "lib/include/attnwalk/ops", "lib/include/attnwalk/model"},
                                                 narrating, true, files);
        CHECK(files > 30);
        CHECK_MESSAGE(found.empty(), "ops/ and model/ compute; recording steps is the lessons' work:\n" << found);
    }

    TEST_CASE("contract.no_family_name_outside_the_family_files") {
        // A family is data (model/family.hpp): nothing but its own file says its name, so
        // nothing else can branch on it. The one exception is the gpt2 command, named after
        // the family it reads a bare checkpoint of.
        std::string names;
        for (const attnwalk::FamilySpec* f : attnwalk::families()) {
            names += (names.empty() ? "" : "|") + f->model_type;
            for (const auto& [refused, why] : f->refused_types) names += "|" + refused;
        }
        const std::regex literal("\"(" + names + ")\"");
        const std::regex command_name(R"(add_subcommand\("gpt2"|trace\.command = "gpt2";)");
        std::string found;
        for (const std::string& dir : {"lib", "app"})
            for (const auto& entry : fs::recursive_directory_iterator(test::source_path(dir))) {
                if (!entry.is_regular_file() || entry.path().parent_path().filename() == "families") continue;
                std::ifstream in(entry.path());
                std::size_t n = 0;
                for (std::string line; std::getline(in, line);) {
                    ++n;
                    const std::string code = line.substr(0, line.find("//"));
                    if (std::regex_search(code, literal) && !std::regex_search(code, command_name))
                        found += entry.path().string() + ":" + std::to_string(n) + ": " + line + "\n";
                }
            }
        CHECK(attnwalk::families().size() >= 8);
        CHECK_MESSAGE(found.empty(), "a family's name outside lib/src/model/families/ (read the spec's fields instead):\n" << found);
    }

    TEST_CASE("contract.no_child_processes") {
        // The explorer and the page explain a cell through the library, in the process:
        // nothing in lib/ or app/ starts a shell or another program.
        const std::regex spawn(R"(\b(popen|system|execv|execl|fork|posix_spawn)\s*\()");
        std::size_t files = 0;
        const std::string found = lines_matching({"lib", "app"}, spawn, true, files);
        CHECK_MESSAGE(found.empty(), "lib/ and app/ start no other process:\n" << found);
    }

    TEST_CASE("contract.catalogue_is_what_docs_json_md_documents") {
        // Every `id` in the first column of the tables under "## Step ids by command".
        std::ifstream in(test::source_path("docs/json.md"));
        REQUIRE(in.good());
        std::set<std::string> documented;
        bool in_ids = false;
        const std::regex id("`([A-Za-z_.0-9]+)`");
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("## ", 0) == 0) in_ids = line == "## Step ids by command";
            if (!in_ids || line.rfind("| ", 0) != 0) continue;
            const std::string first = line.substr(0, line.find(" |", 1));
            for (std::sregex_iterator m(first.begin(), first.end(), id), end; m != end; ++m) documented.insert((*m)[1]);
        }
        std::set<std::string> catalogue;
        for (const auto& s : attnwalk::step_catalogue()) catalogue.insert(s.id);
        for (const auto& d : documented) CHECK_MESSAGE(catalogue.count(d), "docs/json.md documents `" << d << "`, which no walk records");
        for (const auto& c : catalogue) CHECK_MESSAGE(documented.count(c), "the step `" << c << "` is not documented in docs/json.md");
        // The JSON Schema lists the same ids (those of the per-head parameters by a pattern).
        const auto schema = nlohmann::json::parse(test::read_file(test::source_path("docs/trace.schema.json")));
        std::set<std::string> in_schema;
        for (const auto& e : schema.at("$defs").at("step_id").at("anyOf").at(0).at("enum")) in_schema.insert(e.get<std::string>());
        for (const auto& c : catalogue)
            if (c.find("N.") == std::string::npos) CHECK_MESSAGE(in_schema.count(c), "docs/trace.schema.json does not list `" << c << "`");
        for (const auto& s : in_schema) CHECK_MESSAGE(catalogue.count(s), "docs/trace.schema.json lists `" << s << "`, not in the catalogue");
        CHECK(attnwalk::find_step("head11.W_key") != nullptr);
        CHECK(attnwalk::find_step("headx.W_key") == nullptr);
    }
}
