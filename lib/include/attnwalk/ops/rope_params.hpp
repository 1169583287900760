// How a layer rotates its queries and keys (RoPE): the base, a config's rescaling, the
// rotary part of a head, the pairs' layout. Light (no xtensor): the decoder's LayerSpec
// names it without including the attention that computes it (ops/attention.hpp: rope_tables,
// apply_rope).
#pragma once

#include <cstddef>
#include <optional>

namespace attnwalk {

// RoPE's frequencies θ_i = base^(−2i/d), rescaled as a model's config may say: `linear`
// divides them all by the factor; `llama3` (Llama 3.1/3.2) divides the low frequencies
// (wavelength above original_context / low_freq_factor) by the factor, keeps the high
// ones (below original_context / high_freq_factor) and blends in between; `yarn` blends
// θ_i and θ_i / factor along a ramp of the dimensions between those that turn beta_fast
// and beta_slow times over original_context, and multiplies cos and sin by
// attention_factor (default 0.1·ln(factor) + 1), as Hugging Face's YaRN does.
struct RopeScaling {
    enum class Kind { none, linear, llama3, yarn };
    Kind kind = Kind::none;
    double factor = 1.0;
    double low_freq_factor = 1.0, high_freq_factor = 4.0, original_context = 8192.0;  // llama3 (original_context: yarn too)
    double beta_fast = 32.0, beta_slow = 1.0;                                          // yarn
    std::optional<double> attention_factor;                                            // yarn
    bool truncate = true;                                                               // yarn: the ramp's ends rounded out
};
struct RopeParams {
    double base = 10000.0;
    RopeScaling scaling;
    std::size_t rotary_dim = 0;  // partial rotary: only the first rotary_dim features of a head turn (0: all d_h)
    bool interleaved = false;    // the pairs are (0,1), (2,3), … (Cohere's layout), not (i, i + d/2)
    // "proportional" RoPE (Gemma 4's full layers): the frequencies base^(−2i/d) over the whole
    // head, the first ⌊proportion·d/2⌋ of them kept and the others 0 (their pairs do not turn).
    // 0: every frequency turns (or rotary_dim's partial rotary).
    double proportion = 0.0;
};

}  // namespace attnwalk
