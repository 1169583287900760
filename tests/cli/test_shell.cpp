// app/shell: naming tokens on the command line, the seeding policy.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/gguf.hpp"
#include "attnwalk/io/safetensors.hpp"
#include "cli.hpp"
#include "shell.hpp"
#include "test_util.hpp"

using namespace attnwalk;

TEST_SUITE("shell") {
    TEST_CASE("shell.parse_cell_takes_positions_from_1_or_tokens") {
        const std::vector<std::string> tokens{"a", "b", "c"};
        const Cell c = app::parse_cell("2,3", tokens);  // positions count from 1; the cell is 0-based
        CHECK(c.i == 1);
        CHECK(c.j == 2);
        CHECK(app::parse_cell("c,a", tokens).i == 2);
        CHECK(app::parse_cell("#1,#3", tokens).j == 2);
        CHECK_THROWS_AS(app::parse_cell("1", tokens), UsageError);
        CHECK_THROWS_AS(app::parse_cell("1,2,1", tokens), UsageError);
        CHECK_THROWS_WITH_AS(app::parse_cell("1,4", tokens), doctest::Contains("must be 1..3"), UsageError);
        CHECK_THROWS_WITH_AS(app::parse_cell("0,1", tokens), doctest::Contains("must be 1..3"), UsageError);
    }

    TEST_CASE("shell.dropout_continues_the_seed_stream_unless_reseeded") {
        app::Randomness seeded(789, std::nullopt);
        const DropoutDraw a = seeded.dropout(0.5, true);
        CHECK(a.gen == seeded.weights_stream());
        CHECK_FALSE(a.reseeded);
        app::Randomness reseeded(789, 123);
        const DropoutDraw b = reseeded.dropout(0.5, true);
        CHECK(b.reseeded);
        CHECK(b.gen->initial_seed() == 123);
        app::Randomness none(std::nullopt, std::nullopt);
        const DropoutDraw c = none.dropout(0.5, true);
        CHECK(c.gen->initial_seed() == app::default_dropout_seed);
        CHECK(none.dropout(0.5, false).gen == nullptr);  // eval: nothing is drawn
    }
}

TEST_SUITE("shell.options") {
    TEST_CASE("shell.named_options_are_the_dashed_words_before_a_double_dash") {
        const char* argv[] = {"attnwalk", "softmax", "--json", "--input=x.json", "-ab", "value", "-", "--", "--after"};
        const app::NamedOptions named(9, argv, 2);
        CHECK(named.any_of("--json"));
        CHECK(named.any_of("-i,--input"));  // --input=x.json names --input
        CHECK(named.any_of("-a"));
        CHECK(named.any_of("-b"));          // -ab names -a and -b
        CHECK(named.any_of("--causal,!-b"));  // a flag's negated name counts too
        CHECK_FALSE(named.any_of("--after"));  // after "--": not options
        CHECK_FALSE(named.any_of("--softmax"));
        CHECK_FALSE(named.any_of("value"));
        CHECK(named.complete());
    }

    TEST_CASE("shell.only_the_named_options_are_built_with_their_relations") {
        const char* argv[] = {"attnwalk", "--a", "1", "--c"};
        app::NamedOptions named(4, argv, 1);
        CLI::App cli;
        const app::OptionBuilder options(cli, &named);
        int a = 0, b = 0;
        bool c = false;
        app::MaybeOption oa = options.add_option("--a", a, "");
        app::MaybeOption ob = options.add_option("-b,--b", b, "")->check(CLI::Range(0, 3))->excludes(oa);
        app::MaybeOption oc = options.add_flag("--c", c, "")->excludes(oa);
        CHECK(oa.get() != nullptr);
        CHECK(ob.get() == nullptr);  // not named: not built, its settings and relations skipped
        CHECK(options.find("--b").get() == nullptr);
        CHECK(options.find("--c").get() == oc.get());
        CHECK_THROWS_AS(cli.parse(4, argv), CLI::ExcludesError);  // between two built options: CLI11's own check
        CHECK(named.complete());
        oc->needs(ob);  // needs an option not built: only the parse with every option can tell
        CHECK_FALSE(named.complete());
    }

    TEST_CASE("shell.every_option_is_built_from_an_app_alone") {
        CLI::App cli;
        const app::OptionBuilder options(cli);
        int a = 0;
        bool b = false;
        app::MaybeOption oa = options.add_option("--a", a, "");
        app::MaybeOption ob = options.add_flag("--b", b, "")->needs(oa);
        REQUIRE(oa.get() != nullptr);
        REQUIRE(ob.get() != nullptr);
        const char* argv[] = {"attnwalk", "--b"};
        CHECK_THROWS_AS(cli.parse(2, argv), CLI::RequiresError);
    }
}

TEST_SUITE("shell.signals") {
    TEST_CASE("shell.a_checkpoint_that_shrinks_while_mapped_is_one_line_not_a_crash") {
        const std::string path = test::scratch() + "/shrinking.safetensors", err = test::scratch() + "/sigbus_err";
        REQUIRE(test::run_shell("cp '" + test::source_path("tests/data/tiny_gpt2_hf_f32.safetensors") + "' '" + path + "'").exit_code == 0);
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {  // the process that reads: its stderr into a file, then the fault
            const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            ::dup2(fd, STDERR_FILENO);
            app::report_shrunk_inputs();
            const SafeTensors st(path);
            const std::string name = st.entries().begin()->first;
            std::vector<float> out(16384);
            (void)::truncate(path.c_str(), 0);  // another program cuts the file while it is mapped
            st.read_into(name, out.data());      // its pages are gone: SIGBUS
            ::_exit(3);                          // not reached
        }
        int status = 0;
        REQUIRE(::waitpid(child, &status, 0) == child);
        REQUIRE(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 1);
        CHECK(test::read_file(err) == "attnwalk: error: " + path +
                                          ": the file shrank while it was being read (it is memory-mapped: it must not change while attnwalk runs)\n");
    }
}

TEST_SUITE("shell.signals") {
    TEST_CASE("shell.a_gguf_file_that_shrinks_while_mapped_is_one_line_not_a_crash") {
        const std::string path = test::scratch() + "/shrinking.gguf", err = test::scratch() + "/sigbus_gguf_err";
        REQUIRE(test::run_shell("cp '" + test::source_path("tests/data/gguf/tiny_llama3_f32.gguf") + "' '" + path + "'").exit_code == 0);
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            ::dup2(fd, STDERR_FILENO);
            app::report_shrunk_inputs();
            const GgufFile g(path);
            const GgufFile::TensorInfo& t = g.tensors().back();
            std::vector<float> out(static_cast<std::size_t>(t.count));
            (void)::truncate(path.c_str(), 0);  // cut while mapped
            g.dequantize(t, out.data());         // SIGBUS
            ::_exit(3);
        }
        int status = 0;
        REQUIRE(::waitpid(child, &status, 0) == child);
        REQUIRE(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 1);
        CHECK(test::read_file(err) == "attnwalk: error: " + path +
                                          ": the file shrank while it was being read (it is memory-mapped: it must not change while attnwalk runs)\n");
    }
}
