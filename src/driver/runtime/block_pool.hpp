#pragma once
// Recycled blocks for the driver's per-task and per-attempt objects.
//
// A task's record and an attempt are made under the engine's mutex and freed
// wherever their last reference goes: any thread, possibly after the
// scheduler. With glibc's allocator a burst of submissions then costs a
// `malloc` per object, a `free` that sorts the chunk into its bins on every
// release, and, when a burst drains, the heap's top returned to the kernel
// and faulted in again by the next burst. A pool of fixed-size blocks
// instead keeps freed blocks for the next tasks, up to a bound (64 MiB of
// them by default): past it, a freed block goes back to the heap, so that a
// burst's memory does not stay with the scheduler for good.
//
// The kept blocks live in a *region* of the pool's own: one anonymous
// mapping of the bound's size, reserved when the pool is made (address
// space only) and carved from the front as blocks are first needed (pages
// are committed as they are first written). Blocks past it come from the
// heap and go back to it when freed. The region keeps a burst's records out
// of malloc's arenas: with 100 000 records (48 MB) in the arena of the
// thread that took them, the application's own large allocations there
// (a batch's vector of tasks, `try_submit_many`'s results) no longer fit
// beside them and went into a fresh heap each batch, which glibc unmapped
// when the batch drained and faulted in page by page the next time.
//
// Threads: `allocate` only under the engine's mutex (one taker at a time);
// `deallocate` from any thread. A freed block is pushed onto a lock-free
// list; the taker moves that whole list to its own when its own is empty
// (an exchange, so the list cannot suffer the ABA problem of popping one
// block at a time). The pool is freed by the last of its owner and its
// outstanding blocks.
//
// Beside the lists, one *spare* block: a block freed while the spare place
// is empty goes there (one compare-exchange), and the next allocation takes
// it back with a plain load and store. A block in the spare place still
// counts as given out, so neither its freeing nor its reuse touches the
// lists or the pool's references: with a task at a time (a round trip), a
// record or an attempt goes back and forth there for 1 atomic operation
// instead of 4. The owner's release closes the spare place and sends its
// block home.
//
// Under AddressSanitizer every block is a fresh allocation, so that a use
// after free of a record or an attempt is still caught; so it is where no
// region can be mapped (not Linux, or the mapping refused): no block is
// kept then.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace cronoq::detail {

#if !defined(__linux__)
inline constexpr bool recycle_blocks = false;
#elif defined(__SANITIZE_ADDRESS__)
inline constexpr bool recycle_blocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool recycle_blocks = false;
#else
inline constexpr bool recycle_blocks = true;
#endif
#else
inline constexpr bool recycle_blocks = true;
#endif

/// The block std::allocate_shared<T> needs with a PoolAllocator: T and a
/// control block (a vtable pointer, two counts and the allocator; 24 bytes
/// in libstdc++, 32 in libc++).
template <class T>
inline constexpr std::size_t shared_block_size = sizeof(T) + 4 * sizeof(void*);

class BlockPool {
public:
    /// The bytes of free blocks a pool keeps at most, by default: the size
    /// of its region.
    static constexpr std::size_t default_kept_bytes = std::size_t{64} << 20;

    /// A pool of blocks of `block_size` bytes that keeps at most about
    /// `kept_bytes` of free ones, owned by the caller until
    /// `release_owner()`.
    static BlockPool* create(std::size_t block_size, std::size_t kept_bytes = default_kept_bytes) {
        return new BlockPool(block_size, kept_bytes);
    }

    std::size_t block_size() const { return size_; }
    /// Free blocks kept for reuse on the lists (the spare aside). Only
    /// while no block is being freed or taken (it walks the lists): for
    /// tests.
    std::size_t kept() const {
        std::size_t n = 0;
        for (const Free* f = own_; f; f = f->next) ++n;
        for (const Free* f = returned_.load(std::memory_order_acquire); f; f = f->next) ++n;
        return n;
    }
    /// Whether a freed block waits in the spare place.
    bool has_spare() const {
        void* s = spare_.load(std::memory_order_relaxed);
        return s != nullptr && s != closed();
    }
    /// Whether `p` is one of the region's blocks (kept when freed).
    bool in_region(const void* p) const noexcept {
        // As integers: blocks from the heap are no part of the region's
        // object, and comparing pointers into different objects is not
        // defined.
        const auto b = reinterpret_cast<std::uintptr_t>(p);
        return b >= reinterpret_cast<std::uintptr_t>(region_) && b < reinterpret_cast<std::uintptr_t>(region_end_);
    }

    /// Under the engine's mutex only. Throws std::bad_alloc.
    void* allocate() {
        if constexpr (recycle_blocks) {
            // Frees fill the place only when it is empty, and only this
            // taker empties it: a block seen there stays until the store
            // below, which needs no atomic read-modify-write. Acquire: what
            // the freeing thread did with the block comes first. (Never
            // closed here: the owner allocates no more once it let go.)
            if (void* spare = spare_.load(std::memory_order_acquire)) {
                spare_.store(nullptr, std::memory_order_relaxed);
                return spare;
            }
        }
        void* p = take();
        refs_.fetch_add(1, std::memory_order_relaxed);
        return p;
    }

    /// From any thread.
    void deallocate(void* p) noexcept {
        if constexpr (recycle_blocks) {
            // Looked at first (a plain load): in a burst of frees the place
            // is taken, and a compare-exchange bound to fail would cost each
            // of them an atomic operation more.
            void* empty = nullptr;
            if (spare_.load(std::memory_order_relaxed) == nullptr &&
                spare_.compare_exchange_strong(empty, p, std::memory_order_release, std::memory_order_relaxed))
                return;
        }
        give_back(p);
    }

