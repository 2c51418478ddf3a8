#pragma once
// The allocator of the engine's large arrays: its task slots, id maps and
// queues, which at a backlog of a million tasks hold hundreds of MiB read in
// no useful order. Every block starts on a cache line (a slot, a map's
// group of buckets is one line). On Linux a block of 2 MiB or more is a
// mapping of its own, on a huge-page boundary, with the kernel asked for
// huge pages (transparent huge pages in "madvise" mode, Debian's default):
// with 4 KiB pages nearly every decision at such a backlog also misses the
// TLB, and the page walk itself misses cache. A fresh mapping, not the
// heap: memory the heap hands back may already be mapped with small pages,
// and the advice would not change them. A kernel that refuses the advice
// leaves plain pages, which work the same. Under AddressSanitizer every
// block comes from the heap, where the sanitizer sees it.
#include <cstddef>
#include <cstdint>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define CRONOQ_LARGE_PAGES 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CRONOQ_LARGE_PAGES 0
#endif
#endif
#if !defined(CRONOQ_LARGE_PAGES) && defined(__linux__) && defined(MADV_HUGEPAGE)
#define CRONOQ_LARGE_PAGES 1
#endif
#if !defined(CRONOQ_LARGE_PAGES)
#define CRONOQ_LARGE_PAGES 0
#endif

namespace cronoq::core::detail {

inline constexpr std::size_t cache_line_bytes = 64;
inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

template <class T>
struct LargeAllocator {
    using value_type = T;

    LargeAllocator() = default;
    template <class U>
    LargeAllocator(const LargeAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
#if CRONOQ_LARGE_PAGES
        if (bytes >= huge_page_bytes) return static_cast<T*>(map_huge(bytes));
#endif
        return static_cast<T*>(::operator new(bytes, std::align_val_t{line}));
    }
    void deallocate(T* p, [[maybe_unused]] std::size_t n) noexcept {
#if CRONOQ_LARGE_PAGES
        const std::size_t bytes = n * sizeof(T);
        if (bytes >= huge_page_bytes) return (void)::munmap(p, round_up(bytes));
#endif
        // Unsized: Clang leaves sized deallocation off unless asked for.
        ::operator delete(p, std::align_val_t{line});
    }

    friend bool operator==(const LargeAllocator&, const LargeAllocator&) { return true; }

private:
    static constexpr std::size_t line = alignof(T) > cache_line_bytes ? alignof(T) : cache_line_bytes;
    static constexpr std::size_t round_up(std::size_t bytes) { return (bytes + huge_page_bytes - 1) & ~(huge_page_bytes - 1); }

#if CRONOQ_LARGE_PAGES
    // Maps one huge page more than needed, then unmaps what lies outside
    // the aligned block.
    static void* map_huge(std::size_t bytes) {
        const std::size_t len = round_up(bytes);
        void* m = ::mmap(nullptr, len + huge_page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) throw std::bad_alloc();
        const auto start = reinterpret_cast<std::uintptr_t>(m);
        const std::uintptr_t aligned = (start + huge_page_bytes - 1) & ~std::uintptr_t{huge_page_bytes - 1};
        if (aligned > start) ::munmap(m, aligned - start);
        if (const std::size_t tail = start + huge_page_bytes - aligned; tail > 0)
            ::munmap(reinterpret_cast<void*>(aligned + len), tail);
        void* p = reinterpret_cast<void*>(aligned);
        (void)::madvise(p, len, MADV_HUGEPAGE);  // advice: refused, the pages are plain
        return p;
    }
#endif
};

}  // namespace cronoq::core::detail
