// DeepSeek-V3.2 (DeepSeek-V3.2-Exp and after): DeepSeek-V3's latent attention and mixture of
// experts, plus DeepSeek Sparse Attention's lightning indexer in every layer (the latent
// kind's indexer: wq_b on the query latent, wk and its LayerNorm k_norm, weights_proj; each
// query keeps the index_topk keys it scores highest). Always through the query latent, its
// rotary pairs always interleaved (DeepseekV32Config has no rope_interleave).
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& deepseek_v3_family();

const FamilySpec& deepseek_v32_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = deepseek_v3_family();
        f.model_type = "deepseek_v32";
        f.models = "DeepSeek-V3.2";
        f.latent.interleave.clear();
        f.latent.indexer = "self_attn.indexer";
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
