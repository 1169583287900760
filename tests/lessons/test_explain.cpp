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
        explain_cell(rec, {2, 1}, x, nullptr, f, Scale{1.0f, "1", "1", false, ""}, ExplainDepth::context);
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

    // A head's circuits are token × token tables of its weights: a cell of one is no
    // attention's cell (the explorer and the page explained head 1 there).
    TEST_CASE("explain.a_heads_circuit_table_is_no_attention_cell") {
        Trace trace;
        trace.tokens = {"a", "b"};
        for (const char* id : {"weights", "circuit_qk", "circuit_qk_offset", "circuit_ov"}) {
            Step s;
            s.id = id;
            s.tensor.shape = {2, 2};
            s.tensor.data = {1.0f, 0.0f, 0.5f, 0.5f};
            s.axes = {Axis::token, Axis::token};
            if (s.id != "weights") s.row_axis = "query", s.col_axis = "key";  // as circuits.cpp names them: tokens through the embeddings
            trace.steps.push_back(s);
        }
        const std::optional<CellRef> weight = cell_of(trace, trace.steps[0], 0, 1, 0);
        REQUIRE(weight.has_value());
        CHECK(weight->query == 1);
        CHECK(weight->key == 0);
        for (std::size_t i = 1; i < trace.steps.size(); ++i) {
            CAPTURE(trace.steps[i].id);
            CHECK_FALSE(cell_of(trace, trace.steps[i], 0, 1, 0).has_value());
        }
    }
}

#include <algorithm>
#include <filesystem>

#include "attnwalk/errors.hpp"
#include "attnwalk/model/blocks/deltanet.hpp"
#include "attnwalk/model/blocks/heads.hpp"
#include "attnwalk/model/blocks/latent.hpp"
#include "attnwalk/model/decoder.hpp"

namespace {

const Step* step_of(const Trace& t, const std::string& id) {
    for (const Step& s : t.steps)
        if (s.id == id) return &s;
    return nullptr;
}

// Entries [at, at + n) of a step's data.
std::vector<float> part(const Step& s, std::size_t at, std::size_t n) {
    REQUIRE(at + n <= s.tensor.data.size());
    return std::vector<float>(s.tensor.data.begin() + static_cast<std::ptrdiff_t>(at), s.tensor.data.begin() + static_cast<std::ptrdiff_t>(at + n));
}

}  // namespace

