// The quant lesson: one block of a GGUF tensor (or a built-in row quantized here) taken
// apart as ggml reads it: its scale(s), Q4_K's 6-bit scales and mins, the codes, and the
// float32 weights rebuilt by the reader's own dequantizer (io/gguf_quants.cpp), written out;
// then the bytes each type spends per weight.
#include "attnwalk/lessons/quant.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/gguf.hpp"
#include "attnwalk/io/json_input.hpp"
#include "attnwalk/lessons/recorder.hpp"
#include "steps.hpp"

namespace attnwalk {

ATTNWALK_LESSON(quant, 240) {
    static const LessonDecl lesson{"quant", "Quantized weights: one block of a GGUF tensor (Q8_0, Q4_0, Q4_K) taken apart and its floats rebuilt.",
        {
            {"quant_bytes", "the block's bytes as the file stores them"},
            {"quant_scales", "the block's half-precision scales (d; Q4_K: d and dmin) as float32"},
            {"quant_sub_scales", "Q4_K: the eight sub-blocks' 6-bit scale and min, unpacked from 12 bytes"},
            {"quant_codes", "each weight's integer code, 32 to a row"},
            {"quant_weights", "the float32 weights rebuilt from the scales and codes, as ggml's dequantize_row_* computes them", headline},
            {"quant_types", "bytes per weight of each type the GGUF reader takes"},
        }};
    return lesson;
}

namespace {

using ull = unsigned long long;

std::string hex4(unsigned v) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%04X", v);
    return buf;
}

GgmlType type_named(const std::string& name) {
    for (GgmlType t : {GgmlType::q8_0, GgmlType::q4_0, GgmlType::q4_k})
        if (name == ggml_type_name(static_cast<std::uint32_t>(t))) return t;
    throw UsageError("the quant lesson takes apart Q8_0, Q4_0 and Q4_K blocks, not " + name);
}

const char* layout_of(GgmlType t) {
    switch (t) {
        case GgmlType::q8_0: return "d (f16, 2 bytes), then 32 codes of one signed byte each: w = q·d";
        case GgmlType::q4_0: return "d (f16, 2 bytes), then 16 bytes: the low nibbles are weights 1–16, the high nibbles 17–32: w = (q − 8)·d";
        default:
            return "d and dmin (f16, 2 bytes each), 12 bytes of 6-bit scales and mins (sub-blocks 1–4: the low 6 bits of bytes 1–4 and "
                   "5–8; 5–8: the low and high nibbles of bytes 9–12 with the top 2 bits of bytes 1–8), then 128 bytes of 4-bit codes "
                   "(32 bytes per pair of sub-blocks: the low nibbles are the first sub-block, the high ones the second): "
                   "w = (d·sc)·q − (dmin·m)";
    }
}

// What each byte of a block holds: a half's low and high byte, a scale byte, the code(s)
// of weight(s) i (Q4: the weights of its low and high nibble).
std::vector<std::string> byte_labels(GgmlType t) {
    std::vector<std::string> out{"d.lo", "d.hi"};
    if (t == GgmlType::q8_0)
        for (int i = 1; i <= 32; ++i) out.push_back("q" + std::to_string(i));
    if (t == GgmlType::q4_0)
        for (int i = 1; i <= 16; ++i) out.push_back("q" + std::to_string(i) + "|" + std::to_string(i + 16));
    if (t == GgmlType::q4_k) {
        out.insert(out.end(), {"dmin.lo", "dmin.hi"});
        for (int i = 1; i <= 12; ++i) out.push_back("s" + std::to_string(i));
        for (int k = 0; k < 4; ++k)
            for (int l = 1; l <= 32; ++l) out.push_back("q" + std::to_string(64 * k + l) + "|" + std::to_string(64 * k + l + 32));
    }
    return out;
}

std::vector<std::string> counted(std::size_t n) {
    std::vector<std::string> out;
    for (std::size_t i = 1; i <= n; ++i) out.push_back(std::to_string(i));
    return out;
}

}  // namespace

QuantBlock quant_block_of_file(const std::string& path, const std::string& name, std::size_t block, double memory_budget) {
    const GgufFile g(path, memory_budget);
    const GgufFile::TensorInfo* t = g.tensor(name);
    if (!t) {
        std::string some;
        for (std::size_t i = 0; i < g.tensors().size() && i < 6; ++i) some += (i ? ", " : "") + g.tensors()[i].name;
        throw InputError(path, "tensor \"" + name + "\"", "no such tensor (the file has " + std::to_string(g.tensors().size()) + ": " + some +
                                                              (g.tensors().size() > 6 ? ", …" : "") + ")");
    }
    const char* type = ggml_type_name(static_cast<std::uint32_t>(t->type));
    if (t->type != GgmlType::q8_0 && t->type != GgmlType::q4_0 && t->type != GgmlType::q4_k)
        throw InputError(path, "tensor \"" + name + "\"", std::string("a ") + type + " tensor: the quant lesson takes apart Q8_0, Q4_0 and Q4_K blocks");
    const std::size_t size = ggml_block_bytes(t->type), blocks = static_cast<std::size_t>(t->bytes) / size;
    if (block >= blocks)
        throw InputError(path, "tensor \"" + name + "\"", "block " + std::to_string(block + 1) + " asked; it has " + std::to_string(blocks) + " (counted from 1)");
    QuantBlock q;
    q.type = type;
    const std::uint8_t* p = g.bytes(*t) + block * size;
    q.bytes.assign(p, p + size);
    q.source = path + ", tensor " + name + ", block " + std::to_string(block + 1) + " of " + std::to_string(blocks);
    return q;
}

