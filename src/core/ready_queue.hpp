#pragma once
// The ready tasks of one pool (SPEC §3). Per class, a FIFO of deadline-free
// tasks and a min-heap of deadline tasks by latest start. Aging adds the same
// rate to every class, so within a class the FIFO head is the oldest and
// scores highest; among deadline tasks, the one with the earliest latest
// start is the most urgent. Choosing the next task compares at most eight
// heads: O(classes + log n), no scan.
//
// Entries are removed lazily: a task that leaves the Ready state bumps its
// generation, and a stale entry is dropped when it reaches a head.
#include "ring.hpp"

#include <cronoq/core/time.hpp>
#include <cronoq/priority.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace cronoq::core::detail {

struct QueueRef {
    std::uint32_t slot;
    std::uint32_t gen;
};

/// Ranks two candidates: higher score first, then earlier ready time, then
/// lower id (submission order).
struct Rank {
    double score;
    Time ready_since;
    std::uint64_t id;
    bool beats(const Rank& o) const {
        if (score != o.score) return score > o.score;
        if (ready_since != o.ready_since) return ready_since < o.ready_since;
        return id < o.id;
    }
};

class ReadyQueue {
public:
    void push(Priority p, QueueRef ref) { classes_[index_of(p)].fifo.push_back(ref); }

    void push_deadline(Priority p, Time latest_start, std::uint64_t id, QueueRef ref) {
        auto& heap = classes_[index_of(p)].deadlines;
        heap.push_back(DeadlineRef{latest_start, id, ref});
        std::push_heap(heap.begin(), heap.end(), later);
    }

    /// Removes and returns the best live entry that fits. `live(ref)` tells
    /// whether an entry still stands for a ready task; `rank(slot)` scores it
    /// now; `fits(slot)` whether it may take the free slot now (a head that
    /// does not fit stays, and the other heads compete without it).
    template <class Live, class RankOf, class Fits>
    std::optional<std::uint32_t> pop_best(Live&& live, RankOf&& rank, Fits&& fits) {
        ClassQueue* best_class = nullptr;
        bool best_is_deadline = false;
        std::optional<Rank> best;
        for (ClassQueue& c : classes_) {
            while (!c.fifo.empty() && !live(c.fifo.front())) c.fifo.pop_front();
            while (!c.deadlines.empty() && !live(c.deadlines.front().ref)) pop_heap(c.deadlines);
            if (!c.fifo.empty() && fits(c.fifo.front().slot))
                consider(c, false, rank(c.fifo.front().slot), best, best_class, best_is_deadline);
            if (!c.deadlines.empty() && fits(c.deadlines.front().ref.slot))
                consider(c, true, rank(c.deadlines.front().ref.slot), best, best_class, best_is_deadline);
        }
        if (!best_class) return std::nullopt;
        std::uint32_t slot;
        if (best_is_deadline) {
            slot = best_class->deadlines.front().ref.slot;
            pop_heap(best_class->deadlines);
        } else {
            slot = best_class->fifo.front().slot;
            best_class->fifo.pop_front();
        }
        return slot;
    }

private:
    struct DeadlineRef {
        Time latest_start;
        std::uint64_t id;
        QueueRef ref;
    };
    struct ClassQueue {
        Ring<QueueRef> fifo;
        std::vector<DeadlineRef> deadlines;
    };

    // Heap order: the earliest latest start (then the lowest id) on top.
    static bool later(const DeadlineRef& a, const DeadlineRef& b) {
        if (a.latest_start != b.latest_start) return a.latest_start > b.latest_start;
        return a.id > b.id;
    }
    static void pop_heap(std::vector<DeadlineRef>& heap) {
        std::pop_heap(heap.begin(), heap.end(), later);
        heap.pop_back();
    }
    static void consider(ClassQueue& c, bool is_deadline, const Rank& r, std::optional<Rank>& best,
                         ClassQueue*& best_class, bool& best_is_deadline) {
        if (best && !r.beats(*best)) return;
        best = r;
        best_class = &c;
        best_is_deadline = is_deadline;
    }

    std::array<ClassQueue, priority_count> classes_;
};

}  // namespace cronoq::core::detail
