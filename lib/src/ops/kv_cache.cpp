#include "attnwalk/ops/kv_cache.hpp"

#include <algorithm>

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

KvCache KvCache::start_recent(std::size_t start, std::size_t recent) {
    KvCache c;
    c.start_ = start;
    c.recent_ = recent;
    return c;
}

void KvCache::make_room(std::size_t coming) {
    const std::size_t L = length();
    if (!streaming() || L + coming <= start_ + recent_) return;
    const std::size_t head = std::min(start_, L);
    const std::size_t tail = std::min(L - head, recent_ > coming ? recent_ - coming : 0);  // the most recent kept
    const std::size_t from = L - tail;  // [head, from) leaves
    if (from <= head) return;
    const std::vector<std::size_t> before = positions();
    evicted_.insert(evicted_.end(), before.begin() + static_cast<std::ptrdiff_t>(head), before.begin() + static_cast<std::ptrdiff_t>(from));
    const auto keep = [&](const Hyper& t) {
        return Hyper(xt::concatenate(xt::xtuple(xt::view(t, xt::all(), xt::all(), xt::range(0, head), xt::all()),
                                                xt::view(t, xt::all(), xt::all(), xt::range(from, L), xt::all())),
                                     2));
    };
    keys_ = keep(keys_);
    values_ = keep(values_);
}

std::vector<std::size_t> KvCache::positions() const {
    std::vector<std::size_t> kept;
    if (!streaming()) {  // every token, or a window's last length()
        for (std::size_t p = first(); p < seen_; ++p) kept.push_back(p);
        return kept;
    }
    std::size_t e = 0;  // the evicted positions are sorted: walk both
    for (std::size_t p = 0; p < seen_; ++p) {
        if (e < evicted_.size() && evicted_[e] == p) ++e;
        else kept.push_back(p);
    }
    return kept;
}

double KvCache::bytes(std::size_t bytes_per_value) const {
    if (length() == 0) return 0.0;
    // the keys and the values each at their own width (a latent layer: c_KV's r and k_rope's d_rope)
    const double per_token = static_cast<double>(keys_.shape(1) * keys_.shape(3) + values_.shape(1) * values_.shape(3));
    return static_cast<double>(keys_.shape(0)) * static_cast<double>(length()) * per_token * static_cast<double>(bytes_per_value);
}

double kv_cache_bytes(std::size_t batch, std::size_t tokens, std::size_t kv_heads, std::size_t head_size, std::size_t layers,
                      std::size_t bytes_per_value) {
    return static_cast<double>(batch) * static_cast<double>(tokens) * static_cast<double>(kv_heads * head_size) * 2.0 *
           static_cast<double>(layers) * static_cast<double>(bytes_per_value);
}

}  // namespace attnwalk
