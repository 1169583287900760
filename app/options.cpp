// Options built only when named: what the command line names, and the relations kept.
#include "options.hpp"

#include <utility>

namespace attnwalk::app {

NamedOptions::NamedOptions(int argc, const char* const* argv, int first) {
    for (int i = first; i < argc; ++i) {
        const std::string word = argv[i];
        if (word == "--") break;  // what follows is not options
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

MaybeOption& MaybeOption::excludes(MaybeOption other) {
    if (option_ && other.option_) option_->excludes(other.option_);
    return *this;
}

MaybeOption& MaybeOption::needs(MaybeOption other) {
    if (option_ && other.option_) option_->needs(other.option_);
    else if (option_ && named_) named_->mark_incomplete();
    return *this;
}

}  // namespace attnwalk::app
