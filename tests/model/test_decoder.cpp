// The decoder (model/decoder.hpp) and the GPT-2 mapping, called as library functions:
// the model lesson against the PyTorch goldens of the book's GPTModel, and the decoder's
// own promises (the cache, the two attention paths; the tap's hook points: test_hooks.cpp).
#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/tokenizer.hpp"
#include "attnwalk/lessons/lessons.hpp"
#include "attnwalk/model/blocks/experts.hpp"
#include "attnwalk/model/blocks/heads.hpp"
#include "attnwalk/model/blocks/latent.hpp"
#include "attnwalk/model/blocks/mlp.hpp"
#include "attnwalk/model/decoder.hpp"
#include "attnwalk/ops/attention.hpp"
#include "attnwalk/ops/blas.hpp"
#include "golden.hpp"

using namespace attnwalk;
using nlohmann::json;

namespace {

const char* const tiny = "tests/data/tiny_gpt2_hf_f32.safetensors";  // C 16, 2 layers, vocab 50, 4 heads given

std::vector<std::size_t> ids_of(const std::string& text) {
    std::vector<std::size_t> ids;
    std::stringstream in(text);
    for (std::string id; std::getline(in, id, ',');) ids.push_back(std::stoul(id));
    return ids;
}

// Keeps every layer's attention (or none), and hears how many keys each layer's heads saw
// (the order of every hook point: tests/model/test_hooks.cpp).
class Listen : public DecoderTap {
public:
    explicit Listen(bool keep) : keep_(keep) {}
    bool keeps_attention(std::size_t) const override { return keep_; }
    void hook(std::size_t l, HookId id, const Hooked& value) override {
        if (id != hooks::heads) return;
        const Forward& f = value.get<Forward>();
        heard.push_back("attention" + std::to_string(l) + " " + std::to_string(f.kh.size() ? f.kh.shape(2) : 0) + " keys");
    }
    std::vector<std::string> heard;

private:
    bool keep_;
};

float max_diff(const Mat& a, const Mat& b) {
    float d = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a.data()[i] - b.data()[i]));
    return d;
}

}  // namespace

