// llama.cpp's next-token logits for a prompt given as token ids, for tests/bench/gguf_llamacpp.py.
// Built against a llama.cpp tree by that script (not by CMake: the project does not depend on llama.cpp):
//   g++ -O2 -std=c++17 llamacpp_logits.cpp -I LLAMA/include -I LLAMA/ggml/include \
//       -L LLAMA/build/bin -lllama -lggml -lggml-base -Wl,-rpath,LLAMA/build/bin -o llamacpp_logits
// Usage: llamacpp_logits MODEL.gguf ID,ID,... [threads] [OUT.f32]
// Prints one line: "T=<n> vocab=<V> load <s> decode <s>"; with OUT.f32, writes the last position's V logits
// there as little-endian float32 (numpy.fromfile reads them). The KV cache is float32 (llama.cpp's default,
// F16, rounds every key and value to half precision: 1e-3 on the logits of an F32 file).
#include "llama.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

static void quiet(ggml_log_level, const char *, void *) {}

int main(int argc, char ** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: llamacpp_logits MODEL.gguf ID,ID,... [threads] [OUT.f32]\n");
        return 1;
    }
    std::vector<llama_token> ids;
    std::stringstream ss(argv[2]);
    std::string tok;
    while (std::getline(ss, tok, ',')) ids.push_back(std::atoi(tok.c_str()));
    const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    const auto t0 = std::chrono::steady_clock::now();
    llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) { std::fprintf(stderr, "llamacpp_logits: cannot load %s\n", argv[1]); return 1; }
    llama_context_params cp = llama_context_default_params();
    const int n = (int)ids.size() < 512 ? 512 : (int)ids.size();
    cp.n_ctx = n; cp.n_batch = n; cp.n_ubatch = n; cp.n_threads = threads; cp.n_threads_batch = threads;
    cp.type_k = GGML_TYPE_F32; cp.type_v = GGML_TYPE_F32;
    llama_context * ctx = llama_init_from_model(model, cp);
    const auto t1 = std::chrono::steady_clock::now();
    if (llama_decode(ctx, llama_batch_get_one(ids.data(), (int)ids.size()))) {
        std::fprintf(stderr, "llamacpp_logits: decode failed\n");
        return 1;
    }
    const auto t2 = std::chrono::steady_clock::now();
    const float * lg = llama_get_logits_ith(ctx, -1);
    const int V = llama_vocab_n_tokens(llama_model_get_vocab(model));
    if (argc > 4) {
        FILE * f = std::fopen(argv[4], "wb");
        if (!f || std::fwrite(lg, sizeof(float), V, f) != (size_t)V) { std::fprintf(stderr, "llamacpp_logits: cannot write %s\n", argv[4]); return 1; }
        std::fclose(f);
    }
    std::printf("T=%zu vocab=%d load %.4f decode %.4f\n", ids.size(), V,
                std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
