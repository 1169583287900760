#include "attnwalk/ops/work.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>

#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/huge_pages.hpp"

namespace attnwalk {

namespace {

// Whole numbers: the sums stay exact however the threads interleave.
std::atomic<std::uint64_t> flop_count{0}, byte_count{0};
std::atomic<bool> counting{true};  // off while the machine is measured

// n values not yet touched, in huge pages where the kernel gives them: tens of page faults
// where 4 KiB pages took tens of thousands (half a second on this VM, more than the products).
template <class T>
std::unique_ptr<T[]> untouched(std::size_t n) {
    std::unique_ptr<T[]> p(new T[n]);
    advise_huge_pages(p.get(), n * sizeof(T));
    return p;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void count_work(double flop, double bytes) {
    if (!counting.load(std::memory_order_relaxed)) return;
    flop_count.fetch_add(static_cast<std::uint64_t>(flop), std::memory_order_relaxed);
    byte_count.fetch_add(static_cast<std::uint64_t>(bytes), std::memory_order_relaxed);
}

Work work_so_far() {
    return {static_cast<double>(flop_count.load(std::memory_order_relaxed)), static_cast<double>(byte_count.load(std::memory_order_relaxed))};
}

MachineRates measure_machine() {
    struct Pause {  // the measurement's own products are not the trace's work
        Pause() { counting = false; }
        ~Pause() { counting = true; }
        Pause(const Pause&) = delete;
        Pause& operator=(const Pause&) = delete;
    } pause;
    MachineRates rates;
    {
        constexpr std::size_t n = 2048;
        const auto a = untouched<float>(n * n), b = untouched<float>(n * n), c = untouched<float>(n * n);
        std::fill(a.get(), a.get() + n * n, 0.5f);  // any finite values: the rate does not depend on them
        std::fill(b.get(), b.get() + n * n, -0.25f);
        double best = 0.0;
        for (int round = 0; round < 2; ++round) {
            const auto t0 = std::chrono::steady_clock::now();
            sgemm(false, false, n, n, n, 1.0f, a.get(), n, b.get(), n, 0.0f, c.get(), n);
            const double s = seconds_since(t0);
            if (s > 0) best = std::max(best, 2.0 * static_cast<double>(n) * n * n / s);
        }
        rates.flop_per_second = best;
    }
    {
        constexpr std::size_t bytes = std::size_t{64} << 20;  // past the caches (32 MiB of L3 here)
        const auto from = untouched<char>(bytes), to = untouched<char>(bytes);
        std::memset(from.get(), 1, bytes);  // touched: no page faults in the timed copies
        std::memset(to.get(), 0, bytes);
        double best = 0.0;
        for (int round = 0; round < 3; ++round) {
            const auto t0 = std::chrono::steady_clock::now();
            on_every_core([&](std::size_t worker, std::size_t workers) {
                const auto [begin, end] = worker_share(bytes, worker, workers, 4096);
                if (end > begin) std::memcpy(to.get() + begin, from.get() + begin, end - begin);
            });
            const double s = seconds_since(t0);
            if (s > 0) best = std::max(best, static_cast<double>(bytes) / s);
        }
        rates.bytes_per_second = best;
    }
    return rates;
}

double limit_seconds(const Work& w, const MachineRates& rates) {
    if (rates.flop_per_second <= 0 || rates.bytes_per_second <= 0) return 0.0;
    return std::max(w.flop / rates.flop_per_second, w.bytes / rates.bytes_per_second);
}

}  // namespace attnwalk