TEST_SUITE("model") {
    TEST_CASE("model.gpt2_lesson_matches_pytorch") {
        std::size_t cases = 0;
        for (const auto& c : test::golden_cases("gpt2.json")) {
            CAPTURE(c.at("name").get<std::string>());
            std::string path;
            std::optional<std::size_t> heads;
            std::vector<std::size_t> ids;
            ModelSpec spec;
            const json& args = c.at("args");
            for (std::size_t i = 1; i < args.size(); ++i) {
                const std::string a = args.at(i).get<std::string>();
                const auto next = [&] { return args.at(++i).get<std::string>(); };
                if (a == "--model") path = test::source_path(next().substr(6));  // @SRC@/…
                else if (a == "--heads") heads = std::stoul(next());
                else if (a == "--ids") ids = ids_of(next());
                else if (a == "--layer") spec.layer = std::stoul(next()) - 1;  // the command line counts from 1
                else if (a == "--generate") spec.generate = std::stoul(next());
                else FAIL("the golden uses an option this test does not read: " << a);
            }
            std::vector<std::string> tokens;
            for (std::size_t id : ids) tokens.push_back("#" + std::to_string(id));
            const Trace trace = walk_model(load_gpt2(path, heads), ids, tokens, spec, {});
            test::check_golden_case(c, trace);
            ++cases;
        }
        CHECK(cases > 0);
    }

    TEST_CASE("model.families_match_pytorch") {  // Llama 3, SmolLM2, Qwen2, Qwen3, Gemma 3 folders
        std::size_t cases = 0;
        for (const auto& c : test::golden_cases("families.json")) {
            CAPTURE(c.at("name").get<std::string>());
            std::string path, text;
            std::vector<std::size_t> ids;
            ModelSpec spec;
            const json& args = c.at("args");
            for (std::size_t i = 1; i < args.size(); ++i) {
                const std::string a = args.at(i).get<std::string>();
                const auto next = [&] { return args.at(++i).get<std::string>(); };
                if (a == "--model") path = test::source_path(next().substr(6));  // @SRC@/…
                else if (a == "--ids") ids = ids_of(next());
                else if (a == "--text") text = next();
                else if (a == "--layer") spec.layer = std::stoul(next()) - 1;  // the command line counts from 1
                else if (a == "--generate") spec.generate = std::stoul(next());
                else FAIL("the golden uses an option this test does not read: " << a);
            }
            if (!text.empty()) {  // through the folder's tokenizer.json
                if (!ATTNWALK_TOKENIZER_JSON) continue;
                ids = load_tokenizer_json(path + "/tokenizer.json")->encode(text);
            }
            const Trace trace = walk_model(load_model(path), ids, std::vector<std::string>(ids.size(), "#"), spec, {});
            test::check_golden_case(c, trace);
            ++cases;
        }
        CHECK(cases >= 10);
    }

    TEST_CASE("model.gpt2_is_a_decoder_configuration") {
        const Model m = load_gpt2(test::source_path(tiny), 4);
        const DecoderConfig& c = m->weights.config;
        CHECK(c.family->model_type == "gpt2");
        CHECK(c.norm == NormKind::layer_norm);
        CHECK(c.mlp == MlpKind::gelu_tanh);
        CHECK(c.positions == PositionKind::learned);
        CHECK(c.tied_head);
        CHECK(c.heads == 4);
        CHECK(c.head_size() * c.heads == c.width);
        REQUIRE(m->weights.blocks.size() == c.layers);
        CHECK(m->weights.blocks[0].feed_forward->get<MlpBlock>().up.out() == 4 * c.width);
        CHECK(m->weights.blocks[0].attention->get<HeadsBlock>().w.query.ext != nullptr);  // F32: read where it lies
        // a block is asked for its kind: null, or std::logic_error, for another
        CHECK(m->weights.blocks[0].attention->as<LatentBlock>() == nullptr);
        CHECK_THROWS_AS(m->weights.blocks[0].feed_forward->get<ExpertsBlock>(), std::logic_error);
    }

    TEST_CASE("model.decoding_with_the_cache_equals_the_whole_sequence") {
        const Model m = load_gpt2(test::source_path(tiny), 4);
        const std::vector<std::size_t> ids = {5, 17, 3, 42, 8, 1};
        Listen keep(true);
        const Cube whole = decoder_forward(m->weights, ids, nullptr, &keep);
        const Mat expected = decoder_logits(m->weights, whole, ids.size() - 1);
        DecoderCache cache = make_cache(m->weights.config);
        (void)decoder_forward(m->weights, {ids.begin(), ids.begin() + 3}, &cache, nullptr);  // a prompt of 3 (blocked path)
        Cube last;
        for (std::size_t t = 3; t < ids.size(); ++t) {
            Listen step(false);
            last = decoder_forward(m->weights, {ids[t]}, &cache, &step);
            CHECK(step.heard[0] == "attention0 " + std::to_string(t + 1) + " keys");  // the cache grew by one
        }
        CHECK(cache.tokens() == ids.size());
        CHECK(cache.bytes(4) == doctest::Approx(2.0 * 4.0 * static_cast<double>(ids.size() * m->weights.config.width * m->weights.config.layers)));
        CHECK(max_diff(decoder_logits(m->weights, last, 0), expected) <= 1e-5f);
    }

    TEST_CASE("model.shared_layers_read_their_keys_and_values_through_the_cache") {
        // Gemma 4's last num_kv_shared_layers layers read an earlier layer's keys and values: token by token
        // through the cache (and a prompt of 4, then one at a time) the logits are the full pass's, and the
        // cache holds only the layers that make them
        for (const char* folder : {"tiny_gemma4", "tiny_gemma4_kv"}) {
            CAPTURE(folder);
            const Model m = load_model(test::source_path(std::string("tests/data/models/") + folder));
            const DecoderWeights& w = m->weights;
            const std::vector<std::size_t> ids = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
            const Cube full = decoder_forward(w, ids, nullptr, nullptr);
            DecoderCache one = make_cache(w.config), prompt = make_cache(w.config);
            decoder_forward(w, {ids.begin(), ids.begin() + 4}, &prompt, nullptr);
            for (std::size_t t = 0; t < ids.size(); ++t) {
                CAPTURE(t);
                const Cube last = decoder_forward(w, {ids[t]}, &one, nullptr);
                CHECK(max_diff(decoder_logits(w, last, 0), decoder_logits(w, full, t)) <= 1e-5f);
                if (t < 4) continue;
                const Cube after = decoder_forward(w, {ids[t]}, &prompt, nullptr);
                CHECK(max_diff(decoder_logits(w, after, 0), decoder_logits(w, full, t)) <= 1e-5f);
            }
            CHECK(one.layers[4].length() == 0);  // shared: nothing of their own
            CHECK(one.layers[5].length() == 0);
            CHECK(one.layers[2].length() == ids.size());  // full
            CHECK(one.layers[3].length() == 3);           // the window
        }
    }

    TEST_CASE("model.deepseek_v32_decodes_through_its_latent_and_indexer_caches") {
        // DeepSeek-V3.2: each query keeps index_topk keys (4 and 3, fewer than the 12 tokens), chosen by the indexer
        // over the cached indexer keys: token by token, and after a prompt of 5, the logits are the full pass's
        for (const char* folder : {"tiny_deepseek_v32", "tiny_deepseek_v32_f32"}) {
            CAPTURE(folder);
            const Model m = load_model(test::source_path(std::string("tests/data/models/") + folder));
            const DecoderWeights& w = m->weights;
            const std::vector<std::size_t> ids = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 250, 17};
            const Cube full = decoder_forward(w, ids, nullptr, nullptr);
            DecoderCache one = make_cache(w.config), prompt = make_cache(w.config);
            decoder_forward(w, {ids.begin(), ids.begin() + 5}, &prompt, nullptr);
            for (std::size_t t = 0; t < ids.size(); ++t) {
                CAPTURE(t);
                const Cube last = decoder_forward(w, {ids[t]}, &one, nullptr);
                CHECK(max_diff(decoder_logits(w, last, 0), decoder_logits(w, full, t)) <= 1e-5f);
                if (t < 5) continue;
                const Cube after = decoder_forward(w, {ids[t]}, &prompt, nullptr);
                CHECK(max_diff(decoder_logits(w, after, 0), decoder_logits(w, full, t)) <= 1e-5f);
            }
            const LatentIndexerWeights& ix = *w.blocks[0].attention->get<LatentBlock>().w.indexer;
            REQUIRE(one.index_keys.size() == w.config.layers);
            CHECK(one.index_keys[0].shape(1) == ids.size());
            CHECK(one.index_keys[0].shape(2) == ix.head_dim());
            // the bytes: c_KV, k_rope and the indexer's key per token and layer
            const LatentWeights& lw = w.blocks[0].attention->get<LatentBlock>().w;
            CHECK(one.bytes(4) == doctest::Approx(4.0 * static_cast<double>(ids.size() * w.config.layers * (lw.rank() + lw.rope + ix.head_dim()))));
        }
    }

    TEST_CASE("model.the_blocked_and_the_full_attention_agree") {
        const Model m = load_gpt2(test::source_path(tiny), 4);
        const std::vector<std::size_t> ids = {9, 8, 7, 6, 5, 4, 3, 2};
        Listen full(true);
        const Mat a = decoder_logits(m->weights, decoder_forward(m->weights, ids, nullptr, &full), ids.size() - 1);
        const Mat b = decoder_logits(m->weights, decoder_forward(m->weights, ids, nullptr, nullptr), ids.size() - 1);
        CHECK(max_diff(a, b) <= 1e-5f);
        // today's families: GQA, QK-norm, RoPE, Gemma's windows (T = 10 > W = 4) and scale
        for (const char* family : {"tiny_llama", "tiny_qwen3", "tiny_gemma3", "tiny_qwen2", "tiny_gemma4"}) {
            CAPTURE(family);
            const Model f = load_model(test::source_path(std::string("tests/data/models/") + family));
            const std::vector<std::size_t> more = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
            Listen keep(true);
            const Cube x = decoder_forward(f->weights, more, nullptr, &keep), y = decoder_forward(f->weights, more, nullptr, nullptr);
            CHECK(max_diff(Mat(xt::view(x, 0)), Mat(xt::view(y, 0))) <= 1e-5f);
        }
    }

    TEST_CASE("model.prompts_are_checked") {
        const Model m = load_gpt2(test::source_path(tiny), 4);
        const DecoderConfig& c = m->weights.config;
        CHECK_THROWS_WITH_AS(check_prompt(c, {}, 0), "no tokens to run", UsageError);
        CHECK_THROWS_WITH_AS(check_prompt(c, {c.vocab}, 0), doctest::Contains("is out of range"), UsageError);
        CHECK_THROWS_WITH_AS(check_prompt(c, {1}, c.context), doctest::Contains("the model's context is"), UsageError);
        CHECK_NOTHROW(check_prompt(c, {1, 2}, c.context - 2));
        DecoderConfig per_layer = c;  // per-layer inputs (Gemma 4 E2B, E4B): their table may have fewer rows than the vocabulary
        per_layer.per_layer_input = 8;
        per_layer.per_layer_vocab = 3;
        CHECK_THROWS_WITH_AS(check_prompt(per_layer, {1, 3}, 0), doctest::Contains("token id 3 has no per-layer input: the per-layer inputs' table has 3 rows"),
                             UsageError);
        CHECK_NOTHROW(check_prompt(per_layer, {1, 2}, 0));
    }
}

