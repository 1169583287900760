#include "attnwalk/io/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/json_input.hpp"
#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/huge_pages.hpp"
#include "mapped_file.hpp"

namespace attnwalk {

namespace {

constexpr std::uint64_t max_header = 100ull << 20;  // the format's own limit: 100 MB of JSON

std::size_t dtype_size(const std::string& dtype) {
    if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
    if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
    if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
    if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
    return 0;
}

// A whole number ≥ 0 from the header (a double holds every offset of a file below 8 PB).
std::size_t whole(const json_input::Value& v, const std::string& file, const std::string& path) {
    if (v.type != json_input::Value::Type::number || !(v.number >= 0.0) || v.number != std::floor(v.number) || v.number > 9.0e15)
        throw InputError(file, path, "expected a whole number ≥ 0, got " + (v.type == json_input::Value::Type::number
                                                                               ? json_input::number_text(v.number)
                                                                               : json_input::type_name(v)));
    return static_cast<std::size_t>(v.number);
}

// The mappings alive now, for mapped_file_at: a fixed table a signal handler can read
// (a slot is claimed with a compare-and-swap, filled, then published by `begin`).
struct Mapping {
    std::atomic<const unsigned char*> begin{nullptr};
    std::atomic<bool> claimed{false};
    std::size_t size = 0;
    char path[512] = {};
};
Mapping mappings[64];

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
// Maps the pages of bytes [from, to) of a mapping in one call (Linux ≥ 5.14) instead of one
// fault per page later. Only a tensor that is read or handed out: the file's pages are the
// kernel's page cache, not a copy, but they count while mapped, and a tensor nothing reads
// (an -i file's other tensors, a checkpoint's unused ones) need not take memory.
void populate(const unsigned char* map, std::size_t from, std::size_t to) {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t first = from / page * page;
    if (to > first) (void)::madvise(const_cast<unsigned char*>(map) + first, to - first, MADV_POPULATE_READ);
}

}  // namespace

const char* mapped_file_at(const void* address) noexcept {
    const auto* a = static_cast<const unsigned char*>(address);
    for (const Mapping& m : mappings) {
        const unsigned char* begin = m.begin.load();
        if (begin && a >= begin && a < begin + m.size) return m.path;
    }
    return nullptr;
}

namespace io_detail {

void note_mapping(const unsigned char* begin, std::size_t size, const std::string& path) {
    for (Mapping& m : mappings) {
        bool free = false;
        if (!m.claimed.compare_exchange_strong(free, true)) continue;
        m.size = size;
        const std::size_t n = std::min(path.size(), sizeof m.path - 1);
        std::memcpy(m.path, path.data(), n);
        m.path[n] = '\0';
        m.begin.store(begin);
        return;
    }  // more than 64 files mapped at once: this one's SIGBUS goes unnamed
}

void forget_mapping(const unsigned char* begin) {
    for (Mapping& m : mappings)
        if (m.begin.load() == begin) {
            m.begin.store(nullptr);
            m.claimed.store(false);
            return;
        }
}

MappedFile map_file(const std::string& path, const std::string& kind, std::size_t least, const std::string& least_words) {
    MappedFile f;
    f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO with no writer must not block the open
    if (f.fd < 0) throw InputError(path, "", std::string("cannot open file: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(f.fd);
        throw InputError(path, "", "not a regular file (" + kind + " is memory-mapped)");
    }
    f.size = static_cast<std::size_t>(st.st_size);
    try {
        if (f.size < least) throw InputError(path, "", "too short for " + kind + ": " + std::to_string(f.size) + " bytes, " + least_words);
        void* m = ::mmap(nullptr, f.size, PROT_READ, MAP_PRIVATE, f.fd, 0);
        if (m == MAP_FAILED) throw InputError(path, "", std::string("cannot map the file: ") + std::strerror(errno));
        f.map = static_cast<const unsigned char*>(m);
    } catch (...) {
        ::close(f.fd);
        throw;
    }
    return f;
}

}  // namespace io_detail

SafeTensors::SafeTensors(const std::string& path, double memory_budget) : file_(path) {
    const io_detail::MappedFile mapped = io_detail::map_file(path, "a safetensors file", 8, "the header length alone takes 8");
    fd_ = mapped.fd;
    size_ = mapped.size;
    map_ = mapped.map;
    try {
        io_detail::note_mapping(map_, size_, path);
        // Files people mistake for safetensors, told by their first bytes.
        const auto begins_with = [&](const char* magic, std::size_t k) { return size_ >= k && std::memcmp(map_, magic, k) == 0; };
        const char* convert = ": load it in Python and save it with safetensors.torch.save_file(model.state_dict(), \"model.safetensors\")"
                              " (see docs/models.md)";
        if (begins_with("PK\x03\x04", 4))
            throw InputError(path, "", std::string("this is a zip archive (PyTorch's torch.save format, .pt/.bin), not safetensors") + convert);
        if (map_[0] == 0x80 && map_[1] >= 2 && map_[1] <= 5)
            throw InputError(path, "", std::string("this is a Python pickle (an old torch.save .pt/.bin), not safetensors") + convert);
        if (begins_with("GGUF", 4)) throw InputError(path, "", "this is a GGUF file (llama.cpp's format), not safetensors");
        std::uint64_t n = 0;
        for (int i = 8; i-- > 0;) n = (n << 8) | map_[i];  // little-endian
        if (n > max_header || n > size_ - 8)
            throw InputError(path, "", "the header claims " + std::to_string(n) + " bytes; the file has " + std::to_string(size_ - 8) +
                                           " after the length (and a header may take at most 100 MB)");
        json_input::check_parse_budget(path, "header", static_cast<double>(n), memory_budget, header_bytes_per_byte);
        data_start_ = 8 + static_cast<std::size_t>(n);
        const std::size_t data_size = size_ - data_start_;
        std::vector<std::pair<std::size_t, std::string>> starts;
        bool metadata_seen = false;
        // Each tensor's entry is taken as its member is read, never a tree of the whole
        // header: a header of a million entries costs its entries, not 21 bytes a byte.
        const auto entry = [&](const std::string* key, std::size_t, json_input::Value&& v) {
            if (!key) throw InputError(path, "$", "the header must be a JSON object, got an array");  // its elements come without keys
            const std::string& name = *key;
            const std::string at = json_input::member_path("$", name);
            if (name == "__metadata__") return metadata_seen ? false : (metadata_seen = true);
            if (!v.is_object()) throw InputError(path, at, "expected {\"dtype\", \"shape\", \"data_offsets\"}, got " + json_input::type_name(v));
            json_input::check_keys(v, path, at, {"dtype", "shape", "data_offsets"});
            Entry e;
            const json_input::Value* dtype = v.find("dtype");
            if (!dtype || dtype->type != json_input::Value::Type::string) throw InputError(path, at + ".dtype", "expected a string such as \"F32\"");
            e.dtype = dtype->string;
            const std::size_t width = dtype_size(e.dtype);
            if (!width) throw InputError(path, at + ".dtype", "unknown dtype \"" + e.dtype + "\"");
            const json_input::Value* shape = v.find("shape");
            if (!shape || shape->type != json_input::Value::Type::array) throw InputError(path, at + ".shape", "expected an array of sizes");
            double count = 1.0;
            for (std::size_t i = 0; i < shape->array.size(); ++i) {
                e.shape.push_back(whole(shape->array[i], path, at + ".shape[" + std::to_string(i) + "]"));
                count *= static_cast<double>(e.shape.back());
            }
            e.shape.shrink_to_fit();
            const json_input::Value* offsets = v.find("data_offsets");
            if (!offsets || offsets->type != json_input::Value::Type::array || offsets->array.size() != 2)
                throw InputError(path, at + ".data_offsets", "expected [begin, end]");
            e.begin = whole(offsets->array[0], path, at + ".data_offsets[0]");
            e.end = whole(offsets->array[1], path, at + ".data_offsets[1]");
            if (e.begin > e.end || e.end > data_size)
                throw InputError(path, at + ".data_offsets", "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                                                                 "] is not a range inside the " + std::to_string(data_size) + " bytes of data");
            if (count * static_cast<double>(width) != static_cast<double>(e.end - e.begin))
                throw InputError(path, at, "shape " + json_input::shape_string(e.shape) + " of " + e.dtype + " needs " +
                                               std::to_string(static_cast<unsigned long long>(count * static_cast<double>(width))) +
                                               " bytes, data_offsets give " + std::to_string(e.end - e.begin));
            if (e.end > e.begin) starts.emplace_back(e.begin, name);
            return entries_.emplace(name, std::move(e)).second;  // false: a name given twice
        };
        const std::string_view text(reinterpret_cast<const char*>(map_ + 8), static_cast<std::size_t>(n));
        const json_input::Value doc = json_input::parse_plain(text, path + " (header)", {json_input::Stream{{}, entry}});
        if (!doc.is_object()) throw InputError(path, "$", "the header must be a JSON object, got " + json_input::type_name(doc));
        std::sort(starts.begin(), starts.end());
        for (std::size_t i = 1; i < starts.size(); ++i) {
            const Entry& prev = entries_.at(starts[i - 1].second);
            if (starts[i].first < prev.end)
                throw InputError(path, json_input::member_path("$", starts[i].second) + ".data_offsets",
                                 "overlaps the data of \"" + starts[i - 1].second + "\"");
        }
    } catch (...) {
        if (map_) {
            io_detail::forget_mapping(map_);
            ::munmap(const_cast<unsigned char*>(map_), size_);
        }
        ::close(fd_);
        throw;
    }
}

SafeTensors::SafeTensors(std::string file, std::map<std::string, Entry> entries, std::size_t bytes, const std::function<void(unsigned char*)>& fill)
    : file_(std::move(file)), size_(std::max<std::size_t>(bytes, 1)), entries_(std::move(entries)) {
    void* m = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw RuntimeError("cannot take " + json_input::size_text(static_cast<double>(size_)) + " of memory for " + file_ + ": " + std::strerror(errno));
    try {
        fill(static_cast<unsigned char*>(m));
    } catch (...) {
        ::munmap(m, size_);
        throw;
    }
    map_ = static_cast<const unsigned char*>(m);
}

SafeTensors::~SafeTensors() {
    stop_touching();
    if (map_) {
        io_detail::forget_mapping(map_);
        ::munmap(const_cast<unsigned char*>(map_), size_);
    }
    if (fd_ >= 0) ::close(fd_);
}

const SafeTensors::Entry* SafeTensors::find(const std::string& name) const {
    const auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
}

Tensor SafeTensors::get(const std::string& name) const {
    const Entry* e = find(name);
    if (!e) throw InputError(file_, json_input::member_path("$", name), "missing tensor \"" + name + "\"");
    Tensor t;
    t.shape = e->shape;
    t.data.resize(t.size());
    read_into(name, t.data.data());
    return t;
}

const std::uint16_t* SafeTensors::direct16(const std::string& name) const {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const Entry* e = find(name);
    if (!e || (e->dtype != "BF16" && e->dtype != "F16")) return nullptr;
    const unsigned char* p = map_ + data_start_ + e->begin;
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(std::uint16_t) != 0) return nullptr;
    handed_out_.emplace_back(data_start_ + e->begin, data_start_ + e->end);
    populate(map_, data_start_ + e->begin, data_start_ + e->end);
    return reinterpret_cast<const std::uint16_t*>(p);
#else
    (void)name;
    return nullptr;
#endif
}

void SafeTensors::read_raw16(const std::string& name, std::uint16_t* out) const {
    const Entry* e = find(name);
    if (!e) throw InputError(file_, json_input::member_path("$", name), "missing tensor \"" + name + "\"");
    if (e->dtype != "BF16" && e->dtype != "F16")
        throw InputError(file_, json_input::member_path("$", name) + ".dtype", "expected BF16 or F16, got " + e->dtype);
    const unsigned char* p = map_ + data_start_ + e->begin;
    const std::size_t n = (e->end - e->begin) / 2;
    populate(map_, data_start_ + e->begin, data_start_ + e->end);
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));  // little-endian
}

