// Counted work: the floating-point operations and the operand bytes of the matrix products,
// added up as the products run (sgemm, the 16-bit layers, the attention kernels, the MXFP4
// experts).
// In a timed trace, a step's share of it and the machine's rates measured in the same process
// give the step's limit: the least time this machine could take for that work, at its
// sgemm rate or its memory's copy rate, whichever binds. A step's time over its limit says
// how far from the machine it runs (docs/performance.md).
#pragma once

#include <cstddef>

namespace attnwalk {

struct Work {
    double flop = 0.0;   // floating-point operations: 2 per multiply-add
    double bytes = 0.0;  // the operands each product read and the result it wrote, once each
};

inline Work& operator+=(Work& a, const Work& b) {
    a.flop += b.flop;
    a.bytes += b.bytes;
    return a;
}
inline Work operator-(const Work& a, const Work& b) { return {a.flop - b.flop, a.bytes - b.bytes}; }
inline Work operator*(const Work& a, double k) { return {a.flop * k, a.bytes * k}; }

// The count is the process's, as the pool of cores is: a step's share is the difference of
// two readings, so a trace counts right while one walk runs at a time (as the command line
// runs them); two walks at once on two threads would each see the other's products.

// Adds one product's work to the process's count (any thread).
void count_work(double flop, double bytes);
// The work of a float32 product C[m × n] = A[m × k]·B[k × n]: 2·m·n·k operations, the three
// matrices' bytes (sgemm's count, and an attention kernel's for the same product).
inline Work product_work(std::size_t m, std::size_t n, std::size_t k) {
    const double mm = static_cast<double>(m), nn = static_cast<double>(n), kk = static_cast<double>(k);
    return {2.0 * mm * nn * kk, 4.0 * (mm * kk + kk * nn + mm * nn)};
}
inline void count_work(const Work& w) { count_work(w.flop, w.bytes); }
// The work counted since the process started.
Work work_so_far();
// The work counted since `mark`, which moves to now: a phase's share, as a clock's lap.
inline Work work_since(Work& mark) {
    const Work now = work_so_far(), spent = now - mark;
    mark = now;
    return spent;
}

struct MachineRates {
    double flop_per_second = 0.0;   // sgemm of 2048 × 2048 × 2048 on every core, the best of 2
    double bytes_per_second = 0.0;  // bytes memcpy copies a second on every core (64 MiB, the best of 3): the
                                    // issue's memory limit; a stream that only reads can go faster
};
// Measures both now (0.15-0.35 s here, the first call in a process the most); not counted as
// work. The buffers (48 MiB, then 128 MiB) come and go with the call.
MachineRates measure_machine();

// The least time for `w` at `rates` (0 without rates).
double limit_seconds(const Work& w, const MachineRates& rates);

// A timed trace's steps are set beside the machine when their products counted at least
// this much (30-70 ms of products here): for less, measuring the machine would cost many
// times the walk.
constexpr double limit_least_flop = 10e9;

}  // namespace attnwalk