QuantBlock quant_block_builtin(const std::string& type) {
    const GgmlType t = type_named(type);
    if (t == GgmlType::q4_k)
        throw UsageError("a Q4_K block is read from a GGUF file's tensor: llama-quantize searches its scales, "
                         "which this lesson does not do; the built-in row is quantized to Q8_0 or Q4_0");
    QuantBlock q;
    q.type = type;
    for (std::size_t j = 0; j < 32; ++j) {  // a row that looks like a weight matrix's: small, signed, one larger
        const double x = 0.02 * std::sin(0.9 * static_cast<double>(j) + 0.4) + 0.011 * std::cos(2.3 * static_cast<double>(j));
        q.original.push_back(static_cast<float>(j == 11 ? 0.071 : x));
    }
    q.bytes = ggml_quantize(t, q.original.data(), q.original.size());
    q.source = "the built-in row of 32 weights, quantized by ggml's quantize_row_" + std::string(t == GgmlType::q8_0 ? "q8_0" : "q4_0") + "_ref";
    return q;
}

Trace walk_quant(const QuantBlock& q) {
    const GgmlType t = type_named(q.type);
    const std::size_t n = ggml_block_weights(t), size = ggml_block_bytes(t);
    if (q.bytes.size() != size) throw std::logic_error("walk_quant: a block of " + q.type + " has " + std::to_string(size) + " bytes");
    const GgmlBlockParts parts = ggml_block_parts(t, q.bytes.data());
    std::vector<float> w(n);
    ggml_dequantize(t, q.bytes.data(), w.data(), n);  // the reader's own arithmetic
    const bool k = t == GgmlType::q4_k;

    Trace trace;
    trace.command = "quant";
    trace.set_param("type", q.type);
    trace.set_param("source", q.source);
    trace.set_param("weights_per_block", static_cast<ull>(n));
    trace.set_param("bytes_per_block", static_cast<ull>(size));
    Recorder rec(trace);

    Step& raw = rec.add_plain("quant_bytes", "The block's " + std::to_string(size) + " bytes", q.type + " block",
                              integer_tensor({q.bytes.begin(), q.bytes.end()}, {size}), {Axis::feature});
    raw.labels = byte_labels(t);
    raw.note = std::string("Layout: ") + layout_of(t) + ".";

    Tensor scales;
    scales.shape = {parts.scales.size()};
    scales.data = parts.scales;
    Step& s = rec.add_plain("quant_scales", k ? "The super-block's scales d and dmin" : "The block's scale d", k ? "d, dmin = f16 → float32" : "d = f16 → float32",
                            scales, {Axis::feature});
    s.labels = k ? std::vector<std::string>{"d", "dmin"} : std::vector<std::string>{"d"};
    for (std::size_t i = 0; i < parts.scales.size(); ++i)
        s.note += std::string(i ? "; " : "") + s.labels[i] + ": the half " + hex4(parts.scale_bits[i]) + " = " + json_input::float32_text(parts.scales[i]);
    s.note += ".";

    if (k) {
        std::vector<ull> v;
        for (std::size_t j = 0; j < 8; ++j) {
            v.push_back(parts.sub_scales[j]);
            v.push_back(parts.sub_mins[j]);
        }
        Step& u = rec.add_plain("quant_sub_scales", "The eight sub-blocks' 6-bit scales and mins", "sc_j, m_j = get_scale_min_k4(j, scales[12])",
                                integer_tensor(v, {8, 2}), {Axis::rank, Axis::feature});
        u.labels = {"sc", "m"};
        u.note = "Sub-block j of 32 weights gets the scale d·sc_j and the offset dmin·m_j: d·sc_1 = " + json_input::float32_text(parts.scales[0]) + " × " +
                 std::to_string(parts.sub_scales[0]) + " = " + json_input::float32_text(parts.scales[0] * static_cast<float>(parts.sub_scales[0])) +
                 ", dmin·m_1 = " + json_input::float32_text(parts.scales[1]) + " × " + std::to_string(parts.sub_mins[0]) + " = " +
                 json_input::float32_text(parts.scales[1] * static_cast<float>(parts.sub_mins[0])) + ".";
    }

    std::vector<ull> stored;  // Q8_0: the byte as stored (its words: the int8 it is read as); Q4: the nibble
    std::vector<std::string> signed_codes;
    for (int c : parts.codes) {
        stored.push_back(static_cast<ull>(c < 0 ? c + 256 : c));
        if (t == GgmlType::q8_0) signed_codes.push_back(std::to_string(c));
    }
    Tensor codes = integer_tensor(stored, {n / 32, 32});
    codes.words = signed_codes;
    Step& qc = rec.add_plain("quant_codes", t == GgmlType::q4_k ? "The codes, a sub-block to a row" : "The codes", t == GgmlType::q8_0 ? "q ∈ −128..127 (int8)" : "q ∈ 0..15 (4 bits)",
                             codes, {Axis::rank, Axis::feature});
    qc.labels = counted(32);
    qc.note = t == GgmlType::q4_0 ? "Stored as nibbles; 8 stands for 0." : t == GgmlType::q8_0 ? "Each a byte read as a signed int8 (the JSON's data holds the byte, 0–255; words the int8)." : "Stored as nibbles, 32 bytes for each pair of sub-blocks.";

    // each weight again from the parts, in ggml's order of operations: the dequantizer's bits
    const auto rebuilt = [&](std::size_t i, std::string& text) {
        const float d = parts.scales[0];
        const int c = parts.codes[i];
        if (t == GgmlType::q8_0) {
            text = std::to_string(c) + " × " + json_input::float32_text(d);
            return static_cast<float>(c) * d;
        }
        if (t == GgmlType::q4_0) {
            text = "(" + std::to_string(c) + " − 8) × " + json_input::float32_text(d);
            return static_cast<float>(c - 8) * d;
        }
        const std::size_t j = i / 32;
        const float scale = d * static_cast<float>(parts.sub_scales[j]), offset = parts.scales[1] * static_cast<float>(parts.sub_mins[j]);
        text = json_input::float32_text(scale) + " × " + std::to_string(c) + " − " + json_input::float32_text(offset);
        return scale * static_cast<float>(c) - offset;
    };
    std::string written;
    for (std::size_t i = 0; i < n; ++i) {
        std::string text;
        const float v = rebuilt(i, text);
        if (std::memcmp(&v, &w[i], sizeof v) != 0) throw std::logic_error("walk_quant: the parts do not rebuild weight " + std::to_string(i));
        if (i < 3 || (k && i % 32 == 0 && i <= 64)) written += (written.empty() ? "" : "; ") + std::string("w_") + std::to_string(i + 1) + " = " + text + " = " + json_input::float32_text(v);
    }
    Tensor weights;
    weights.shape = {n / 32, 32};
    weights.data = w;
    Step& r = rec.add_plain("quant_weights", "The weights rebuilt in float32", t == GgmlType::q8_0 ? "w = q·d" : t == GgmlType::q4_0 ? "w = (q − 8)·d" : "w = (d·sc_j)·q − (dmin·m_j)",
                            weights, {Axis::rank, Axis::feature});
    r.labels = counted(32);
    r.note = written + ".";
    if (!q.original.empty()) {
        float worst = 0.0f;
        std::size_t at = 0;
        for (std::size_t i = 0; i < n; ++i)
            if (std::fabs(q.original[i] - w[i]) > worst) {
                worst = std::fabs(q.original[i] - w[i]);
                at = i;
            }
        r.note += " The row was w_" + std::to_string(at + 1) + " = " + json_input::float32_text(q.original[at]) + " before quantization: off by " + json_input::float32_text(worst) +
                  ", the most of the " + std::to_string(n) + ".";
    }

    std::vector<std::string> names;
    std::vector<float> per;
    std::string table;
    for (GgmlType ty : {GgmlType::f32, GgmlType::f16, GgmlType::bf16, GgmlType::q8_0, GgmlType::q4_0, GgmlType::q4_1, GgmlType::q5_0, GgmlType::q5_1,
                        GgmlType::q2_k, GgmlType::q3_k, GgmlType::q4_k, GgmlType::q5_k, GgmlType::q6_k, GgmlType::iq4_nl, GgmlType::iq4_xs}) {
        const std::size_t wb = ggml_block_weights(ty), bb = ggml_block_bytes(ty);
        names.emplace_back(ggml_type_name(static_cast<std::uint32_t>(ty)));
        per.push_back(static_cast<float>(static_cast<double>(bb) / static_cast<double>(wb)));
        if (wb > 1) table += (table.empty() ? "" : ", ") + names.back() + " " + std::to_string(bb) + "/" + std::to_string(wb);
    }
    Tensor bytes;
    bytes.shape = {per.size()};
    bytes.data = per;
    Step& b = rec.add_plain("quant_types", "Bytes per weight of each type", "bytes per block / weights per block", bytes, {Axis::feature});
    b.labels = names;
    b.note = "Bytes per block / weights: " + table + ". A 7B model's 7·10⁹ weights take 28 GB in F32, 7.4 GB in Q8_0, 3.9 GB in Q4_K.";
    steps::check_declared(trace.command, trace.steps);
    return check_finite(std::move(trace));
}

}  // namespace attnwalk
