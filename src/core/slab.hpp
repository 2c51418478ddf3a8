#pragma once
// A vector of records addressed by dense 32-bit indices, with a free list:
// side tables that only some tasks use (a running attempt, a task's rare
// fields) take an index here instead of a field in every slot. Freed
// entries are reused last-in first-out, so the one just released (still in
// cache) is the next one handed out; after warm-up nothing allocates.
#include "runtime/large_allocator.hpp"

#include <cstdint>
#include <vector>

namespace cronoq::core::detail {

template <class T>
class Slab {
public:
    /// A default-constructed entry's index.
    std::uint32_t acquire() {
        if (!free_.empty()) {
            const std::uint32_t i = free_.back();
            free_.pop_back();
            return i;
        }
        items_.emplace_back();
        return static_cast<std::uint32_t>(items_.size() - 1);
    }

    /// Resets the entry (so that it holds no resource while free) and
    /// makes its index available again.
    void release(std::uint32_t i) {
        items_[i] = T{};
        free_.push_back(i);
    }

    /// Makes the index available again with the entry as the caller left
    /// it (storage it keeps for the next user).
    void recycle(std::uint32_t i) { free_.push_back(i); }

    T& operator[](std::uint32_t i) { return items_[i]; }
    const T& operator[](std::uint32_t i) const { return items_[i]; }
    /// Entries ever made, free ones included.
    std::uint32_t size() const { return static_cast<std::uint32_t>(items_.size()); }

private:
    std::vector<T, LargeAllocator<T>> items_;
    std::vector<std::uint32_t> free_;
};

}  // namespace cronoq::core::detail