TEST_SUITE("explain") {
    TEST_CASE("explain.a_models_cell_is_its_matrices_bit_for_bit") {
        // Every family's test folder, every layer, cells inside and outside the causal mask
        // and the window: each written-out number is the full matrices' entry.
        std::vector<std::string> folders;
        for (const auto& e : std::filesystem::directory_iterator(test::source_path("tests/data/models"))) folders.push_back(e.path().string());
        std::sort(folders.begin(), folders.end());
        REQUIRE(folders.size() >= 8);
        const std::vector<std::size_t> ids = {3, 1, 4, 1, 5, 9, 2, 6};
        const std::size_t T = ids.size();
        std::size_t cells = 0, windowed = 0, negative_operands = 0;
        folders.push_back(test::source_path("tests/data/tiny_gpt2_hf_f32.safetensors"));  // GPT-2: LayerNorm, learned positions
        for (const std::string& folder : folders) {
            CAPTURE(folder);
            const Model m = std::filesystem::is_directory(folder) ? load_model(folder) : load_gpt2(folder, 4);
            const DecoderConfig& c = m->weights.config;
            for (std::size_t layer = 0; layer < c.layers; ++layer)
                for (const auto& [i, j] : std::vector<std::pair<std::size_t, std::size_t>>{{7, 6}, {7, 0}, {2, 5}, {4, 4}}) {
                    ModelSpec spec;
                    spec.layer = layer;
                    spec.head = (i + layer) % c.heads;
                    spec.explain = Cell{i, j};
                    if (const DeltaNetBlock* deltanet = m->weights.blocks[layer].attention->as<DeltaNetBlock>()) {  // Gated DeltaNet: its effective attention's cell (explain.a_deltanet_layers_cells_…)
                        spec.head = (i + layer) % deltanet->w.v_heads;
                        const Trace t = walk_model(m, ids, std::vector<std::string>(T, "#"), spec, {});
                        REQUIRE(step_of(t, "explain_effective"));
                        CHECK(step_of(t, "explain_effective")->tensor.data[0] == step_of(t, "effective_attention")->tensor.data[i * T + j]);
                        ++cells;
                        continue;
                    }
                    const Trace t = walk_model(m, ids, std::vector<std::string>(T, "#"), spec, {});
                    if (const LatentBlock* latent = m->weights.blocks[layer].attention->as<LatentBlock>()) {  // MLA: its own parts, then the same softmax (explain.a_latent_layers_cells_…)
                        const std::size_t h = *spec.head, qk = latent->w.qk_head(), r = latent->w.rank();
                        CHECK(step_of(t, "explain_score")->tensor.data[0] == step_of(t, "scores")->tensor.data[i * T + j]);
                        CHECK(step_of(t, "explain_query")->tensor.data == part(*step_of(t, "queries"), i * c.heads * qk + h * qk, qk));
                        CHECK(step_of(t, "explain_key_latent")->tensor.data == part(*step_of(t, "latent_kv"), j * r, r));
                        const std::size_t dr = latent->w.rope;
                        CHECK(step_of(t, "explain_key_rotated")->tensor.data == part(*step_of(t, "keys_rope"), j * dr, dr));
                        CHECK(step_of(t, "explain_weight")->tensor.data[0] == step_of(t, "weights")->tensor.data[i * T + j]);
                        CHECK(step_of(t, "explain_context")->tensor.data == part(*step_of(t, "head_outputs"), i * latent->w.value, latent->w.value));
                        ++cells;
                        continue;
                    }
                    // the layer's own d_h and G (Gemma 4's full layers have theirs)
                    const AttentionWeights& aw = m->weights.blocks[layer].attention->get<HeadsBlock>().w;
                    const std::size_t h = *spec.head, d = aw.head_size(), G = aw.key_heads(), g = h / (c.heads / G);
                    const Step* score = step_of(t, "explain_score");
                    REQUIRE(score);
                    CHECK(score->tensor.data[0] == step_of(t, "scores")->tensor.data[i * T + j]);
                    CHECK(step_of(t, "explain_query")->tensor.data == part(*step_of(t, "queries"), i * c.heads * d + h * d, d));
                    if (aw.shared_kv)  // cross-layer KV sharing: the key is the earlier layer's, as that layer rotated it
                        CHECK(step_of(t, "explain_key")->tensor.data == part(*step_of(t, "keys_rotated"), j * d, d));
                    else
                        CHECK(step_of(t, "explain_key")->tensor.data == part(*step_of(t, "keys"), j * G * d + g * d, d));
                    // with --head, the per-head steps hold head h and the key head g it reads (T×d_h)
                    if (const Step* n = step_of(t, "explain_query_normed"))
                        CHECK(n->tensor.data == part(*step_of(t, "queries_normed"), i * d, d));
                    if (const Step* r = step_of(t, "explain_query_rotated")) {
                        CHECK(r->tensor.data == part(*step_of(t, "queries_rotated"), i * d, d));
                        if (!aw.shared_kv) CHECK(step_of(t, "explain_key_rotated")->tensor.data == part(*step_of(t, "keys_rotated"), j * d, d));
                    } else {
                        CHECK((c.positions != PositionKind::rope || !c.layer_specs[layer].rope));
                    }
                    const Step* input = step_of(t, "explain_input_query");
                    const Step* ln1 = step_of(t, "layer" + std::to_string(layer + 1) + ".ln_1");
                    if (ln1) CHECK(input->tensor.data == part(*ln1, i * c.width, c.width));
                    for (const char* id : {"explain_input_query", "explain_input_key"})  // the norm's note: a negative operand in parentheses
                        if (const Step* n = step_of(t, id)) {
                            for (const char* bare : {" − -", " + -", " × -", " / -"}) CHECK_MESSAGE(n->note.find(bare) == std::string::npos, n->note);
                            for (const char* kept : {" − (-", " + (-", " × (-"}) negative_operands += n->note.find(kept) != std::string::npos;
                        }
                    CHECK(step_of(t, "explain_weight")->tensor.data[0] == step_of(t, "weights")->tensor.data[i * T + j]);
                    CHECK(step_of(t, "explain_context")->tensor.data == part(*step_of(t, "head_outputs"), i * d, d));
                    const bool masked = j > i || (c.layer_specs[layer].window && j + *c.layer_specs[layer].window <= i);
                    CHECK(step_of(t, "explain_mask")->tensor.integers.at(0) == (masked ? 0u : 1u));
                    if (masked) CHECK(step_of(t, "explain_weight")->tensor.data[0] == 0.0f);
                    windowed += masked && j <= i;
                    ++cells;
                }
        }
        CHECK(cells >= 90);
        CHECK(windowed > 0);  // some cell was inside the causal triangle but outside a window
        CHECK(negative_operands > 0);  // some norm's note had a negative mean, scale or shift to write
    }
}

