// The command table: every command and what adds it, in the order --help lists them
// (walkthrough, the chapter's lessons, the lessons beyond it, real models). A command is
// one file of commands/ and one line here; its description and its --compact steps are
// its lesson's declaration (lib/include/attnwalk/lessons/catalogue.hpp).
#include "commands.hpp"

namespace attnwalk::app {

const std::vector<CommandEntry>& command_table() {
    static const std::vector<CommandEntry> table = {
        {"walkthrough", add_walkthrough}, {"scores", add_scores}, {"softmax", add_softmax}, {"context", add_context},
        {"causal", add_causal},           {"dropout", add_dropout}, {"mha", add_mha},         {"kvcache", add_kvcache},
        {"mla", add_mla},                 {"deltanet", add_deltanet},
        {"rope", add_rope},               {"flash", add_flash},     {"sdpa", add_sdpa},       {"params", add_params},
        {"gpt2", add_gpt2},               {"model", add_model},     {"tokenize", add_tokenize},
    };
    return table;
}

}  // namespace attnwalk::app
