// Every lesson called as a library function, each intermediate against the PyTorch
// goldens (tests/golden/*.json from tests/make_goldens.py), in the spirit of llm.c's
// test_gpt2.c. The goldens name their configuration as attnwalk command lines; this
// file reads those few options into the library's values itself, so that the CLI is
// not involved; golden.hpp compares.
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/lessons/dsa.hpp"
#include "attnwalk/lessons/lessons.hpp"
#include "attnwalk/lessons/kvshare.hpp"
#include "attnwalk/lessons/mla.hpp"
#include "golden.hpp"

using namespace attnwalk;
using nlohmann::json;

namespace {

// The options a golden case uses, as values.
struct Config {
    std::string command;
    std::optional<std::uint64_t> seed, dropout_seed;
    Init init = Init::linear;
    std::size_t d_out = 2, heads = 2, batch = 1;
    std::optional<std::string> query;  // an index or a token
    std::optional<std::size_t> ones, kv_heads, window, block, queries;
    std::optional<double> scale, dropout;
    bool mla_rank_given = false, mla_rope_given = false;
    std::vector<float> sinks;
    bool gate = false, bias = false, causal = true, wrapper = false, combined = false, flag_causal = false, out_proj = true;
    bool d_out_given = false, mask_is_bool = true;
    double rope_base = 10000.0;
    std::size_t shift = 3, d_in = 768;
    std::optional<Tensor> attn_mask;
    MlaSpec mla;  // mla's sizes (its seed is `seed`)
    DsaSpec dsa;  // dsa's indexer and k (its seed is `seed`)
    DeltaNetSpec deltanet;  // deltanet's chunk and decay rate
    ParamsSpec params;      // params' layers, context and cache options
    KvShareSpec kvshare;    // kvshare's stack and cache options (its seed is `seed`, its sizes d_out and heads)
};

// A JSON array of arrays (sdpa's inline --attn-mask) as a matrix.
Tensor matrix_of(const std::string& text) {
    const json a = json::parse(text);
    Tensor t;
    t.shape = {a.size(), a.at(0).size()};
    for (const auto& row : a)
        for (const auto& v : row) t.data.push_back(v.get<float>());
    return t;
}

Config config_of(const json& args) {
    Config c;
    c.command = args.at(0).get<std::string>();
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string a = args.at(i).get<std::string>();
        const auto next = [&] { return args.at(++i).get<std::string>(); };
        if (a == "--seed") c.seed = std::stoull(next());
        else if (a == "--dropout-seed") c.dropout_seed = std::stoull(next());
        else if (a == "--init") c.init = *init_from_name(next());
        else if (a == "--d-out") {
            c.d_out = std::stoul(next());
            c.d_out_given = true;
        }
        else if (a == "--d-in") c.d_in = std::stoul(next());
        else if (a == "--kv-heads") c.kv_heads = std::stoul(next());
        else if (a == "--window") c.window = std::stoul(next());
        else if (a == "--block") c.block = std::stoul(next());
        else if (a == "--queries") c.queries = std::stoul(next());
        else if (a == "--rope-base") c.rope_base = std::stod(next());
        else if (a == "--shift") c.shift = std::stoul(next());
        else if (a == "--dropout-p") c.dropout = std::stod(next());
        else if (a == "--attn-mask") c.attn_mask = matrix_of(next());
        else if (a == "--mask-dtype") c.mask_is_bool = next() == "bool";
        else if (a == "--causal" || a == "--is-causal") c.flag_causal = true;
        else if (a == "--no-out-proj") c.out_proj = false;
        else if (a == "--heads") c.heads = std::stoul(next());
        else if (a == "--batch") c.batch = std::stoul(next());
        else if (a == "--query") c.query = next();
        else if (a == "--ones") c.ones = std::stoul(next());
        else if (a == "--scale") c.scale = std::stod(next());
        else if (a == "--dropout") c.dropout = std::stod(next());
        else if (a == "--variant") {
            const std::string v = next();
            c.wrapper = v == "wrapper";
            c.combined = v == "combined-qkv";
        }
        else if (a == "--qkv-bias") c.bias = true;
        else if (a == "--output-gate") c.gate = true;
        else if (a == "--sinks") {
            const std::string list = next();
            for (std::size_t at = 0; at <= list.size();) {
                const std::size_t comma = std::min(list.find(',', at), list.size());
                c.sinks.push_back(std::stof(list.substr(at, comma - at)));
                at = comma + 1;
            }
        }
        else if (a == "--kv-lora-rank") {
            c.mla.rank = std::stoul(next());
            c.mla_rank_given = true;
        }
        else if (a == "--q-lora-rank") c.mla.query_rank = std::stoul(next());
        else if (a == "--qk-nope-head-dim") c.mla.nope = std::stoul(next());
        else if (a == "--qk-rope-head-dim") {
            c.mla.rope = std::stoul(next());
            c.mla_rope_given = true;
        }
        else if (a == "--v-head-dim") c.mla.value = std::stoul(next());
        else if (a == "--rope-interleave") c.mla.interleave = true;
        else if (a == "--chunk") c.deltanet.chunk = std::stoul(next());
        else if (a == "--layers") c.params.layers = c.kvshare.layers = std::stoul(next());
        else if (a == "--context") c.params.context_length = c.kvshare.context_tokens = std::stoul(next());
        else if (a == "--kv-producing-layers") c.params.kv_producing_layers = c.kvshare.producing = std::stoul(next());
        else if (a == "--cache-heads") c.kvshare.cache_heads = std::stoul(next());
        else if (a == "--cache-head-dim") c.kvshare.cache_head_dim = std::stoul(next());
        else if (a == "--cache-dtype") c.kvshare.bytes_per_value = next() == "float32" ? 4 : 2;
        else if (a == "--swa-ratio") {
            const std::string r = next();
            c.params.swa_layers = std::stoul(r.substr(0, r.find(':')));
            c.params.full_layers = std::stoul(r.substr(r.find(':') + 1));
        }
        else if (a == "--decay-rate") c.deltanet.decay_rate = std::stod(next());
        else if (a == "--no-causal") c.causal = false;
        else if (a == "--index-heads") c.dsa.index_heads = std::stoul(next());
        else if (a == "--index-head-dim") c.dsa.index_dim = std::stoul(next());
        else if (a == "--topk") c.dsa.topk = std::stoul(next());
        else FAIL("the golden uses an option this test does not read: " << a);
    }
    return c;
}

