#pragma once
// The storage of the fair keys' rings (docs/design.md#fair-sharing, Cost):
// blocks of 2^k queue refs (from one cache line) carved from chunks that
// the pool owns. A key's ring on the heap is a block of its own among
// every other allocation, so with thousands of keys nearly every touch of
// a ring is another 4 KiB page and (in a virtual machine, where a page
// walk is nested) a costly TLB miss. Carved from chunks the rings lie
// dense: the chunks grow geometrically from 4 KiB on the heap (a small
// engine keeps a small pool), and once the pool holds 1 MiB each further
// chunk is 2 MiB, which LargeAllocator maps on a huge page.
//
// A buddy allocator inside each chunk: a freed block merges with its
// buddy (the other half of the block twice its size) when that is free
// too, and a larger free block splits for a smaller request. Rings grow by
// doubling, and keys grow together (a backlog spread over many keys), so
// without merging the blocks they outgrow would stay free and resident
// for good; merged, they serve the next keys' larger blocks, as the heap
// would. A block larger than 32 KiB comes from LargeAllocator alone.
// A freed block waits on its list for the next ring of its size (last in,
// first out: still in cache).
#include "queue_ref.hpp"
#include "runtime/large_allocator.hpp"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define CRONOQ_POOL_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define CRONOQ_POOL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define CRONOQ_POOL_POISON(p, n) ((void)(p), (void)(n))
#define CRONOQ_POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace cronoq::core::detail {

class RefBlockPool {
public:
    /// The least block: one cache line of refs.
    static constexpr std::uint32_t min_block = cache_line_bytes / sizeof(QueueRef);
    /// The largest block carved from chunks (32 KiB): a ring past it (a
    /// large backlog, or the key "" of a pool without keys) holds more
    /// than its tasks' slots cost anyway, and its storage goes back to the
    /// system when it grows or goes.
    static constexpr std::uint32_t max_pooled = 4096;
    static constexpr std::size_t first_chunk_bytes = 4096;
    /// Pool bytes from which each chunk is a huge page.
    static constexpr std::size_t huge_from_bytes = std::size_t{1} << 20;

    /// Whether blocks of `refs` come from chunks (else from LargeAllocator).
    static constexpr bool pooled(std::uint32_t refs) { return refs <= max_pooled; }

    RefBlockPool() = default;
    RefBlockPool(const RefBlockPool&) = delete;
    RefBlockPool& operator=(const RefBlockPool&) = delete;
    RefBlockPool(RefBlockPool&& other) noexcept { swap(other); }
    RefBlockPool& operator=(RefBlockPool&& other) noexcept {
        RefBlockPool gone(std::move(other));
        swap(gone);
        return *this;
    }
    ~RefBlockPool() {
        for (const Chunk& c : chunks_) {
            CRONOQ_POOL_UNPOISON(c.base, c.bytes);
            LargeAllocator<QueueRef>{}.deallocate(reinterpret_cast<QueueRef*>(c.base), c.bytes / sizeof(QueueRef));
        }
    }

    /// A block of `refs` refs (a power of two, at least min_block).
    QueueRef* take(std::uint32_t refs) {
        if (!pooled(refs)) return LargeAllocator<QueueRef>{}.allocate(refs);
        const unsigned want = order_of(refs);
        unsigned have = want;
        while (have < orders && free_[have] == nullptr) ++have;
        if (have == orders) have = add_chunk(want);
        Free* block = free_[have];
        Chunk& c = chunk_of(block);
        unlink(c, block, have);
        auto* at = reinterpret_cast<std::byte*>(block);
        while (have > want) {  // the upper halves stay free
            --have;
            push_free(c, at + block_bytes(have), have);
        }
        CRONOQ_POOL_UNPOISON(at, block_bytes(want));
        return reinterpret_cast<QueueRef*>(at);
    }