namespace {

// Every cell of every head of `layer`, asked of the trace's explainer as the explorer and the
// page ask it: the last written-out number is the matrix's entry, bit for bit.
void every_cell_is_its_matrix(const std::string& folder, std::size_t layer, const std::string& matrix, const std::string& last) {
    const Model m = load_model(test::source_path(folder));
    const std::vector<std::size_t> ids = {1, 2, 3, 4, 5, 6};
    const std::size_t T = ids.size();
    ModelSpec spec;
    spec.layer = layer;
    Recording recording;
    recording.explainable = true;
    const Trace t = walk_model(m, ids, std::vector<std::string>(T, "#"), spec, recording);
    REQUIRE(t.explainer);
    const Step* a = step_of(t, matrix);
    REQUIRE(a);
    REQUIRE(a->tensor.shape.size() == 3);
    const std::size_t H = a->tensor.shape[0];
    std::size_t cells = 0;
    for (std::size_t h = 0; h < H; ++h)
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < T; ++j) {
                CAPTURE(h);
                CAPTURE(i);
                CAPTURE(j);
                const std::vector<Step> steps = explain(t, CellRef{layer, h, i, j});
                const auto found = std::find_if(steps.begin(), steps.end(), [&](const Step& s) { return s.id == last; });
                REQUIRE(found != steps.end());
                CHECK(found->tensor.data[0] == a->tensor.data[(h * T + i) * T + j]);
                ++cells;
            }
    CHECK(cells == H * T * T);
}

// Every entry of the circuits' grids, asked of the trace's explainer as the explorer and the
// page ask it (explain_at): the last number of its written-out step `last` is the grid's
// entry, bit for bit; the count of entries written out.
std::size_t every_entry_is_its_grid(const Trace& t, const std::string& grid, const std::string& last) {
    const Step* g = step_of(t, grid);
    REQUIRE(g);
    REQUIRE(g->tensor.shape.size() == 2);
    const std::size_t rows = g->tensor.shape[0], cols = g->tensor.shape[1];
    std::size_t written = 0;
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) {
            CAPTURE(grid);
            CAPTURE(r);
            CAPTURE(c);
            const std::vector<Step> steps = explain_at(t, *g, 0, r, c);
            const float value = g->tensor.data[r * cols + c];
            if (steps.empty()) {  // a layer without separable heads: nan in the grid, nothing to write out
                CHECK(std::isnan(value));
                continue;
            }
            const auto found = std::find_if(steps.begin(), steps.end(), [&](const Step& s) { return s.id == last; });
            REQUIRE(found != steps.end());
            const float got = found->tensor.data.back();
            CHECK((got == value || (std::isnan(got) && std::isnan(value))));
            ++written;
        }
    return written;
}

}  // namespace

