#include "help.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "options.hpp"
#include "render/text.hpp"

namespace attnwalk::app {

namespace {

class HelpFormatter : public CLI::Formatter {
public:
    explicit HelpFormatter(std::size_t columns) : columns_(std::max<std::size_t>(columns, 40)) { column_width(26); }

    std::string make_description(const CLI::App* app) const override {
        const std::string text = app->get_description();
        if (text.empty()) return "";
        std::string out;  // each line of the description wrapped, then a blank line
        for (std::size_t start = 0; start <= text.size();) {
            const std::size_t end = std::min(text.find('\n', start), text.size());
            out += wrap(text.substr(start, end - start), columns_, "", "");
            start = end + 1;
        }
        return out + "\n";
    }

    // As CLI11's, with the groups in our order (make_groups is not virtual).
    std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
        app_ = app;
        if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
        return make_description(app) + make_usage(app, name) + make_positionals(app) + groups(app, mode) +
               make_subcommands(app, mode) + "\n" + make_footer(app);
    }

    // A subcommand's options under --help-all: their needs and excludes are that subcommand's.
    std::string make_expanded(const CLI::App* sub) const override {
        const CLI::App* outer = app_;
        app_ = sub;
        std::string out = CLI::Formatter::make_expanded(sub);
        app_ = outer;
        return out;
    }

    std::string make_subcommand(const CLI::App* sub) const override {
        return entry("  " + sub->get_display_name(true), sub->get_description());
    }

    // The command's own options ("Options"), then the shared groups.
    std::string groups(const CLI::App* app, CLI::AppFormatMode mode) const {
        std::vector<std::string> groups = app->get_groups();
        const auto shared = [](const std::string& g) { return g == input_group || g == output_group || g == limits_group; };
        std::stable_partition(groups.begin(), groups.end(), [&](const std::string& g) { return !shared(g); });
        std::string out;
        for (const std::string& group : groups) {
            const auto opts = app->get_options([&](const CLI::Option* o) {
                return o->get_group() == group && o->nonpositional() &&
                       (mode != CLI::AppFormatMode::Sub || (app->get_help_ptr() != o && app->get_help_all_ptr() != o));
            });
            if (!group.empty() && !opts.empty()) out += make_group(group, false, opts);
        }
        return out;
    }

    // "  --seed N            Draw the weights … (needs …; not with …)".
    std::string make_option(const CLI::Option* opt, bool is_positional) const override {
        std::string left = "  " + make_option_name(opt, is_positional) + make_option_opts(opt);
        while (left.back() == ' ') left.pop_back();
        std::string desc = opt->get_description();
        std::string needs, excludes;
        for (const CLI::Option* o : in_declared_order(*app_, opt->get_needs())) needs += (needs.empty() ? "" : ", ") + o->get_name();
        for (const CLI::Option* o : in_declared_order(*app_, opt->get_excludes())) excludes += (excludes.empty() ? "" : ", ") + o->get_name();
        if (!needs.empty() || !excludes.empty())
            desc += " (" + (needs.empty() ? "" : "needs " + needs) + (needs.empty() || excludes.empty() ? "" : "; ") +
                    (excludes.empty() ? "" : "not with " + excludes) + ")";
        return entry(left, desc);
    }

    // The type and default only: needs and excludes are said in words in the description.
    std::string make_option_opts(const CLI::Option* opt) const override {
        if (opt->get_type_size() == 0) return "";
        std::string out = " " + opt->get_type_name();
        if (!opt->get_default_str().empty()) out += "=" + opt->get_default_str();
        if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
        return out;
    }

    // Examples that would pass the edge: the comment on the next line, and a long command
    // continued with a backslash between its words (never inside quotes).
    std::string make_footer(const CLI::App* app) const override {
        const std::string footer = app->get_footer();
        if (footer.empty()) return "";
        std::string out;
        for (std::size_t start = 0; start < footer.size();) {
            const std::size_t end = std::min(footer.find('\n', start), footer.size());
            const std::string line = footer.substr(start, end - start);
            start = end + 1;
            if (width(line) <= columns_) {
                out += line + "\n";
                continue;
            }
            const std::size_t hash = line.find("  # ");
            std::string command = line.substr(0, hash);
            while (!command.empty() && command.back() == ' ') command.pop_back();
            if (!command.empty()) out += continued(command);  // else a comment line of its own
            if (hash != std::string::npos) out += wrap(line.substr(line.find('#', hash)), columns_, "      ", "        ");
        }
        return out;
    }

private:
    // "  name        description", the description wrapped under its column; a long name
    // puts the description on the next line.
    std::string entry(const std::string& left, const std::string& description) const {
        const std::string indent(get_column_width(), ' ');
        if (width(left) + 2 <= get_column_width()) return wrap(description, columns_, pad_right(left, get_column_width()), indent);
        return left + "\n" + wrap(description, columns_, indent, indent);
    }

    std::string continued(const std::string& command) const {
        const std::size_t indent = command.find_first_not_of(' ');
        if (indent == std::string::npos || command.compare(indent, 9, "attnwalk ") != 0)  // prose
            return wrap(command, columns_, "", "");
        std::vector<std::string> words;  // split at spaces outside quotes
        std::string word;
        char quote = 0;
        for (std::size_t i = indent; i < command.size(); ++i) {
            const char c = command[i];
            if (quote && c == quote) quote = 0;
            else if (!quote && (c == '\'' || c == '"')) quote = c;
            else if (!quote && c == ' ') {
                if (!word.empty()) words.push_back(word);
                word.clear();
                continue;
            }
            word += c;
        }
        if (!word.empty()) words.push_back(word);
        std::vector<std::string> units;  // an option stays with its value
        for (std::size_t i = 0; i < words.size(); ++i) {
            const bool joined = words[i].rfind("--", 0) == 0 && i + 1 < words.size() && words[i + 1][0] != '-' &&
                                width(words[i]) + 1 + width(words[i + 1]) + 8 <= columns_;
            units.push_back(joined ? words[i] + " " + words[i + 1] : words[i]);
            i += joined;
        }
        std::string out, line = command.substr(0, indent);
        bool empty = true;
        for (const std::string& w : units) {
            if (!empty && width(line) + 1 + width(w) + 2 > columns_) {
                out += line + " \\\n";
                line = "      ";
                empty = true;
            }
            line += (empty ? "" : " ") + w;
            empty = false;
        }
        return out + line + "\n";
    }

    std::size_t columns_;
    mutable const CLI::App* app_ = nullptr;  // the command whose help is being written (make_help, make_expanded)
};

}  // namespace

std::shared_ptr<CLI::FormatterBase> help_formatter(std::size_t columns) { return std::make_shared<HelpFormatter>(columns); }

}  // namespace attnwalk::app