// The walk the case describes, with the documented seeding: weights from the seed's
// stream, dropout continuing it unless a dropout seed starts a fresh one.
Trace walk_of(const Config& c, const Embeddings& given) {
    const Embeddings input = c.batch > 1 ? stack_batch(given, c.batch) : given;
    if (c.command == "params") {
        ParamsSpec spec = c.params;
        spec.window = c.window.value_or(0);
        spec.kv_lora_rank = c.mla.rank == MlaSpec{}.rank && !c.mla_rank_given ? 0 : c.mla.rank;
        spec.qk_rope_head_dim = c.mla.rope == MlaSpec{}.rope && !c.mla_rope_given ? 0 : c.mla.rope;
        spec.d_in = c.d_in;
        spec.d_out = c.d_out_given ? c.d_out : 768;
        spec.heads = c.heads;
        spec.kv_heads = c.kv_heads.value_or(0);
        spec.qkv_bias = c.bias;
        spec.out_proj = c.out_proj;
        return walk_params(spec);
    }
    if (c.command == "mla") {
        MlaSpec spec = c.mla;
        spec.heads = c.heads;
        spec.rope_base = c.rope_base;
        spec.seed = c.seed.value_or(123);
        return walk_mla(input, spec, {});
    }
    if (c.command == "kvshare") {
        KvShareSpec spec = c.kvshare;
        spec.heads = c.heads;
        spec.d_out = c.d_out_given ? c.d_out : KvShareSpec{}.d_out;
        spec.kv_heads = c.kv_heads.value_or(0);
        spec.seed = c.seed.value_or(123);
        return walk_kvshare(input, spec, {});
    }
    if (c.command == "dsa") {  // its sizes, with the options mha shares
        DsaSpec spec = c.dsa;
        std::tie(spec.d_out, spec.heads, spec.seed) = std::make_tuple(c.d_out, c.heads, c.seed.value_or(123));
        return walk_dsa(input, spec, {});
    }
    if (c.command == "deltanet") {
        DeltaNetSpec spec = c.deltanet;
        spec.heads = c.heads;
        spec.d_out = c.d_out;
        spec.seed = c.seed.value_or(123);
        return walk_deltanet(input, spec, {});
    }
    const bool layer = c.command == "mha" || c.command == "kvcache" || c.command == "rope";  // seeded 123 by default
    std::optional<Generator> gen, fresh;
    if (c.seed) gen.emplace(*c.seed);
    if (layer && !gen) gen.emplace(123);
    DropoutDraw draw;
    draw.p = c.dropout.value_or(c.command == "dropout" ? 0.5 : 0.0);
    if (c.dropout_seed || !gen) {
        fresh.emplace(c.dropout_seed.value_or(123));
        draw.gen = &*fresh;
        draw.reseeded = true;
    } else {
        draw.gen = &*gen;
    }
    if (c.ones) return walk_dropout_ones(*c.ones, draw, {});
    Weights weights;
    if (gen) {
        const std::size_t d_out = c.command == "rope" && !c.d_out_given ? 4 : c.d_out;
        WeightsShape shape{input.dim(), d_out, layer ? c.heads : 1, c.wrapper ? HeadLayout::stacked : HeadLayout::fused,
                           (c.command == "mha" || c.command == "kvcache") && !c.wrapper};
        shape.kv_heads = c.kv_heads.value_or(0);
        shape.combined = c.combined;
        shape.gate = c.gate;
        shape.sinks = c.sinks;
        weights = draw_weights(*gen, shape, c.init, c.bias);
    }
    if (c.command == "kvcache") {
        KvCacheSpec spec;
        spec.window = c.window;
        return walk_kvcache(input, weights, spec, {});
    }
    if (c.command == "rope") {
        RopeSpec spec;
        spec.base = c.rope_base;
        spec.shift = c.shift;
        return walk_rope(input, weights, spec, {});
    }
    if (c.command == "flash") {
        FlashSpec spec;
        spec.block = c.block.value_or(2);
        spec.causal = c.flag_causal;
        spec.window = c.window;
        return walk_flash(input, weights, spec, {});
    }
    if (c.command == "sdpa") {
        SdpaSpec spec;
        spec.queries = c.queries;
        spec.attn_mask = c.attn_mask;
        spec.mask_is_bool = c.mask_is_bool;
        spec.is_causal = c.flag_causal;
        spec.scale = c.scale;
        spec.dropout = draw;
        return walk_sdpa(input, weights, spec, {});
    }
    if (c.command == "causal") {
        CausalSpec spec;
        spec.scale = c.scale;
        return walk_causal(input, weights, spec, {});
    }
    if (c.command == "dropout") return walk_dropout(input, weights, {c.scale, c.causal, draw}, {});
    if (c.command == "mha") {
        MhaSpec spec;
        spec.causal = c.causal;
        spec.window = c.window;
        spec.dropout = draw;
        return walk_mha(input, weights, spec, {});
    }
    SingleHeadSpec spec{c.scale, std::nullopt, std::nullopt};
    if (c.query) {
        const auto named = std::find(input.tokens.begin(), input.tokens.end(), *c.query);
        spec.query = named != input.tokens.end() ? static_cast<std::size_t>(named - input.tokens.begin()) : std::stoul(*c.query);
    }
    if (c.command == "scores") return walk_scores(input, weights, spec, {});
    if (c.command == "softmax") return walk_softmax(input, weights, spec, {});
    return walk_context(input, weights, spec, {});
}

