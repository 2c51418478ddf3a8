#pragma once
// A FIFO ring of queue refs whose storage comes from a RefBlockPool: a
// fair key's tasks in its class (fair_queue.hpp). A pointer and three
// 32-bit counters, 24 bytes against Ring's 40, so that a key's state stays
// one cache line. The ring does not know its pool: the calls that take or
// give storage are passed it. A pooled block belongs to the pool's chunks,
// so a ring dropped without `release` leaves it there until the pool goes;
// a larger block is its own and the ring frees it when it goes.
#include "queue_ref.hpp"
#include "ref_block_pool.hpp"

#include <cstdint>
#include <utility>

namespace cronoq::core::detail {

class RefRing {
public:
    RefRing() = default;
    RefRing(const RefRing&) = delete;
    RefRing& operator=(const RefRing&) = delete;
    RefRing(RefRing&& other) noexcept { swap(other); }
    RefRing& operator=(RefRing&& other) noexcept {
        RefRing gone(std::move(other));
        swap(gone);
        return *this;
    }
    ~RefRing() {
        if (!RefBlockPool::pooled(capacity_)) LargeAllocator<QueueRef>{}.deallocate(items_, capacity_);
    }

    bool empty() const { return size_ == 0; }
    std::uint32_t size() const { return size_; }
    std::uint32_t capacity() const { return capacity_; }
    const QueueRef& front() const { return items_[head_]; }
    const QueueRef& back() const { return items_[(head_ + size_ - 1) & (capacity_ - 1)]; }
    /// The i-th ref from the front.
    const QueueRef& operator[](std::uint32_t i) const { return items_[(head_ + i) & (capacity_ - 1)]; }
    /// The storage's first ref (null: none).
    const QueueRef* data() const { return items_; }

    /// Where the next push_back writes; null when it grows first.
    const QueueRef* next_back() const {
        if (size_ == capacity_) return nullptr;
        return &items_[(head_ + size_) & (capacity_ - 1)];
    }

    void push_back(RefBlockPool& pool, QueueRef ref) {
        if (size_ == capacity_) grow(pool);
        items_[(head_ + size_) & (capacity_ - 1)] = ref;
        ++size_;
    }
    void pop_front() {
        head_ = (head_ + 1) & (capacity_ - 1);
        --size_;
    }
    /// Empties the ring, keeping its storage.
    void clear() {
        head_ = 0;
        size_ = 0;
    }
    /// Empties the ring and gives its storage back to `pool`.
    void release(RefBlockPool& pool) {
        if (items_ != nullptr) pool.give(items_, capacity_);
        items_ = nullptr;
        capacity_ = head_ = size_ = 0;
    }
    void swap(RefRing& other) noexcept {
        std::swap(items_, other.items_);
        std::swap(capacity_, other.capacity_);
        std::swap(head_, other.head_);
        std::swap(size_, other.size_);
    }

private:
    void grow(RefBlockPool& pool) {
        const std::uint32_t bigger = capacity_ == 0 ? RefBlockPool::min_block : capacity_ * 2;
        QueueRef* items = pool.take(bigger);
        for (std::uint32_t i = 0; i < size_; ++i) items[i] = items_[(head_ + i) & (capacity_ - 1)];
        if (items_ != nullptr) pool.give(items_, capacity_);
        items_ = items;
        capacity_ = bigger;
        head_ = 0;
    }

    QueueRef* items_ = nullptr;
    std::uint32_t capacity_ = 0;
    std::uint32_t head_ = 0;
    std::uint32_t size_ = 0;
};

}  // namespace cronoq::core::detail
