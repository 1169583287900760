// "Did you mean": the edit distance, with and without swaps, and the names it ranks.
#include "attnwalk/io/did_you_mean.hpp"
#include "test_util.hpp"

using attnwalk::closest;
using attnwalk::edit_distance;

TEST_SUITE("did_you_mean") {
    TEST_CASE("did_you_mean.a_swap_of_neighbours_is_one_edit_where_asked") {
        CHECK(edit_distance("kitten", "sitting") == 3);
        CHECK(edit_distance("", "abc") == 3);
        CHECK(edit_distance("abc", "", true) == 3);
        CHECK(edit_distance("gtp2", "gpt2") == 2);
        CHECK(edit_distance("gtp2", "gpt2", true) == 1);
        CHECK(edit_distance("ca", "abc", true) == 3);  // a swapped pair is not edited again
    }

    TEST_CASE("did_you_mean.closest_ranks_by_distance_then_name") {
        const std::vector<std::string> known{"steps", "send", "heads", "seed"};
        CHECK(closest("sed", known, 2) == std::vector<std::string>{"seed", "send"});
        CHECK(closest("sed", known, 1, 0).empty());
        CHECK(closest("hedas", known, 1) == std::vector<std::string>{"heads"});
    }
}
