// Reading a checkpoint's tensors into the decoder's weights, for every family's mapping:
// one safetensors file or the shards an index names, the names, shapes and checks in one
// place, and which tensors were read (the rest are listed as unused).
#pragma once

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "attnwalk/io/safetensors.hpp"
#include "attnwalk/model/decoder.hpp"

namespace attnwalk {
struct Mxfp4Rows;  // ops/moe.hpp: a mixture's experts' MXFP4 rows (blocks/experts.cpp reads them)
}  // namespace attnwalk

namespace attnwalk::model_detail {

using Files = std::vector<std::shared_ptr<const SafeTensors>>;

std::string shape_text(const std::vector<std::size_t>& s);

class Reader {
public:
    // Names are read as prefix + name.
    Reader(Files files, std::string prefix);

    // The tensor's entry and its file, or null.
    const SafeTensors::Entry* find(const std::string& name) const;
    const SafeTensors* file_of(const std::string& name) const;
    // Throws InputError when the tensor is missing or of another shape; notes it as read.
    void check(const std::string& name, const std::vector<std::size_t>& shape) const;
    Vec vec(const std::string& name, std::size_t n) const;
    Mat mat(const std::string& name, std::size_t rows, std::size_t cols) const;
    // A tensor of `shape` (rows·cols numbers) read as rows×cols: a conv1d weight [C, 1, K] as C×K.
    Mat mat(const std::string& name, const std::vector<std::size_t>& shape, std::size_t rows, std::size_t cols) const;
    // A layer of d_in×d_out, stored so (x·W, Conv1D) or as its d_out×d_in transpose
    // (nn.Linear); read where it lies when F32, else from a float32 copy it keeps.
    Linear linear(const std::string& name, std::size_t d_in, std::size_t d_out, bool transposed) const;
    // E layers of d_in×d_out stacked in one [E, d_in, d_out] tensor (x·W layout: a mixture's
    // experts), each read where it lies.
    std::vector<Linear> stacked_linears(const std::string& name, std::size_t E, std::size_t d_in, std::size_t d_out) const;
    // E matrices of `rows` rows of `cols` values in MXFP4: name_blocks [E, rows, cols/32, 16]
    // and name_scales [E, rows, cols/32], both U8, read where they lie.
    std::vector<Mxfp4Rows> mxfp4(const std::string& name, std::size_t E, std::size_t rows, std::size_t cols) const;
    // Without biases (nanoGPT's bias=False: the file has none), a bias of zeros.
    Vec bias(const std::string& name, std::size_t n) const;
    // name.weight (and name.bias for a LayerNorm) of C.
    Norm norm(const std::string& name, std::size_t C, NormKind kind) const;
    void without_biases() { biases_ = false; }
    // The same files and the same record of what was read, another prefix.
    Reader with_prefix(std::string prefix) const;
    // Every tensor of the files that nothing read.
    std::vector<std::string> unused() const;
    const Files& files() const { return files_; }
    const std::string& prefix() const { return prefix_; }
    // Each file reads the pages of the weights handed out where they lie, in the background
    // (SafeTensors::touch_in_background): call once every tensor is read.
    void touch_in_background() const;

private:
    // The file that holds a tensor, as the owner the weights read in place keep alive.
    std::shared_ptr<const void> owner_of(const SafeTensors* f) const;
    // `count` layers of d_in×d_out one after the other in tensor `name` (checked already),
    // each read where it lies (F32), widened as used (BF16, F16), made as used (a GGUF's
    // quantized weights) or from a float32 copy.
    std::vector<Linear> layers(const std::string& name, std::size_t count, std::size_t d_in, std::size_t d_out, bool transposed) const;

    Files files_;
    std::string prefix_;
    std::shared_ptr<std::set<std::string>> used_;
    bool biases_ = true;
};

}  // namespace attnwalk::model_detail