    /// The owner lets go; blocks still out keep the pool until they return.
    void release_owner() noexcept {
        if constexpr (recycle_blocks) {
            if (void* spare = spare_.exchange(closed(), std::memory_order_acquire)) give_back(spare);
        }
        unref();
    }

private:
    struct Free {
        Free* next;
    };

    // What no block's address can be: the spare place once closed.
    static void* closed() noexcept { return reinterpret_cast<void*>(std::uintptr_t{1}); }

    // A block back onto the lists if it is the region's, else to the heap.
    void give_back(void* p) noexcept {
        if (!in_region(p)) {
            ::operator delete(p);
            return unref();
        }
        auto* block = static_cast<Free*>(p);
        block->next = returned_.load(std::memory_order_relaxed);
        while (!returned_.compare_exchange_weak(block->next, block, std::memory_order_release, std::memory_order_relaxed)) {
        }
        unref();
    }

    void* take() {
        if (!own_) own_ = returned_.exchange(nullptr, std::memory_order_acquire);
        if (own_) return std::exchange(own_, own_->next);
        if (region_end_ - fresh_ >= static_cast<std::ptrdiff_t>(size_)) return std::exchange(fresh_, fresh_ + size_);
        return ::operator new(size_);
    }

    BlockPool(std::size_t block_size, std::size_t kept_bytes) : size_(round_up(block_size)) {
#if defined(__linux__)
        if constexpr (recycle_blocks) {
            // Address space only: pages are committed as they are first
            // written, so an idle scheduler costs none of it.
            const std::size_t bytes = kept_bytes / size_ * size_;
            void* m = bytes == 0 ? MAP_FAILED
                                 : ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (m != MAP_FAILED) {
                region_ = fresh_ = static_cast<char*>(m);
                region_end_ = region_ + bytes;
                advise_huge_pages();
            }
        }
#else
        (void)kept_bytes;
#endif
    }
    ~BlockPool() {
        // Every block on the lists is the region's: they go with it.
#if defined(__linux__)
        if (region_) ::munmap(region_, static_cast<std::size_t>(region_end_ - region_));
#endif
    }
    // Past its first 2 MiB, the region asks for huge pages. A burst's
    // records are read again in admission order a whole backlog later,
    // each on a page of its own with 4 KiB pages: the address translation
    // then misses as the record does, and on a virtual machine a page walk
    // costs more than the miss (a Dispatch's first write to its record was
    // a third of the driver's time in it). The first 2 MiB stay small
    // pages, so that a scheduler with few tasks commits only the pages it
    // writes. Advice: a kernel that refuses it leaves plain pages.
    void advise_huge_pages() noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
        const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(region_);
        const std::uintptr_t from = (start + 2 * huge - 1) / huge * huge;  // at least 2 MiB in
        const std::uintptr_t to = reinterpret_cast<std::uintptr_t>(region_end_) / huge * huge;
        if (from < to) (void)::madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
#endif
    }
    // Blocks stay aligned for any type, one after the other in the region.
    static std::size_t round_up(std::size_t bytes) {
        constexpr std::size_t a = alignof(std::max_align_t);
        if (bytes < sizeof(Free)) bytes = sizeof(Free);
        return (bytes + a - 1) / a * a;
    }
    void unref() noexcept {
        if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }

    const std::size_t size_;
    char* region_ = nullptr;  // set once, when the pool is made
    char* region_end_ = nullptr;
    char* fresh_ = nullptr;  // the region's first block never given out; the taker's
    std::atomic<std::size_t> refs_{1};  // the owner and every block out
    Free* own_ = nullptr;               // the taker's, under the engine's mutex
    std::atomic<Free*> returned_{nullptr};  // freed blocks of the region
    std::atomic<void*> spare_{nullptr};     // counted as given out while there
};

/// For std::allocate_shared: the shared object and its control block in
/// one block of the pool. Types larger than the pool's blocks, or arrays,
/// go to operator new (none does in practice; the choice depends on the
/// type alone, so a block always returns the way it came).
template <class T>
class PoolAllocator {
public:
    using value_type = T;

    explicit PoolAllocator(BlockPool* pool) noexcept : pool_(pool) {}
    template <class U>
    PoolAllocator(const PoolAllocator<U>& other) noexcept : pool_(other.pool()) {}

    T* allocate(std::size_t n) {
        if (fits(n)) return static_cast<T*>(pool_->allocate());
        return static_cast<T*>(::operator new(n * sizeof(T)));
    }
    void deallocate(T* p, std::size_t n) noexcept {
        if (fits(n))
            pool_->deallocate(p);
        else
            ::operator delete(p);
    }

    BlockPool* pool() const noexcept { return pool_; }
    template <class U>
    bool operator==(const PoolAllocator<U>& o) const noexcept {
        return pool_ == o.pool();
    }

private:
    bool fits(std::size_t n) const noexcept {
        return n == 1 && sizeof(T) <= pool_->block_size() && alignof(T) <= alignof(std::max_align_t);
    }
    BlockPool* pool_;
};

/// Owns a BlockPool for its holder (a scheduler's state).
class OwnedPool {
public:
    explicit OwnedPool(std::size_t block_size, std::size_t kept_bytes = BlockPool::default_kept_bytes)
        : pool_(BlockPool::create(block_size, kept_bytes)) {}
    OwnedPool(const OwnedPool&) = delete;
    OwnedPool& operator=(const OwnedPool&) = delete;
    ~OwnedPool() { pool_->release_owner(); }

    template <class T, class... Args>
    std::shared_ptr<T> make(Args&&... args) {
        return std::allocate_shared<T>(PoolAllocator<T>(pool_), std::forward<Args>(args)...);
    }

    const BlockPool& pool() const { return *pool_; }

private:
    BlockPool* pool_;
};

}  // namespace cronoq::detail
