// libFuzzer target: a model folder's JSON, config.json or the shard index. The first byte
// picks which file the rest of the input replaces and in which test folder (Qwen3, Gemma 3,
// OLMo 3, the sharded Llama); the folder is then loaded under a 256 MB budget and, when it
// loads, run on three tokens. Every outcome is a result, an InputError, a UsageError or the
// one-line RuntimeError of a run that overflowed float32: never a crash, a leak, a hang or
// a filesystem_error.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "attnwalk/errors.hpp"
#include "attnwalk/lessons/lessons.hpp"
#include "attnwalk/model/model.hpp"
#include "scratch.hpp"

namespace {

namespace fs = std::filesystem;

const char* const folders[] = {"tiny_qwen3", "tiny_gemma3", "tiny_olmo3", "tiny_llama"};

// A copy of each test folder, made once: its files linked, config.json and the index copied
// so that an input can replace them.
std::string folder_for(std::size_t k) {
    static std::string made[4];
    if (!made[k].empty()) return made[k];
    const fs::path source = fs::path(ATTNWALK_SOURCE_DIR) / "tests" / "data" / "models" / folders[k];
    const fs::path dir = fs::temp_directory_path() / ("attnwalk_fuzz_folder_" + std::to_string(::getpid()) + "_" + folders[k]);
    fs::create_directories(dir);
    for (const auto& entry : fs::directory_iterator(source)) {
        const fs::path to = dir / entry.path().filename();
        fs::remove(to);
        fs::create_symlink(entry.path(), to);
    }
    made[k] = dir.string();
    fuzz::remove_at_exit(made[k]);
    return made[k];
}

void write(const fs::path& path, const std::uint8_t* data, std::size_t size) {
    fs::remove(path);
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
        if (size) std::fwrite(data, 1, size, f);
        std::fclose(f);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const bool index = data[0] & 1;  // the shard index exists only in the Llama folder
    const std::size_t k = index ? 3 : (data[0] >> 1) % 4;
    const fs::path dir = folder_for(k);
    const fs::path source = fs::path(ATTNWALK_SOURCE_DIR) / "tests" / "data" / "models" / folders[k];
    const char* replaced = index ? "model.safetensors.index.json" : "config.json";
    write(dir / replaced, data + 1, size - 1);
    try {
        const attnwalk::Model m = attnwalk::load_model(dir.string(), 256.0 * 1024 * 1024);
        attnwalk::ModelSpec spec;
        (void)attnwalk::walk_model(m, {1, 2, 3}, {"a", "b", "c"}, spec, {});
    } catch (const attnwalk::InputError&) {
    } catch (const attnwalk::UsageError&) {
    } catch (const attnwalk::RuntimeError&) {
    }
    // the other file back as it was, for the next input
    const char* other = index ? "config.json" : "model.safetensors.index.json";
    if (fs::exists(source / other)) {
        fs::remove(dir / other);
        fs::create_symlink(source / other, dir / other);
    }
    return 0;
}
