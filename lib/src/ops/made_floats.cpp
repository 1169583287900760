#include "attnwalk/ops/made_floats.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "attnwalk/ops/huge_pages.hpp"

namespace attnwalk {

namespace {

// `count` floats in memory of their own, handed back to the system when the last pointer
// goes (a heap would keep the pages of a tensor given back, and a budget would not bound it).
std::shared_ptr<float> fresh_floats(std::size_t count) {
    const std::size_t bytes = std::max<std::size_t>(count, 1) * sizeof(float);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    advise_huge_pages(p, bytes);
    return std::shared_ptr<float>(static_cast<float*>(p), [bytes](float* q) { ::munmap(q, bytes); });
}

}  // namespace

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
    // Room first: the floats used most recently that nobody is using now are given back until
    // these fit. A forward reads the layers in order and the next one runs through them again
    // (a generated token, a patched run): what was used longest ago is what comes next, and
    // keeping it keeps the first layers held from one pass to the next (giving back the
    // oldest would make every tensor again on every pass).
    const double bytes = 4.0 * static_cast<double>(count_);
    while (s.stats.held + bytes > cache_->capacity_) {
        const MadeFloats* newest = nullptr;
        for (const MadeFloats* m : s.members)
            if (m->held_ && m->held_.use_count() == 1 && (!newest || m->last_used_ > newest->last_used_)) newest = m;
        if (!newest) break;  // the rest are in use: over the budget for as long as they are
        newest->held_.reset();
        s.stats.held -= 4.0 * static_cast<double>(newest->count_);
        ++s.stats.given_back;
    }
    std::shared_ptr<float> floats = fresh_floats(count_);
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
    if (make_row_ && n == length_ && first == row * length_) {  // a whole row (an embedding's): made alone
        make_row_(row, out);
        return;
    }
    const std::shared_ptr<const float> all = get();
    std::memcpy(out, all.get() + first, n * sizeof(float));
}

}  // namespace attnwalk
