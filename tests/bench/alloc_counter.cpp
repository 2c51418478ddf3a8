// Replaces every form of the global operator new and delete for the benchmark
// binary, and std::aligned_alloc, so that alloc_counter.hpp can report how
// many allocations a timed part made. Memory comes from malloc and
// posix_memalign: the count is the only cost added to an allocation.
//
// aligned_alloc is where Asio's recycling allocator (coroutine frames,
// handlers) takes a block when its per-thread cache has none to reuse; those
// allocations never reach operator new, so without it a bare co_spawn looks
// allocation-free when it is not. Defining a C library function in the
// program replaces it for every caller here (glibc, ELF), which is why this
// file belongs to the benchmark binary only.
#include "alloc_counter.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {

// A single counter would be one cache line written by every io_context thread
// on every allocation, a cost the multi-threaded figures beside the counts
// would include. Each thread counts in a shard of its own (while there are no
// more threads than shards). A thread that has its shard to itself counts
// with a plain load and store (it is the shard's only writer; readers load
// it): an atomic read-modify-write is a locked instruction, and the figures
// beside the counts would include it. Past `shard_count` threads, shards
// are shared and counted with fetch_add.
constexpr std::size_t shard_count = 64;

struct alignas(64) Shard {
    std::atomic<std::uint64_t> news{0};
    std::atomic<std::uint64_t> aligned_allocs{0};
};

// Constant-initialized: operator new may run before any dynamic initializer.
constinit std::array<Shard, shard_count> shards{};
constinit std::atomic<std::size_t> threads_seen{0};

struct MyShard {
    Shard* shard;
    bool alone;  // this thread is its only writer
};

MyShard my_shard() {
    thread_local const std::size_t seen = threads_seen.fetch_add(1, std::memory_order_relaxed);
    return {&shards[seen % shard_count], seen < shard_count};
}

void add_one(std::atomic<std::uint64_t>& counter, bool alone) {
    if (alone)
        counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    else
        counter.fetch_add(1, std::memory_order_relaxed);
}

void count_one() {
    const MyShard m = my_shard();
    add_one(m.shard->news, m.alone);
}

// The standard's loop: retry after the new_handler until it gives up.
void* allocate(std::size_t size) {
    count_one();
    if (size == 0) size = 1;
    for (;;) {
        if (void* p = std::malloc(size)) return p;
        std::new_handler handler = std::get_new_handler();
        if (!handler) throw std::bad_alloc();
        handler();
    }
}

void* allocate_aligned(std::size_t size, std::align_val_t align) {
    count_one();
    std::size_t alignment = static_cast<std::size_t>(align);
    if (alignment < sizeof(void*)) alignment = sizeof(void*);  // posix_memalign's minimum
    if (size == 0) size = 1;
    for (;;) {
        void* p = nullptr;
        if (posix_memalign(&p, alignment, size) == 0) return p;
        std::new_handler handler = std::get_new_handler();
        if (!handler) throw std::bad_alloc();
        handler();
    }
}

void* allocate_nothrow(std::size_t size) noexcept {
    try {
        return allocate(size);
    } catch (...) {
        return nullptr;
    }
}

void* allocate_aligned_nothrow(std::size_t size, std::align_val_t align) noexcept {
    try {
        return allocate_aligned(size, align);
    } catch (...) {
        return nullptr;
    }
}

}  // namespace

namespace cronoq_bench {

std::uint64_t allocations() {
    std::uint64_t total = 0;
    for (const Shard& s : shards) total += s.news.load(std::memory_order_relaxed);
    return total;
}

std::uint64_t aligned_allocations() {
    std::uint64_t total = 0;
    for (const Shard& s : shards) total += s.aligned_allocs.load(std::memory_order_relaxed);
    return total;
}

}  // namespace cronoq_bench

void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return allocate_nothrow(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return allocate_nothrow(size); }
void* operator new(std::size_t size, std::align_val_t align) { return allocate_aligned(size, align); }
void* operator new[](std::size_t size, std::align_val_t align) { return allocate_aligned(size, align); }
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
    return allocate_aligned_nothrow(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
    return allocate_aligned_nothrow(size, align);
}

// malloc and posix_memalign blocks are both released with free.
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

// C11 semantics: null with errno EINVAL for an alignment that is not a power
// of two; glibc accepts any size.
extern "C" void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
    const MyShard m = my_shard();
    add_one(m.shard->aligned_allocs, m.alone);
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        errno = EINVAL;
        return nullptr;
    }
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    void* p = nullptr;
    if (const int error = posix_memalign(&p, alignment, size == 0 ? 1 : size); error != 0) {
        errno = error;
        return nullptr;
    }
    return p;
}
