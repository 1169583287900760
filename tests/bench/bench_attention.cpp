// Benchmarks (Google Benchmark): the machine's own sgemm throughput, multi-head attention
// at model size through the library (the path `attnwalk mha --summary` takes), loading
// embeddings JSON and writing the --json trace; with ATTNWALK_BENCH_MODEL set, a real
// checkpoint's forward, warm, as llama-bench times one.
//   cmake --build build --target bench     (builds and runs; see docs/performance.md)
#include <benchmark/benchmark.h>

#include <chrono>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>
#include <vector>

#include "attnwalk/ops/blocked_attention.hpp"
#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/moe.hpp"
#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/ops/rng.hpp"
#include "attnwalk/lessons/lessons.hpp"
#include "attnwalk/model/decoder.hpp"
#include "attnwalk/model/model.hpp"
#include "cli.hpp"
#include "render/render_json.hpp"

namespace {

std::vector<float> random_values(std::size_t n, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = normal(gen);
    return v;
}

// The rates a benchmark reports: `bytes` and `flops` done once per iteration.
void report_rates(benchmark::State& state, double bytes, double flops) {
    const double n = static_cast<double>(state.iterations());
    if (bytes > 0) state.counters["GB/s"] = benchmark::Counter(bytes * n, benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
    state.counters["GFLOP/s"] = benchmark::Counter(flops * n, benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// C = A·B, m×k times k×n: what one core pair of this machine does at best.
void BM_sgemm(benchmark::State& state) {
    const auto m = static_cast<std::size_t>(state.range(0)), n = static_cast<std::size_t>(state.range(1)),
               k = static_cast<std::size_t>(state.range(2));
    const auto a = random_values(m * k, 1), b = random_values(k * n, 2);
    std::vector<float> c(m * n);
    for (auto _ : state) {
        attnwalk::sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
        benchmark::DoNotOptimize(c.data());
    }
    report_rates(state, 0.0, 2.0 * static_cast<double>(m * n * k));
}
BENCHMARK(BM_sgemm)->Args({2048, 2048, 2048})->Args({2048, 768, 768})->Unit(benchmark::kMillisecond)->UseRealTime();

// The memory limit's rate: 1 GiB copied, each core its share, as --timing's memcpy (ops/
// work.cpp) but past every cache many times over. GB/s counts the bytes copied once.
void BM_memcpy(benchmark::State& state) {
    const std::size_t bytes = std::size_t{1} << 30;
    std::vector<char> from(bytes, 1), to(bytes, 0);  // touched: no page faults in the copies
    for (auto _ : state) {
        attnwalk::on_every_core([&](std::size_t worker, std::size_t workers) {
            const auto [begin, end] = attnwalk::worker_share(bytes, worker, workers, 4096);
            if (end > begin) std::memcpy(to.data() + begin, from.data() + begin, end - begin);
        });
        benchmark::DoNotOptimize(to.data());
    }
    report_rates(state, static_cast<double>(bytes), 0.0);
}
BENCHMARK(BM_memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

// A few rows through a float32 layer in GPT-2's layout, x·W with W [d_in × d_out]: the MLP's
// c_fc (768 × 3072) and c_proj (3072 × 768) for a short prompt (rows 10) and a generated
// token (1), and Llama-3.2-1B's gate (2048 × 8192) at 128 and 512 rows: what sgemm reaches on
// float32 weights of that shape, beside BM_bf16_layer. Eight copies of W are taken in turn
// (75 MiB for GPT-2's, 512 MiB for Llama's: more than every cache here), so the weights come
// from memory as in a forward. GB/s counts the weights read once a product.
void BM_f32_xw_layer(benchmark::State& state) {
    const std::size_t rows = static_cast<std::size_t>(state.range(0)), d_in = static_cast<std::size_t>(state.range(1)),
                      d_out = static_cast<std::size_t>(state.range(2)), copies = 8;
    const auto w = random_values(copies * d_in * d_out, 3);
    const auto x = random_values(rows * d_in, 4);
    std::vector<float> y(rows * d_out);
    std::size_t turn = 0;
    for (auto _ : state) {
        attnwalk::sgemm(false, false, rows, d_out, d_in, 1.0f, x.data(), d_in, w.data() + turn * d_in * d_out, d_out, 0.0f, y.data(), d_out);
        benchmark::DoNotOptimize(y.data());
        turn = (turn + 1) % copies;
    }
    report_rates(state, 4.0 * static_cast<double>(d_in * d_out), 2.0 * static_cast<double>(rows * d_in * d_out));
}
BENCHMARK(BM_f32_xw_layer)
    ->Args({10, 768, 3072})
    ->Args({10, 3072, 768})
    ->Args({1, 768, 3072})
    ->Args({16, 768, 3072})
    ->Args({128, 2048, 8192})
    ->Args({512, 2048, 8192})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A few rows through a BF16 layer in nn.Linear's layout, [d_out × d_in], args rows, d_in,
// d_out: Llama-3.2-1B's gate projection (2048 → 8192) for a generated token (rows 1), short
// prompts (10, 32), the register kernel's limit (128) and past it (129 and 512: the widened
// blocks and sgemm, where OpenBLAS has AVX-512 kernels; the register kernel where not); at 128 rows also its down (8192 → 2048), query (2048 → 2048) and key
// (2048 → 512) projections. Copies of W (256 MiB in all, more than every cache here) are
// taken in turn, so the weights come from memory as in a forward. GB/s counts the weights
// read once per product.
void BM_bf16_layer(benchmark::State& state) {
    const std::size_t rows = static_cast<std::size_t>(state.range(0)), d_in = static_cast<std::size_t>(state.range(1)),
                      d_out = static_cast<std::size_t>(state.range(2));
    const std::size_t n = d_out * d_in, copies = std::max<std::size_t>(1, (std::size_t{256} << 20) / (2 * n));
    const auto values = random_values(n, 3);
    std::vector<std::uint16_t> w(copies * n);
    for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t bits;
        std::memcpy(&bits, &values[i], sizeof bits);
        w[i] = static_cast<std::uint16_t>(bits >> 16);
    }
    for (std::size_t c = 1; c < copies; ++c) std::copy(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(n), w.begin() + static_cast<std::ptrdiff_t>(c * n));
    attnwalk::Cube x = attnwalk::Cube::from_shape({1, rows, d_in});
    const auto xv = random_values(rows * d_in, 4);
    std::copy(xv.begin(), xv.end(), x.begin());
    std::size_t turn = 0;
    for (auto _ : state) {
        const attnwalk::Linear layer = attnwalk::external_linear16(w.data() + turn * n, true, d_in, d_out, d_in, true, nullptr);
        attnwalk::Cube y = attnwalk::project(x, layer);
        benchmark::DoNotOptimize(y.data());
        turn = (turn + 1) % copies;
    }
    report_rates(state, 2.0 * static_cast<double>(d_in * d_out), 2.0 * static_cast<double>(rows * d_in * d_out));
}
BENCHMARK(BM_bf16_layer)
    ->Args({1, 2048, 8192})
    ->Args({10, 2048, 8192})
    ->Args({32, 2048, 8192})
    ->Args({128, 2048, 8192})
    ->Args({129, 2048, 8192})
    ->Args({512, 2048, 8192})
    ->Args({512, 8192, 2048})
    ->Args({512, 2048, 2048})
    ->Args({128, 8192, 2048})
    ->Args({128, 2048, 2048})
    ->Args({128, 2048, 512})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The fused, causal MultiHeadAttention forward pass: d_in = d_out = 768, 12 heads.
// FLOPs counted as the issue does: 4·T·d² + 4·T²·d.
void BM_mha(benchmark::State& state) {
    const auto T = static_cast<std::size_t>(state.range(0));
    const std::size_t d = 768, H = 12;
    attnwalk::Generator gen(123);
    const attnwalk::Weights w =
        attnwalk::draw_weights(gen, {d, d, H, attnwalk::HeadLayout::fused, true}, attnwalk::Init::linear, false);
    attnwalk::Cube x = attnwalk::Cube::from_shape({1, T, d});
    const auto values = random_values(T * d, 3);
    std::copy(values.begin(), values.end(), x.begin());
    double projections = 0, scores = 0, softmax = 0, weighted = 0, all = 0;  // the forward's own split of its wall time
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto r = attnwalk::fast::blocked_attention(x, *w, true);
        benchmark::DoNotOptimize(r.output.data());
        all += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        projections += r.seconds.query + r.seconds.key + r.seconds.value + r.seconds.output;
        scores += r.seconds.scores;
        softmax += r.seconds.softmax;
        weighted += r.seconds.values;
    }
    const double Td = static_cast<double>(T), dd = static_cast<double>(d), n = static_cast<double>(state.iterations());
    report_rates(state, 0.0, 4.0 * Td * dd * dd + 4.0 * Td * Td * dd);
    // milliseconds per forward: the four projections, the heads' three phases, and the rest
    // (statistics, fresh pages, the pool's start and wait)
    state.counters["proj_ms"] = 1e3 * projections / n;
    state.counters["scores_ms"] = 1e3 * scores / n;
    state.counters["softmax_ms"] = 1e3 * softmax / n;
    state.counters["values_ms"] = 1e3 * weighted / n;
    state.counters["rest_ms"] = 1e3 * (all - projections - scores - softmax - weighted) / n;
}
BENCHMARK(BM_mha)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

// One MXFP4 expert projection of gpt-oss-20b, gate_up (2880 → 5760), for n tokens routed to
// it (args n): the rows decoded once each, every token's dot product with them. Random
// codes and scales near 2^0; copies taken in turn (256 MiB in all), as the experts of a
// layer come from memory. GB/s counts the MXFP4 bytes read once a product.
void BM_mxfp4_expert(benchmark::State& state) {
    const std::size_t n = static_cast<std::size_t>(state.range(0)), rows = 5760, cols = 2880;
    const std::size_t block_bytes = rows * cols / 2, scale_bytes = rows * cols / 32;
    const std::size_t copies = std::max<std::size_t>(1, (std::size_t{256} << 20) / (block_bytes + scale_bytes));
    std::vector<std::uint8_t> blocks(copies * block_bytes), scales(copies * scale_bytes);
    std::mt19937 gen(5);
    for (auto& b : blocks) b = static_cast<std::uint8_t>(gen());
    for (auto& s : scales) s = static_cast<std::uint8_t>(124 + gen() % 6);
    const auto x = random_values(n * cols, 4);
    std::vector<float> y(n * rows);
    std::size_t turn = 0;
    for (auto _ : state) {
        attnwalk::ExpertMatrix m;
        m.mxfp4 = attnwalk::Mxfp4Rows{blocks.data() + turn * block_bytes, scales.data() + turn * scale_bytes, rows, cols, nullptr};
        m.apply(x.data(), n, y.data(), rows);
        benchmark::DoNotOptimize(y.data());
        turn = (turn + 1) % copies;
    }
    report_rates(state, static_cast<double>(block_bytes + scale_bytes), 2.0 * static_cast<double>(n * rows * cols));
}
BENCHMARK(BM_mxfp4_expert)->Arg(1)->Arg(4)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

// Loading embeddings JSON: the text of a T×768 file, parsed (MB/s of JSON text).
void BM_parse_embeddings(benchmark::State& state) {
    const auto T = static_cast<std::size_t>(state.range(0));
    const auto values = random_values(T * 768, 4);
    std::string text = "{\"embeddings\": [";
    char buf[32];
    for (std::size_t t = 0; t < T; ++t) {
        text += t ? ",[" : "[";
        for (std::size_t c = 0; c < 768; ++c) {
            std::snprintf(buf, sizeof buf, "%s%.6g", c ? "," : "", static_cast<double>(values[t * 768 + c]));
            text += buf;
        }
        text += "]";
    }
    text += "]}";
    for (auto _ : state) benchmark::DoNotOptimize(attnwalk::parse_embeddings(text, "bench").x.data.data());
    state.SetBytesProcessed(static_cast<std::int64_t>(text.size()) * static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_parse_embeddings)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

// Writing the --json trace of `context` on T×768 embeddings (MB/s of JSON written).
void BM_write_context_json(benchmark::State& state) {
    const auto T = static_cast<std::size_t>(state.range(0));
    attnwalk::Embeddings input;
    input.source = "bench";
    input.x.shape = {1, T, 768};
    input.x.data = random_values(T * 768, 5);
    for (auto& v : input.x.data) v *= 0.05f;
    for (std::size_t t = 0; t < T; ++t) input.tokens.push_back("t" + std::to_string(t));
    const attnwalk::Trace trace = attnwalk::walk_context(input, nullptr, {}, {});
    // A sink that counts and discards, so that only the writer is measured.
    struct Counter : std::streambuf {
        std::size_t bytes = 0;
        std::streamsize xsputn(const char*, std::streamsize n) override {
            bytes += static_cast<std::size_t>(n);
            return n;
        }
        int overflow(int c) override {
            ++bytes;
            return c;
        }
    };
    std::size_t bytes = 0;
    for (auto _ : state) {
        Counter sink;
        std::ostream out(&sink);
        attnwalk::app::render_json(trace, out);
        bytes = sink.bytes;
        benchmark::DoNotOptimize(bytes);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_write_context_json)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

// A checkpoint's forward as llama-bench times one (`-p T -n 0`): the model read once, a
// forward of the same T ids run once untimed (so every page of the weights has been read),
// then each iteration timed: every layer on the blocked path (no layer shown, no trace),
// the last position's logits. T ids drawn below the vocabulary's size (seed 1).
// ATTNWALK_BENCH_MODEL names a GPT-2 .safetensors file or a Hugging Face folder; without it
// the benchmark is not registered. tests/bench/compare_llamacpp.py --bench runs it. With
// ATTNWALK_BENCH_NO_MMAP=1 the weights are moved into memory first, as `model --no-mmap`
// does (hold_weights_in_memory), and the benchmark is named BM_model_forward_no_mmap.
void BM_model_forward(benchmark::State& state, const attnwalk::Model& model) {
    const auto T = static_cast<std::size_t>(state.range(0));
    const attnwalk::DecoderWeights& w = model->weights;
    std::mt19937 gen(1);
    std::vector<std::size_t> ids(T);
    for (auto& id : ids) id = gen() % w.config.vocab;
    const auto forward = [&] {
        const attnwalk::Cube x = attnwalk::decoder_forward(w, ids, nullptr, nullptr);
        return attnwalk::decoder_logits(w, x, T - 1);
    };
    benchmark::DoNotOptimize(forward().data());  // the warm-up
    for (auto _ : state) benchmark::DoNotOptimize(forward().data());
}

const bool model_registered = [] {
    const char* path = std::getenv("ATTNWALK_BENCH_MODEL");
    if (!path || !*path) return false;
    attnwalk::app::keep_freed_memory();  // main()'s allocator settings (not its huge-page advice: a warm forward reuses its pages)
    std::error_code ec;
    attnwalk::Model model;
    try {
        model = std::filesystem::is_directory(path, ec) ? attnwalk::load_model(path) : attnwalk::load_gpt2(path);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ATTNWALK_BENCH_MODEL=%s: %s\n", path, e.what());
        return false;
    }
    const char* no_mmap = std::getenv("ATTNWALK_BENCH_NO_MMAP");
    const bool held = no_mmap && std::string(no_mmap) == "1";
    if (held) attnwalk::hold_weights_in_memory(*model);
    const char* lengths = std::getenv("ATTNWALK_BENCH_TOKENS");  // e.g. "10,128,512"
    std::vector<long> tokens;
    for (const char* p = lengths && *lengths ? lengths : "10,128,512,1024"; *p;) {
        char* end = nullptr;
        const long t = std::strtol(p, &end, 10);
        if (end == p) {
            ++p;  // not a number: skipped
            continue;
        }
        if (t > 0 && static_cast<std::size_t>(t) <= model->weights.config.context) tokens.push_back(t);
        p = *end == ',' ? end + 1 : end;
    }
    if (tokens.empty()) {
        std::fprintf(stderr, "ATTNWALK_BENCH_TOKENS: no length from 1 to the model's context %zu\n", model->weights.config.context);
        return false;
    }
    auto* b = benchmark::RegisterBenchmark(held ? "BM_model_forward_no_mmap" : "BM_model_forward", BM_model_forward, model);
    for (long t : tokens) b->Arg(t);
    b->Unit(benchmark::kMillisecond)->UseRealTime();
    return true;
}();

}  // namespace

BENCHMARK_MAIN();
