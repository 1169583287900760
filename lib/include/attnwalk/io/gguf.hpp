// Reading a GGUF file (llama.cpp's format; Ollama's blobs and LM Studio's models are GGUF
// files), versions 2 and 3, all little-endian:
//
//   "GGUF" u32 version, u64 tensor_count, u64 kv_count
//   kv_count × (string key, u32 value type, value)        string = u64 length + UTF-8 bytes
//                                                          array  = u32 element type, u64 n, n values
//   tensor_count × (string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset)
//   padding to general.alignment (default 32), then the data: each tensor at its offset
//
// ne[0] is the length of a row (ggml's order): the PyTorch shape is ne reversed. The file is
// memory-mapped; everything it claims is checked when it is opened (sizes without overflow,
// offsets aligned and inside the data, no overlaps, known types, each count against the
// bytes left and the memory budget before anything is allocated): a malformed file is an
// InputError naming the key or tensor and what was expected.
//
// A tensor is read as float32 exactly as ggml's dequantize_row_* compute it (float32
// products, no fused multiply-add).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace attnwalk {

// ggml's tensor types that attnwalk reads (their numbers are ggml's enum ggml_type).
enum class GgmlType : std::uint32_t {
    f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q5_0 = 6, q5_1 = 7, q8_0 = 8,
    q2_k = 10, q3_k = 11, q4_k = 12, q5_k = 13, q6_k = 14, iq4_nl = 20, iq4_xs = 23, bf16 = 30,
};

// A type's name as llama.cpp prints it ("Q4_K"), or null for a number attnwalk does not read.
const char* ggml_type_name(std::uint32_t type);
// The name ggml gives a type attnwalk does not read ("IQ2_XXS", "TQ1_0", "MXFP4"), for a refusal;
// null for a number ggml has no type for.
const char* ggml_unread_type_name(std::uint32_t type);
// Weights per block (1 for F32, F16, BF16; 32; 256 for the K-quants and IQ4_XS) and bytes per block.
std::size_t ggml_block_weights(GgmlType type);
std::size_t ggml_block_bytes(GgmlType type);
// `n` weights (a multiple of the block) from `bytes` into `out`, as ggml's dequantize_row_*.
void ggml_dequantize(GgmlType type, const std::uint8_t* bytes, float* out, std::size_t n);

// One block taken apart as ggml_dequantize reads it (the lesson `quant`): its half-precision
// scales (Q8_0, Q4_0: d; Q4_K: d, dmin) as stored and as float32, Q4_K's eight 6-bit scales
// and mins (its 12 bytes unpacked as get_scale_min_k4 does), and each weight's code in the
// order of the weights (Q8_0: the int8; Q4_0: 0..15, the weight (q − 8)·d; Q4_K: 0..15, the
// weight d·sc·q − dmin·m of its sub-block of 32). Other types: std::invalid_argument.
struct GgmlBlockParts {
    std::vector<std::uint16_t> scale_bits;
    std::vector<float> scales;
    std::vector<unsigned> sub_scales, sub_mins;
    std::vector<int> codes;
};
GgmlBlockParts ggml_block_parts(GgmlType type, const std::uint8_t* block);
// ggml's reference quantizers quantize_row_q8_0_ref and quantize_row_q4_0_ref: `n` weights
// (whole blocks of 32) into Q8_0 or Q4_0 blocks (d = max|x|/127, q = round(x/d); d = x_max/−8,
// q = min(15, trunc(x/d + 8.5))). Other types: std::invalid_argument.
std::vector<std::uint8_t> ggml_quantize(GgmlType type, const float* x, std::size_t n);

// A metadata value: a scalar, or an array of one type (its elements in the one vector of
// their kind).
struct GgufValue {
    enum class Type : std::uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };
    Type type = Type::u8;  // of the scalar, or of the array's elements
    bool array = false;
    std::vector<std::int64_t> ints;     // integers and booleans (a u64 above 2^63 is refused)
    std::vector<double> floats;         // f32, f64
    std::vector<std::string> strings;   // strings
    std::size_t size() const { return ints.size() + floats.size() + strings.size(); }
};
// "u32", "string", "array of string": a value's type in a message.
std::string gguf_type_text(const GgufValue& v);

class GgufFile {
public:
    struct TensorInfo {
        std::string name;
        std::vector<std::uint64_t> ne;  // ggml's order: ne[0] the row
        GgmlType type = GgmlType::f32;
        std::uint64_t offset = 0, bytes = 0, count = 0;  // offset within the data; bytes and weights
        std::vector<std::size_t> shape() const;  // PyTorch's order: ne reversed
    };

    // What opening takes beyond the mapped file, counted as it is read: per value, string
    // and tensor its object and its bytes. MemoryBudgetError before an allocation that
    // would pass `memory_budget`.
    explicit GgufFile(const std::string& path, double memory_budget = std::numeric_limits<double>::infinity());
    ~GgufFile();
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    // Whether the file begins with "GGUF" (a regular file: an Ollama blob has no extension).
    static bool is_gguf(const std::string& path);

    const std::string& file() const { return file_; }
    std::uint32_t version() const { return version_; }
    std::size_t alignment() const { return alignment_; }
    std::size_t data_start() const { return data_start_; }
    std::size_t file_size() const { return size_; }
    const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const GgufValue* find(const std::string& key) const;
    const TensorInfo* tensor(const std::string& name) const;

    // Typed reads of a key: InputError naming the key when it is of another type (a text
    // for `text`, a whole number ≥ 0 for `whole`, a number for `number`, a boolean, an array
    // of strings or of whole numbers); the fallback when absent, else InputError.
    std::string text(const std::string& key, const std::string* fallback = nullptr) const;
    std::uint64_t whole(const std::string& key, const std::uint64_t* fallback = nullptr) const;
    double number(const std::string& key, const double* fallback = nullptr) const;
    bool flag(const std::string& key, bool fallback) const;
    const std::vector<std::string>& texts(const std::string& key) const;
    const std::vector<std::int64_t>& wholes(const std::string& key) const;

    // The tensor's raw bytes (mapped) and its weights as float32 into `out` (count floats).
    const std::uint8_t* bytes(const TensorInfo& t) const;
    void dequantize(const TensorInfo& t, float* out) const;
    // Rows first … first+rows−1 of the tensor (rows of ne[0] weights, whole blocks) into `out`.
    void dequantize_rows(const TensorInfo& t, std::size_t first, std::size_t rows, float* out) const;

private:
    std::string file_;
    int fd_ = -1;
    const std::uint8_t* map_ = nullptr;
    std::size_t size_ = 0, data_start_ = 0, alignment_ = 32;
    std::uint32_t version_ = 0;
    std::map<std::string, GgufValue> metadata_;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, std::size_t> by_name_;
};

}  // namespace attnwalk
