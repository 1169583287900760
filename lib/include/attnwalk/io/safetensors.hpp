// Reading a safetensors file: 8 bytes (little-endian u64) giving the header's length, a
// JSON header {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__"?},
// then the raw little-endian data. The file is memory-mapped, never read whole (a tensor's
// pages are mapped in when it is read or handed out, not before); a tensor is converted to
// float32 (from F32, F16 or BF16) only when asked for. The header's entries are taken one by
// one as it is parsed (about 4 bytes of memory per byte of header, not a tree of it). Everything the
// header claims is checked when the file is opened (sizes, offsets inside the data, no
// overlaps, known shapes): a malformed file is an InputError naming the tensor.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "attnwalk/ops/made_floats.hpp"
#include "attnwalk/ops/tensor.hpp"
#include "attnwalk/trace.hpp"

namespace attnwalk {

class SafeTensors {
public:
    struct Entry {
        std::string dtype;                // "F32", "F16", "BF16", or another (listed, not convertible)
        std::vector<std::size_t> shape;
        std::size_t begin = 0, end = 0;   // byte offsets within the data
        // F32 numbers made when they are used rather than held (a GGUF's quantized weights):
        // begin and end unused
        std::shared_ptr<const MadeFloats> made;
    };

    // What reading a header takes, its entries taken one by one as they are parsed (the
    // mapped text, a map node, a name and a shape per tensor): measured at 4.0 bytes per
    // byte on a header of a million empty tensors (57 MiB of JSON, a 231 MiB peak with
    // /usr/bin/time -v; 22 bytes per byte as a tree), counted as 6.
    static constexpr double header_bytes_per_byte = 6.0;

    // Opens and checks `path`. Throws InputError; MemoryBudgetError when parsing its header
    // would take more than `memory_budget` bytes (json_input::check_parse_budget).
    explicit SafeTensors(const std::string& path, double memory_budget = std::numeric_limits<double>::infinity());
    // Tensors made in memory rather than read from a file (a GGUF file's weights): `entries`
    // place them in `bytes` bytes of fresh memory, which `fill` writes once, or are made as
    // they are used (Entry::made); `file` names them in messages.
    SafeTensors(std::string file, std::map<std::string, Entry> entries, std::size_t bytes, const std::function<void(unsigned char*)>& fill);
    ~SafeTensors();
    SafeTensors(const SafeTensors&) = delete;
    SafeTensors& operator=(const SafeTensors&) = delete;

    const std::string& file() const { return file_; }
    std::size_t file_size() const { return size_; }
    const std::map<std::string, Entry>& entries() const { return entries_; }
    const Entry* find(const std::string& name) const;
    // The tensor as float32; InputError when it is missing or of another dtype.
    Tensor get(const std::string& name) const;
    // The same into `out` (entry's element count floats), without a Tensor in between.
    void read_into(const std::string& name, float* out) const;
    // A tensor's floats made as they are used (Entry::made), or null.
    std::shared_ptr<const MadeFloats> made(const std::string& name) const;
    // The mapped floats themselves when the tensor is F32 on a little-endian machine and
    // 4-byte aligned in the file (no copy: valid while this object lives); else null.
    const float* direct(const std::string& name) const;
    // The same for a BF16 or F16 tensor (2-byte aligned): its raw 16-bit values; else null.
    const std::uint16_t* direct16(const std::string& name) const;
    // The 16-bit values of a BF16 or F16 tensor into `out` (its element count), unconverted,
    // in the machine's byte order: what direct16 hands out, for a tensor at an odd offset
    // (or on a big-endian host). InputError for another dtype.
    void read_raw16(const std::string& name, std::uint16_t* out) const;
    // The raw bytes of a U8 tensor (MXFP4's blocks and scales), where they lie; else null.
    const std::uint8_t* direct8(const std::string& name) const;
    // Reads one byte of every page direct() and direct16() have handed out, on a thread of
    // its own that this object stops and joins when it goes: the first read of a mapped
    // page costs about 0.4 µs on some virtual machines even after the pages were mapped
    // (GPT-2 124M: 55 ms), paid here while the caller loads its tokenizer rather than in
    // the first forward. Once; later calls do nothing.
    void touch_in_background() const;
    // Replaces the file's mapped pages by memory of the process's own holding the same
    // bytes: 64 MiB at a time over the cores, each copied into fresh anonymous memory that
    // asks for huge pages, then moved (mremap) onto the same addresses, so that every pointer
    // handed out stays valid and reads what it read. From the first 2 MiB boundary of the
    // mapping to its last (the few pages either side stay mapped). On this project's virtual
    // machines a pass over mapped file pages took up to 3× one over anonymous memory
    // (docs/performance.md, section 31). Costs a copy of the file now and keeps it in memory
    // until this object goes. Returns the bytes moved; stops (keeping what it moved) where
    // the system refuses memory. Once (again only when nothing moved); the background reads stop first.
    std::size_t hold_in_memory() const;

private:
    void stop_touching() const;  // the background reads stopped and joined
    std::string file_;
    int fd_ = -1;
    const unsigned char* map_ = nullptr;
    std::size_t size_ = 0;
    std::size_t data_start_ = 0;
    std::map<std::string, Entry> entries_;
    mutable std::vector<std::pair<std::size_t, std::size_t>> handed_out_;  // byte ranges of the map
    mutable std::atomic<bool> stop_touching_{false};
    mutable std::atomic<bool> held_{false};  // hold_in_memory moved pages: none may be dropped (a moved one would read back as zeros)
    mutable std::thread toucher_;
};

// The file whose memory-mapped bytes lie at `address` (a SafeTensors alive now), or null.
// For a SIGBUS handler: a mapped file that shrinks under the process faults on the next
// read of its lost pages, and the handler names the file. Async-signal-safe: no lock, no
// allocation.
const char* mapped_file_at(const void* address) noexcept;

}  // namespace attnwalk
