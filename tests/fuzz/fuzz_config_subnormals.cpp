// libFuzzer target: config.json fields holding subnormal numbers (and their neighbours).
// The first byte picks a test folder (Qwen3, Gemma 3, OLMo 3, DeepSeek-V3, Qwen3-Next) and
// how the number is written; the next two pick a field: one of the folder's own numbers
// (nested ones too) or an optional field the families read; the rest make the number. The
// folder is then loaded under a 256 MB budget and, when it loads, run on three tokens. A
// subnormal is a number: every outcome is a result, or an InputError, UsageError or
// RuntimeError whose message is not the bare name of a C++ function ("stod") — never a
// crash, a leak or a hang.
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/lessons/lessons.hpp"
#include "attnwalk/model/model.hpp"
#include "scratch.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* const folders[] = {"tiny_qwen3", "tiny_gemma3", "tiny_olmo3", "tiny_deepseek_v3_f32", "tiny_qwen3_next"};
constexpr std::size_t n_folders = sizeof folders / sizeof folders[0];

// Fields a family reads that the test folders may not give.
const char* const optional_fields[] = {
    "partial_rotary_factor", "attention_factor", "rope_local_base_freq", "query_pre_attn_scalar", "final_logit_softcapping",
    "attn_logit_softcapping", "routed_scaling_factor", "logit_scale", "layer_norm_eps", "layer_norm_epsilon", "sliding_window",
    "rope_scaling.factor", "rope_scaling.mscale", "rope_scaling.mscale_all_dim", "rope_scaling.attention_factor",
    "rope_scaling.beta_fast", "rope_scaling.beta_slow", "rope_scaling.original_max_position_embeddings", "rope_scaling.low_freq_factor",
    "rope_scaling.high_freq_factor", "rope_parameters.rope_theta", "rope_parameters.partial_rotary_factor"};

struct Folder {
    fs::path dir;
    json config;
    std::vector<json::json_pointer> numbers;  // every number of the config, nested ones too
};

void numbers_in(const json& v, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
    if (v.is_number()) out.push_back(at);
    else if (v.is_object())
        for (auto it = v.begin(); it != v.end(); ++it) numbers_in(it.value(), at / it.key(), out);
    else if (v.is_array())
        for (std::size_t i = 0; i < v.size(); ++i) numbers_in(v[i], at / i, out);
}

// A copy of each test folder, made once: its files linked, config.json written per input.
Folder& folder_for(std::size_t k) {
    static Folder made[n_folders];
    Folder& f = made[k];
    if (!f.dir.empty()) return f;
    const fs::path source = fs::path(ATTNWALK_SOURCE_DIR) / "tests" / "data" / "models" / folders[k];
    f.dir = fs::temp_directory_path() / ("attnwalk_fuzz_subnormal_" + std::to_string(::getpid()) + "_" + folders[k]);
    fs::create_directories(f.dir);
    for (const auto& entry : fs::directory_iterator(source)) {
        const fs::path to = f.dir / entry.path().filename();
        fs::remove(to);
        if (entry.path().filename() != "config.json") fs::create_symlink(entry.path(), to);
    }
    std::ifstream in(source / "config.json");
    f.config = json::parse(in);
    numbers_in(f.config, json::json_pointer(), f.numbers);
    fuzz::remove_at_exit(f.dir.string());
    return f;
}

std::uint64_t bits_from(const std::uint8_t* data, std::size_t size) {
    std::uint64_t b = 0;
    for (std::size_t i = 0; i < 8 && i < size; ++i) b |= static_cast<std::uint64_t>(data[i]) << (8 * i);
    return b;
}

// The number's text: a double with its exponent bits cleared (a subnormal, or ±0); one of
// float32's subnormals; decimal digits from the input at an exponent of −300 … −345; or the
// input's own bytes (up to 40), for the reader to take or refuse.
std::string number_text(unsigned how, const std::uint8_t* data, std::size_t size) {
    char buf[64];
    switch (how % 4) {
        case 0: {
            std::uint64_t b = bits_from(data, size) & ~(std::uint64_t{0x7FF} << 52);
            double d;
            std::memcpy(&d, &b, sizeof d);
            std::snprintf(buf, sizeof buf, "%.17g", d);
            return buf;
        }
        case 1: {
            std::uint32_t b = static_cast<std::uint32_t>(bits_from(data, size)) & ~(std::uint32_t{0xFF} << 23);
            float f;
            std::memcpy(&f, &b, sizeof f);
            std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
            return buf;
        }
        case 2: {
            std::string digits;
            for (std::size_t i = 0; i < size && digits.size() < 24; ++i) digits += static_cast<char>('0' + data[i] % 10);
            if (digits.empty()) digits = "1";
            const int exponent = -300 - static_cast<int>(size ? data[0] % 46 : 0);
            return (size && (data[0] & 0x80) ? "-" : "") + digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "") + "e" +
                   std::to_string(exponent);
        }
        default:
            return std::string(reinterpret_cast<const char*>(data), std::min<std::size_t>(size, 40));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 3) return 0;
    Folder& f = folder_for(data[0] % n_folders);
    const unsigned how = data[0] / n_folders;
    const std::size_t pick = (static_cast<std::size_t>(data[1]) << 8 | data[2]) % (f.numbers.size() + std::size(optional_fields));
    json config = f.config;
    json::json_pointer at;
    if (pick < f.numbers.size()) {
        at = f.numbers[pick];
    } else {
        std::string dotted = optional_fields[pick - f.numbers.size()];
        for (std::size_t dot; (dot = dotted.find('.')) != std::string::npos; dotted.erase(0, dot + 1)) {
            at /= dotted.substr(0, dot);
            if (!config.contains(at) || !config[at].is_object()) config[at] = json::object();
        }
        at /= dotted;
    }
    const std::string placeholder = "@@attnwalk-fuzz@@";
    config[at] = (how / 4) % 2 ? json::array({placeholder}) : json(placeholder);  // the number, or a list of it
    std::string text = config.dump();
    const std::string number = number_text(how, data + 3, size - 3);
    text.replace(text.find('"' + placeholder + '"'), placeholder.size() + 2, number);
    {
        std::ofstream out(f.dir / "config.json", std::ios::binary | std::ios::trunc);
        out << text;
    }
    const auto check = [](const std::exception& e) {
        const std::string what = e.what();
        if (what.empty() || what == "stod" || what.find("stod") != std::string::npos) __builtin_trap();
    };
    try {
        const attnwalk::Model m = attnwalk::load_model(f.dir.string(), 256.0 * 1024 * 1024);
        attnwalk::ModelSpec spec;
        (void)attnwalk::walk_model(m, {1, 2, 3}, {"a", "b", "c"}, spec, {});
    } catch (const attnwalk::InputError& e) {
        check(e);
    } catch (const attnwalk::UsageError& e) {
        check(e);
    } catch (const attnwalk::RuntimeError& e) {
        check(e);
    }
    return 0;
}
