// attnwalk: the process around the command line (app/cli.cpp).
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>
#include <string>

#include "attnwalk/ops/huge_pages.hpp"
#include "cli.hpp"

// Memory is offered transparent huge pages before its first touch: the heap as it grows
// (glibc's brk heap, where keep_freed_memory keeps a forward's tensors) and every block of
// 2 MiB or more (a thread's arena, a mapping of its own). A fresh heap is then faulted in
// 2 MiB at a time where each 4 KiB page would trap once, 10–15 µs a trap on a virtual
// machine (docs/performance.md, section 21). Not in a sanitized build, whose runtime owns
// operator new.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTNWALK_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ATTNWALK_SANITIZED 1
#endif
#if !defined(ATTNWALK_SANITIZED) && defined(__linux__) && defined(__GLIBC__)
namespace {
std::uintptr_t heap_start = 0;                // the heap's end when main began: advised from there on
std::uintptr_t page_mask = 0;                 // ~(the page size − 1)
std::atomic<std::uintptr_t> advised_heap{0};  // the heap's end as last seen (0: main has not begun)

void advise_new_memory(void* p, std::size_t bytes) {
    std::uintptr_t seen = advised_heap.load(std::memory_order_relaxed);
    if (seen == 0) return;  // before main
    const auto end = reinterpret_cast<std::uintptr_t>(::sbrk(0)) & page_mask;  // glibc's cached break: no system call
    // the heap grown since it was last seen, from the huge page its last end fell in (a
    // thread that loses the race to another's end has nothing left to do). A heap trimmed
    // is seen at its lower end, so that the part grown again is advised again: the kernel
    // makes it a mapping of its own, without the advice. (A thread holding a break read
    // before another's trim may record the old end: the advice is a hint, and a part left
    // unadvised only takes 4 KiB pages.)
    while (end != seen) {
        if (!advised_heap.compare_exchange_weak(seen, end, std::memory_order_relaxed)) continue;
        const std::uintptr_t from = std::max(seen & ~(attnwalk::huge_page_bytes - 1), heap_start);
        if (end > seen && end > from) ::madvise(reinterpret_cast<void*>(from), end - from, MADV_HUGEPAGE);
        break;
    }
    // a large block outside the advised heap: a mapping of its own
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    if (bytes >= attnwalk::huge_page_bytes && !(at >= heap_start && at < advised_heap.load(std::memory_order_relaxed)))
        attnwalk::advise_huge_pages(p, bytes);
}
}  // namespace

void* operator new(std::size_t bytes) {
    for (;;) {
        if (void* p = std::malloc(bytes ? bytes : 1)) {
            advise_new_memory(p, bytes);
            return p;
        }
        const std::new_handler handler = std::get_new_handler();
        if (!handler) throw std::bad_alloc();
        handler();
    }
}
void* operator new[](std::size_t bytes) { return ::operator new(bytes); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace {

attnwalk::app::Terminal read_terminal() {
    attnwalk::app::Terminal t;
    t.stdout_is_tty = ::isatty(STDOUT_FILENO) == 1;
    t.stdin_is_tty = ::isatty(STDIN_FILENO) == 1;
    const char* no_color = std::getenv("NO_COLOR");
    const char* term = std::getenv("TERM");
    t.no_color = (no_color && *no_color) || (term && std::strcmp(term, "dumb") == 0);
    const char* colorterm = std::getenv("COLORTERM");
    t.truecolor = colorterm && (std::strcmp(colorterm, "truecolor") == 0 || std::strcmp(colorterm, "24bit") == 0);
    winsize ws{};
    if (t.stdout_is_tty && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        t.columns = ws.ws_col;
        t.lines = ws.ws_row;
    }
    if (const char* lines = std::getenv("LINES")) {
        char* end = nullptr;
        const long n = std::strtol(lines, &end, 10);
        if (end != lines && *end == '\0' && n >= 10 && n <= 10000) t.lines = static_cast<std::size_t>(n);
    }
    if (const char* columns = std::getenv("COLUMNS")) {
        char* end = nullptr;
        const long n = std::strtol(columns, &end, 10);
        if (end != columns && *end == '\0' && n >= 20 && n <= 10000) t.columns = static_cast<std::size_t>(n);
    }
    return t;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);  // a closed pipe becomes EPIPE on write: a quiet exit
    attnwalk::app::keep_freed_memory();
#if !defined(ATTNWALK_SANITIZED) && defined(__linux__) && defined(__GLIBC__)
    page_mask = ~(static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE)) - 1);
    heap_start = (reinterpret_cast<std::uintptr_t>(::sbrk(0)) + ~page_mask) & page_mask;
    advised_heap.store(heap_start);
#endif
    attnwalk::app::report_shrunk_inputs();  // a checkpoint truncated while mapped: one line, not a crash
    return attnwalk::app::run_cli(argc, argv, std::cout, std::cerr, read_terminal());
}
