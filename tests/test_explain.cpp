// --explain I,J: the cell parser and the written-out softmax of one row.
#include "attnwalk/context.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/explain.hpp"
#include "attnwalk/scores.hpp"
#include "attnwalk/softmax.hpp"
#include "test_util.hpp"

using namespace attnwalk;

TEST_SUITE("explain") {
    TEST_CASE("explain.parse_cell_takes_indices_or_tokens") {
        const std::vector<std::string> tokens{"a", "b", "c"};
        CHECK(parse_cell("1,2", tokens) == std::pair<std::size_t, std::size_t>{1, 2});
        CHECK(parse_cell("c,a", tokens) == std::pair<std::size_t, std::size_t>{2, 0});
        CHECK_THROWS_AS(parse_cell("1", tokens), UsageError);
        CHECK_THROWS_AS(parse_cell("1,2,0", tokens), UsageError);
        CHECK_THROWS_AS(parse_cell("1,3", tokens), UsageError);
    }

    TEST_CASE("explain.weight_equals_the_softmax_bit_for_bit") {
        Trace trace;
        trace.tokens = {"a", "b", "c"};
        Recorder rec(trace);
        const Cube x = {{{0.3f, -1.2f}, {2.5f, 0.7f}, {-0.4f, 0.9f}}};  // (1,3,2)
        const Cube raw = attention_scores(x, x);
        const Cube weights = softmax(raw);
        const Cube context = context_vectors(weights, x);
        ExplainInputs in;
        in.i = 2;
        in.j = 1;
        in.x = in.q = in.k = in.v = &x;
        in.raw = in.scores = &raw;
        in.weights = &weights;
        in.context = &context;
        explain_cell(rec, in, ExplainDepth::context);
        const auto find = [&](const std::string& id) -> const Step& {
            for (const Step& s : trace.steps)
                if (s.id == id) return s;
            FAIL("no step " << id);
            return trace.steps.front();
        };
        CHECK(find("explain_weight").tensor.data[0] == weights(0, 2, 1));
        CHECK(find("explain_score").tensor.data[0] == raw(0, 2, 1));
        CHECK(find("explain_context").tensor.data == std::vector<float>{context(0, 2, 0), context(0, 2, 1)});
        CHECK(find("explain_context").expansion.at(0).terms.size() == 3);
    }
}
