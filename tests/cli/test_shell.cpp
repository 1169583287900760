// app/shell: naming tokens on the command line, the seeding policy.
#include "attnwalk/errors.hpp"
#include "shell.hpp"
#include "test_util.hpp"

using namespace attnwalk;

TEST_SUITE("shell") {
    TEST_CASE("shell.parse_cell_takes_indices_or_tokens") {
        const std::vector<std::string> tokens{"a", "b", "c"};
        const Cell c = app::parse_cell("1,2", tokens);
        CHECK(c.i == 1);
        CHECK(c.j == 2);
        CHECK(app::parse_cell("c,a", tokens).i == 2);
        CHECK_THROWS_AS(app::parse_cell("1", tokens), UsageError);
        CHECK_THROWS_AS(app::parse_cell("1,2,0", tokens), UsageError);
        CHECK_THROWS_AS(app::parse_cell("1,3", tokens), UsageError);
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
