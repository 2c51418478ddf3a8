#pragma once
// A growable FIFO ring buffer: amortised O(1) push and pop, storage reused.
#include "runtime/large_allocator.hpp"

#include <cstddef>
#include <vector>

namespace cronoq::core::detail {

template <class T>
class Ring {
public:
    bool empty() const { return size_ == 0; }
    std::size_t size() const { return size_; }
    std::size_t capacity() const { return items_.size(); }
    const T& front() const { return items_[head_]; }
    const T& back() const { return items_[(head_ + size_ - 1) & (items_.size() - 1)]; }
    /// The i-th element from the front.
    const T& operator[](std::size_t i) const { return items_[(head_ + i) & (items_.size() - 1)]; }
    T& operator[](std::size_t i) { return items_[(head_ + i) & (items_.size() - 1)]; }

    /// Where the next push_back writes; null when it grows first.
    const T* next_back() const {
        if (size_ == items_.size()) return nullptr;
        return &items_[(head_ + size_) & (items_.size() - 1)];
    }

    void push_back(const T& value) {
        if (size_ == items_.size()) grow();
        items_[(head_ + size_) & (items_.size() - 1)] = value;
        ++size_;
    }

    void pop_front() {
        head_ = (head_ + 1) & (items_.size() - 1);
        --size_;
    }
    /// Empties the ring, keeping its storage.
    void clear() {
        head_ = 0;
        size_ = 0;
    }

private:
    void grow() {
        std::vector<T, LargeAllocator<T>> bigger(items_.empty() ? 8 : items_.size() * 2);
        for (std::size_t i = 0; i < size_; ++i) bigger[i] = items_[(head_ + i) & (items_.size() - 1)];
        items_.swap(bigger);
        head_ = 0;
    }

    std::vector<T, LargeAllocator<T>> items_;
    std::size_t head_ = 0;
    std::size_t size_ = 0;
};

}  // namespace cronoq::core::detail