void check_file(const std::string& name) {
    std::size_t cases = 0;
    for (const auto& c : test::golden_cases(name)) {
        CAPTURE(c.at("name").get<std::string>());
        const Embeddings input = c.contains("input") ? parse_embeddings(c.at("input").dump(), "golden") : builtin_embeddings();
        const Trace trace = walk_of(config_of(c.at("args")), input);
        test::check_golden_case(c, trace);
        ++cases;
    }
    CHECK(cases > 0);
}

}  // namespace

TEST_SUITE("walk") {
    TEST_CASE("walk.single_head_walks_match_pytorch") { check_file("single_head.json"); }
    TEST_CASE("walk.dropout_matches_pytorch") { check_file("dropout.json"); }
    TEST_CASE("walk.mha_matches_pytorch") { check_file("mha.json"); }
    TEST_CASE("walk.mha_beyond_matches_pytorch") { check_file("mha_beyond.json"); }
    TEST_CASE("walk.kvcache_matches_pytorch") { check_file("kvcache.json"); }
    TEST_CASE("walk.rope_matches_pytorch") { check_file("rope.json"); }
    TEST_CASE("walk.mla_matches_pytorch") { check_file("mla.json"); }
    TEST_CASE("walk.kvshare_matches_pytorch") { check_file("kvshare.json"); }
    TEST_CASE("walk.dsa_matches_pytorch") { check_file("dsa.json"); }
    TEST_CASE("walk.deltanet_matches_pytorch") { check_file("deltanet.json"); }
    TEST_CASE("walk.flash_matches_pytorch") { check_file("flash.json"); }
    TEST_CASE("walk.sdpa_matches_pytorch") { check_file("sdpa.json"); }
    TEST_CASE("walk.params_matches_pytorch") { check_file("params.json"); }

    TEST_CASE("walk.a_mask_step_says_what_its_1_and_0_mean") {
        // the explorer writes a mask's value with its legend: 1 keeps a key here, the reverse of the textbook's triu
        const Trace causal = walk_causal(builtin_embeddings(), Weights{}, CausalSpec{}, {});
        const auto mask = std::find_if(causal.steps.begin(), causal.steps.end(), [](const Step& s) { return s.id == "mask"; });
        REQUIRE(mask != causal.steps.end());
        CHECK(mask->tensor.data.at(0) == 1.0f);  // query 1 sees key 1
        CHECK(mask->legend.rfind("1 = visible, 0 = masked", 0) == 0);
        CHECK(mask->legend.find("triu") != std::string::npos);
        for (const Step& s : causal.steps)
            if (s.id != "mask") CHECK_MESSAGE(s.legend.empty(), s.id);  // only where a number alone does not say
    }

    TEST_CASE("walk.blocked_mha_summary_matches_the_full_forward") {
        // 150 tokens: the blocked path (a summary) against the full forward, with heads of 2
        // (sgemm's products) and of 48 and 64 (the AVX-512 kernels where the CPU has them).
        for (const std::size_t d : {8, 96, 128}) {
            const std::size_t heads = d == 8 ? 4 : 2;
            CAPTURE(d);
            Embeddings input;
            input.source = "test";
            input.x.shape = {1, 150, d};
            Generator data(9);
            input.x.data = data.randn(150 * d);
            for (std::size_t t = 0; t < 150; ++t) input.tokens.push_back("t" + std::to_string(t));
            for (const bool causal : {true, false}) {
                CAPTURE(causal);
                Generator a(1), b(1);
                const WeightsShape shape{d, d, heads, HeadLayout::fused, true};
                MhaSpec spec;
                spec.causal = causal;
                const Trace blocked = walk_mha(input, draw_weights(a, shape, Init::linear, true), spec, {true, false});
                const Trace full = walk_mha(input, draw_weights(b, shape, Init::linear, true), spec, {});
                const Step& y = blocked.steps.back();
                REQUIRE(y.id == "output");
                CHECK_CLOSE_ALL(y.tensor.data, full.steps.back().tensor.data, 1e-5);
                for (const Step& s : blocked.steps)
                    if (s.id == "scores" || s.id == "weights") CHECK(s.tensor.data.empty());  // never held
            }
        }
    }

    // The step `id` of a trace.
    const Step& step_in(const Trace& t, const std::string& id) {
        const auto s = std::find_if(t.steps.begin(), t.steps.end(), [&](const Step& x) { return x.id == id; });
        REQUIRE_MESSAGE(s != t.steps.end(), "no step " << id);
        return *s;
    }

    TEST_CASE("walk.dsa_is_full_attention_for_a_query_that_keeps_every_key_it_sees") {
        // A query at position t ≤ k keeps all t keys: its output is full causal attention's,
        // bit for bit against the same forward with nothing dropped, and against the textbook's
        // causal MultiHeadAttention (mha) on the same draw (the indexer is drawn after it).
        for (const std::size_t topk : {1, 2, 3, 6, 9})
            for (const std::uint64_t seed : {123, 7}) {
                CAPTURE(topk);
                CAPTURE(seed);
                DsaSpec spec;
                spec.topk = topk;
                spec.seed = seed;
                const Trace dsa = walk_dsa(builtin_embeddings(), spec, {});
                Generator gen(seed);
                const Trace mha = walk_mha(builtin_embeddings(), draw_weights(gen, WeightsShape{3, spec.d_out, spec.heads, HeadLayout::fused, true}, Init::linear, false),
                                           MhaSpec{}, {});
                const Tensor& y = step_in(dsa, "output").tensor;
                const Tensor& full = step_in(dsa, "output_full").tensor;
                const Tensor& textbook = step_in(mha, "output").tensor;
                const Tensor& diff = step_in(dsa, "full_difference").tensor;
                const std::size_t T = 6, d = spec.d_out;
                for (std::size_t t = 0; t < T; ++t) {
                    if (t + 1 > topk) continue;
                    CHECK(diff.data[t] == 0.0f);
                    for (std::size_t c = 0; c < d; ++c) {
                        CHECK(y.data[t * d + c] == full.data[t * d + c]);
                        CHECK(y.data[t * d + c] == doctest::Approx(textbook.data[t * d + c]).epsilon(1e-6));
                    }
                }
                const Tensor& kept = step_in(dsa, "kept").tensor;
                for (std::size_t t = 0; t < T; ++t) {
                    float row = 0.0f;
                    for (std::size_t j = 0; j < T; ++j) row += kept.data[t * T + j];
                    CHECK(row == static_cast<float>(std::min(t + 1, topk)));
                }
            }
    }

    TEST_CASE("walk.dsa_explains_a_dropped_key_against_the_kth_score") {
        DsaSpec spec;
        spec.explain = Cell{4, 0};  // one → Your: dropped by the indexer in the built-in example
        const Trace t = walk_dsa(builtin_embeddings(), spec, {});
        const float score = step_in(t, "index_scores").tensor.data[4 * 6 + 0];
        const float kth = step_in(t, "index_kth").tensor.data[4];
        CHECK(score < kth);
        CHECK(step_in(t, "kept").tensor.data[4 * 6 + 0] == 0.0f);
        const Step& verdict = step_in(t, "explain_topk");
        CHECK(verdict.tensor.integers == std::vector<unsigned long long>{0});
        CHECK(verdict.title == "Not among the top k = 3: its index score " + format_number(score) + " is below the 3rd, " + format_number(kth));
        CHECK(step_in(t, "explain_index_score").tensor.data[0] == score);  // bit for bit
        CHECK(step_in(t, "explain_weight").tensor.data[0] == 0.0f);
        CHECK(step_in(t, "explain_weight").note.find("did not keep") != std::string::npos);
        // a kept key of the same row
        spec.explain = Cell{4, 1};
        const Trace kept = walk_dsa(builtin_embeddings(), spec, {});
        CHECK(step_in(kept, "explain_topk").tensor.integers == std::vector<unsigned long long>{1});
        CHECK(step_in(kept, "explain_topk").title.rfind("Kept: among the top k = 3", 0) == 0);
        CHECK(step_in(kept, "explain_weight").tensor.data[0] == step_in(kept, "weights").tensor.data[4 * 6 + 1]);
    }

    TEST_CASE("walk.dsa_refuses_what_it_cannot_walk") {
        DsaSpec spec;
        spec.topk = 0;
        CHECK_THROWS_AS(walk_dsa(builtin_embeddings(), spec, {}), UsageError);
        spec.topk = 3;
        spec.d_out = 5;
        CHECK_THROWS_AS(walk_dsa(builtin_embeddings(), spec, {}), UsageError);
        spec.d_out = 4;
        CHECK_THROWS_AS(walk_dsa(stack_batch(builtin_embeddings(), 2), spec, {}), UsageError);
        spec.explain = Cell{6, 0};
        CHECK_THROWS_AS(walk_dsa(builtin_embeddings(), spec, {}), UsageError);
    }
}
