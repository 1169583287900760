// The decoder's hook points (model/hooks.hpp): a tap hears every point the decoder and each
// layer's kinds of block declare, in the order docs/architecture.md gives, each value of the
// type its id declares; on a model of attention heads (GPT-2, Gemma 3) and on models of
// latent attention, experts and Gated DeltaNet (DeepSeek-V3, Qwen3-Next); with per-layer inputs (Gemma 4);
// and a tap that patches values in place (activation patching).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xbuilder.hpp>

#include "attnwalk/model/blocks/deltanet.hpp"
#include "attnwalk/model/blocks/experts.hpp"
#include "attnwalk/model/blocks/heads.hpp"
#include "attnwalk/model/blocks/latent.hpp"
#include "attnwalk/model/blocks/mlp.hpp"
#include "attnwalk/model/blocks/per_layer.hpp"
#include "attnwalk/model/decoder.hpp"
#include "test_util.hpp"

using namespace attnwalk;

namespace {

// Every hook point a model may hand, the decoder's and the kinds'.
const std::vector<HookId> declared = {hooks::embed,      hooks::pos_embed,  hooks::embeddings, hooks::norm_1,     hooks::latent,
                                      hooks::heads,      hooks::deltanet,   hooks::attention,  hooks::attention_norm, hooks::residual_1,
                                      hooks::norm_2,     hooks::mlp_hidden, hooks::experts,    hooks::mlp,        hooks::mlp_norm,
                                      hooks::residual_2, hooks::per_layer_embed, hooks::per_layer_projection, hooks::per_layer_inputs,
                                      hooks::per_layer_input, hooks::per_layer_gated, hooks::per_layer_output};

// Hears every hook as "layer:id" ("-:embed" before the layers) and checks its value's type.
class Every : public DecoderTap {
public:
    explicit Every(bool keep) : keep_(keep) {}
    bool keeps_attention(std::size_t) const override { return keep_; }
    void hook(std::size_t l, HookId id, const Hooked& value) override {
        heard.push_back((l == no_layer ? std::string("-") : std::to_string(l)) + ":" + std::string(id.name()));
        const bool typed = id == hooks::heads      ? value.as<Forward>() != nullptr
                           : id == hooks::latent   ? value.as<LatentForward>() != nullptr
                           : id == hooks::deltanet ? value.as<GatedDeltaNetForward>() != nullptr
                           : id == hooks::experts  ? value.as<MoeOutput>() != nullptr
                                                   : value.as<Cube>() != nullptr;
        if (!typed) mistyped.push_back(heard.back());
        if (const Forward* f = value.as<Forward>()) {
            keys.push_back(f->kh.size() ? f->kh.shape(2) : 0);
            if (f->scores.size() || f->weights.size()) square = true;
        }
    }
    std::vector<std::string> heard, mistyped;
    std::vector<std::size_t> keys;  // each heads' Forward: its keys (0: none handed)
    bool square = false;            // a Forward came with T×T tensors

private:
    bool keep_;
};

// Layer l's points, in order.
std::vector<std::string> layer(std::size_t l, const std::vector<const char*>& ids) {
    std::vector<std::string> out;
    for (const char* id : ids) out.push_back(std::to_string(l) + ":" + id);
    return out;
}

std::vector<std::string> joined(std::vector<std::vector<std::string>> parts) {
    std::vector<std::string> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

std::vector<std::string> heard_by(const std::string& folder, bool keep) {
    const Model m = load_model(test::source_path("tests/data/models/" + folder));
    Every tap(keep);
    (void)decoder_forward(m->weights, {1, 2, 3}, nullptr, &tap);
    CHECK_MESSAGE(tap.mistyped.empty(), folder << ": a value not of its id's type");
    return tap.heard;
}

}  // namespace

TEST_SUITE("model") {
    TEST_CASE("model.a_hooked_value_is_read_as_its_own_type_only") {
        const Cube c = Cube::from_shape({1, 2, 3});
        const Hooked h(c);
        CHECK(h.as<Cube>() == &c);  // the value itself, no copy
        CHECK(h.as<Mat>() == nullptr);
        CHECK(h.as<Forward>() == nullptr);
        CHECK_THROWS_AS(h.get<MoeOutput>(), std::logic_error);
        CHECK(HookId("mlp") == hooks::mlp);
        CHECK(hooks::mlp != hooks::mlp_hidden);
    }

    TEST_CASE("model.a_tap_hears_every_hook_point_in_data_flow_order") {
        const std::vector<const char*> gpt2 = {"norm_1", "heads", "attention", "residual_1", "norm_2", "mlp_hidden", "mlp", "residual_2"};
        // GPT-2: learned positions, pre-norm; the blocked path (the layers not kept) hands its heads too, without T×T tensors
        const Model m = load_gpt2(test::source_path("tests/data/tiny_gpt2_hf_f32.safetensors"), 4);
        for (const bool keep : {true, false}) {
            CAPTURE(keep);
            Every tap(keep);
            (void)decoder_forward(m->weights, {1, 2, 3}, nullptr, &tap);
            CHECK(tap.heard == joined({{"-:embed", "-:pos_embed", "-:embeddings"}, layer(0, gpt2), layer(1, gpt2)}));
            CHECK(tap.mistyped.empty());
            CHECK(tap.square == keep);
            CHECK(tap.keys == std::vector<std::size_t>(2, keep ? 3 : 0));  // GPT-2's fused path hands only the output
        }
        // Gemma 3: RoPE (no position embeddings), a norm after the attention and after the MLP
        const std::vector<const char*> gemma = {"norm_1", "heads",      "attention", "attention_norm", "residual_1",
                                                "norm_2", "mlp_hidden", "mlp",       "mlp_norm",       "residual_2"};
        CHECK(heard_by("tiny_gemma3", true) == joined({{"-:embed", "-:embeddings"}, layer(0, gemma), layer(1, gemma), layer(2, gemma), layer(3, gemma)}));
        // DeepSeek-V3: latent attention (its own hook, then the same layer as heads); a dense MLP in layer 0, experts in layer 1
        const auto latent = [](const char* mlp) {
            return std::vector<const char*>{"norm_1", "latent", "heads", "attention", "residual_1", "norm_2", mlp, "mlp", "residual_2"};
        };
        const std::vector<std::string> deepseek = joined({{"-:embed", "-:embeddings"}, layer(0, latent("mlp_hidden")), layer(1, latent("experts"))});
        CHECK(heard_by("tiny_deepseek_v3_f32", true) == deepseek);
        CHECK(heard_by("tiny_deepseek_v3_f32", false) == deepseek);
        // Qwen3-Next: Gated DeltaNet layers (0, 2) between attention heads (1, 3); experts but in layer 2 (mlp_only_layers)
        const auto qwen = [](const char* attention, const char* mlp) {
            return std::vector<const char*>{"norm_1", attention, "attention", "residual_1", "norm_2", mlp, "mlp", "residual_2"};
        };
        const std::vector<std::string> next = joined({{"-:embed", "-:embeddings"},
                                                      layer(0, qwen("deltanet", "experts")),
                                                      layer(1, qwen("heads", "experts")),
                                                      layer(2, qwen("deltanet", "mlp_hidden")),
                                                      layer(3, qwen("heads", "experts"))});
        CHECK(heard_by("tiny_qwen3_next", true) == next);
        CHECK(heard_by("tiny_qwen3_next", false) == next);
        // Gemma 4 with per-layer inputs: made after the embeddings, each layer's mixed in after its MLP's norm
        const std::vector<const char*> g4 = {"norm_1", "heads",    "attention",       "attention_norm",  "residual_1",       "norm_2",
                                             "mlp_hidden", "mlp", "mlp_norm", "per_layer_input", "per_layer_gated", "per_layer_output", "residual_2"};
        std::vector<std::vector<std::string>> gemma4 = {{"-:embed", "-:embeddings", "-:per_layer_embed", "-:per_layer_projection", "-:per_layer_inputs"}};
        for (std::size_t l = 0; l < 6; ++l) gemma4.push_back(layer(l, g4));
        CHECK(heard_by("tiny_gemma4", true) == joined(gemma4));
    }

    TEST_CASE("model.every_declared_hook_point_is_heard") {
        std::vector<std::string> all;
        for (const std::string folder : {"tiny_gemma3", "tiny_deepseek_v3_f32", "tiny_qwen3_next", "tiny_gemma4"}) {
            const std::vector<std::string> h = heard_by(folder, true);
            all.insert(all.end(), h.begin(), h.end());
        }
        Every gpt2(true);
        (void)decoder_forward(load_gpt2(test::source_path("tests/data/tiny_gpt2_hf_f32.safetensors"), 4)->weights, {1, 2}, nullptr, &gpt2);
        all.insert(all.end(), gpt2.heard.begin(), gpt2.heard.end());
        for (const HookId id : declared) {
            CAPTURE(id.name());
            CHECK(std::any_of(all.begin(), all.end(), [&](const std::string& h) { return h.substr(h.find(':') + 1) == id.name(); }));
        }
    }
}

namespace {

// Activation patching's points: records each (layer, id) it is offered and replaces one value.
class Patcher : public DecoderTap {
public:
    Patcher(std::size_t layer, HookId id, const Cube* with) : layer_(layer), id_(id), with_(with) {}
    void patch(std::size_t l, HookId id, Cube& value) override {
        offered.push_back(std::to_string(l) + ":" + std::string(id.name()));
        if (with_ && l == layer_ && id == id_) value = *with_;
    }
    void hook(std::size_t l, HookId id, const Hooked& value) override {
        if (with_ && l == layer_ && id == id_) heard = value.get<Cube>();  // the hook hears the patched value
    }
    std::vector<std::string> offered;
    Cube heard;

private:
    std::size_t layer_;
    HookId id_;
    const Cube* with_;
};

}  // namespace

TEST_SUITE("model") {
    TEST_CASE("model.a_tap_patches_the_stream_the_attention_and_the_mlp_in_place") {
        const Model m = load_model(test::source_path("tests/data/models/tiny_llama"));
        const std::vector<std::size_t> ids{1, 2, 3};
        Patcher none(0, hooks::mlp, nullptr);
        const Cube plain = decoder_forward(m->weights, ids, nullptr, &none);
        CHECK(none.offered == std::vector<std::string>{"0:resid_pre", "0:attention", "0:mlp", "1:resid_pre", "1:attention", "1:mlp"});
        CHECK(plain == decoder_forward(m->weights, ids, nullptr, nullptr));  // offered, untouched: the same forward
        const Cube zeros = xt::zeros<float>({std::size_t{1}, ids.size(), m->weights.config.width});
        Patcher mlp(1, hooks::mlp, &zeros);
        const Cube patched = decoder_forward(m->weights, ids, nullptr, &mlp);
        CHECK(mlp.heard == zeros);
        CHECK(patched != plain);
        // the last MLP switched off: the final norm of the stream before it
        struct Residual1 : DecoderTap {
            Cube x;
            void hook(std::size_t l, HookId id, const Hooked& v) override {
                if (l == 1 && id == hooks::residual_1) x = v.get<Cube>();
            }
        } r1;
        (void)decoder_forward(m->weights, ids, nullptr, &r1);
        CHECK(patched == normalise(r1.x, m->weights.final_norm, m->weights.config.norm, m->weights.config.norm_eps));
    }
}