const std::uint8_t* SafeTensors::direct8(const std::string& name) const {
    const Entry* e = find(name);
    if (!e || e->dtype != "U8") return nullptr;
    handed_out_.emplace_back(data_start_ + e->begin, data_start_ + e->end);
    populate(map_, data_start_ + e->begin, data_start_ + e->end);
    return map_ + data_start_ + e->begin;
}

std::shared_ptr<const MadeFloats> SafeTensors::made(const std::string& name) const {
    const Entry* e = find(name);
    return e ? e->made : nullptr;
}

const float* SafeTensors::direct(const std::string& name) const {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const Entry* e = find(name);
    if (!e || e->dtype != "F32" || e->made) return nullptr;
    const unsigned char* p = map_ + data_start_ + e->begin;
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(float) != 0) return nullptr;
    handed_out_.emplace_back(data_start_ + e->begin, data_start_ + e->end);
    populate(map_, data_start_ + e->begin, data_start_ + e->end);
    return reinterpret_cast<const float*>(p);
#else
    (void)name;
    return nullptr;
#endif
}

void SafeTensors::touch_in_background() const {
    if (toucher_.joinable() || handed_out_.empty()) return;
    std::sort(handed_out_.begin(), handed_out_.end());
    toucher_ = std::thread([this] {
        const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        unsigned char sink = 0;
        std::size_t done = 0;  // pages below this offset were read
        for (const auto& [from, to] : handed_out_) {
            for (std::size_t at = std::max(from / page * page, done); at < to; at += page) {
                if ((at / page) % 256 == 0 && stop_touching_.load(std::memory_order_relaxed)) return;
                sink ^= *static_cast<const volatile unsigned char*>(map_ + std::max(at, from));
                done = at + page;
            }
        }
        static_cast<void>(sink);
    });
}