TEST_SUITE("explain") {
    TEST_CASE("explain.every_attribution_term_and_patching_cell_is_its_grids_entry") {
        for (const std::string folder : {"tests/data/models/tiny_llama", "tests/data/models/tiny_gemma3", "tests/data/models/tiny_qwen3_next"}) {
            CAPTURE(folder);
            const Model m = load_model(test::source_path(folder));
            const std::vector<std::size_t> ids = {5, 17, 3, 25, 9, 4};
            ModelSpec spec;
            spec.attribution = true;
            spec.corrupt = {5, 18, 3, 26, 9, 4};
            spec.answer = 2;
            spec.wrong = 7;
            Recording recording;
            recording.explainable = true;
            const Trace t = walk_model(m, ids, std::vector<std::string>(ids.size(), "#"), spec, recording);
            REQUIRE(t.explainer);
            const std::size_t L = step_of(t, "attribution_heads")->tensor.shape[0], H = step_of(t, "attribution_heads")->tensor.shape[1];
            CHECK(every_entry_is_its_grid(t, "attribution_layers", "explain_attribution_term") == L * 2);
            const std::size_t heads = every_entry_is_its_grid(t, "attribution_heads", "explain_attribution_term");
            CHECK(heads == (folder.find("gemma3") != std::string::npos ? 0 : folder.find("next") != std::string::npos ? L * H / 2 : L * H));  // a norm after
            // every attention (Gemma 3), half the layers Gated DeltaNet (Qwen3-Next): nan there, nothing written out
            CHECK(every_entry_is_its_grid(t, "patching_resid", "explain_patching_value") == L * ids.size());
            CHECK(every_entry_is_its_grid(t, "patching_layers", "explain_patching_value") == L * 2);
            CHECK(every_entry_is_its_grid(t, "patching_heads", "explain_patching_value") > 0);
            CHECK(every_entry_is_its_grid(t, "patching_heads_raw", "explain_patching_metric") <= L * H);
            CHECK(every_entry_is_its_grid(t, "patching_resid_raw", "explain_patching_metric") == L * ids.size());
            // the walk writes out one of each itself: the largest head's (Gemma 3, no head's own: a layer's)
            CHECK(step_of(t, "explain_attribution_term"));
            CHECK(step_of(t, "explain_patching_value"));
            // a step with no arithmetic of its own writes out nothing
            CHECK(explain_at(t, *step_of(t, "patching_metric"), 0, 0, 0).empty());
        }
    }
    TEST_CASE("explain.a_latent_layers_cells_are_its_weights_bit_for_bit") {
        every_cell_is_its_matrix("tests/data/models/tiny_deepseek_v3", 2, "weights", "explain_weight");
        every_cell_is_its_matrix("tests/data/models/tiny_deepseek_v3", 2, "scores", "explain_score");
        every_cell_is_its_matrix("tests/data/models/tiny_deepseek_v3_f32", 0, "weights", "explain_weight");
        // DeepSeek-V3.2: index_topk (4, 3) of the 6 keys kept, the others −∞ as the softmax read them
        every_cell_is_its_matrix("tests/data/models/tiny_deepseek_v32", 1, "weights", "explain_weight");
        every_cell_is_its_matrix("tests/data/models/tiny_deepseek_v32_f32", 0, "weights", "explain_weight");
    }
    TEST_CASE("explain.a_key_the_indexer_dropped_is_masked") {
        const Model m = load_model(test::source_path("tests/data/models/tiny_deepseek_v32_f32"));
        const std::vector<std::size_t> ids = {1, 2, 3, 4, 5, 6};
        ModelSpec spec;
        spec.layer = 0;
        Recording recording;
        recording.explainable = true;
        const Trace t = walk_model(m, ids, std::vector<std::string>(ids.size(), "#"), spec, recording);
        const Step* kept = step_of(t, "kept");
        REQUIRE(kept);
        std::size_t dropped = 0;
        for (std::size_t i = 0; i < 6; ++i)
            for (std::size_t j = 0; j <= i; ++j) {
                CAPTURE(i);
                CAPTURE(j);
                const bool in = kept->tensor.data[i * 6 + j] != 0.0f;
                const std::vector<Step> steps = explain(t, CellRef{0, 0, i, j});
                const auto mask = std::find_if(steps.begin(), steps.end(), [](const Step& s) { return s.id == "explain_mask"; });
                REQUIRE(mask != steps.end());
                CHECK(mask->tensor.integers.at(0) == (in ? 1u : 0u));
                if (!in) {
                    CHECK(mask->note.find("not among the keys its indexer kept") != std::string::npos);
                    ++dropped;
                }
            }
        CHECK(dropped == 6);  // rows 4, 5, 6 keep 3 of their 4, 5, 6 keys
    }
    TEST_CASE("explain.a_deltanet_layers_cells_are_its_effective_attention_bit_for_bit") {
        every_cell_is_its_matrix("tests/data/models/tiny_qwen3_next", 0, "effective_attention", "explain_effective");
        every_cell_is_its_matrix("tests/data/models/tiny_qwen3_5", 0, "effective_attention", "explain_effective");
    }
    TEST_CASE("explain.a_deltanet_layer_opens_on_its_effective_attention") {
        // the drawings open on the step its lesson declares `opening`: a DeltaNet layer's attention-like matrix
        const Model m = load_model(test::source_path("tests/data/models/tiny_qwen3_next"));
        ModelSpec spec;
        spec.layer = 0;
        const Trace t = walk_model(m, {1, 2, 3}, std::vector<std::string>(3, "#"), spec, {});
        REQUIRE(step_of(t, "effective_attention"));
        CHECK(step_of(t, "effective_attention")->opens);
    }
}
