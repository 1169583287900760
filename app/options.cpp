// Options built only when named: what the command line names, and the relations kept.
#include "options.hpp"

#include <stdexcept>
#include <utility>

namespace attnwalk::app {

NamedOptions::NamedOptions(int argc, const char* const* argv, int first) {
    for (int i = first; i < argc; ++i) {
        const std::string word = argv[i];
        if (word == "--") break;  // CLI11 takes what follows as values (or the parse fails and is redone)
        if (word.size() < 2 || word[0] != '-') continue;
        if (word[1] == '-') {
            names_.push_back(word.substr(0, word.find('=')));
        } else {
            for (std::size_t k = 1; k < word.size(); ++k) names_.push_back(std::string("-") + word[k]);
        }
    }
}

bool NamedOptions::any_of(const std::string& names) const {
    std::size_t start = 0;
    while (start <= names.size()) {
        std::size_t end = names.find(',', start);
        if (end == std::string::npos) end = names.size();
        std::size_t from = start;
        while (from < end && (names[from] == ' ' || names[from] == '!')) ++from;
        const std::string name = names.substr(from, end - from);
        for (const std::string& named : names_)
            if (named == name) return true;
        start = end + 1;
    }
    return false;
}

MaybeOption& MaybeOption::check(CLI::Validator validator) {
    if (option_) option_->check(std::move(validator));
    return *this;
}

MaybeOption& MaybeOption::group(const std::string& name) {
    if (option_) option_->group(name);
    return *this;
}

MaybeOption& MaybeOption::capture_default_str() {
    if (option_) option_->capture_default_str();
    return *this;
}

MaybeOption& MaybeOption::default_str(const std::string& text) {
    if (option_) option_->default_str(text);
    return *this;
}

MaybeOption& MaybeOption::type_name(const std::string& name) {
    if (option_) option_->type_name(name);
    return *this;
}

MaybeOption& MaybeOption::delimiter(char separator) {
    if (option_) option_->delimiter(separator);
    return *this;
}

namespace {
// With every option built, a relation to one that does not exist is a misspelt name.
void check_built(const CLI::Option* a, const CLI::Option* b, const NamedOptions* named, const char* relation) {
    if (!named && (!a || !b)) throw std::logic_error(std::string("an option ") + relation + " one that no command declares");
}
}  // namespace

MaybeOption& MaybeOption::excludes(MaybeOption other) {
    NamedOptions* named = named_ ? named_ : other.named_;
    check_built(option_, other.option_, named, "excludes");
    if (option_ && other.option_) option_->excludes(other.option_);
    return *this;
}

MaybeOption& MaybeOption::needs(MaybeOption other) {
    NamedOptions* named = named_ ? named_ : other.named_;  // either may come from the filtered builder
    check_built(option_, other.option_, named, "needs");
    if (option_ && other.option_) option_->needs(other.option_);
    else if (option_) named->mark_incomplete();
    return *this;
}

std::vector<const CLI::Option*> in_declared_order(const CLI::App& app, const std::set<CLI::Option*>& related) {
    std::vector<const CLI::Option*> out;
    for (const CLI::Option* option : app.get_options())
        if (related.count(const_cast<CLI::Option*>(option))) out.push_back(option);
    return out;
}

const CLI::App* parsed_command(const CLI::App& app) {
    const CLI::App* chosen = nullptr;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        if (sub->parsed()) chosen = sub;
    return chosen;
}

std::string failed_requirement(const CLI::App& app) {
    const CLI::App* chosen = parsed_command(app);
    if (!chosen) return "";
    // CLI11's check (App::_process_requirements): options in order, each one's needs, then its excludes
    for (const CLI::Option* option : chosen->get_options()) {
        if (option->count() == 0) continue;
        for (const CLI::Option* needed : in_declared_order(*chosen, option->get_needs()))
            if (needed->count() == 0) return option->get_name() + " requires " + needed->get_name();
        for (const CLI::Option* excluded : in_declared_order(*chosen, option->get_excludes()))
            if (excluded->count() != 0) return option->get_name() + " excludes " + excluded->get_name();
    }
    return "";
}

}  // namespace attnwalk::app
