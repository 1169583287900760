// The real binary beyond the chapter: the equalities each lesson prints, the numbers the
// bonus material quotes, and one clear line for each kind of bad input.
#include <algorithm>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_json.hpp"

using nlohmann::json;

namespace {

using test::flat;
using test::run_json;
using test::step;

double scalar(const json& doc, const std::string& id) { return step(doc, id).at("data").get<double>(); }

json param(const json& doc, const std::string& name) { return doc.at("params").at(name); }

}  // namespace

TEST_SUITE("cli.beyond") {
    TEST_CASE("cli.beyond.params_counts_the_chapter_exercise") {
        const json doc = run_json("params");  // GPT-2's MHA: d_in = d_out = 768, 12 heads, no qkv bias
        CHECK(param(doc, "total") == 2360064);
        CHECK(scalar(doc, "count_total") == 2360064.0);
        const json gqa = run_json("params --kv-heads 4");
        CHECK(param(gqa, "total") == 589824 + 2 * 768 * 256 + 590592);
        CHECK(step(gqa, "count_total").at("note").get<std::string>().find("With 12 key/value heads") != std::string::npos);
        // counts are exact integers, beyond float32's 2^24 too, in the text and in the JSON
        const json odd = run_json("params --d-in 4097 --d-out 4097 --heads 1");
        CHECK(param(odd, "total") == 67145733);
        CHECK(step(odd, "count_total").at("data").is_number_unsigned());
        CHECK(step(odd, "count_total").at("data") == 67145733);
        CHECK(step(odd, "cache_bytes").at("data") == 33562624);
        CHECK(test::run("params --d-in 4097 --d-out 4097 --heads 1").out.find("= 67145733\n") != std::string::npos);
        const auto bad = test::run("params -i data/your_journey.json");
        CHECK(bad.exit_code == 2);
        CHECK(bad.err.find("params counts from the sizes given") != std::string::npos);
    }

    TEST_CASE("cli.beyond.gqa_with_g_equal_h_is_mha") {
        const json plain = run_json("mha --heads 4 --d-out 8 --seed 5");
        const json same = run_json("mha --heads 4 --d-out 8 --seed 5 --kv-heads 4");
        CHECK(flat(step(plain, "output").at("data")) == flat(step(same, "output").at("data")));
        const json mqa = run_json("mha --heads 4 --d-out 8 --seed 5 --kv-heads 1");
        CHECK(step(mqa, "keys_split").at("shape") == json::array({1, 6, 2}));
        CHECK(step(mqa, "W_key").at("shape") == json::array({3, 2}));
        CHECK(param(mqa, "kv_heads") == 1);
    }

    TEST_CASE("cli.beyond.window_masks_the_far_past") {
        const json doc = run_json("mha --window 2");
        const auto w = flat(step(doc, "weights").at("data"));  // 2×6×6
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t i = 0; i < 6; ++i)
                for (std::size_t j = 0; j < 6; ++j)
                    if (j > i || j + 2 <= i) CHECK(w[h * 36 + i * 6 + j] == 0.0);
        // a window as long as the input is plain causal attention
        CHECK(flat(step(run_json("mha --window 6"), "output").at("data")) == flat(step(run_json("mha"), "output").at("data")));
    }

    TEST_CASE("cli.beyond.combined_qkv_and_einsum") {
        // without a bias, Linear(d_in, 3·d_out) draws what three Linear(d_in, d_out) draw
        const json fused = run_json("mha --seed 3 --d-out 4");
        const json combined = run_json("mha --seed 3 --d-out 4 --variant combined-qkv --show-einsum");
        CHECK(flat(step(fused, "output").at("data")) == flat(step(combined, "output").at("data")));
        CHECK(step(combined, "W_qkv").at("shape") == json::array({3, 12}));
        CHECK(step(combined, "scores").at("note").get<std::string>().find("einsum: 'bhid,bhjd->bhij'") != std::string::npos);
    }

    TEST_CASE("cli.beyond.kvcache_equals_the_full_pass") {
        for (const char* args : {"kvcache", "kvcache --window 3", "kvcache --heads 4 --d-out 8 --kv-heads 1 --batch 2",
                                 "kvcache --seed 7 --qkv-bias --window 1"}) {
            CAPTURE(args);
            const json doc = run_json(args);
            CHECK(scalar(doc, "max_difference") <= 1e-6);
            CHECK(flat(step(doc, "output").at("data")) == flat(step(doc, "output_full").at("data")));
        }
        const json w = run_json("kvcache --window 3");
        CHECK(step(w, "step6.keys_cache").at("shape") == json::array({2, 3, 1}));
        CHECK(step(w, "step6.keys_cache").at("first_row") == 3);
        CHECK(step(w, "step6.weights").at("first_key") == 3);
        // 12 layers, 1024 tokens, GPT-2's 768 features: 2 × 1024 × 768 × 12 × 4 bytes
        const json big = run_json("kvcache --d-out 768 --heads 12 --layers 12 --context 1024");
        CHECK(scalar(big, "cache_bytes") == 2.0 * 1024 * 768 * 12 * 4);
    }

    TEST_CASE("cli.beyond.kvshare_reuses_a_producers_keys_and_counts_its_cache") {
        const json doc = run_json("kvshare");  // 4 layers, 2 producing, 2 heads of 2
        CHECK(flat(step(doc, "kv_sources").at("data")) == std::vector<double>{1, 2, 2, 2});
        CHECK(flat(step(doc, "layer3.keys").at("data")) == flat(step(doc, "layer2.keys").at("data")));
        CHECK(flat(step(doc, "layer4.values").at("data")) == flat(step(doc, "layer2.values").at("data")));
        CHECK(flat(step(doc, "layer3.queries").at("data")) != flat(step(doc, "layer2.queries").at("data")));
        for (const char* absent : {"layer3.W_key", "layer4.W_value"}) {
            const auto& steps = doc.at("steps");
            CHECK(std::none_of(steps.begin(), steps.end(), [&](const json& s) { return s.at("id") == absent; }));
        }
        for (const char* args : {"kvshare", "kvshare --kv-producing-layers 1 --layers 5 --heads 3 --d-out 6 --batch 2", "kvshare --kv-producing-layers 4"}) {
            CAPTURE(args);
            const json d = run_json(args);
            CHECK(scalar(d, "max_difference") == 0.0);
            CHECK(flat(step(d, "output").at("data")) == flat(step(d, "output_explicit").at("data")));
        }
        // B 1 × T 6 × d_k 2 × H 2 × 2 × 4 bytes, × 4 layers or × 2 producing
        CHECK(flat(step(doc, "cache_bytes").at("data")) == std::vector<double>{768, 384});
        CHECK(step(doc, "cache_bytes").at("labels") == json::array({"MHA", "MHA + sharing"}));
        // the README's Gemma 4 E2B-like setup: 37.58, 4.70, 16.11 and 2.01 GB
        const json e2b = run_json("kvshare --layers 35 --kv-producing-layers 15 --cache-heads 8 --cache-head-dim 256 --kv-heads 1 "
                                  "--context 131072 --cache-dtype bfloat16 --steps cache_bytes");
        CHECK(flat(step(e2b, "cache_bytes").at("data")) == std::vector<double>{37580963840.0, 4697620480.0, 16106127360.0, 2013265920.0});
        CHECK(step(e2b, "cache_bytes").at("labels") == json::array({"MHA", "GQA", "MHA + sharing", "GQA + sharing"}));
        for (const char* bad : {"kvshare --layers 3 --kv-producing-layers 4", "kvshare --kv-producing-layers 0", "kvshare --layers 0",
                                "kvshare --heads 3", "kvshare --heads 2 --kv-heads 3", "kvshare --cache-heads 8 --kv-heads 3"}) {
            CAPTURE(bad);
            const auto r = test::run(bad);
            CHECK(r.exit_code == 2);
            CHECK(r.err.find("attnwalk: error: ") == 0);
            CHECK(r.out.empty());
        }
        CHECK(test::run("kvshare --layers 3 --kv-producing-layers 4").err.find("--kv-producing-layers 4 is more than --layers 3") != std::string::npos);
    }

    TEST_CASE("cli.beyond.rope_scores_depend_on_relative_positions") {
        for (const char* args : {"rope", "rope --shift 100", "rope --heads 2 --d-out 8 --rope-base 100 --shift 7"}) {
            CAPTURE(args);
            CHECK(scalar(run_json(args), "max_difference") < 1e-5);
        }
        const auto odd = test::run("rope --d-out 3");
        CHECK(odd.exit_code == 2);
        CHECK(odd.err.find("must be even") != std::string::npos);
    }

    TEST_CASE("cli.beyond.flash_equals_softmax_attention_block_by_block") {
        for (const char* args : {"flash --block 1", "flash --block 4 --causal", "flash --block 2 --causal --window 2 --seed 9",
                                 "flash --block 7", "flash --block 3 --batch 2 --causal"}) {
            CAPTURE(args);
            const json doc = run_json(args);
            CHECK(scalar(doc, "max_difference") < 1e-6);
            for (const auto& s : doc.at("steps"))  // never a whole T×T matrix
                if (s.at("id").get<std::string>().find(".scores") != std::string::npos)
                    CHECK(s.at("shape").back().get<std::size_t>() < 6 + (std::string(args).find("block 7") != std::string::npos));
        }
        const json w = run_json("flash --block 4 --causal --window 2");  // row "step" sees no key of block 1
        CHECK(flat(step(w, "block1.max").at("data"))[5] == -INFINITY);
        CHECK(step(w, "block1.max").at("note").get<std::string>().find("exp(0) = 1") != std::string::npos);
    }

    TEST_CASE("cli.beyond.sdpa_mask_conventions") {
        const json doc = run_json("sdpa --attn-mask '[[1,1,0,0,0,0],[0,0,0,0,0,0],[1,1,1,1,1,1],[1,1,1,1,1,1],[1,1,1,1,1,1],[1,1,1,1,1,1]]'");
        const auto w = flat(step(doc, "weights").at("data"));
        for (std::size_t j = 0; j < 6; ++j) {
            CHECK(std::isnan(w[6 + j]));                                              // softmax of −∞ everywhere
            CHECK(flat(step(doc, "weights_safe").at("data"))[6 + j] == 0.0);           // PyTorch ≥ 2.5
            CHECK(flat(step(doc, "weights_large_fill").at("data"))[6 + j] == doctest::Approx(1.0 / 6));  // uniform
        }
        CHECK(flat(step(doc, "mask_mha").at("data"))[2] == 1.0);  // blocked in nn.MultiheadAttention's words
        const json causal = run_json("sdpa --queries 2 --is-causal");
        CHECK(step(causal, "causal_top_left").at("first_row") == 4);
        CHECK(flat(step(causal, "causal_bottom_right").at("data"))[4] == 1.0);  // "one" sees itself
        CHECK(flat(step(causal, "causal_top_left").at("data"))[4] == 0.0);      // top-left: it does not
        // L = S: is_causal is the chapter's causal attention on raw embeddings scaled by 1/√3
        const json full = run_json("sdpa --is-causal");
        const auto sw = flat(step(full, "weights").at("data"));
        const json ref = run_json("causal --scale 1.7320508");
        const auto cw = flat(step(ref, "weights").at("data"));
        CHECK_CLOSE_ALL(sw, cw, 1e-6);
    }

    // Issue 36, items 8-11: --head filters every per-head step; layers count from 1; the
    // messages say what to do; the KV-cache note's arithmetic is the cache's real size.
    TEST_CASE("cli.beyond.model_classroom_fourth_round") {
        const std::string qwen = test::source_path("tests/data/models/tiny_qwen3");
        const json one = run_json("model --model " + qwen + " --ids 3,1,4,1,5 --layer 2 --head 2 --steps queries_normed,keys_normed,queries_rotated,keys_rotated");
        for (const char* id : {"queries_normed", "keys_normed", "queries_rotated", "keys_rotated"}) {
            CAPTURE(id);
            CHECK(step(one, id).at("shape") == json::array({5, 16}));  // T×d_h: head 2 (and the key head it reads), not every head
        }
        const json all = run_json("model --model " + qwen + " --ids 3,1,4,1,5 --layer 2 --steps queries_rotated");
        CHECK(step(all, "queries_rotated").at("shape") == json::array({4, 5, 16}));
        const auto rows = [](const json& s) { return s.at("data").get<std::vector<std::vector<float>>>(); };
        CHECK(rows(step(one, "queries_rotated")) == step(all, "queries_rotated").at("data").at(1).get<std::vector<std::vector<float>>>());
        const json gpt2 = run_json("gpt2 --model " + test::source_path("tests/data/tiny_gpt2_hf_f32.safetensors") + " --heads 4 --ids 1,2 --steps embeddings");
        CHECK(step(gpt2, "embeddings").at("title") == "The input of layer 1");
        // messages
        CHECK(test::run("softmax --steps wieghts").err.find("did you mean 'weights'?") != std::string::npos);
        CHECK(test::run("gpt2 --model " + qwen + " --ids 1").err.find("attnwalk model --model") != std::string::npos);
        CHECK(test::run("mha --heads 4").err.find("give --d-out 4") != std::string::npos);
        const auto svg = test::run("scores --svg " + test::scratch() + "/said.svg");
        CHECK(svg.err.find("attnwalk: wrote " + test::scratch() + "/said.svg (an SVG picture,") == 0);
        // the cache's size: Σ over layers of the tokens it keeps (a sliding layer its window) × 2 × G·d_h × 4 bytes
        struct Case {
            std::string folder;
            std::size_t prompt, generated, G, d_h;
            std::vector<std::size_t> windows;  // per layer, 0 = full
        };
        for (const Case& c : {Case{"tiny_llama", 4, 4, 2, 8, {0, 0}}, Case{"tiny_gemma3", 8, 4, 2, 8, {4, 4, 0, 4}}}) {
            CAPTURE(c.folder);
            const std::string ids = c.prompt == 4 ? "1,2,3,4" : "1,2,3,4,5,6,7,8";
            const json doc = run_json("model --model " + test::source_path("tests/data/models/" + c.folder) + " --ids " + ids +
                                      " --generate " + std::to_string(c.generated) + " --steps max_difference");
            std::size_t floats = 0;
            const std::size_t T = c.prompt + c.generated;
            for (std::size_t w : c.windows) floats += (w && w < T ? w : T) * 2 * c.G * c.d_h;
            const std::string note = step(doc, "max_difference").at("note");
            CAPTURE(note);
            CHECK(note.find("= " + std::to_string(4 * floats) + " bytes") != std::string::npos);
            CHECK(note.find("G·d_k = " + std::to_string(c.G * c.d_h) + " floats") != std::string::npos);
        }
    }

    TEST_CASE("cli.beyond.bad_input_gets_one_line") {
        struct Bad {
            std::string args;
            int code;
            std::string message;
        };
        const std::vector<Bad> cases = {
            {"mha --heads 4 --d-out 8 --kv-heads 3", 2, "the key/value heads must divide the query heads: 3 does not divide 4 (see --d-out, --heads and --kv-heads)"},
            {"mha --variant wrapper --kv-heads 1", 2, "the wrapper's heads each have their own keys"},
            {"mha --window 0", 2, "--window: must be at least 1"},
            {"mha --window 2 --no-causal", 2, "it needs causal attention"},
            {"kvcache --window 0", 2, "--window: must be at least 1"},
            {"kvcache --heads 4 --d-out 8 --kv-heads 3", 2, "the key/value heads must divide the query heads: 3 does not divide 4 (see --d-out, --heads and --kv-heads)"},
            {"flash --block 0", 2, "--block: must be at least 1"},
            {"flash --window 2", 2, "add --causal"},
            {"sdpa --queries 7", 2, "the queries must be 1 to 6"},
            {"sdpa --attn-mask '[[1,0],[0,1]]'", 2, "the attn_mask must be L×S = 6×6 (queries × keys), it is 2×2"},
            {"sdpa --attn-mask '[[1,0.5,1,1,1,1]]' --queries 1", 1, "a bool mask holds true/false or 1/0, got 0.5"},
            {"sdpa --attn-mask '[[\"a\"]]'", 1, "expected a number, got a string"},
            {"sdpa --attn-mask '[1,1,1,1,1,1]' --queries 1", 1, "expected 2 levels of arrays, got 1"},
            {"sdpa --attn-mask /nonexistent.json", 1, "/nonexistent.json: cannot open file"},
            {"sdpa --is-causal --attn-mask '[[1]]'", 2, "excludes --is-causal (scaled_dot_product_attention takes attn_mask or is_causal"},
            {"sdpa --mask-dtype float", 2, "--mask-dtype requires --attn-mask (--mask-dtype says how to read the --attn-mask)"},
            {"rope --rope-base 1", 2, "must be a number above 1"},
            {"params --heads 5", 2, "d_out 768 is not a multiple of 5"},
        };
        for (const Bad& b : cases) {
            CAPTURE(b.args);
            const auto r = test::run(b.args);
            CHECK(r.exit_code == b.code);
            CHECK(r.err.find(b.message) != std::string::npos);
            CHECK(r.err.find("attnwalk: error: ") == 0);
            CHECK(r.out.empty());
        }
    }

    TEST_CASE("cli.beyond.explain_a_cell") {
        // RoPE: the score written out is the rotated queries' and keys' dot product, the matrix's entry
        const json rope = run_json("rope --heads 2 --d-out 8 --explain 4,2 --head 2");  // row index 3, column 1, head index 1;
        const auto scores = flat(step(rope, "scores").at("data"));  // 2×6×6
        CHECK(scalar(rope, "explain_score") == scores[36 + 3 * 6 + 1]);
        const auto rotated = flat(step(rope, "queries_rotated").at("data"));  // 2×6×4: head 1, row 3
        CHECK(flat(step(rope, "explain_query_rotated").at("data")) == std::vector<double>(rotated.begin() + 24 + 12, rotated.begin() + 24 + 16));
        // kvcache: the cell's weight is the cached step's
        const json kv = run_json("kvcache --explain 5,3 --head 2");
        CHECK(scalar(kv, "explain_weight") == flat(step(kv, "step5.weights").at("data"))[5 + 2]);
        const json fl = run_json("flash --block 2 --explain journey,starts");
        const auto context = flat(step(fl, "context").at("data"));  // 6×3: row 1
        CHECK(flat(step(fl, "explain_context").at("data")) == std::vector<double>(context.begin() + 3, context.begin() + 6));
        const auto bad = test::run("kvcache --explain 1,2 --head 3");
        CHECK(bad.exit_code == 2);
        CHECK(bad.err.find("head 3 is out of range: there are 2 heads, counted from 1") != std::string::npos);
    }

    TEST_CASE("cli.beyond.dsa_keeps_the_top_k_and_says_why_a_key_was_dropped") {
        const json doc = run_json("dsa --explain one,Your --head 2");
        CHECK(param(doc, "topk") == 3);
        const auto kept = flat(step(doc, "kept").at("data"));  // 6×6
        for (std::size_t t = 0; t < 6; ++t) {
            double row = 0;
            for (std::size_t j = 0; j < 6; ++j) row += kept[t * 6 + j];
            CHECK(row == static_cast<double>(std::min<std::size_t>(t + 1, 3)));
        }
        CHECK(kept[4 * 6 + 0] == 0.0);  // one → Your: dropped
        const json& verdict = step(doc, "explain_topk");
        CHECK(verdict.at("data") == 0);
        CHECK(verdict.at("title").get<std::string>().find("Not among the top k = 3: its index score ") == 0);
        CHECK(verdict.at("title").get<std::string>().find(" is below the 3rd, ") != std::string::npos);
        CHECK(scalar(doc, "explain_weight") == 0.0);
        const auto topk = flat(step(doc, "index_topk").at("data"));  // 6×3, 0-based positions
        CHECK(topk[5 * 3 + 2] == 3.0);  // row 6's four-way tie at 0 goes to "with", as torch.topk breaks it
        const auto text = test::run("dsa --explain one,Your --steps explain_topk,index_topk --no-heatmap");
        REQUIRE(text.exit_code == 0);
        CHECK(text.out.find("Not among the top k = 3") != std::string::npos);
        // k at least T: every key kept, the output is full causal attention's
        const json all = run_json("dsa --topk 9");
        for (double d : flat(step(all, "full_difference").at("data"))) CHECK(d == 0.0);
        const auto y = flat(step(all, "output").at("data")), textbook = flat(step(run_json("mha --d-out 4"), "output").at("data"));
        REQUIRE(y.size() == textbook.size());
        for (std::size_t i = 0; i < y.size(); ++i) CHECK(y[i] == doctest::Approx(textbook[i]).epsilon(1e-6));
        for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
                 {"dsa --topk 0", "--topk: must be at least 1"},
                 {"dsa --d-out 5", "--d-out 5 must be a multiple of --heads 2"},
                 {"dsa --batch 2", "dsa walks one sequence"},
                 {"dsa --explain 7,1", "out of range"}}) {
            CAPTURE(args);
            const auto r = test::run(args);
            CHECK(r.exit_code == 2);
            CHECK(r.err.find(message) != std::string::npos);
        }
    }

    TEST_CASE("cli.beyond.gpt2_checkpoints") {
        const std::string hf = test::source_path("tests/data/tiny_gpt2_hf_f32.safetensors");
        const json doc = run_json("gpt2 --model " + hf + " --heads 4 --ids 1,2,3 --layer 2");
        CHECK(param(doc, "naming") == "huggingface");
        CHECK(step(doc, "layer1.ln_1").contains("summary"));  // the other layers are summaries
        CHECK(!step(doc, "layer1.ln_1").contains("data"));
        CHECK(step(doc, "layer2.ln_1").at("shape") == json::array({3, 16}));
        CHECK(step(doc, "weights").at("shape") == json::array({4, 3, 3}));
        const auto p = flat(step(doc, "top_k_probs").at("data"));
        for (std::size_t i = 1; i < p.size(); ++i) CHECK(p[i] <= p[i - 1]);
        // --head: one head's matrix, the same numbers as in every head's
        const json one = run_json("gpt2 --model " + hf + " --heads 4 --ids 1,2,3 --layer 2 --head 3");
        const auto all = flat(step(doc, "weights").at("data"));
        CHECK(flat(step(one, "weights").at("data")) == std::vector<double>(all.begin() + 18, all.begin() + 27));
        // a higher temperature flattens the distribution
        const auto hot = flat(step(run_json("gpt2 --model " + hf + " --heads 4 --ids 1,2,3 --temperature 5"), "top_k_probs").at("data"));
        CHECK(hot[0] < p[0]);
        struct Bad {
            std::string args;
            int code;
            std::string message;
        };
        const std::vector<Bad> cases = {
            {"gpt2 --ids 1", 2, "--model is required"},
            {"gpt2 --model " + hf + " --ids 1", 2, "cannot be split into heads of 64 (GPT-2's head size): give the number of heads with --heads H"},
            {"gpt2 --model " + hf + " --heads 3 --ids 1", 2, "cannot be split into 3 heads"},
            {"gpt2 --model " + hf + " --heads 4 --ids 1,50", 2, "token id 50 is out of range: the vocabulary has 50"},
            {"gpt2 --model " + hf + " --heads 4 --ids 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", 2, "17 tokens: the model's context is 16"},
            {"gpt2 --model " + hf + " --heads 4 --ids 1 --layer 3", 2, "layer 3 is out of range: the model has 2 layers, counted from 1"},
            {"gpt2 --model " + hf + " --heads 4 --ids 1 --layer 0", 2, "--layer: must be at least 1"},
            {"gpt2 --model " + hf + " --heads 4 --ids 1,x", 2, "--ids: 'x' is not a token id"},
            {"gpt2 --model " + hf + " --heads 4 --ids 1 -i data/your_journey.json", 2, "not expected: data/your_journey.json -i"},
            {"gpt2 --model " + hf + " --heads 4 --ids 1 --batch 2", 2, "unknown option --batch for gpt2 (it is an option of: "},
            {"model --ids 1", 2, "--model is required"},
            {"gpt2 --model " + hf + " --heads 4 --ids 1,2,3 --max-memory 1K", 2, "more than --max-memory 1 KiB"},
            {"gpt2 --model " + hf + " --heads 4 --ids 1,2,3 --max-work 1000", 2, "multiply-adds, more than --max-work 1000"},
            {"gpt2 --model " + hf + " --heads 4 --ids 1,2,3 --max-memory garbage", 2, "--max-memory"},
            {"tokenize --text 'hello world' --max-work 10", 2, "more than --max-work 10"},
            {"model --model " + test::source_path("tests/data/models/tiny_gemma3") + " --ids 1,2,3 --view --max-memory 10K", 2,
             "more than --max-memory"},
            {"model --model " + test::source_path("tests/data/models/tiny_qwen2") + " --text hello", 2,
             "the model folder has no tokenizer.json: give --tokenizer FILE, or the prompt as --ids"},
            {"model --model " + test::source_path("tests/data/models/tiny_qwen2") + " --ids 40", 2, "token id 40 is out of range"},
            {"model --model " + test::source_path("tests/data") + " --ids 1", 1, "no config.json in the folder"},
            {"model --model " + test::source_path("tests/data/models/tiny_qwen2") + " --ids 1 --layer 3", 2, "layer 3 is out of range: the model has 2"},
            {"gpt2 --model " + test::source_path("data/your_journey.json") + " --ids 1", 1, "the header claims"},
            {"gpt2 --model /nonexistent.safetensors --ids 1", 1, "/nonexistent.safetensors: cannot open file"},
            {"gpt2 --model " + hf + " --heads 4", 2, "gpt2 needs a prompt: --text"},
            {"gpt2 --model " + hf + " --heads 4 --text Hello", 2, "token id 15496 is out of range: the vocabulary has 50"},
            {"gpt2 --model " + hf + " --heads 4 --text Hi --ids 1", 2, "excludes --ids (the prompt is a text (--text) or token ids (--ids), not both)"},
            {"gpt2 --model " + hf + " --heads 4 --text Hi --tokenizer /nonexistent", 1, "/nonexistent/encoder.json: cannot open file"},
            {"tokenize", 2, "tokenize needs --text"},
        };
        for (const Bad& b : cases) {
            CAPTURE(b.args);
            const auto r = test::run(b.args);
            CHECK(r.exit_code == b.code);
            CHECK(r.err.find(b.message) != std::string::npos);
            CAPTURE(r.err);
        }
    }

    TEST_CASE("cli.beyond.streaming_cache") {
        // StreamingLLM's cache: nothing evicted, the next tokens' distributions are the full
        // cache's bit for bit; the weights of a step sum to 1 over the tokens kept, which name
        // its columns; refused where the cache has no meaning.
        const std::string qwen3 = test::source_path("tests/data/models/tiny_qwen3"), gemma3 = test::source_path("tests/data/models/tiny_gemma3");
        const json none = run_json("model --model " + qwen3 + " --ids 1,2,3,4 --generate 5 --streaming-cache 4,100");
        for (const auto& v : step(none, "cache_kl").at("data")) CHECK(v.get<double>() == 0.0);
        const json doc = run_json("model --model " + qwen3 + " --ids 1,2,3,4,5,6,7,8 --generate 4 --streaming-cache 2,3 --layer 2 --head 1");
        CHECK(step(doc, "cache_kept").at("data") == json::array({0, 1, 9, 10, 11}));
        const json& w = step(doc, "step12.weights");
        REQUIRE(w.at("data").size() == 5);
        CHECK(w.at("labels").size() == 5);
        double sum = 0.0;
        for (const auto& a : w.at("data")) sum += a.get<double>();
        CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
        CHECK(step(doc, "cache_kl").at("data").size() == 4);
        struct Bad {
            std::string args, message;
        };
        for (const Bad& b : std::vector<Bad>{
                 {"model --model " + gemma3 + " --ids 1,2,3 --generate 2 --streaming-cache 2,4", "is a sliding-window layer, which keeps its own window"},
                 {"gpt2 --model " + test::source_path("tests/data/tiny_gpt2_hf_f32.safetensors") + " --heads 4 --ids 1,2,3 --generate 2 --streaming-cache 2,4",
                  "unknown option --streaming-cache for gpt2"},
                 {"model --model " + qwen3 + " --ids 1,2,3 --streaming-cache 2,4", "--streaming-cache requires --generate"},
                 {"model --model " + qwen3 + " --ids 1,2,3 --generate 2 --streaming-cache 2", "--streaming-cache takes START,RECENT, two whole numbers"},
                 {"model --model " + qwen3 + " --ids 1,2,3 --generate 2 --streaming-cache 2,0", "RECENT must be at least 1"}}) {
            CAPTURE(b.args);
            const auto r = test::run(b.args);
            CHECK(r.exit_code == 2);
            CHECK(r.err.find(b.message) != std::string::npos);
        }
    }

    TEST_CASE("cli.beyond.experts_by_layer_is_each_layers_choice") {
        const std::string oss = test::source_path("tests/data/models/tiny_gpt_oss");
        for (const int layer : {1, 2, 3}) {
            CAPTURE(layer);
            const json doc = run_json("model --model " + oss + " --ids 5,17,3,250,9 --view --layer " + std::to_string(layer));
            const json& all = step(doc, "experts_by_layer");
            CHECK(all.at("shape") == json::array({3, 5, 2}));
            CHECK(all.at("data").at(layer - 1) == step(doc, "layer" + std::to_string(layer) + ".experts_chosen").at("data"));
        }
    }

    TEST_CASE("cli.beyond.deepseek_v3_latent_attention_and_its_experts") {
        const std::string ds = test::source_path("tests/data/models/tiny_deepseek_v3");
        // experts_by_layer: the layers with experts only (the first keeps a dense MLP), each the layer's own choice
        for (const int layer : {2, 3}) {
            CAPTURE(layer);
            const json doc = run_json("model --model " + ds + " --ids 5,17,3,250,9 --view --layer " + std::to_string(layer));
            const json& all = step(doc, "experts_by_layer");
            CHECK(all.at("shape") == json::array({2, 5, 3}));
            CHECK(all.at("first_layer") == 1);
            CHECK(all.at("data").at(layer - 2) == step(doc, "layer" + std::to_string(layer) + ".experts_chosen").at("data"));
            // the weights: the chosen sigmoid scores over their sum, × routed_scaling_factor 2.5
            const auto w = flat(step(doc, "layer" + std::to_string(layer) + ".expert_weights").at("data"));
            for (std::size_t t = 0; t < 5; ++t) CHECK(w[t * 3] + w[t * 3 + 1] + w[t * 3 + 2] == doctest::Approx(2.5).epsilon(1e-6));
        }
        // the latent: r numbers per token; the cache keeps them and k_rope, and decoding through it matches the whole sequence
        const json gen = run_json("model --model " + ds + " --ids 5,17,3,250,9 --generate 4 --layer 2");
        CHECK(step(gen, "latent_kv").at("shape") == json::array({5, 12}));
        CHECK(step(gen, "keys_rope").at("shape") == json::array({5, 8}));
        CHECK(flat(step(gen, "max_difference").at("data"))[0] < 1e-5);
        CHECK(step(gen, "queries").at("shape") == json::array({5, 64}));  // 4 heads of 8 + 8
        CHECK(step(gen, "values").at("shape") == json::array({5, 48}));   // 4 heads of 12
        // what it cannot do is refused with a reason
        for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
                 {"model --model " + ds + " --ids 1,2,3 --generate 2 --streaming-cache 1,2", "latent attention caches its rotary key"}}) {
            CAPTURE(args);
            const auto r = test::run(args);
            CHECK(r.exit_code == 2);
            CHECK(r.err.find(message) != std::string::npos);
        }
        // a cell written out: the latent, the key's two parts, the score's two parts, the weight the matrix's bit for bit
        const json cell = run_json("model --model " + ds + " --ids 1,2,3 --layer 2 --head 2 --explain 3,1");
        for (const char* id : {"explain_key_latent", "explain_key_nope", "explain_value_latent", "explain_key_rope", "explain_score_nope", "explain_score_rope"})
            CHECK(std::any_of(cell.at("steps").begin(), cell.at("steps").end(), [&](const json& s) { return s.at("id") == id; }));
        {  // the value's up-projection is the values step's row: key 1, head 2's 12 features of (T, H·d_v)
            const std::vector<double> values = flat(step(cell, "values").at("data")), v = flat(step(cell, "explain_value_latent").at("data"));
            REQUIRE(v.size() == 12);
            CHECK(std::equal(v.begin(), v.end(), values.begin() + 12));
        }
        CHECK(flat(step(cell, "explain_weight").at("data"))[0] == flat(step(cell, "weights").at("data"))[2 * 3 + 0]);
        CHECK(flat(step(cell, "explain_score").at("data"))[0] == flat(step(cell, "scores").at("data"))[2 * 3 + 0]);
    }

    TEST_CASE("cli.beyond.deepseek_v32_indexer_keeps_index_topk_keys") {
        const std::string ds = test::source_path("tests/data/models/tiny_deepseek_v32");
        const json doc = run_json("model --model " + ds + " --ids 5,17,3,250,9,42,7,8 --layer 2");
        CHECK(step(doc, "index_queries").at("shape") == json::array({4, 8, 12}));  // 4 index heads of 12
        CHECK(step(doc, "index_keys").at("shape") == json::array({8, 12}));
        CHECK(step(doc, "index_gates").at("shape") == json::array({8, 4}));
        const auto kept = flat(step(doc, "kept").at("data")), w = flat(step(doc, "weights").at("data"));
        REQUIRE(kept.size() == 64);
        for (std::size_t t = 0; t < 8; ++t) {  // min(t + 1, index_topk 4) keys kept per row, the weights 0 elsewhere in every head
            double row = 0;
            for (std::size_t s = 0; s < 8; ++s) {
                row += kept[t * 8 + s];
                if (kept[t * 8 + s] == 0.0)
                    for (std::size_t h = 0; h < 4; ++h) CHECK(w[(h * 8 + t) * 8 + s] == 0.0);
            }
            CHECK(row == static_cast<double>(std::min<std::size_t>(t + 1, 4)));
        }
        // decoding through the latent and indexer caches matches the whole sequence; the cache note counts the indexer's key
        const json gen = run_json("model --model " + ds + " --ids 5,17,3,250,9 --generate 6 --layer 2");
        CHECK(flat(step(gen, "max_difference").at("data"))[0] < 1e-5);
        CHECK(step(gen, "max_difference").at("note").get<std::string>().find("the indexer's key (d_I = 12), 32 floats") != std::string::npos);
    }

    TEST_CASE("cli.beyond.qwen3_next_gated_deltanet_and_gated_attention") {
        const std::string qn = test::source_path("tests/data/models/tiny_qwen3_next");
        // a Gated DeltaNet layer: its effective attention matrix times the values gives its outputs
        const json doc = run_json("model --model " + qn + " --ids 5,17,3,250,9,42 --layer 1");
        const auto A = flat(step(doc, "effective_attention").at("data")), o = flat(step(doc, "head_outputs").at("data"));
        const auto v = flat(step(doc, "values").at("data"));  // T × H_v·d_v, heads side by side
        REQUIRE(A.size() == 4 * 6 * 6);
        REQUIRE(o.size() == 4 * 6 * 6);
        for (std::size_t h = 0; h < 4; ++h)
            for (std::size_t t = 0; t < 6; ++t)
                for (std::size_t i = 0; i < 6; ++i) {
                    double sum = 0.0;
                    for (std::size_t j = 0; j < 6; ++j) sum += A[(h * 6 + t) * 6 + j] * v[j * 24 + h * 6 + i];
                    CHECK(o[(h * 6 + t) * 6 + i] == doctest::Approx(sum).epsilon(1e-4).scale(1e-3));
                }
        CHECK(step(doc, "state").at("shape") == json::array({4, 8, 6}));
        CHECK(std::none_of(doc.at("steps").begin(), doc.at("steps").end(), [](const json& s) { return s.at("id") == "weights"; }));
        // a gated full-attention layer: the gate's σ times the context is what o_proj reads
        const json full = run_json("model --model " + qn + " --ids 5,17,3,250,9,42 --layer 2");
        const auto z = flat(step(full, "context").at("data")), g = flat(step(full, "gate").at("data")), gated = flat(step(full, "gated").at("data"));
        for (std::size_t i = 0; i < z.size(); ++i) CHECK(gated[i] == doctest::Approx(z[i] / (1.0 + std::exp(-g[i]))).epsilon(1e-5).scale(1e-6));
        // decoding through the state and the convolution's inputs matches the whole sequence again
        const json gen = run_json("model --model " + qn + " --ids 5,17,3,250,9 --generate 4");
        CHECK(flat(step(gen, "max_difference").at("data"))[0] < 1e-5);
        // the cache note counts each DeltaNet layer's state and convolution inputs: 2 × (4·8·6 + 3·56) floats beside 9 tokens' K and V in 2 layers (2304 bytes)
        CHECK(step(gen, "max_difference").at("note").get<std::string>().find("= 5184 bytes") != std::string::npos);
        // a full-attention layer's heads are switched off as any model's; a DeltaNet layer's are not
        CHECK(step(run_json("model --model " + qn + " --ids 5,17,3 --ablate 2.1"), "ablation").at("shape").size() >= 1);
        for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
                 {"model --model " + qn + " --ids 1,2,3 --ablate 1.1", "Gated DeltaNet layer"},
                 {"model --model " + qn + " --ids 1,2,3 --layer 1 --head 5", "layer 1 (Gated DeltaNet) has 4 heads"},
                 {"model --model " + qn + " --ids 1,2,3 --view", "Gated DeltaNet layer"},
                 {"model --model " + qn + " --ids 1,2,3 --rollout", "Gated DeltaNet layer"},
                 {"model --model " + qn + " --ids 1,2,3 --generate 2 --streaming-cache 1,2", "Gated DeltaNet layer"}}) {
            CAPTURE(args);
            const auto r = test::run(args);
            CHECK(r.exit_code == 2);
            CHECK(r.err.find(message) != std::string::npos);
        }
        // a DeltaNet layer's cell written out: the effective attention's entry, bit for bit
        const json cell = run_json("model --model " + qn + " --ids 1,2,3 --layer 1 --head 2 --explain 3,1");
        CHECK(flat(step(cell, "explain_effective").at("data"))[0] == flat(step(cell, "effective_attention").at("data"))[2 * 3 + 0]);
    }

    TEST_CASE("cli.beyond.gpt2_model_view") {
        const std::string nano = test::source_path("tests/data/tiny_gpt2_nano_f32.safetensors");
        const json doc = run_json("gpt2 --model " + nano + " --heads 3 --ids 1,2,3,4,5 --view --sort previous_token");
        const auto grid = flat(step(doc, "attention_grid").at("data"));  // 3×3×5×5
        CHECK(step(doc, "attention_grid").at("axes") == json::array({"layer", "head", "query", "key"}));
        const auto first = flat(step(doc, "head_first_token").at("data")), previous = flat(step(doc, "head_previous_token").at("data"));
        for (std::size_t lh = 0; lh < 9; ++lh) {
            double sink = 0, prev = 0;
            for (std::size_t i = 1; i < 5; ++i) sink += grid[lh * 25 + i * 5];  // rows 2…5, as every head number counts them
            for (std::size_t i = 1; i < 5; ++i) prev += grid[lh * 25 + i * 5 + i - 1];
            CHECK(first[lh] == doctest::Approx(sink / 4).epsilon(1e-6));
            CHECK(previous[lh] == doctest::Approx(prev / 4).epsilon(1e-6));
        }
        const auto depth = flat(step(doc, "sink_by_depth").at("data"));  // per layer: the later rows' weight on token 0, over the heads
        REQUIRE(depth.size() == 3);
        for (std::size_t l = 0; l < 3; ++l) {
            double sink = 0;
            for (std::size_t h = 0; h < 3; ++h)
                for (std::size_t i = 1; i < 5; ++i) sink += grid[(l * 3 + h) * 25 + i * 5];
            CHECK(depth[l] == doctest::Approx(sink / 12).epsilon(1e-6));
        }
        const auto sorted = flat(step(doc, "heads_sorted").at("data"));  // 9×7, column 5 = previous_token
        for (std::size_t r = 1; r < 9; ++r) CHECK(sorted[r * 7 + 5] <= sorted[(r - 1) * 7 + 5]);
        CHECK(step(doc, "heads_sorted").at("labels").at(5) == "previous_token");
        const json& first_row = step(doc, "heads_sorted").at("data").at(0);  // layer and head are integers, the numbers floats
        CHECK(first_row.at(0).is_number_unsigned());
        CHECK(first_row.at(1).is_number_unsigned());
        CHECK(first_row.at(5).is_number_float());
        // --view --svg draws every layer × head, named from 1 and in the order --sort ranked them
        const std::string svg = test::scratch() + "/view.svg";
        REQUIRE(test::run("gpt2 --model " + nano + " --heads 3 --ids 1,2,3,4,5 --view --sort previous_token --compact --svg " + svg).exit_code == 0);
        const std::string picture = test::read_file(svg);
        std::vector<std::string> titles;
        for (std::size_t at = 0; (at = picture.find("font-weight=\"bold\">layer ", at)) != std::string::npos; ++at)
            titles.push_back(picture.substr(at + 19, picture.find('<', at) - at - 19));
        REQUIRE(titles.size() == 9);
        for (std::size_t r = 0; r < 9; ++r) {
            CAPTURE(titles[r]);
            const std::string named = "layer " + std::to_string(static_cast<int>(sorted[r * 7])) + ", head " + std::to_string(static_cast<int>(sorted[r * 7 + 1]));
            CHECK(titles[r].rfind(named + " · previous_token ", 0) == 0);
        }
        CHECK(picture.find(">id1<") != std::string::npos);  // token ids are not "#1", which names a position
        const auto text = test::run("gpt2 --model " + nano + " --heads 3 --ids 1,2,3,4,5 --view --sort previous_token --compact");
        CHECK(text.out.find("ranked by previous_token, highest first") != std::string::npos);
        const auto table = test::run("gpt2 --model " + nano + " --heads 3 --ids 1,2,3,4,5 --view --sort previous_token --steps heads_sorted");
        CAPTURE(table.out);
        std::istringstream first_line(table.out.substr(table.out.find("\n    1. ") + 1));  // rank 1., layer, head, numbers
        std::string rank, layer, head;
        first_line >> rank >> layer >> head;
        CHECK(layer == std::to_string(static_cast<int>(sorted[0])));  // "2", not "2.0000"
        CHECK(head == std::to_string(static_cast<int>(sorted[1])));
        CHECK(text.out.find("L" + std::to_string(static_cast<int>(sorted[0])) + "H" + std::to_string(static_cast<int>(sorted[1]))) <
              text.out.find("L" + std::to_string(static_cast<int>(sorted[7])) + "H" + std::to_string(static_cast<int>(sorted[8]))));
        const auto bad = test::run("gpt2 --model " + nano + " --heads 3 --ids 1 --sort entropy");
        CHECK(bad.exit_code == 2);
        CHECK(bad.err.find("--sort requires --view") != std::string::npos);
    }

    TEST_CASE("cli.beyond.tokenize") {
        const json doc = run_json("tokenize --text 'Hello world is'");
        CHECK(flat(step(doc, "token_ids").at("data")) == std::vector<double>{15496, 995, 318});
        CHECK(step(doc, "token_ids").at("data").at(0).is_number_unsigned());  // ids are integers, without ".0"
        const auto text = test::run("tokenize --text 'Hello world is'");
        CHECK(text.out.find("15496     995  318\n") != std::string::npos);
        CHECK(text.out.find("15496.") == std::string::npos);
        CHECK(test::run("tokenize --text 'Hello world is' --format torch").out.find("tensor([15496,   995,   318])") != std::string::npos);
        CHECK(doc.at("tokens") == json::array({"Hello", "␣world", "␣is"}));
        // from another directory, the source tree's data/gpt2 is found
        const auto r = test::run_shell("cd / && " + test::binary() + " tokenize --text 'Hello'");
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("15496") != std::string::npos);
    }

    TEST_CASE("cli.beyond.walkthrough_part") {
        const json doc = run_json("walkthrough --beyond");
        REQUIRE(doc.at("sections").size() == 17);
        CHECK(doc.at("sections").at(7).at("id") == "kvcache");
        CHECK(doc.at("sections").at(12).at("id") == "sdpa");
        CHECK(doc.at("sections").at(13).at("id") == "mla");  // the two kinds of attention today's models add
        CHECK(doc.at("sections").at(14).at("id") == "deltanet");
        CHECK(doc.at("sections").at(15).at("id") == "kvshare");  // added after, so that the parts before keep their numbers
        CHECK(doc.at("sections").at(16).at("id") == "dsa");
        CHECK(run_json("walkthrough").at("sections").size() == 7);
    }

    TEST_CASE("cli.beyond.model_commands_read_a_prompt") {
        // --help offers what the command reads: a prompt, not the toy commands' -i, --vocab, --batch
        for (const char* command : {"gpt2", "model", "tokenize"}) {
            CAPTURE(command);
            const auto help = test::run(std::string(command) + " --help");
            CHECK(help.exit_code == 0);
            CHECK(help.out.find("--vocab") == std::string::npos);
            CHECK(help.out.find("--batch") == std::string::npos);
            CHECK(help.out.find("-i,") == std::string::npos);
            CHECK(help.out.find("split at whitespace") == std::string::npos);
        }
        // <|endoftext|> is GPT-2's one special token, as Hugging Face's tokenizer reads it
        const json ids = run_json("tokenize --text 'a<|endoftext|>b'").at("steps").at(0).at("data");
        CHECK(ids == json::array({64.0, 50256.0, 65.0}));
        // a model folder's tokenizer.json names the tokens of --text
        const json model = run_json("model --model " + test::source_path("tests/data/models/tiny_gemma3") + " --text 'the cat' --steps token_ids");
        CHECK(model.at("tokens") == json::array({"<bos>", "t", "he", "␣cat"}));
        CHECK(model.at("command") == "model");
        CHECK(model.at("params").at("config.model_type") == "gemma3_text");
        CHECK(!model.at("params").contains("heads_elsewhere"));  // every layer's heads alike
        {  // Gemma 4's full layers: heads of another size, said in params and in the header's line
            const std::string g4 = "model --model " + test::source_path("tests/data/models/tiny_gemma4_kv") + " --text 'the cat' --steps token_ids";
            CHECK(run_json(g4).at("params").at("heads_elsewhere") == "layers 3, 6: 16 features each, 1 key/value head");
            CHECK(test::run_shell("COLUMNS=1000 " + test::binary() + " " + g4).out.find("8 features each (2 key/value heads; layers 3, 6: 16 features each, 1 key/value head)") != std::string::npos);
        }
        // the next-token candidates: ids as integers, their tokens (a newline, a control
        // byte here) shown by stand-ins like every token the terminal gets
        const std::string qwen3 = "model --model " + test::source_path("tests/data/models/tiny_qwen3") + " --text 'hello there' --steps top_k_ids";
        const json top = run_json(qwen3);
        CHECK(top.at("steps").at(0).at("data") == json::array({274, 10, 80, 2, 111}));
        CHECK(top.at("steps").at(0).at("labels").at(1) == "\n");  // the JSON keeps the exact text
        const auto shown = test::run(qwen3);
        CHECK(shown.out.find("274  10  80  2  111\n") != std::string::npos);
        CHECK(shown.out.find('\x02') == std::string::npos);
        CHECK(shown.out.find("␊") != std::string::npos);
    }

    TEST_CASE("cli.beyond.no_mmap_changes_no_number") {
        // --no-mmap moves the weights, not a value: the same steps with and without it (the
        // move itself, on a file large enough, is the safetensors unit test's)
        for (const std::string command : {"model --model " + test::source_path("tests/data/models/tiny_llama") + " --ids 1,2,3,4 --generate 2",
                                          "gpt2 --model " + test::source_path("tests/data/tiny_gpt2_nano_f32.safetensors") + " --heads 3 --ids 5,6"}) {
            CAPTURE(command);
            CHECK(run_json(command).at("steps") == run_json(command + " --no-mmap").at("steps"));
        }
    }

    // Issue 24: every option that takes a position, head or layer counts from 1; the header
    // names the token and PyTorch's index; the JSON keeps the 0-based index, named *_index.
    TEST_CASE("cli.counting_every_position_head_and_layer_option_counts_from_1") {
        struct Row {
            std::string args, header, key;
            json index;
        };
        const std::string qwen = test::source_path("tests/data/models/tiny_qwen2");  // 2 layers, 4 heads
        std::vector<Row> rows;
        for (const char* command : {"scores", "softmax", "context", "causal", "mha"}) {
            rows.push_back({std::string(command) + " --query 1", "query 1 \"Your\" (inputs[0])", "query_index", 0});
            rows.push_back({std::string(command) + " --query 6", "query 6 \"step\" (inputs[5])", "query_index", 5});
        }
        for (const char* command : {"scores", "softmax", "context", "causal", "mha", "kvcache", "rope", "flash"})
            rows.push_back({std::string(command) + " --explain 1,6", "explain 1,6 \"Your\",\"step\" (weights[0, 5])", "explain_index", {0, 5}});
        for (const char* command : {"mha", "kvcache", "rope --heads 2 --d-out 8"})
            rows.push_back({std::string(command) + " --explain 6,1 --head 2", "explain_head 2 (index 1)", "explain_head_index", 1});
        rows.push_back({"model --model " + qwen + " --ids 1,2 --layer 1", "layer 1 (index 0)", "layer_index", 0});
        rows.push_back({"model --model " + qwen + " --ids 1,2 --layer 2 --head 4", "head 4 (index 3)", "head_index", 3});
        for (const Row& row : rows) {
            CAPTURE(row.args);
            const auto text = test::run(row.args + " --no-heatmap");
            REQUIRE(text.exit_code == 0);
            const std::string header = text.out.substr(0, text.out.find("\n\n"));
            std::string joined;  // the header may wrap
            for (char c : header) joined += c == '\n' ? ' ' : c;
            for (std::size_t at; (at = joined.find("  ")) != std::string::npos;) joined.erase(at, 1);
            CHECK(joined.find(row.header) != std::string::npos);
            const json doc = run_json(row.args);
            CHECK(doc.at("format_version") == 2);
            CHECK(param(doc, row.key) == row.index);
        }
        // The ends of each range: 0 and one past the last are refused, saying the range.
        const std::vector<std::pair<std::string, std::string>> refused = {
            {"scores --query 0", "the position must be 1..6"},
            {"scores --query 7", "the position must be 1..6"},
            {"causal --explain 0,1", "the position must be 1..6"},
            {"mha --explain 7,1", "the position must be 1..6"},
            {"mha --explain 1,1 --head 0", "--head: must be at least 1"},
            {"mha --explain 1,1 --head 3", "the head must be 1..2"},
            {"kvcache --explain 1,1 --head 3", "head 3 is out of range: there are 2 heads, counted from 1"},
            {"rope --explain 1,1 --head 0", "--head: must be at least 1"},
            {"model --model " + qwen + " --ids 1 --layer 0", "--layer: must be at least 1"},
            {"model --model " + qwen + " --ids 1 --layer 3", "layer 3 is out of range: the model has 2 layers, counted from 1"},
            {"model --model " + qwen + " --ids 1 --head 5", "head 5 is out of range: the model has 4 heads, counted from 1"},
        };
        for (const auto& [args, message] : refused) {
            CAPTURE(args);
            const auto r = test::run(args);
            CHECK(r.exit_code == 2);
            CHECK(r.err.find(message) != std::string::npos);
        }
        // Numbered step ids and titles count the same way.
        const json kv = run_json("kvcache");
        CHECK(step(kv, "step1.query").at("title").get<std::string>().rfind("Step 1: \"Your\"", 0) == 0);
        CHECK(step(kv, "step6.query").at("title").get<std::string>().rfind("Step 6: \"step\"", 0) == 0);
        const json fl = run_json("flash --block 4");
        CHECK(step(fl, "block1.scores").at("title").get<std::string>().rfind("Block 1: keys 1…4", 0) == 0);
        CHECK(step(fl, "block2.scores").at("title").get<std::string>().rfind("Block 2: keys 5…6", 0) == 0);
        const json wrapper = run_json("mha --variant wrapper --heads 2");
        CHECK(step(wrapper, "head1.W_query").at("title").get<std::string>().find("of head 1") != std::string::npos);
        CHECK(step(wrapper, "head2.W_query").at("title").get<std::string>().find("of head 2") != std::string::npos);
        const json model = run_json("model --model " + qwen + " --ids 1,2 --layer 2");
        CHECK(step(model, "queries").at("title").get<std::string>().rfind("Layer 2:", 0) == 0);
        CHECK(step(model, "layer2.ln_1").contains("data"));
        CHECK(step(model, "layer1.ln_1").contains("summary"));
        for (const json& s : model.at("steps")) CHECK(s.at("id").get<std::string>().rfind("layer0.", 0) != 0);
        const auto grid = test::run("mha --heads 2 --steps weights --no-heatmap");
        CHECK(grid.out.find("\n    head 1 ") != std::string::npos);  // in its table's corner, above the row labels
        CHECK(grid.out.find("head 0") == std::string::npos);
    }

    // Direct logit attribution on every kind of model the loader reads: the terms sum to the
    // logit (or logit difference) within 1e-5; a layer whose attention is not a sum of its heads
    // (a norm after it, latent attention, Gated DeltaNet) has NaN heads; soft-capped logits refused.
    TEST_CASE("cli.beyond.attribution_sums_to_the_logit_on_every_kind_of_model") {
        const std::string gpt2 = test::source_path("tests/data/tiny_gpt2_hf_f32.safetensors");
        std::vector<std::string> runs = {"gpt2 --model " + gpt2 + " --heads 4 --ids 3,1,4,1,5,9 --attribution",
                                         "gpt2 --model " + gpt2 + " --heads 4 --ids 3,1,4,1,5,9 --attribution --answer '#2' --wrong '#7'"};
        for (const char* folder : {"tiny_llama", "tiny_qwen3", "tiny_gemma3", "tiny_olmo2", "tiny_cohere2", "tiny_deepseek_v3", "tiny_qwen3_next",
                                   "tiny_gpt_oss", "tiny_qwen3_moe", "tiny_smollm3"})
            runs.push_back("model --model " + test::source_path(std::string("tests/data/models/") + folder) + " --ids 5,17,3,25,9,4 --attribution --answer '#2' --wrong '#7'");
        for (const std::string& args : runs) {
            CAPTURE(args);
            const json doc = run_json(args);
            const auto terms = flat(step(doc, "attribution_terms").at("data"));
            const double sum = terms[terms.size() - 2], logit = terms.back();
            CHECK(std::abs(sum - logit) <= 1e-5 * std::max(1.0, std::abs(logit)));
            double parts = 0.0;
            for (std::size_t i = 0; i + 2 < terms.size(); ++i) parts += terms[i];
            CHECK(parts == doctest::Approx(sum).epsilon(1e-6));
            // each layer's attention is its heads (where they are separable) and o_proj's bias; the layers sum to the attention term
            const auto layers = flat(step(doc, "attribution_layers").at("data"));
            double attention = 0.0;
            for (std::size_t l = 0; l < layers.size(); l += 2) attention += layers[l];
            const auto labels = step(doc, "attribution_terms").at("labels");
            const auto at = std::find(labels.begin(), labels.end(), "attention") - labels.begin();
            CHECK(attention == doctest::Approx(terms[static_cast<std::size_t>(at)]).epsilon(1e-5));
        }
        const auto nan_heads = [](const json& doc) {
            const auto h = flat(step(doc, "attribution_heads").at("data"));
            return std::count_if(h.begin(), h.end(), [](double v) { return std::isnan(v); });
        };
        CHECK(nan_heads(run_json("model --model " + test::source_path("tests/data/models/tiny_llama") + " --ids 1,2,3 --attribution")) == 0);
        CHECK(nan_heads(run_json("model --model " + test::source_path("tests/data/models/tiny_gemma3") + " --ids 1,2,3 --attribution")) == 16);  // norms after the attention
        const auto r = test::run("model --model " + test::source_path("tests/data/models/tiny_gemma4") + " --ids 1,2,3 --attribution");
        CHECK(r.exit_code == 2);
        CHECK(r.err.find("soft-caps") != std::string::npos);
    }

    // Activation patching: its grids' shapes, the stream patched at every position of the first
    // layer restoring the clean metric, a layer's patched attention equal to all its heads'
    // patched at once where they are separable; the refusals.
    TEST_CASE("cli.beyond.patching_grids_and_their_checks") {
        const std::string llama = test::source_path("tests/data/models/tiny_llama");
        const std::string base = "model --model " + llama + " --ids 5,17,3,25,9,4 --corrupt-ids 5,18,3,26,9,4";
        const json doc = run_json(base + " --answer '#2' --wrong '#7'");
        CHECK(step(doc, "patching_metric").at("labels") == json::array({"clean", "corrupted"}));
        CHECK(step(doc, "patching_resid").at("shape") == json::array({2, 6}));
        CHECK(step(doc, "patching_heads").at("shape") == json::array({2, 4}));
        CHECK(step(doc, "patching_layers").at("shape") == json::array({2, 2}));
        const auto metric = flat(step(doc, "patching_metric").at("data"));
        const auto resid = flat(step(doc, "patching_resid_raw").at("data"));
        // positions where the prompts agree: the stream entering layer 1 is the same there, nothing changes
        for (std::size_t p : {0, 2, 4, 5}) CHECK(resid[p] == doctest::Approx(metric[1]).epsilon(1e-6));
        const auto norm = flat(step(doc, "patching_resid").at("data"));
        for (std::size_t i = 0; i < norm.size(); ++i) CHECK(norm[i] == doctest::Approx((resid[i] - metric[1]) / (metric[0] - metric[1])).epsilon(1e-4));
        CHECK(doc.at("params").contains("answer"));
        CHECK(doc.at("params").contains("wrong"));
        // one cell written out: --head in --layer's layer, its value the grid's entry bit for bit, and one attribution term likewise
        const json chosen = run_json(base + " --answer '#2' --wrong '#7' --attribution --layer 2 --head 3");
        CHECK(step(chosen, "explain_patching_swap").at("title").get<std::string>().find("head 2.3") != std::string::npos);
        CHECK(step(chosen, "explain_patching_swap").at("shape") == json::array({8, 2}));  // d_h rows: clean, corrupted
        CHECK(flat(step(chosen, "explain_patching_value").at("data")).at(0) == flat(step(chosen, "patching_heads").at("data")).at(1 * 4 + 2));
        CHECK(flat(step(chosen, "explain_patching_metric").at("data")).back() == flat(step(chosen, "patching_heads_raw").at("data")).at(1 * 4 + 2));
        CHECK(step(chosen, "explain_attribution_term").at("title").get<std::string>().find("head 2.3") != std::string::npos);
        CHECK(flat(step(chosen, "explain_attribution_term").at("data")).at(0) == flat(step(chosen, "attribution_heads").at("data")).at(1 * 4 + 2));
        const auto text = test::run(base + " --answer '#2' --wrong '#7' --attribution --steps 'explain_*'");
        CHECK(text.exit_code == 0);
        CHECK(text.out.find("more terms)") != std::string::npos);
        // the same prompt twice: nothing to normalise (nan), the raw metric unchanged everywhere
        const json same = run_json("model --model " + llama + " --ids 5,17,3 --corrupt-ids 5,17,3");
        for (double v : flat(step(same, "patching_layers").at("data"))) CHECK(std::isnan(v));
        // GPT-2 through its fused path and Gemma 3 (norms after the sublayers) patch too; DeltaNet layers have no heads to patch
        CHECK(step(run_json("gpt2 --model " + test::source_path("tests/data/tiny_gpt2_hf_f32.safetensors") + " --heads 4 --ids 3,1,4 --corrupt-ids 3,2,4"),
                   "patching_heads").at("shape") == json::array({2, 4}));
        const auto qn = flat(step(run_json("model --model " + test::source_path("tests/data/models/tiny_qwen3_next") + " --ids 5,17,3 --corrupt-ids 5,18,3"),
                                  "patching_heads_raw").at("data"));
        CHECK(std::count_if(qn.begin(), qn.end(), [](double v) { return std::isnan(v); }) > 0);
        for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
                 {"model --model " + llama + " --ids 1,2,3 --corrupt-ids 1,2", "the corrupted prompt has 2 tokens and the prompt 3"},
                 {"model --model " + llama + " --ids 1,2,3 --answer '#2'", "needs --attribution or --corrupt"},
                 {"model --model " + llama + " --ids 1,2,3 --attribution --answer '#999'", "out of range"},
                 {"model --model " + llama + " --ids 1,2,3 --attribution --answer '#2' --wrong '#2'", "the wrong answer is the answer itself"},
                 {"model --model " + llama + " --ids 1,2,3 --attribution --answer ' Mary'", "tokens, and the metric reads one"}}) {
            CAPTURE(args);
            const auto r = test::run(args);
            CHECK(r.exit_code == 2);
            CHECK(r.err.find(message) != std::string::npos);
        }
    }
    // A head's circuits (--circuits): the tables' and eigenvalues' shapes on every kind of
    // model with softmax heads, the copying score its two sums' ratio within [−1, 1]; over the
    // whole vocabulary (tiny Gemma 3: 64 tokens, a context of 64) the OV table's trace is the
    // eigenvalues' sum; at offset 0 RoPE's rotation cancels (latent attention's too); the layers it refuses, by name.
    TEST_CASE("cli.beyond.head_circuits") {
        const auto models = [](const char* folder) { return test::source_path(std::string("tests/data/models/") + folder); };
        std::vector<std::string> runs = {"gpt2 --model " + test::source_path("tests/data/tiny_gpt2_hf_f32.safetensors") + " --heads 4 --ids 3,1,4,1,5 --circuits --layer 2 --head 3"};
        for (const char* folder : {"tiny_llama", "tiny_qwen3", "tiny_gemma3", "tiny_olmo2", "tiny_cohere2", "tiny_gpt_oss", "tiny_smollm3", "tiny_qwen2",
                                   "tiny_deepseek_v3", "tiny_deepseek_v32_f32"})
            runs.push_back("model --model " + models(folder) + " --ids 5,17,3,25,9 --circuits --layer 1 --head 2");
        for (const std::string& args : runs) {
            CAPTURE(args);
            const json doc = run_json(args);
            CHECK(step(doc, "circuit_qk").at("shape") == json::array({5, 5}));
            CHECK(step(doc, "circuit_ov").at("shape") == json::array({5, 5}));
            const auto eig = step(doc, "circuit_ov_eigenvalues");
            CHECK(eig.at("labels") == json::array({"real", "imaginary"}));
            const auto e = flat(eig.at("data"));
            for (std::size_t i = 2; i < e.size(); i += 2) CHECK(e[i] <= e[i - 2]);  // largest real part first
            const auto cs = flat(step(doc, "circuit_copying").at("data"));
            CHECK(cs[0] == doctest::Approx(cs[1] / cs[2]).epsilon(1e-5));
            CHECK(std::abs(cs[0]) <= 1.0 + 1e-6);
            CHECK(doc.at("params").at("circuits") == true);
            const bool rope = args.rfind("model", 0) == 0;
            CHECK(std::any_of(doc.at("steps").begin(), doc.at("steps").end(), [](const json& s) { return s.at("id") == "circuit_qk_offset"; }) == rope);
            CHECK(doc.at("params").contains("circuit_offset") == rope);  // Δ, default 1
            if (rope) CHECK(doc.at("params").at("circuit_offset") == 1);
            // the tables' axes: tokens through the embeddings, the OV table's rows sources and columns outputs
            CHECK(step(doc, "circuit_qk").at("axes") == json::array({"query", "key"}));
            CHECK(step(doc, "circuit_ov").at("axes") == json::array({"source", "output"}));
        }
        {  // every token of the vocabulary: the OV circuit's trace is the sum of its eigenvalues
            std::string ids;
            for (int t = 0; t < 64; ++t) ids += (t ? "," : "") + std::to_string(t);
            const json doc = run_json("model --model " + models("tiny_gemma3") + " --ids " + ids + " --circuits --layer 3 --head 2");
            const auto ov = flat(step(doc, "circuit_ov").at("data"));
            double trace = 0.0;
            for (std::size_t t = 0; t < 64; ++t) trace += ov[t * 64 + t];
            const auto cs = flat(step(doc, "circuit_copying").at("data"));
            CHECK(trace == doctest::Approx(cs[1]).epsilon(1e-5));
        }
        {  // offset 0: the query and the key at one position, the rotation cancels
            const json doc = run_json("model --model " + models("tiny_llama") + " --ids 5,17,3 --circuits --layer 2 --head 4 --offset 0");
            const auto qk = flat(step(doc, "circuit_qk").at("data")), turned = flat(step(doc, "circuit_qk_offset").at("data"));
            CHECK_CLOSE_ALL(turned, qk, 1e-6);
        }
        {  // latent attention: the query latent, interleaved RoPE, YaRN; offset 0 is the position-free table there too
            const json doc = run_json("model --model " + models("tiny_deepseek_v3") + " --ids 5,17,3 --circuits --layer 2 --head 3 --offset 0");
            CHECK_CLOSE_ALL(flat(step(doc, "circuit_qk_offset").at("data")), flat(step(doc, "circuit_qk").at("data")), 1e-6);
            CHECK(step(doc, "circuit_qk").at("note").get<std::string>().find("Latent attention (MLA)") != std::string::npos);
            CHECK(step(doc, "circuit_ov_eigenvalues").at("shape") == json::array({12, 2}));  // d_v
        }
        {  // a NoPE layer (SmolLM3's fourth): no offset table, and the note says why
            const json doc = run_json("model --model " + models("tiny_smollm3") + " --ids 5,17,3 --circuits --layer 4 --head 1");
            CHECK(std::none_of(doc.at("steps").begin(), doc.at("steps").end(), [](const json& s) { return s.at("id") == "circuit_qk_offset"; }));
            CHECK(step(doc, "circuit_qk").at("note").get<std::string>().find("no RoPE") != std::string::npos);
        }
        for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
                 {"model --model " + models("tiny_llama") + " --ids 1,2,3 --circuits", "give --head H"},
                 {"model --model " + models("tiny_llama") + " --ids 1,2,3 --offset 2", "--offset requires --circuits"},
                 {"model --model " + models("tiny_llama") + " --ids 1,2,3 --circuits --head 1 --offset 64", "the offset 64 is out of range"},
                 {"model --model " + models("tiny_qwen3_next") + " --ids 1,2,3 --circuits --head 1", "Gated DeltaNet"},
                 {"model --model " + models("tiny_qwen3_next") + " --ids 1,2,3 --circuits --layer 4 --head 1", "gates its heads' outputs"},
                 // a refusal names the layers that can be shown, or says there is none
                 {"model --model " + models("tiny_qwen3_next") + " --ids 1,2,3 --circuits --layer 1 --head 1", "no layer of this model has circuits"},
                 {"model --model " + models("tiny_gemma4") + " --ids 1,2,3 --circuits --layer 6 --head 1", "choose layer 1, 2, 3 or 4"},
                 // a step an option records, asked for without it: said so
                 {"model --model " + models("tiny_llama") + " --ids 1,2,3 --steps circuit_ov", "circuit_ov is a step of model (a head's OV circuit"},
                 {"model --model " + models("tiny_llama") + " --ids 1,2,3 --svg-step circuit_ov --svg " + test::temp_file("", ".svg"), "that this run did not record"}}) {
            CAPTURE(args);
            const auto r = test::run(args);
            CHECK(r.exit_code == 2);
            CHECK(r.err.find(message) != std::string::npos);
        }
    }
}
