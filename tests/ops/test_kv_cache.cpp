#include "test_util.hpp"

#include "attnwalk/ops/kv_cache.hpp"

using namespace attnwalk;

namespace {

// One token's keys or values (1, G = 1, 1, d_h = 2), holding `v`.
Hyper token(float v) { return Hyper({1, 1, 1, 2}, v); }

}  // namespace

TEST_SUITE("kv_cache") {
    TEST_CASE("kv_cache.appends_along_the_tokens") {
        KvCache c;
        CHECK(c.length() == 0);
        for (float v : {1.0f, 2.0f, 3.0f}) c.append(token(v), token(-v));
        REQUIRE(c.length() == 3);
        CHECK(c.seen() == 3);
        CHECK(c.first() == 0);
        CHECK(c.keys()(0, 0, 2, 1) == 3.0f);
        CHECK(c.values()(0, 0, 0, 0) == -1.0f);
        CHECK(c.bytes(4) == 2.0 * 3 * 2 * 4);
    }

    TEST_CASE("kv_cache.a_window_keeps_the_last_w") {
        KvCache c(2);
        for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) c.append(token(v), token(v));
        REQUIRE(c.length() == 2);
        CHECK(c.seen() == 4);
        CHECK(c.first() == 2);  // tokens 2 and 3 are kept
        CHECK(c.keys()(0, 0, 0, 0) == 3.0f);
        CHECK(c.keys()(0, 0, 1, 0) == 4.0f);
    }

    TEST_CASE("kv_cache.bytes_of_a_configuration") {
        // GPT-2 small: 12 layers, 12 heads of 64, 1024 tokens, float32: 75,497,472 bytes.
        CHECK(kv_cache_bytes(1, 1024, 12, 64, 12, 4) == 75497472.0);
    }
}
