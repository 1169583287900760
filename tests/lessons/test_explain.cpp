// One cell written out: every number equals the forward's, bit for bit.
#include "attnwalk/lessons/explain.hpp"
#include "test_util.hpp"

using namespace attnwalk;

TEST_SUITE("explain") {
    TEST_CASE("explain.weight_equals_the_softmax_bit_for_bit") {
        Trace trace;
        trace.tokens = {"a", "b", "c"};
        Recorder rec(trace);
        const Cube x = {{{0.3f, -1.2f}, {2.5f, 0.7f}, {-0.4f, 0.9f}}};  // (1,3,2)
        const Forward f = attention_forward(x, nullptr, {});
        explain_cell(rec, {2, 1}, x, nullptr, f, Scale{1.0f, "1", "1"}, ExplainDepth::context);
        const auto find = [&](const std::string& id) -> const Step& {
            for (const Step& s : trace.steps)
                if (s.id == id) return s;
            FAIL("no step " << id);
            return trace.steps.front();
        };
        CHECK(find("explain_weight").tensor.data[0] == f.weights(0, 0, 2, 1));
        CHECK(find("explain_score").tensor.data[0] == f.scores(0, 0, 2, 1));
        CHECK(find("explain_sum").tensor.data[0] == f.row_sum(0, 0, 2));
        CHECK(find("explain_context").tensor.data == std::vector<float>{f.context(0, 2, 0), f.context(0, 2, 1)});
        CHECK(find("explain_context").expansion.at(0).terms.size() == 3);
    }
}
