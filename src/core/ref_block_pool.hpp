#pragma once
// The storage of the fair keys' small rings (docs/design.md#fair-sharing,
// Cost): blocks of 8 or 16 queue refs (one or two cache lines) carved from
// chunks that the pool owns, with a free list per size. A key's ring on
// the heap is a block of its own among every other allocation, so with
// thousands of keys nearly every touch of a ring is another 4 KiB page,
// and (in a virtual machine, where a page walk is nested) a costly TLB
// miss. Carved from chunks, the rings lie dense: the chunks grow
// geometrically from 4 KiB on the heap (a small engine keeps a small
// pool), and once the pool holds 1 MiB each further chunk is 2 MiB, which
// LargeAllocator maps on a huge page.
//
// Blocks larger than `max_pooled` refs (a key's backlog past 16 tasks)
// come from LargeAllocator one by one and go back to it: a pool keeps
// what it carved until it goes, and large rings freed into it would stay
// resident for good. A freed small block waits on its list for the next
// ring of its size (last in, first out: still in cache).
#include "queue_ref.hpp"
#include "runtime/large_allocator.hpp"

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
    /// The largest block carved from chunks.
    static constexpr std::uint32_t max_pooled = 2 * min_block;
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
            CRONOQ_POOL_UNPOISON(c.at, c.bytes);
            LargeAllocator<QueueRef>{}.deallocate(c.at, c.bytes / sizeof(QueueRef));
        }
    }

    /// A block of `refs` refs (a power of two, at least min_block).
    QueueRef* take(std::uint32_t refs) {
        if (!pooled(refs)) return LargeAllocator<QueueRef>{}.allocate(refs);
        const std::size_t bytes = refs * sizeof(QueueRef);
        Free*& list = free_[list_of(refs)];
        if (list != nullptr) {
            Free* block = list;
            CRONOQ_POOL_UNPOISON(block, bytes);
            list = block->next;
            return reinterpret_cast<QueueRef*>(block);
        }
        if (static_cast<std::size_t>(end_ - cursor_) < bytes) add_chunk();
        auto* block = reinterpret_cast<QueueRef*>(cursor_);
        cursor_ += bytes;
        CRONOQ_POOL_UNPOISON(block, bytes);
        return block;
    }

    /// Gives back a block that `take(refs)` returned.
    void give(QueueRef* block, std::uint32_t refs) {
        if (!pooled(refs)) return LargeAllocator<QueueRef>{}.deallocate(block, refs);
        push_free(reinterpret_cast<std::byte*>(block), refs);
    }

    /// Bytes of the chunks carved so far.
    std::size_t chunk_bytes() const { return total_; }

private:
    struct Free {
        Free* next;
    };
    struct Chunk {
        QueueRef* at;
        std::size_t bytes;
    };
    static constexpr std::size_t lists = 2;
    static constexpr std::size_t list_of(std::uint32_t refs) { return refs == min_block ? 0 : 1; }

    void push_free(std::byte* at, std::uint32_t refs) {
        Free*& list = free_[list_of(refs)];
        CRONOQ_POOL_UNPOISON(at, sizeof(Free));  // the rest of a chunk is poisoned
        Free* block = new (at) Free{list};
        list = block;
        CRONOQ_POOL_POISON(at, refs * sizeof(QueueRef));
    }
    void add_chunk() {
        // What is left of the chunk (a multiple of a line) serves later
        // single-line rings.
        while (end_ - cursor_ >= static_cast<std::ptrdiff_t>(cache_line_bytes)) {
            push_free(cursor_, min_block);
            cursor_ += cache_line_bytes;
        }
        std::size_t bytes = first_chunk_bytes;
        if (total_ >= huge_from_bytes) {
            bytes = huge_page_bytes;
        } else {
            while (bytes < total_) bytes *= 2;
        }
        QueueRef* at = LargeAllocator<QueueRef>{}.allocate(bytes / sizeof(QueueRef));
        chunks_.push_back(Chunk{at, bytes});
        total_ += bytes;
        cursor_ = reinterpret_cast<std::byte*>(at);
        end_ = cursor_ + bytes;
        CRONOQ_POOL_POISON(cursor_, bytes);
    }
    void swap(RefBlockPool& other) noexcept {
        std::swap(chunks_, other.chunks_);
        std::swap(free_, other.free_);
        std::swap(cursor_, other.cursor_);
        std::swap(end_, other.end_);
        std::swap(total_, other.total_);
    }

    std::vector<Chunk> chunks_;
    Free* free_[lists] = {nullptr, nullptr};
    std::byte* cursor_ = nullptr;  // the uncarved rest of the last chunk
    std::byte* end_ = nullptr;
    std::size_t total_ = 0;
};

}  // namespace cronoq::core::detail
