// The loader (model/loader.cpp): a Hugging Face folder read through its family's spec, what
// a folder must hold, and each fault as one message naming the file and the place.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/lessons/lessons.hpp"
#include "attnwalk/model/blocks/heads.hpp"
#include "attnwalk/model/blocks/latent.hpp"
#include "attnwalk/model/blocks/mlp.hpp"
#include "attnwalk/model/blocks/per_layer.hpp"
#include "attnwalk/model/decoder.hpp"
#include "test_util.hpp"

using namespace attnwalk;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A copy of a test folder in a fresh temporary one, its config.json changed by `edit`.
std::string folder_like(const std::string& name, const std::function<void(json&)>& edit) {
    static int n = 0;
    const fs::path dir = fs::path(test::scratch()) / ("folder_" + std::to_string(n++));
    fs::remove_all(dir);
    fs::copy(test::source_path("tests/data/models/" + name), dir);
    json config = json::parse(test::read_file((dir / "config.json").string()));
    edit(config);
    std::ofstream((dir / "config.json").string()) << config.dump();
    return dir.string();
}

}  // namespace

TEST_SUITE("model") {
    TEST_CASE("model.a_folder_names_its_family_and_config") {
        const Model m = load_model(test::source_path("tests/data/models/tiny_gemma3"));
        const DecoderConfig& c = m->weights.config;
        CHECK(c.family->model_type == "gemma3_text");
        CHECK(c.norm == NormKind::rms_norm);
        CHECK(c.mlp == MlpKind::geglu_tanh);
        CHECK(c.positions == PositionKind::rope);
        CHECK(c.head_size() == 8);
        CHECK(c.key_heads() == 2);
        REQUIRE(c.layer_specs.size() == 4);
        CHECK(c.layer_specs[0].window == std::optional<std::size_t>(4));
        CHECK(!c.layer_specs[2].window);  // the global layer
        CHECK(c.layer_specs[0].rope->base == 10000.0);
        CHECK(c.layer_specs[2].rope->base == 1000000.0);
        CHECK(*c.attention_scale == 4.0f);  // √query_pre_attn_scalar, not √d_h
        const ModelInfo& info = info_of(*m);
        CHECK(std::any_of(info.config.begin(), info.config.end(), [](const auto& f) { return f.first == "sliding_window" && f.second == "4"; }));
        const Model llama = load_model(test::source_path("tests/data/models/tiny_llama"));
        CHECK(llama->files.size() == 2);  // the shards of model.safetensors.index.json
        CHECK(!llama->weights.config.tied_head);
        CHECK(llama->weights.config.layer_specs[0].rope->scaling.kind == RopeScaling::Kind::llama3);
    }

    TEST_CASE("model.a_family_is_read_from_its_spec") {
        // OLMo 2: post-norm, QK-norm over the whole projections
        const Model olmo2 = load_model(test::source_path("tests/data/models/tiny_olmo2"));
        const BlockWeights& b = olmo2->weights.blocks.front();
        CHECK(olmo2->weights.config.family->placement == NormPlacement::post);
        CHECK((!b.norm_1 && !b.norm_2 && b.attention_norm && b.mlp_norm));
        const AttentionWeights& a = b.attention->get<HeadsBlock>().w;
        CHECK(a.qk_norm_whole);
        CHECK(a.q_norm->size() == 4 * 8);
        CHECK(a.k_norm->size() == 2 * 8);
        // OLMo 3: three sliding layers and a full one; YaRN on the full layer only
        const Model olmo3 = load_model(test::source_path("tests/data/models/tiny_olmo3"));
        const auto& la = olmo3->weights.config.layer_specs;
        REQUIRE(la.size() == 4);
        CHECK(la[0].window == std::optional<std::size_t>(3));
        CHECK(!la[3].window);
        CHECK(la[0].rope->scaling.kind == RopeScaling::Kind::none);
        CHECK(la[3].rope->scaling.kind == RopeScaling::Kind::yarn);
        CHECK(la[3].rope->scaling.original_context == 16.0);
        CHECK(olmo3->files.size() == 2);
        // SmolLM3: no_rope_layers [1, 1, 1, 0]
        const Model smol = load_model(test::source_path("tests/data/models/tiny_smollm3"));
        const auto& sl = smol->weights.config.layer_specs;
        CHECK((sl[0].rope && sl[2].rope && !sl[3].rope));
        CHECK(smol->weights.config.tied_head);
        // every family the registry lists is found by its model_type
        for (const FamilySpec* f : families()) CHECK(find_family(f->model_type) == f);
        CHECK(find_family("mistral") == nullptr);
    }

    TEST_CASE("model.yarn_and_partial_rotary_turn_as_hugging_face_does") {
        // yarn: the frequencies between the ramp's ends are blended, cos and sin scaled
        RopeParams p;
        p.base = 500000.0;
        p.scaling.kind = RopeScaling::Kind::yarn;
        p.scaling.factor = 8.0;
        p.scaling.original_context = 16.0;
        const Rope yarn = rope_tables(8, 3, 0, p);
        CHECK(yarn.attention_scaling == doctest::Approx(0.1 * std::log(8.0) + 1.0));
        CHECK(yarn.cos(0, 0) == static_cast<float>(0.1 * std::log(8.0) + 1.0));  // cos 0 × the factor
        // partial rotary: the features past rotary_dim pass unchanged
        RopeParams half;
        half.rotary_dim = 4;
        const Rope r = rope_tables(8, 2, 0, half);
        CHECK(r.dims() == 4);
        Hyper x = Hyper::from_shape({1, 1, 2, 8});
        for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(i + 1);
        const Hyper y = apply_rope(x, r);
        for (std::size_t c = 4; c < 8; ++c) CHECK(y(0, 0, 1, c) == x(0, 0, 1, c));
        CHECK(y(0, 0, 1, 0) != x(0, 0, 1, 0));
        CHECK_THROWS_AS(rope_tables(8, 2, 0, RopeParams{10000.0, {}, 9}), UsageError);
    }

    TEST_CASE("model.a_gpt2_folder_is_the_gpt2_mapping") {
        const fs::path dir = fs::path(test::scratch()) / "gpt2";
        fs::create_directories(dir);
        fs::copy_file(test::source_path("tests/data/tiny_gpt2_hf_f32.safetensors"), dir / "model.safetensors", fs::copy_options::overwrite_existing);
        std::ofstream((dir / "config.json").string()) << R"({"model_type": "gpt2", "n_head": 4})";
        const Model m = load_model(dir.string());
        const Model direct = load_gpt2(test::source_path("tests/data/tiny_gpt2_hf_f32.safetensors"), 4);
        CHECK(m->weights.config.family->model_type == "gpt2");
        CHECK(m->weights.config.heads == 4);
        const Cube a = decoder_forward(m->weights, {1, 2, 3}, nullptr, nullptr), b = decoder_forward(direct->weights, {1, 2, 3}, nullptr, nullptr);
        CHECK(std::equal(a.begin(), a.end(), b.begin()));
    }

    TEST_CASE("model.a_gpt2_gguf_is_its_folder") {
        // llama.cpp's converter's GPT-2 (tiny_gpt2_f32.gguf is byte for byte its output): the Conv1D
        // weights it transposed are read in x·W again, the copy of wte as output.weight read as a
        // tied head, the LayerNorm's eps from gpt2.attention.layer_norm_epsilon; F16 (16-bit values
        // transposed) as its folder of the same values, Q8_0 as its dequantized folder
        for (const char* name : {"tiny_gpt2_f32", "tiny_gpt2_f16", "tiny_gpt2_q8_0"}) {
            CAPTURE(name);
            const std::string dir = "tests/data/gguf/" + std::string(name);
            const Model g = load_model(test::source_path(dir + ".gguf")), f = load_model(test::source_path(dir + "_ref"));
            CHECK(g->weights.config.family->model_type == "gpt2");
            CHECK(g->weights.config.tied_head);
            CHECK(info_of(*g).layout == "x·W (Conv1D)");
            CHECK(info_of(*g).unused.empty());
            CHECK(g->weights.config.norm_eps == 1e-5f);
            CHECK(g->weights.config.heads == 2);
            CHECK(info_of(*g).context == 32);
            const Cube a = decoder_forward(g->weights, {0, 5, 299, 7}, nullptr, nullptr), b = decoder_forward(f->weights, {0, 5, 299, 7}, nullptr, nullptr);
            CHECK(std::equal(a.begin(), a.end(), b.begin(), b.end()));
        }
    }

    TEST_CASE("model.a_gguf_beyond_its_budget_is_made_a_layer_at_a_time") {
        // a GGUF's quantized weights are made as float32 when the forward first needs them and
        // kept while the budget allows: with room for all, each is made once; with room for a
        // few, those used longest ago are given back and made again, and the forward is the same
        const std::string path = test::source_path("tests/data/gguf/tiny_qwen3_q8_0.gguf");
        const Model all = load_model(path);
        REQUIRE(all->weights.embed.made);
        const Cube a = decoder_forward(all->weights, {1, 2, 3}, nullptr, nullptr);
        const MadeCache::Stats once = all->weights.embed.made->cache().stats();
        CHECK(once.given_back == 0);
        const Cube again = decoder_forward(all->weights, {1, 2, 3}, nullptr, nullptr);
        CHECK(std::equal(a.begin(), a.end(), again.begin(), again.end()));
        CHECK(all->weights.embed.made->cache().stats().made == once.made);  // kept: not made again

        const double largest = 4.0 * static_cast<double>(all->weights.embed.made->count());  // the embeddings, the largest here
        const double budget = std::max(largest * 1.25, once.peak / 3);
        REQUIRE(budget < once.peak);
        const Model tight = load_model(path, budget);
        const Cube b = decoder_forward(tight->weights, {1, 2, 3}, nullptr, nullptr);
        const Cube c = decoder_forward(tight->weights, {1, 2, 3}, nullptr, nullptr);
        CHECK(std::equal(a.begin(), a.end(), b.begin(), b.end()));
        CHECK(std::equal(a.begin(), a.end(), c.begin(), c.end()));
        CHECK(tight->weights.embed.made->cache().capacity() == budget);  // the budget less the 16-bit tensors (none here)
        const MadeCache::Stats stats = tight->weights.embed.made->cache().stats();
        CHECK(stats.given_back > 0);
        CHECK(stats.made > once.made);  // made again on the second forward
        CHECK(stats.peak <= budget);
        // below the largest tensor: refused when read, naming it
        try {
            (void)load_model(path, largest * 0.9);
            FAIL("a budget below the largest tensor was taken");
        } catch (const MemoryBudgetError& e) {
            CHECK(std::string(e.what()).find("token_embd.weight") != std::string::npos);
        }
    }

    TEST_CASE("model.a_gguf_row_made_alone_is_the_tensors_row") {
        // a row of q or k read before the tensor is made (MadeFloats's row maker: one row of the
        // file dequantized, its place in the converter's permutation undone) is the row of the
        // tensor made whole; on a Llama 3 whose q and k rows llama.cpp's converter permuted
        const std::string path = test::source_path("tests/data/gguf/tiny_llama3_f32.gguf");
        const Model rows = load_model(path), whole = load_model(path);
        for (const char* which : {"query", "key"}) {
            CAPTURE(which);
            const auto& a = rows->weights.blocks[1].attention->get<HeadsBlock>().w;
            const auto& b = whole->weights.blocks[1].attention->get<HeadsBlock>().w;
            const Linear& lr = std::string(which) == "query" ? a.query : a.key;
            const Linear& lw = std::string(which) == "query" ? b.query : b.key;
            REQUIRE(lr.made);
            REQUIRE(lr.ext_transposed);
            const Mat m = lw.matrix();  // made whole: d_in × d_out
            const std::size_t made = lr.made->cache().stats().made;  // the norms, made as the model was read
            std::vector<float> row(lr.in());
            for (std::size_t j = 0; j < lr.out(); ++j) {
                lr.copy_out_row(j, row.data());
                for (std::size_t k = 0; k < row.size(); ++k) REQUIRE(row[k] == m(k, j));
            }
            CHECK(lr.made->cache().stats().made == made);  // no tensor was made for the rows
        }
    }

    TEST_CASE("model.generation_stops_at_generation_configs_eos") {
        const std::string dir = folder_like("tiny_llama", [](json&) {});
        ModelSpec spec;
        spec.generate = 4;
        const auto generated = [&] {
            const Trace t = walk_model(load_model(dir), {1, 2, 3}, {"#1", "#2", "#3"}, spec, {});
            for (const Step& s : t.steps)
                if (s.id == "generated_ids") return s;
            FAIL("no generated_ids");
            return Step{};
        };
        const Step all = generated();
        REQUIRE(all.tensor.data.size() == 4);
        std::ofstream(dir + "/generation_config.json") << "{\"eos_token_id\": [999999, " << static_cast<int>(all.tensor.data[1]) << "]}";
        CHECK_THROWS_WITH_AS(load_model(dir), doctest::Contains("$.eos_token_id"), InputError);  // 999999 is not a token
        std::ofstream(dir + "/generation_config.json") << "{\"eos_token_id\": " << static_cast<int>(all.tensor.data[1]) << "}";
        const Step stopped = generated();
        CHECK(stopped.tensor.data.size() == 2);
        CHECK(stopped.note.find("end-of-text token") != std::string::npos);
    }

    TEST_CASE("model.gemma4_reads_its_layers_and_refuses_what_it_lacks") {
        // sliding layers of head_dim, full ones of global_head_dim with the proportional RoPE; the last
        // num_kv_shared_layers read the last earlier layer of their type, with the double-wide MLP
        const Model m = load_model(test::source_path("tests/data/models/tiny_gemma4"));
        const DecoderConfig& c = m->weights.config;
        CHECK(c.family->model_type == "gemma4_text");
        CHECK(*c.attention_scale == 1.0f);  // scaling 1.0
        CHECK(*c.logit_softcap == 4.0f);
        REQUIRE(c.layer_specs.size() == 6);
        CHECK(c.layer_specs[0].rope->base == 10000.0);
        CHECK(c.layer_specs[0].rope->proportion == 0.0);
        CHECK(c.layer_specs[2].rope->base == 1000000.0);
        CHECK(c.layer_specs[2].rope->proportion == 0.25);
        CHECK(c.layer_specs[4].kv_from == std::optional<std::size_t>(3));  // sliding: the last sliding layer before the shared ones
        CHECK(c.layer_specs[5].kv_from == std::optional<std::size_t>(2));  // full
        CHECK((c.layer_specs[2].kv_shared && c.layer_specs[3].kv_shared && !c.layer_specs[0].kv_shared && !c.layer_specs[1].kv_shared));
        CHECK(m->weights.blocks[2].attention->get<HeadsBlock>().w.head_size() == 16);  // global_head_dim
        CHECK(m->weights.blocks[0].attention->get<HeadsBlock>().w.head_size() == 8);
        CHECK(m->weights.blocks[5].attention->get<HeadsBlock>().w.shared_kv);
        CHECK(m->weights.blocks[5].feed_forward->get<MlpBlock>().up.out() == 96);  // use_double_wide_mlp
        CHECK(m->weights.blocks[3].feed_forward->get<MlpBlock>().up.out() == 48);
        CHECK(m->weights.blocks[1].layer_scalar.has_value());
        // the image-and-text layout: text_config, model.language_model., the vision tower unused; keys as values
        const Model kv = load_model(test::source_path("tests/data/models/tiny_gemma4_kv"));
        CHECK(kv->weights.config.family->model_type == "gemma4");
        CHECK(kv->weights.blocks[2].attention->get<HeadsBlock>().w.key_heads() == 1);  // num_global_key_value_heads
        CHECK(kv->weights.blocks[0].attention->get<HeadsBlock>().w.key_heads() == 2);
        const std::vector<std::string>& unused = info_of(*kv).unused;
        CHECK(std::find(unused.begin(), unused.end(), "model.vision_tower.encoder.layers.0.self_attn.q_proj.linear.weight") != unused.end());
        // refused by name
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_gemma4", [](json& j) { j["enable_moe_block"] = true; })),
                             doctest::Contains("gemma4_text with enable_moe_block true is not supported"), InputError);
        // per-layer inputs (E2B, E4B): P = 8 of a table of 64 rows; absent, the field is Gemma4TextConfig's 256 (not none), which
        // the tensors do not fit; 0, the model has none and its tensors are named as unused
        CHECK(c.per_layer_input == 8);
        CHECK(c.per_layer_vocab == 64);
        REQUIRE(m->weights.per_layer);
        CHECK(m->weights.per_layer->get<PerLayerEmbeddings>().layers.size() == 6);
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_gemma4", [](json& j) { j.erase("hidden_size_per_layer_input"); })),
                             doctest::Contains("embed_tokens_per_layer"), InputError);
        const Model without = load_model(folder_like("tiny_gemma4", [](json& j) { j["hidden_size_per_layer_input"] = 0; }));
        CHECK(!without->weights.per_layer);
        const std::vector<std::string>& left = info_of(*without).unused;
        CHECK(std::find(left.begin(), left.end(), "model.embed_tokens_per_layer.weight") != left.end());
        CHECK(std::find(left.begin(), left.end(), "model.layers.2.per_layer_input_gate.weight") != left.end());
        // Gemma4TextConfig makes the last layer full whatever layer_types says (tiny_gemma4_kv's config.json ends in a sliding one)
        CHECK(!kv->weights.config.layer_specs[5].window.has_value());
        CHECK(kv->weights.config.layer_specs[5].rope->proportion == 0.25);
        CHECK(kv->weights.blocks[5].attention->get<HeadsBlock>().w.head_size() == 16);
        CHECK(kv->weights.config.layer_specs[4].window == std::optional<std::size_t>(3));
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_gemma4", [](json& j) { j["num_kv_shared_layers"] = 6; })),
                             doctest::Contains("expected fewer than num_hidden_layers"), InputError);
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_gemma4", [](json& j) { j["num_kv_shared_layers"] = 5; })),  // layer 6 is full, layer 1 sliding
                             doctest::Contains("none of the first 1 is one"), InputError);
    }

    TEST_CASE("model.deepseek_v32_reads_its_indexer_and_refuses_what_it_lacks") {
        // DeepSeek-V3's latent attention and experts, and in every layer the indexer: wq_b on the query latent,
        // wk, k_norm (a LayerNorm with its bias), weights_proj; the rotary pairs interleaved without rope_interleave
        const Model m = load_model(test::source_path("tests/data/models/tiny_deepseek_v32"));
        const DecoderConfig& c = m->weights.config;
        CHECK(c.family->model_type == "deepseek_v32");
        CHECK(c.latent_interleave);
        for (const BlockWeights& b : m->weights.blocks) {
            const LatentWeights& w = b.attention->get<LatentBlock>().w;
            REQUIRE(w.indexer.has_value());
            CHECK(w.indexer->heads == 4);
            CHECK(w.indexer->head_dim() == 12);
            CHECK(w.indexer->topk == 4);
            CHECK(w.indexer->rope == 8);
            CHECK(w.indexer->wq_b.in() == 16);  // q_lora_rank
            CHECK(w.indexer->k_norm_bias.size() == 12);
        }
        CHECK(info_of(*m).unused.size() == 4);  // the multi-token-prediction layer's, as DeepSeek-V3's
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_deepseek_v32_f32", [](json& j) { j["q_lora_rank"] = nullptr; })),
                             doctest::Contains("the indexer reads the query latent"), InputError);
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_deepseek_v32_f32", [](json& j) { j["index_head_dim"] = 2; })),
                             doctest::Contains("at least 4 (qk_rope_head_dim)"), InputError);
    }

    TEST_CASE("model.folder_faults_are_one_message") {
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_qwen3", [](json& c) { c["model_type"] = "mistral"; })),
                             doctest::Contains("\"mistral\" is not supported. Supported: gpt2, llama"), InputError);
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_gemma3", [](json& c) {
                                 c["num_hidden_layers"] = 5;
                                 c["layer_types"].push_back("full_attention");
                             })),
                             doctest::Contains("missing tensor \"model.layers.4.input_layernorm.weight\""), InputError);
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_gemma3", [](json& c) { c["num_hidden_layers"] = 3; c["layer_types"].erase(3); })),
                             doctest::Contains("holds layer 3"), InputError);
        // the layers are planned before any tensor is read: their count is bounded first (a fuzzed
        // GGUF's block_count of 2^27 once asked for gigabytes of plans), in a folder or a GGUF
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_llama", [](json& c) { c["num_hidden_layers"] = 1000000000; })),
                             doctest::Contains("num_hidden_layers: expected a whole number from 1 to 4096, got 1000000000"), InputError);
        {
            std::string gguf = test::read_file(test::source_path("tests/data/gguf/tiny_llama3_f32.gguf"));
            const std::string key = "llama.block_count";
            const std::size_t at = gguf.find(key);
            REQUIRE(at != std::string::npos);
            const std::uint32_t deep = 1u << 27;
            std::memcpy(&gguf[at + key.size() + 4], &deep, 4);  // after the key, its type (u32), then the value
            CHECK_THROWS_WITH_AS(load_model(test::temp_file(gguf, ".gguf")),
                                 doctest::Contains("at metadata \"llama.block_count\": expected a whole number from 1 to 4096, got 134217728"), InputError);
            // a GGUF's faults name its own metadata keys and tensors, not the config.json fields and
            // Hugging Face names it is read as
            std::string narrow = test::read_file(test::source_path("tests/data/gguf/tiny_llama3_f32.gguf"));
            const std::string width = "llama.embedding_length";
            const std::size_t w = narrow.find(width);
            REQUIRE(w != std::string::npos);
            const std::uint32_t sixteen = 16;  // 24 in the file
            std::memcpy(&narrow[w + width.size() + 4], &sixteen, 4);
            CHECK_THROWS_WITH_AS(load_model(test::temp_file(narrow, ".gguf")),
                                 doctest::Contains("at tensor \"token_embd.weight\": expected shape [48, 16], got [48, 24] (rows first, as PyTorch's"), InputError);
            std::string renamed = test::read_file(test::source_path("tests/data/gguf/tiny_llama3_f32.gguf"));
            const std::size_t q = renamed.find("blk.0.attn_q.weight");
            REQUIRE(q != std::string::npos);
            renamed.replace(q, 19, "blk.0.attn_X.weight");  // the same length: the file stays whole
            CHECK_THROWS_WITH_AS(load_model(test::temp_file(renamed, ".gguf")), doctest::Contains(".gguf: missing tensor \"blk.0.attn_q.weight\""), InputError);
        }
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_qwen3", [](json& c) { c["num_key_value_heads"] = 3; })),
                             doctest::Contains("3 key/value heads do not divide 4 query heads"), InputError);
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_llama", [](json& c) { c["rope_scaling"]["rope_type"] = "longrope"; })),
                             doctest::Contains("rope_type \"longrope\" is not supported"), InputError);
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_gemma3", [](json& c) { c["final_logit_softcapping"] = 30.0; })),
                             doctest::Contains("soft-capping"), InputError);
        CHECK_THROWS_WITH_AS(load_model(folder_like("tiny_qwen3", [](json& c) { c["hidden_size"] = 48; })),
                             doctest::Contains("expected shape [300, 48], got [300, 32]"), InputError);
        CHECK_THROWS_WITH_AS(load_model(test::source_path("tests/data")), doctest::Contains("no config.json"), InputError);
        CHECK_THROWS_WITH_AS(load_model(test::source_path("tests/data/nan.json")), doctest::Contains("not a folder"), InputError);
        // an index naming a shard outside the folder
        const std::string dir = folder_like("tiny_llama", [](json&) {});
        json index = json::parse(test::read_file(dir + "/model.safetensors.index.json"));
        index["weight_map"]["model.norm.weight"] = "../model.safetensors";
        std::ofstream(dir + "/model.safetensors.index.json") << index.dump();
        CHECK_THROWS_WITH_AS(load_model(dir), doctest::Contains("expected the name of a shard file in the same folder"), InputError);
    }
}
