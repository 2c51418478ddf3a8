#pragma once
// The order between the keys of a class by virtual finish tags
// (fair_queue.hpp): a heap and a rotation together. The rotation is a FIFO
// of entries in increasing order, taking an entry only when it comes after
// its back. With equal weights a served key's grown tag, and a key that
// becomes active, always does: keys then go round in turn through a ring
// read front to back, and a decision sifts nothing through a heap of every
// active key (one cache line or more per level, out of cache with thousands
// of keys). The heap takes the entries that would pass the rotation's back
// (unequal weights).
#include "fair_key_id.hpp"
#include "ring.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace cronoq::core::detail {

class FairOrder {
public:
    struct Entry {
        double finish;
        std::uint64_t order;  // ties: the key that waited longest for its tag
        FairKeyId key;
        // Where the key's state was in its queue's slab when the entry was
        // made (in the padding): the order reaches a key's state without
        // the index, whose line is one more load per decision. An entry
        // whose order is not its state's live order is stale, whoever holds
        // that state now (orders are unique).
        std::uint32_t state;
    };
    static_assert(sizeof(Entry) == 24);

    bool empty() const { return heap_.empty() && rotation_.empty(); }
    /// The least entry (not empty).
    const Entry& top() const { return top_in_rotation() ? rotation_.front() : heap_.front(); }
    void pop_top() {
        if (top_in_rotation()) return rotation_.pop_front();
        pop_heap();
    }
    void push(const Entry& e) {
        if (fits_rotation(e)) return rotation_.push_back(e);
        heap_.push_back(e);
        sift_up(heap_.size() - 1);
    }
    /// The top's key, served, goes on with the grown tag of `next`; true
    /// when the rotation moved (its next keys changed).
    bool retag_top(const Entry& next) {
        if (top_in_rotation()) {
            rotation_.pop_front();
            push(next);
            return true;
        }
        if (fits_rotation(next)) {
            pop_heap();
            rotation_.push_back(next);
        } else {
            // Its entry on top takes the grown tag and sinks: one pass
            // down, where a pop and a push would go down and then up.
            heap_.front() = next;
            sift_down(0);
        }
        return false;
    }
    void clear() {
        heap_.clear();
        rotation_.clear();
    }

    /// In no order: for scans of every entry.
    const std::vector<Entry>& heap() const { return heap_; }
    /// In order: the keys served next, when the rotation leads.
    const Ring<Entry>& rotation() const { return rotation_; }

private:
    // Heap order: the least tag on top, then the earliest tagged.
    static bool after(const Entry& a, const Entry& b) {
        if (a.finish != b.finish) return a.finish > b.finish;
        return a.order > b.order;
    }
    bool top_in_rotation() const {
        return !rotation_.empty() && (heap_.empty() || !after(rotation_.front(), heap_.front()));
    }
    bool fits_rotation(const Entry& e) const { return rotation_.empty() || !after(rotation_.back(), e); }

    // The heap is 4-ary: a served key's tag grows past every other, so it
    // sinks to the bottom on most decisions; four children per level halve
    // the levels it passes (and their cache lines) against a binary heap.
    static constexpr std::size_t arity = 4;

    void pop_heap() {
        heap_.front() = heap_.back();
        heap_.pop_back();
        if (!heap_.empty()) sift_down(0);
    }
    void sift_up(std::size_t at) {
        const Entry moving = heap_[at];
        while (at > 0) {
            const std::size_t parent = (at - 1) / arity;
            if (!after(heap_[parent], moving)) break;
            heap_[at] = heap_[parent];
            at = parent;
        }
        heap_[at] = moving;
    }
    // Restores the heap below `at` after its entry's tag grew.
    void sift_down(std::size_t at) {
        const std::size_t n = heap_.size();
        const Entry moving = heap_[at];
        for (;;) {
            const std::size_t first = arity * at + 1;
            if (first >= n) break;
            std::size_t best = first;
            const std::size_t last = std::min(first + arity, n);
            for (std::size_t c = first + 1; c < last; ++c)
                if (after(heap_[best], heap_[c])) best = c;
            if (!after(moving, heap_[best])) break;
            heap_[at] = heap_[best];
            at = best;
        }
        heap_[at] = moving;
    }

    std::vector<Entry> heap_;
    Ring<Entry> rotation_;
};

}  // namespace cronoq::core::detail