namespace {

// Moves [at, at + n) of a file's mapping (`fd`, the mapping starting at `first`; `at` and n
// whole huge pages) into fresh anonymous memory: false where the system refused (the file's
// pages stay, or are mapped again where a failed move had unmapped them).
bool move_into_memory(std::uintptr_t at, std::size_t n, std::uintptr_t first, int fd) {
    constexpr std::uintptr_t huge = huge_page_bytes;
    // fresh memory at a huge page's boundary, as `at` is: moved, its huge pages stay whole
    void* area = ::mmap(nullptr, n + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED) return false;
    const auto a0 = reinterpret_cast<std::uintptr_t>(area), a = (a0 + huge - 1) / huge * huge;
    if (a > a0) ::munmap(area, a - a0);
    if (a0 + n + huge > a + n) ::munmap(reinterpret_cast<void*>(a + n), a0 + n + huge - (a + n));
    void* fresh = reinterpret_cast<void*>(a);
    advise_huge_pages(fresh, n);
    std::memcpy(fresh, reinterpret_cast<const void*>(at), n);
    if (::mprotect(fresh, n, PROT_READ) != 0) {  // the file's pages are still in place
        ::munmap(fresh, n);
        return false;
    }
    if (::mremap(fresh, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(at)) != MAP_FAILED) return true;
    ::munmap(fresh, n);
    // a failed move may have unmapped its destination: the file's pages again, only where
    // nothing is mapped (EEXIST: they are still there); a hole left would fault later
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
    void* back = ::mmap(reinterpret_cast<void*>(at), n, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, static_cast<off_t>(at - first));
    if (back == MAP_FAILED && errno != EEXIST) throw RuntimeError("cannot map the weights' file again after a failed move: " + std::string(std::strerror(errno)));
    if (back != MAP_FAILED && back != reinterpret_cast<void*>(at)) ::munmap(back, n);  // a kernel before 4.17 took it as a hint
    return false;
}

}  // namespace

