#include "attnwalk/ops/kv_cache.hpp"

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

namespace attnwalk {

void KvCache::append(const Hyper& k, const Hyper& v) {
    if (seen_ == 0) {
        keys_ = k;
        values_ = v;
    } else {
        keys_ = xt::concatenate(xt::xtuple(keys_, k), 2);
        values_ = xt::concatenate(xt::xtuple(values_, v), 2);
    }
    seen_ += k.shape(2);
    if (window_ && keys_.shape(2) > window_) {  // the oldest entries leave the window
        const std::size_t drop = keys_.shape(2) - window_;
        keys_ = xt::view(keys_, xt::all(), xt::all(), xt::range(drop, keys_.shape(2)), xt::all());
        values_ = xt::view(values_, xt::all(), xt::all(), xt::range(drop, values_.shape(2)), xt::all());
    }
}

double KvCache::bytes(std::size_t bytes_per_value) const {
    if (length() == 0) return 0.0;
    return kv_cache_bytes(keys_.shape(0), length(), keys_.shape(1), keys_.shape(3), 1, bytes_per_value);
}

double kv_cache_bytes(std::size_t batch, std::size_t tokens, std::size_t kv_heads, std::size_t head_size, std::size_t layers,
                      std::size_t bytes_per_value) {
    return static_cast<double>(batch) * static_cast<double>(tokens) * static_cast<double>(kv_heads * head_size) * 2.0 *
           static_cast<double>(layers) * static_cast<double>(bytes_per_value);
}

}  // namespace attnwalk