TEST_SUITE("model") {
    TEST_CASE("model.a_files_own_lm_head_makes_the_logits") {
        // nanoGPT's tiny file holds lm_head.weight equal to wte: the same logits either way
        const Model nano = load_gpt2(test::source_path("tests/data/tiny_gpt2_nano_f32.safetensors"), 3);
        CHECK_FALSE(nano->weights.config.tied_head);
        CHECK(nano->weights.output_head().ext != nano->weights.embed.ext);  // read from lm_head.weight
        const Model hf = load_gpt2(test::source_path(tiny), 4);
        CHECK(hf->weights.config.tied_head);
        CHECK(&hf->weights.output_head() == &hf->weights.embed);
    }

    TEST_CASE("model.a_summarys_estimate_counts_only_what_its_forward_makes") {
        // under --summary the layer shown makes its T×T steps in one head's buffers per core
        // where attend sums them (ForwardSpec::square_summaries); the estimate follows the tap
        const Model m = load_model(test::source_path("tests/data/models/tiny_qwen3"));
        const DecoderConfig& c = m->weights.config;
        const std::size_t T = 64;
        ModelSpec spec;
        Recording summary;
        summary.summary = true;
        const double full = model_walk_cost(m, T, spec, {}).bytes, summed = model_walk_cost(m, T, spec, summary).bytes;
        const double H = static_cast<double>(c.heads), t = static_cast<double>(T);
        if (sums_square_summaries(c.head_size(), T))
            CHECK(full - summed == doctest::Approx(4.0 * (6.0 * H - 2.0 * std::min(H, static_cast<double>(cores()))) * t * t));
        else
            CHECK(summed == full);
        Recording explainable = summary;  // a summary keeps nothing to explain: the same estimate
        explainable.explainable = true;
        CHECK(model_walk_cost(m, T, spec, explainable).bytes == summed);
        spec.head = 0;  // one head's T×T tensors in full: the forward makes every head's
        CHECK(model_walk_cost(m, T, spec, summary).bytes == full);
        spec.head.reset();
        spec.view = true;  // the view reads every layer's weights
        CHECK(model_walk_cost(m, T, spec, summary).bytes == model_walk_cost(m, T, spec, {}).bytes);
    }
}