void SafeTensors::stop_touching() const {
    stop_touching_ = true;
    if (toucher_.joinable()) toucher_.join();
}

std::size_t SafeTensors::hold_in_memory() const {
    if (fd_ < 0 || held_.exchange(true)) return 0;  // memory of its own already, or held
    stop_touching();
    constexpr std::uintptr_t huge = huge_page_bytes;
    constexpr std::size_t chunk = std::size_t{64} << 20;
    const auto first = reinterpret_cast<std::uintptr_t>(map_), last = first + size_;
    const std::uintptr_t begin = (first + huge - 1) / huge * huge, end = last / huge * huge;
    // the chunks shared over the cores, each worker taking every workers-th (the copy and the
    // fresh pages' zeroing both cost time: 2.47 GB took 1.3-3.9 s on one core)
    const std::size_t chunks = end > begin ? static_cast<std::size_t>((end - begin + chunk - 1) / chunk) : 0;
    std::atomic<std::size_t> moved{0};
    std::atomic<bool> refused{false};
    if (chunks) on_every_core([&](std::size_t worker, std::size_t workers) {
        for (std::size_t c = worker; c < chunks && !refused; c += workers) {
            const std::uintptr_t at = begin + c * chunk;
            const std::size_t n = static_cast<std::size_t>(std::min<std::uintptr_t>(chunk, end - at));
            if (!move_into_memory(at, n, first, fd_)) refused = true;
            else moved += n;
        }
    });
    // nothing moved (no whole 2 MiB range, or refused at once): every page is still the
    // file's, and may be dropped again
    held_ = moved > 0;
    return moved;
}

