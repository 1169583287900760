// A command's options, built only when the command line names them.
//
// CLI11 builds each option as an object (names, validators, help text) and checks it against
// every option built before it. A chapter command has about thirty options, and building them
// was a third of a tiny command's instructions and a dozen pages of heap, for a command line
// that usually names none. So run_cli parses a command line first with only the options it
// names; anything else — help, a mistake, an option that needs one not built — is parsed again
// with every option, so that help and error messages stay CLI11's own (docs/performance.md,
// section 19).
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace attnwalk::app {

// The option names a command line holds: each word from `first` on that starts with a dash,
// up to "--" ("--name=value" names --name; "-abc" names -a, -b and -c). More names than the
// options given (a value that starts with a dash) only builds more.
class NamedOptions {
public:
    NamedOptions(int argc, const char* const* argv, int first);
    // Whether any of an option's names ("-i,--input", "--causal,!--no-causal") is named.
    bool any_of(const std::string& names) const;
    // A built option needs one that was not built: only the parse with every option can say
    // whether the command line is right.
    void mark_incomplete() { complete_ = false; }
    bool complete() const { return complete_; }

private:
    std::vector<std::string> names_;
    bool complete_ = true;
};

// An option that may not have been built: its settings and relations apply when it was. The
// arrow keeps CLI11's chains (add_option(...)->check(...)->group(...)) as they read.
class MaybeOption {
public:
    MaybeOption(CLI::Option* option = nullptr, NamedOptions* named = nullptr) : option_(option), named_(named) {}
    MaybeOption* operator->() { return this; }
    CLI::Option* get() const { return option_; }  // null when not built

    MaybeOption& check(CLI::Validator validator);
    MaybeOption& group(const std::string& name);
    MaybeOption& capture_default_str();
    MaybeOption& default_str(const std::string& text);
    MaybeOption& type_name(const std::string& name);
    MaybeOption& delimiter(char separator);
    // Both built: CLI11's relation. Either not built: it was not named, so it is not given
    // (a word the first parse cannot place fails that parse, and the second decides), and
    // excluding it changes nothing. With every option built, a missing one is a bug
    // (std::logic_error).
    MaybeOption& excludes(MaybeOption other);
    // Both built: CLI11's relation. Only this one built: it needs one not given, which only
    // the parse with every option can judge (mark_incomplete).
    MaybeOption& needs(MaybeOption other);

private:
    CLI::Option* option_;
    NamedOptions* named_;
};

// Where a command adds its options: every one (`named` null), or those `named`.
class OptionBuilder {
public:
    explicit OptionBuilder(CLI::App& app, NamedOptions* named = nullptr) : app_(&app), named_(named) {}

    template <typename T>
    MaybeOption add_option(const std::string& names, T& variable, const std::string& description) const {
        return wanted(names) ? MaybeOption(app_->add_option(names, variable, description), named_) : MaybeOption(nullptr, named_);
    }
    template <typename T>
    MaybeOption add_flag(const std::string& names, T& variable, const std::string& description) const {
        return wanted(names) ? MaybeOption(app_->add_flag(names, variable, description), named_) : MaybeOption(nullptr, named_);
    }
    template <typename T>
    MaybeOption add_option_function(const std::string& names, const std::function<void(const T&)>& call, const std::string& description) const {
        return wanted(names) ? MaybeOption(app_->add_option_function<T>(names, call, description), named_) : MaybeOption(nullptr, named_);
    }
    // An option added before by its name (not built: an empty MaybeOption).
    MaybeOption find(const std::string& name) const { return MaybeOption(app_->get_option_no_throw(name), named_); }

private:
    bool wanted(const std::string& names) const { return !named_ || named_->any_of(names); }

    CLI::App* app_;
    NamedOptions* named_;
};

// The options of `app` that are in `related` (an option's needs or excludes), in the order the
// command declares them. CLI11 keeps them in a set ordered by address, which depends on the
// heap, so help and error messages name them in this order instead.
std::vector<const CLI::Option*> in_declared_order(const CLI::App& app, const std::set<CLI::Option*>& related);

// The subcommand a parse chose (null when none was).
const CLI::App* parsed_command(const CLI::App& app);

// What CLI11's requirement check says when it fails ("--a requires --b", "--a excludes --b"),
// for the subcommand parsed, with both options in declared order; empty when no requirement of
// that subcommand fails.
std::string failed_requirement(const CLI::App& app);

}  // namespace attnwalk::app
