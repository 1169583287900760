#include "attnwalk/ops/made_floats.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

namespace attnwalk {

struct MadeCache::State {
    std::mutex lock;
    std::vector<const MadeFloats*> members;
    unsigned long long clock = 0;
    Stats stats;
};

MadeCache::MadeCache(double capacity) : capacity_(capacity), state_(std::make_shared<State>()) {}

MadeCache::Stats MadeCache::stats() const {
    std::lock_guard<std::mutex> hold(state_->lock);
    return state_->stats;
}

MadeFloats::MadeFloats(std::size_t count, std::size_t length, Make make, MakeRow make_row, std::shared_ptr<MadeCache> cache)
    : count_(count), length_(std::max<std::size_t>(length, 1)), make_(std::move(make)), make_row_(std::move(make_row)), cache_(std::move(cache)) {
    std::lock_guard<std::mutex> hold(cache_->state_->lock);
    cache_->state_->members.push_back(this);
}

MadeFloats::~MadeFloats() {
    MadeCache::State& s = *cache_->state_;
    std::lock_guard<std::mutex> hold(s.lock);
    s.members.erase(std::remove(s.members.begin(), s.members.end(), this), s.members.end());
    if (held_) s.stats.held -= 4.0 * static_cast<double>(count_);
}

std::shared_ptr<const float> MadeFloats::get() const {
    MadeCache::State& s = *cache_->state_;
    std::lock_guard<std::mutex> hold(s.lock);
    last_used_ = ++s.clock;
    if (held_) return held_;
    // room first: the floats used longest ago that nobody is using now are given back until these fit
    const double bytes = 4.0 * static_cast<double>(count_);
    while (s.stats.held + bytes > cache_->capacity_) {
        const MadeFloats* oldest = nullptr;
        for (const MadeFloats* m : s.members)
            if (m->held_ && m->held_.use_count() == 1 && (!oldest || m->last_used_ < oldest->last_used_)) oldest = m;
        if (!oldest) break;  // the rest are in use: over the budget for as long as they are
        oldest->held_.reset();
        s.stats.held -= 4.0 * static_cast<double>(oldest->count_);
        ++s.stats.given_back;
    }
    std::shared_ptr<float> floats(new float[std::max<std::size_t>(count_, 1)], std::default_delete<float[]>());
    make_(floats.get());
    held_ = std::move(floats);
    s.stats.held += bytes;
    s.stats.peak = std::max(s.stats.peak, s.stats.held);
    ++s.stats.made;
    return held_;
}

void MadeFloats::read(std::size_t first, std::size_t n, float* out) const {
    if (n == 0) return;
    const std::size_t row = first / length_;
    {
        std::lock_guard<std::mutex> hold(cache_->state_->lock);
        if (held_) {
            std::memcpy(out, held_.get() + first, n * sizeof(float));
            return;
        }
    }
    if (make_row_ && (first + n - 1) / length_ == row) {
        std::vector<float> floats(length_);
        make_row_(row, floats.data());
        std::memcpy(out, floats.data() + (first - row * length_), n * sizeof(float));
        return;
    }
    const std::shared_ptr<const float> all = get();
    std::memcpy(out, all.get() + first, n * sizeof(float));
}

}  // namespace attnwalk
