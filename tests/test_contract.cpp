// The shape of the library: it names no command-line flag, ops/ and model/ write no
// text, and its step catalogue is exactly the list of ids docs/json.md documents.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "attnwalk/lessons/catalogue.hpp"
#include "attnwalk/model/family.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;

namespace {

// Every line of the files under `dirs` (below the source tree; a file names itself) that
// `pattern` finds, with its file and line number; `code_only` looks only before a //
// comment. `files` counts.
std::string lines_matching(const std::vector<std::string>& dirs, const std::regex& pattern, bool code_only, std::size_t& files) {
    std::string found;
    const auto read = [&](const fs::path& file) {
        ++files;
        std::ifstream in(file);
        std::size_t n = 0;
        for (std::string line; std::getline(in, line);) {
            ++n;
            const std::string text = code_only ? line.substr(0, line.find("//")) : line;
            if (std::regex_search(text, pattern)) found += file.string() + ":" + std::to_string(n) + ": " + line + "\n";
        }
    };
    for (const std::string& dir : dirs) {
        const fs::path root = test::source_path(dir);
        if (fs::is_regular_file(root)) read(root);
        else
            for (const auto& entry : fs::recursive_directory_iterator(root))
                if (entry.is_regular_file()) read(entry.path());
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

    TEST_CASE("contract.stats_includes_nothing_of_ops") {
        // ops/ computes statistics (Forward's, the blocked path's) and the trace shows them:
        // the includes run one way, ops/ -> stats. The one kernel stats needs is declared
        // on its side (stats_sums.hpp) and defined in ops/.
        const std::regex ops_header(R"(#include\s*"[^"]*\bops/)");
        std::size_t files = 0;
        const std::string found = lines_matching({"lib/include/attnwalk/stats.hpp", "lib/src/stats.cpp", "lib/src/stats_sums.hpp"}, ops_header, true, files);
        CHECK(files == 3);
        CHECK_MESSAGE(found.empty(), "stats includes nothing of ops/ (ops/ includes stats):\n" << found);
    }

    TEST_CASE("contract.no_family_name_outside_the_family_files") {
        // A family is data (model/family.hpp): nothing but its own file says its name, so
        // nothing else can branch on it. The one exception is the gpt2 command, named after
        // the family it reads a bare checkpoint of: its name where a command is named.
        std::string names;
        for (const attnwalk::FamilySpec* f : attnwalk::families()) {
            names += (names.empty() ? "" : "|") + f->model_type;
            for (const auto& [refused, why] : f->refused_types) names += "|" + refused;
        }
        const std::regex literal("\"(" + names + ")\"");
        const std::regex command_name(R"(add_subcommand\("gpt2"|trace\.command = "gpt2";|LessonDecl lesson\{"gpt2",|\{"gpt2", add_gpt2\}|\{"gpt2", gpt2_lesson\}|lesson\("gpt2"\))");
        std::string found;
        for (const char* dir : {"lib", "app"})
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

    TEST_CASE("contract.a_kinds_fields_are_named_by_families_and_blocks_alone") {
        // Each kind of block (lib/src/model/blocks/) reads its own config.json fields, named by
        // the family's spec (lib/src/model/families/, their defaults in model/family.hpp) or by
        // the kind itself: nothing else on a model's path names one in its code, so a family or
        // a kind lands in those two folders. The decoder's own fields (read by loader.cpp and
        // blocks/layers.cpp: sizes, norms, layer types, windows, RoPE) are every family's. (The
        // chapter's mla, deltanet and params lessons name DeepSeek's and Qwen's fields as their
        // own parameters on purpose: that is what they teach.)
        std::set<std::string> fields;
        const auto add = [&](const std::string& name) {
            if (!name.empty()) fields.insert(name);
        };
        for (const attnwalk::FamilySpec* f : attnwalk::families()) {
            add(f->heads.scale_field);
            for (const std::string* s : {&f->heads.full_head_dim, &f->heads.full_kv_heads, &f->heads.keys_as_values, &f->heads.shared_layers, &f->dense.double_wide})
                add(*s);
            add(f->layers.sliding_rope_base);
            add(f->layers.no_rope_layers);
            add(f->layers.no_rope_interval);
            add(f->layers.windows_flag);
            for (const std::string& a : f->dense.activation_fields) add(a);
            for (const std::string* s : {&f->latent.query_rank, &f->latent.rank, &f->latent.nope, &f->latent.rope, &f->latent.value, &f->latent.interleave,
                                             &f->latent.index_heads, &f->latent.index_dim, &f->latent.index_topk})
                add(*s);
            if (f->deltanet)
                for (const std::string* s : {&f->deltanet->key_heads, &f->deltanet->value_heads, &f->deltanet->key_dim, &f->deltanet->value_dim,
                                             &f->deltanet->kernel, &f->deltanet->interval})
                    add(*s);
            if (f->experts) {
                const attnwalk::ExpertsPart& e = *f->experts;
                for (const std::string* s : {&e.count, &e.per_token, &e.swiglu_limit, &e.hidden, &e.first_dense, &e.shared_count, &e.shared_width,
                                             &e.sparse_step, &e.dense_layers, &e.normalise, &e.groups, &e.top_groups, &e.routed_scale})
                    add(*s);
            }
            if (f->per_layer) {
                add(f->per_layer->size);
                add(f->per_layer->vocab);
            }
            add(f->fields.extra_layers);
            add(f->fields.nested);
            for (const std::string& r : f->fields.refused_true) add(r);
        }
        // and what the kinds read by a name of their own (blocks/layers.cpp plans the decoder's layers: its fields are every family's)
        const std::regex read(R"re(cfg\.(count|number|flag|text|get|at)\("([A-Za-z_]+)")re");
        for (const auto& entry : fs::directory_iterator(test::source_path("lib/src/model/blocks"))) {
            if (entry.path().filename() == "layers.cpp") continue;
            const std::string text = test::read_file(entry.path().string());
            for (auto m = std::sregex_iterator(text.begin(), text.end(), read); m != std::sregex_iterator(); ++m) fields.insert((*m)[2].str());
        }
        // the decoder's own fields a kind names in its messages (intermediate_size: the MLP's, and gpt-oss's experts')
        for (const char* shared : {"attention_bias", "num_key_value_heads", "rope_scaling", "intermediate_size"}) fields.erase(shared);
        REQUIRE(fields.count("kv_lora_rank"));
        REQUIRE(fields.count("index_topk"));
        REQUIRE(fields.count("linear_num_key_heads"));
        REQUIRE(fields.count("routed_scaling_factor"));
        REQUIRE_FALSE(fields.count("hidden_size"));
        std::string words;
        for (const std::string& f : fields) words += (words.empty() ? "" : "|") + f;
        const std::regex named("\\b(" + words + ")\\b");
        const std::regex literal(R"re("([^"\\]|\\.)*")re");
        std::string found;
        std::size_t files = 0;
        for (const char* dir : {"lib/src/model", "lib/include/attnwalk/model", "lib/src/lessons/model", "app"})
            for (const auto& entry : fs::recursive_directory_iterator(test::source_path(dir))) {
                const std::string folder = entry.path().parent_path().filename().string();
                const std::string file = entry.path().filename().string();
                const bool concept = folder == "commands" && (file == "mla.cpp" || file == "deltanet.cpp" || file == "beyond.cpp");  // those lessons' commands
                if (!entry.is_regular_file() || folder == "families" || folder == "blocks" || file == "family.hpp" || concept) continue;
                ++files;
                std::ifstream in(entry.path());
                std::size_t n = 0;
                for (std::string line; std::getline(in, line);) {
                    ++n;
                    const std::string code = line.substr(0, line.find("//"));
                    for (auto m = std::sregex_iterator(code.begin(), code.end(), literal); m != std::sregex_iterator(); ++m) {
                        const std::string s = m->str();
                        if (std::regex_search(s, named)) found += entry.path().string() + ":" + std::to_string(n) + ": " + line + "\n";
                    }
                }
            }
        CHECK(files > 20);
        CHECK_MESSAGE(found.empty(), "a kind's config.json field named outside families/ and blocks/ (read it from the spec):\n" << found);
        // nor do the loader and the decoder read a kind's part of the spec: they name the kind, it reads its part
        const std::regex part(R"(\bf(amily)?\s*(\.|->)\s*(heads|latent|deltanet|dense|experts|layers)\b)");
        std::size_t core = 0;
        const std::string reads = lines_matching({"lib/src/model/loader.cpp", "lib/src/model/decoder.cpp"}, part, true, core);
        CHECK(core == 2);
        CHECK_MESSAGE(reads.empty(), "the loader or the decoder reads a kind's part of the spec (leave it to the kind, lib/src/model/blocks/):\n" << reads);
    }

    TEST_CASE("contract.the_decoder_includes_and_names_no_kind_of_block") {
        // Each kind of block owns its weights and its forward (model/blocks/<kind>.hpp, its
        // file of lib/src/model/blocks/): the decoder and a layer's blocks as it calls them
        // (model/block.hpp) include no kind's ops or header and name no kind's type, so that a
        // new kind leaves them as they are.
        const std::vector<std::string> decoder = {"lib/include/attnwalk/model/decoder.hpp", "lib/include/attnwalk/model/block.hpp",
                                                  "lib/src/model/decoder.cpp"};
        const std::regex kind_include(R"re(#include "attnwalk/(ops/(activations|attention|blocked_attention|gated_deltanet|latent_attention|moe)|model/blocks/))re");
        const std::regex kind_type(R"((HeadsBlock|LatentBlock|DeltaNetBlock|MlpBlock|ExpertsBlock|AttentionWeights|LatentWeights|GatedDeltaNetWeights|MoeWeights))");
        std::size_t files = 0;
        const std::string includes = lines_matching(decoder, kind_include, true, files);
        const std::string names = lines_matching(decoder, kind_type, true, files);
        CHECK(files == 6);
        CHECK_MESSAGE(includes.empty(), "the decoder includes a kind's ops or header (a kind's block brings its own):\n" << includes);
        CHECK_MESSAGE(names.empty(), "the decoder names a kind's type (it calls a layer's blocks, model/block.hpp):\n" << names);
    }

    TEST_CASE("contract.each_hook_point_is_declared_once_where_it_is_made") {
        // The tap's hook points (model/hooks.hpp): the decoder declares its own in decoder.hpp,
        // each kind of block its own in its header of model/blocks/, each once and named as its
        // id; docs/architecture.md's table lists exactly these.
        const std::regex declaration(R"re(HookId (\w+)\{"(\w+)"\})re");
        std::map<std::string, std::string> declared;  // id -> its file
        std::string twice, elsewhere, misnamed;
        for (const auto& entry : fs::recursive_directory_iterator(test::source_path("lib"))) {
            const std::string file = entry.path().string();
            if (!entry.is_regular_file() || (entry.path().extension() != ".hpp" && entry.path().extension() != ".cpp")) continue;
            const std::string text = test::read_file(file);
            for (auto m = std::sregex_iterator(text.begin(), text.end(), declaration); m != std::sregex_iterator(); ++m) {
                const std::string id = (*m)[2];
                if (declared.count(id)) twice += id + ": " + declared[id] + " and " + file + "\n";
                declared[id] = file;
                if (file != test::source_path("lib/include/attnwalk/model/decoder.hpp") &&
                    file.rfind(test::source_path("lib/include/attnwalk/model/blocks/"), 0) != 0)
                    elsewhere += id + ": " + file + "\n";
                if ((*m)[1] != id) misnamed += std::string((*m)[1]) + " for \"" + id + "\"\n";
            }
        }
        CHECK(declared.size() >= 16);
        CHECK_MESSAGE(twice.empty(), "a hook point declared twice:\n" << twice);
        CHECK_MESSAGE(elsewhere.empty(), "a hook point declared outside decoder.hpp and model/blocks/:\n" << elsewhere);
        CHECK_MESSAGE(misnamed.empty(), "a hook point's constant named otherwise than its id:\n" << misnamed);
        const std::string doc = test::read_file(test::source_path("docs/architecture.md"));
        const std::size_t from = doc.find("## The tap and its hook points");
        REQUIRE(from != std::string::npos);
        std::stringstream section(doc.substr(from, doc.find("\n## ", from + 1) - from));
        std::set<std::string> documented;
        const std::regex row(R"(^\| `(\w+)` \|)");
        std::smatch m;
        for (std::string line; std::getline(section, line);)
            if (std::regex_search(line, m, row)) documented.insert(m[1]);
        std::string undocumented, unknown;
        for (const auto& d : declared)
            if (!documented.count(d.first)) undocumented += " " + d.first;
        for (const std::string& id : documented)
            if (!declared.count(id)) unknown += " " + id;
        CHECK_MESSAGE(undocumented.empty(), "hook points missing from docs/architecture.md's table:" << undocumented);
        CHECK_MESSAGE(unknown.empty(), "docs/architecture.md's table lists hook points nothing declares:" << unknown);
    }

    TEST_CASE("contract.no_child_processes") {
        // The explorer and the page explain a cell through the library, in the process:
        // nothing in lib/ or app/ starts a shell or another program.
        const std::regex spawn(R"(\b(popen|system|execv|execl|fork|posix_spawn)\s*\()");
        std::size_t files = 0;
        const std::string found = lines_matching({"lib", "app"}, spawn, true, files);
        CHECK_MESSAGE(found.empty(), "lib/ and app/ start no other process:\n" << found);
    }

    TEST_CASE("contract.every_lesson_is_in_the_man_page_as_it_declares_itself") {
        // The commands are the lessons' (and walkthrough, explore). The man page's COMMANDS
        // are made from --help by docs/refresh.py: each lesson's entry is its name and its
        // declared summary, as troff writes it. Bash completion reads the commands from
        // --help (tests/cli/install_test.sh runs it), so it lists none itself.
        const std::string man = test::read_file(test::source_path("app/install/attnwalk.1"));
        const std::size_t at = man.find(".SH COMMANDS");
        REQUIRE(at != std::string::npos);
        const std::string commands_section = man.substr(at, man.find(".SH", at + 4) - at);
        const auto troff = [](const std::string& text) {
            std::string out = text.empty() || (text[0] != '.' && text[0] != '\'') ? "" : "\\&";
            for (char c : text) out += c == '\\' ? std::string("\\e") : c == '-' ? std::string("\\-") : std::string(1, c);
            return out;
        };
        CHECK(attnwalk::lessons().size() == attnwalk::lesson_names().size());
        for (std::size_t i = 0; i < attnwalk::lessons().size(); ++i) {
            const attnwalk::LessonDecl* l = attnwalk::lessons()[i];
            CHECK(l->name == attnwalk::lesson_names()[i]);  // the registry's name for it is its own
            CHECK(attnwalk::find_lesson(l->name) == l);
            CHECK_MESSAGE(commands_section.find(".TP\n.B " + l->name + "\n" + troff(l->summary) + "\n") != std::string::npos,
                          "the man page's COMMANDS do not say what the lesson " << l->name << " declares (run docs/refresh.py)");
        }
        CHECK(attnwalk::find_lesson("walkthrough") == nullptr);
        for (const char* c : {".B walkthrough\n", ".BI \"explore "})
            CHECK_MESSAGE(commands_section.find(c) != std::string::npos, "the man page's COMMANDS do not name " << c);
        const std::string completion = test::read_file(test::source_path("app/install/attnwalk.bash"));
        CHECK(completion.find("--help 2>/dev/null | sed -n '/^Subcommands:/") != std::string::npos);
    }

    TEST_CASE("contract.catalogue_is_what_docs_json_md_documents") {
        // Each lesson declares its steps once (lessons/catalogue.hpp). docs/json.md's
        // tables under "## Step ids by command" are checked against the declarations:
        // a section "### a, b" documents only ids lessons a or b declare, and every id a
        // lesson declares is in a section naming it (the explain_* section: for the
        // lessons that write a cell out).
        std::ifstream in(test::source_path("docs/json.md"));
        REQUIRE(in.good());
        struct Section {
            std::vector<std::string> commands;
            std::set<std::string> ids;
        };
        std::vector<Section> sections;
        bool in_ids = false;
        const std::regex id("`([A-Za-z_.0-9]+)`");
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("## ", 0) == 0) in_ids = line == "## Step ids by command";
            if (!in_ids) continue;
            if (line.rfind("### ", 0) == 0) {
                Section sec;
                const std::string head = line.substr(4);
                if (head.rfind("explain_*", 0) == 0) sec.commands = {"explain_*"};
                else
                    for (std::size_t start = 0, end; start < head.size(); start = end + 2) {
                        end = head.find(", ", start);
                        if (end == std::string::npos) end = head.size();
                        sec.commands.push_back(head.substr(start, end - start));
                    }
                sections.push_back(sec);
                continue;
            }
            if (line.rfind("| ", 0) != 0 || sections.empty() || line.rfind("| id", 0) == 0) continue;
            const std::string first = line.substr(0, line.find(" |", 1));
            for (std::sregex_iterator m(first.begin(), first.end(), id), end; m != end; ++m) sections.back().ids.insert((*m)[1]);
        }
        std::set<std::string> explain;
        for (const auto& s : attnwalk::explain_steps()) explain.insert(s.id);
        std::size_t checked = 0;
        for (const Section& sec : sections) {
            if (sec.ids.empty()) continue;
            for (const std::string& d : sec.ids) {
                bool declared = sec.commands == std::vector<std::string>{"explain_*"} && explain.count(d);
                for (const std::string& c : sec.commands)
                    if (const attnwalk::LessonDecl* l = attnwalk::find_lesson(c)) declared = declared || attnwalk::declares(*l, d);
                CHECK_MESSAGE(declared, "docs/json.md's section for " << sec.commands.front() << " documents `" << d << "`, which it does not declare");
                ++checked;
            }
        }
        for (const attnwalk::LessonDecl* l : attnwalk::lessons())
            for (const attnwalk::StepDecl& s : l->steps) {
                bool documented = false;
                for (const Section& sec : sections)
                    documented = documented || (std::find(sec.commands.begin(), sec.commands.end(), l->name) != sec.commands.end() && sec.ids.count(s.id)) ||
                                 (sec.commands.front() == "explain_*" && sec.ids.count(s.id));
                CHECK_MESSAGE(documented, "the " << l->name << " lesson declares `" << std::string(s.id) << "`, which docs/json.md does not document for it");
            }
        CHECK(checked > 100);
        std::set<std::string> catalogue;
        for (const auto& s : attnwalk::step_catalogue()) catalogue.insert(s.id);
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
