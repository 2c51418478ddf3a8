#pragma once
// The ready tasks of one pool (SPEC §3). Per class, a FIFO of deadline-free
// tasks and a min-heap of deadline tasks by latest start. Aging adds the same
// rate to every class, so within a class the FIFO head is the oldest and
// scores highest; among deadline tasks, the one with the earliest latest
// start is the most urgent. Deadline-free tasks that come back from waiting
// on a resource sit in a third heap, by ready time, so they keep their place
// in the class's FIFO order. Choosing the next task compares at most twelve
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

    /// A deadline-free task coming back after waiting elsewhere (parked on
    /// a resource): ordered by when it became ready, so it keeps its FIFO
    /// place against the class FIFO's head.
    void push_returned(Priority p, Time ready_since, std::uint64_t id, QueueRef ref) {
        auto& heap = classes_[index_of(p)].returned;
        heap.push_back(DeadlineRef{ready_since, id, ref});
        std::push_heap(heap.begin(), heap.end(), later);
    }

    /// Removes and returns the best live entry that fits. `live(ref)` tells
    /// whether an entry still stands for a ready task; `rank(slot)` scores it
    /// now; `fits(slot)` whether it may take the free slot now (a head that
    /// does not fit stays, and the other heads compete without it).
    /// `took_best` tells whether the entry returned is also the best one
    /// when `fits` is ignored (priority adherence).
    template <class Live, class RankOf, class Fits>
    std::optional<std::uint32_t> pop_best(Live&& live, RankOf&& rank, Fits&& fits, bool& took_best) {
        ClassQueue* best_class = nullptr;
        std::optional<Rank> best_any;
        Source best_source = Source::Fifo;
        std::optional<Rank> best;
        for (ClassQueue& c : classes_) {
            while (!c.fifo.empty() && !live(c.fifo.front())) c.fifo.pop_front();
            while (!c.deadlines.empty() && !live(c.deadlines.front().ref)) pop_heap(c.deadlines);
            while (!c.returned.empty() && !live(c.returned.front().ref)) pop_heap(c.returned);
            const auto consider = [&](Source source, std::uint32_t slot) {
                const Rank r = rank(slot);
                if (!best_any || r.beats(*best_any)) best_any = r;
                if (!fits(slot)) return;
                if (best && !r.beats(*best)) return;
                best = r;
                best_class = &c;
                best_source = source;
            };
            if (!c.fifo.empty()) consider(Source::Fifo, c.fifo.front().slot);
            if (!c.deadlines.empty()) consider(Source::Deadline, c.deadlines.front().ref.slot);
            if (!c.returned.empty()) consider(Source::Returned, c.returned.front().ref.slot);
        }
        if (!best_class) return std::nullopt;
        took_best = best->id == best_any->id;
        std::uint32_t slot;
        switch (best_source) {
            case Source::Deadline:
                slot = best_class->deadlines.front().ref.slot;
                pop_heap(best_class->deadlines);
                break;
            case Source::Returned:
                slot = best_class->returned.front().ref.slot;
                pop_heap(best_class->returned);
                break;
            case Source::Fifo:
            default:
                slot = best_class->fifo.front().slot;
                best_class->fifo.pop_front();
                break;
        }
        return slot;
    }

    /// The live head of a class's FIFO (its longest-waiting deadline-free
    /// task), dropping stale entries on the way.
    template <class Live>
    std::optional<std::uint32_t> fifo_head(std::size_t cls, Live&& live) {
        Ring<QueueRef>& fifo = classes_[cls].fifo;
        while (!fifo.empty() && !live(fifo.front())) fifo.pop_front();
        if (fifo.empty()) return std::nullopt;
        return fifo.front().slot;
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
        std::vector<DeadlineRef> returned;  // keyed by ready time, not latest start
    };
    enum class Source : std::uint8_t { Fifo, Deadline, Returned };

    // Heap order: the earliest latest start (then the lowest id) on top.
    static bool later(const DeadlineRef& a, const DeadlineRef& b) {
        if (a.latest_start != b.latest_start) return a.latest_start > b.latest_start;
        return a.id > b.id;
    }
    static void pop_heap(std::vector<DeadlineRef>& heap) {
        std::pop_heap(heap.begin(), heap.end(), later);
        heap.pop_back();
    }

    std::array<ClassQueue, priority_count> classes_;
};

}  // namespace cronoq::core::detail
