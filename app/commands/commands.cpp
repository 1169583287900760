// The command table: every command the build found (an ATTNWALK_COMMAND line of a file of
// commands/, cmake/registry.cmake) and what adds it, in the order --help lists them: the
// commands that are no lesson first (walkthrough), then the lessons' order (their places).
// A command's description and its --compact steps are its lesson's declaration
// (lib/include/attnwalk/lessons/catalogue.hpp).
#include <algorithm>
#include <stdexcept>

#include "commands.hpp"

namespace attnwalk::app {

#undef ATTNWALK_COMMAND
#define ATTNWALK_COMMAND(name) void add_##name(CLI::App& cli, Shell& shell);
#include "command_registry.inc"

const std::vector<CommandEntry>& command_table() {
    static const std::vector<CommandEntry> table = [] {
#undef ATTNWALK_COMMAND
#define ATTNWALK_COMMAND(name) CommandEntry{#name, add_##name},
        std::vector<CommandEntry> found{
#include "command_registry.inc"
        };
        const std::vector<std::string>& order = lesson_names();
        const auto place = [&](const CommandEntry& c) {
            return std::find(order.begin(), order.end(), c.name) - order.begin();  // not a lesson: order.size()
        };
        std::vector<CommandEntry> out;
        for (const CommandEntry& c : found)  // the walkthrough, which runs other commands' lessons
            if (place(c) == static_cast<std::ptrdiff_t>(order.size())) out.push_back(c);
        for (const std::string& name : order) {
            const auto c = std::find_if(found.begin(), found.end(), [&](const CommandEntry& e) { return name == e.name; });
            if (c == found.end()) throw std::logic_error("no command runs the lesson " + name);
            out.push_back(*c);
        }
        return out;
    }();
    return table;
}

}  // namespace attnwalk::app