void SafeTensors::read_into(const std::string& name, float* out) const {
    const Entry* e = find(name);
    if (!e) throw InputError(file_, json_input::member_path("$", name), "missing tensor \"" + name + "\"");
    std::size_t n = 1;
    for (std::size_t d : e->shape) n *= d;
    if (e->made) {
        e->made->read(0, n, out);
        return;
    }
    const unsigned char* p = map_ + data_start_ + e->begin;
    // Fault the destination's pages in with one call (Linux ≥ 5.14) rather than one trap
    // per page while copying: on some virtual machines that is most of a model's load.
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const auto out_begin = reinterpret_cast<std::uintptr_t>(out), out_end = out_begin + 4 * n;
    const std::uintptr_t first_page = (out_begin + page - 1) / page * page, last_page = out_end / page * page;
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
    if (last_page > first_page) (void)::madvise(reinterpret_cast<void*>(first_page), last_page - first_page, MADV_POPULATE_WRITE);
    populate(map_, data_start_ + e->begin, data_start_ + e->end);
    if (e->dtype == "F32") {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (n) std::memcpy(out, p, 4 * n);  // the file's byte order is the machine's
#else
        for (std::size_t i = 0; i < n; ++i) {
            std::uint32_t bits = 0;
            for (std::size_t b = 4; b-- > 0;) bits = (bits << 8) | p[4 * i + b];  // little-endian
            std::memcpy(&out[i], &bits, sizeof bits);
        }
#endif
    } else if (e->dtype == "F16" || e->dtype == "BF16") {
        const bool half = e->dtype == "F16";
        for (std::size_t i = 0; i < n; ++i) {
            const auto bits = static_cast<std::uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));
            out[i] = half ? half_to_float(bits) : bfloat16_to_float(bits);
        }
    } else {
        throw InputError(file_, json_input::member_path("$", name), "dtype " + e->dtype + " cannot be read as float32 (F32, F16 or BF16 can)");
    }
    // The float32 copy is what is used from now on: let the kernel drop the mapped pages
    // (a later read maps them again), so that a model costs its copy, not twice its size.
    const std::size_t from = (data_start_ + e->begin + page - 1) / page * page, to = (data_start_ + e->end) / page * page;
    if (to > from && fd_ >= 0 && !held_) ::madvise(const_cast<unsigned char*>(map_) + from, to - from, MADV_DONTNEED);  // memory of its own stays
}

}  // namespace attnwalk