    /// Gives back a block that `take(refs)` returned.
    void give(QueueRef* block, std::uint32_t refs) {
        if (!pooled(refs)) return LargeAllocator<QueueRef>{}.deallocate(block, refs);
        unsigned order = order_of(refs);
        auto* at = reinterpret_cast<std::byte*>(block);
        Chunk& c = chunk_of(at);
        std::size_t offset = static_cast<std::size_t>(at - c.base);
        while (block_bytes(order) < c.bytes) {
            const std::size_t buddy = offset ^ block_bytes(order);
            if (c.free_order[buddy / cache_line_bytes] != order + 1) break;
            unlink(c, reinterpret_cast<Free*>(c.base + buddy), order);
            offset = std::min(offset, buddy);
            ++order;
        }
        push_free(c, c.base + offset, order);
    }

    /// Bytes of the chunks carved so far.
    std::size_t chunk_bytes() const { return total_; }

private:
    struct Free {
        Free* next;
        Free* prev;
    };
    struct Chunk {
        std::byte* base;
        std::size_t bytes;
        // Per line of the chunk: 1 + the order of the free block that
        // starts there, or 0.
        std::vector<std::uint8_t> free_order;
    };
    static constexpr unsigned orders = std::countr_zero(huge_page_bytes / cache_line_bytes) + 1;
    static_assert(max_pooled * sizeof(QueueRef) <= huge_page_bytes);
    static constexpr std::size_t block_bytes(unsigned order) { return cache_line_bytes << order; }
    static unsigned order_of(std::uint32_t refs) { return static_cast<unsigned>(std::countr_zero(refs / min_block)); }

    Chunk& chunk_of(const void* p) {
        const auto* at = static_cast<const std::byte*>(p);
        auto it = std::upper_bound(chunks_.begin(), chunks_.end(), at,
                                   [](const std::byte* a, const Chunk& c) { return a < c.base; });
        return *(it - 1);
    }
    void push_free(Chunk& c, std::byte* at, unsigned order) {
        CRONOQ_POOL_UNPOISON(at, sizeof(Free));
        Free* block = new (at) Free{free_[order], nullptr};
        if (block->next != nullptr) block->next->prev = block;
        free_[order] = block;
        c.free_order[static_cast<std::size_t>(at - c.base) / cache_line_bytes] = static_cast<std::uint8_t>(order + 1);
        CRONOQ_POOL_POISON(at + sizeof(Free), block_bytes(order) - sizeof(Free));
    }
    void unlink(Chunk& c, Free* block, unsigned order) {
        if (block->prev != nullptr)
            block->prev->next = block->next;
        else
            free_[order] = block->next;
        if (block->next != nullptr) block->next->prev = block->prev;
        c.free_order[static_cast<std::size_t>(reinterpret_cast<std::byte*>(block) - c.base) / cache_line_bytes] = 0;
    }
    // A chunk with room for a block of `order`, as one free block; returns
    // its order.
    unsigned add_chunk(unsigned order) {
        std::size_t bytes = first_chunk_bytes;
        if (total_ >= huge_from_bytes) {
            bytes = huge_page_bytes;
        } else {
            while (bytes < total_) bytes *= 2;
        }
        bytes = std::max(bytes, block_bytes(order));
        auto* base = reinterpret_cast<std::byte*>(LargeAllocator<QueueRef>{}.allocate(bytes / sizeof(QueueRef)));
        Chunk c{base, bytes, std::vector<std::uint8_t>(bytes / cache_line_bytes)};
        auto it = std::upper_bound(chunks_.begin(), chunks_.end(), base,
                                   [](const std::byte* a, const Chunk& k) { return a < k.base; });
        it = chunks_.insert(it, std::move(c));
        total_ += bytes;
        CRONOQ_POOL_POISON(base, bytes);
        const auto top = static_cast<unsigned>(std::countr_zero(bytes / cache_line_bytes));
        push_free(*it, base, top);
        return top;
    }
    void swap(RefBlockPool& other) noexcept {
        std::swap(chunks_, other.chunks_);
        std::swap(free_, other.free_);
        std::swap(total_, other.total_);
    }

    std::vector<Chunk> chunks_;  // by address
    Free* free_[orders] = {};
    std::size_t total_ = 0;
};

}  // namespace cronoq::core::detail
