// Transparent huge pages for large buffers, without xtensor (main's allocator uses it).
#pragma once

#include <cstddef>

namespace attnwalk {

// The size of a transparent huge page on x86-64 and aarch64 with 4 KiB pages.
inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

// Large buffers ask for transparent huge pages where the system has them: on a virtual
// machine a 4 KiB page fault costs microseconds, and a 16 MB score tensor has 4096 of them.
// Advises the whole huge pages inside [p, p + bytes); call before the buffer is first
// touched (pages already touched stay as they are).
void advise_huge_pages(void* p, std::size_t bytes);

}  // namespace attnwalk
