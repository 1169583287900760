// The keys and values of one attention layer kept across decoding steps, as the
// textbook's bonus KV-cache code keeps them: appended along the token axis, and, with a
// sliding window, only the last W kept. Or as StreamingLLM's StartRecentKVCache keeps
// them: the first `start` tokens and the most recent ones, the tokens between evicted
// (make_room); the caller then stores the keys before RoPE and rotates them at their
// place in the cache (model/blocks/heads.cpp).
//
//   keys, values (B,G,L,d_h): L = the tokens kept, the oldest at position first()
#pragma once

#include <cstddef>
#include <vector>

#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

class KvCache {
public:
    explicit KvCache(std::size_t window = 0) : window_(window) {}  // 0: keeps every token
    // StreamingLLM's cache: at most start + recent tokens, the first `start` always among them.
    static KvCache start_recent(std::size_t start, std::size_t recent);
    bool streaming() const { return recent_ > 0; }
    // Before `coming` new tokens (streaming): evicts the tokens after the first `start` but
    // the last recent − coming, when the cache would hold more than start + recent. As
    // StartRecentKVCache.evict_for_space.
    void make_room(std::size_t coming);
    // The positions (in the whole sequence) of the tokens kept, in the cache's order.
    std::vector<std::size_t> positions() const;

    // The new tokens' keys and values (B,G,t,d_h); the oldest leave beyond the window.
    void append(const Hyper& k, const Hyper& v);

    const Hyper& keys() const { return keys_; }
    const Hyper& values() const { return values_; }
    std::size_t length() const { return keys_.dimension() == 4 ? keys_.shape(2) : 0; }  // L
    std::size_t seen() const { return seen_; }             // tokens appended in all
    std::size_t first() const { return seen_ - length(); }  // the position of the oldest kept
    double bytes(std::size_t bytes_per_value) const;

private:
    std::size_t window_ = 0, seen_ = 0;
    std::size_t start_ = 0, recent_ = 0;  // streaming: recent_ > 0
    std::vector<std::size_t> evicted_;     // streaming: the positions evicted so far, in order (a run after the first start_)
    Hyper keys_, values_;
};

// The bytes of the keys and values of `tokens` tokens: B·T·G·d_h·2·layers·bytes.
double kv_cache_bytes(std::size_t batch, std::size_t tokens, std::size_t kv_heads, std::size_t head_size, std::size_t layers,
                      std::size_t bytes_per_value);

}  // namespace attnwalk
