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
//
// Guaranteed shares (PriorityConfig::min_share) are deficit counting over
// the same heads: a credit per class, O(classes) more per decision.
#include "ring.hpp"

#include <cronoq/core/time.hpp>
#include <cronoq/priority.hpp>

#include <algorithm>
#include <array>
#include <cmath>
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
    /// Shares of the dispatches per class (validated: each in [0, 1), sum
    /// below 1); all zero turns the credit counting off.
    void set_shares(const std::array<double, priority_count>& shares) {
        sharing_ = false;
        for (std::size_t cls = 0; cls < priority_count; ++cls) {
            share_units_[cls] = std::llround(shares[cls] * static_cast<double>(dispatch_unit));
            sharing_ = sharing_ || share_units_[cls] > 0;
        }
        credit_.fill(0);
    }

    /// The class has no ready task left: a share is a guarantee while the
    /// class waits, not a balance it can save up.
    void drop_credit(Priority p) { credit_[index_of(p)] = 0; }

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
    ///
    /// With shares, when two or more classes have a head that fits, each of
    /// them earns its share in credit; a class at 1 or more (the most
    /// credit first, then the better class) takes the slot with its
    /// longest-waiting head and pays 1, else the best head does, and its
    /// class pays 1 down to 0 if that head is also its longest-waiting one.
    template <class Live, class RankOf, class Fits>
    std::optional<std::uint32_t> pop_best(Live&& live, RankOf&& rank, Fits&& fits, bool& took_best) {
        std::optional<Rank> best_any;
        std::optional<Head> best;
        std::array<std::optional<Head>, priority_count> oldest{};  // per class, among heads that fit
        for (std::size_t cls = 0; cls < priority_count; ++cls) {
            ClassQueue& c = classes_[cls];
            while (!c.fifo.empty() && !live(c.fifo.front())) c.fifo.pop_front();
            while (!c.deadlines.empty() && !live(c.deadlines.front().ref)) pop_heap(c.deadlines);
            while (!c.returned.empty() && !live(c.returned.front().ref)) pop_heap(c.returned);
            const auto consider = [&](Source source, std::uint32_t slot) {
                const Rank r = rank(slot);
                if (!best_any || r.beats(*best_any)) best_any = r;
                if (!fits(slot)) return;
                const Head head{r, cls, source};
                if (sharing_ && (!oldest[cls] || waited_longer(r, oldest[cls]->rank))) oldest[cls] = head;
                if (best && !r.beats(best->rank)) return;
                best = head;
            };
            if (!c.fifo.empty()) consider(Source::Fifo, c.fifo.front().slot);
            if (!c.deadlines.empty()) consider(Source::Deadline, c.deadlines.front().ref.slot);
            if (!c.returned.empty()) consider(Source::Returned, c.returned.front().ref.slot);
        }
        if (!best) return std::nullopt;
        Head chosen = *best;
        if (sharing_) {
            if (const auto owed = owed_class(oldest)) {
                chosen = *oldest[*owed];
                credit_[*owed] -= dispatch_unit;
            } else if (oldest[chosen.cls]->rank.id == chosen.rank.id) {
                credit_[chosen.cls] = std::max<std::int64_t>(0, credit_[chosen.cls] - dispatch_unit);
            }
        }
        took_best = chosen.rank.id == best_any->id;
        return take(chosen);
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
    enum class Source : std::uint8_t { Fifo, Deadline, Returned };
    struct Head {
        Rank rank;
        std::size_t cls;
        Source source;
    };

    static bool waited_longer(const Rank& a, const Rank& b) {
        if (a.ready_since != b.ready_since) return a.ready_since < b.ready_since;
        return a.id < b.id;
    }

    // Credits are earned only when there is a choice to make: a class alone
    // with ready work takes every slot anyway.
    std::optional<std::size_t> owed_class(const std::array<std::optional<Head>, priority_count>& present) {
        std::size_t contenders = 0;
        for (const auto& h : present) contenders += h.has_value();
        if (contenders < 2) return std::nullopt;
        std::optional<std::size_t> owed;
        for (std::size_t cls = 0; cls < priority_count; ++cls) {
            if (!present[cls]) continue;
            credit_[cls] += share_units_[cls];
            if (credit_[cls] >= dispatch_unit && (!owed || credit_[cls] > credit_[*owed])) owed = cls;
        }
        return owed;
    }

    std::uint32_t take(const Head& head) {
        ClassQueue& c = classes_[head.cls];
        std::uint32_t slot;
        switch (head.source) {
            case Source::Deadline:
                slot = c.deadlines.front().ref.slot;
                pop_heap(c.deadlines);
                break;
            case Source::Returned:
                slot = c.returned.front().ref.slot;
                pop_heap(c.returned);
                break;
            case Source::Fifo:
            default:
                slot = c.fifo.front().slot;
                c.fifo.pop_front();
                break;
        }
        return slot;
    }

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
    // Credit in billionths of a dispatch: integers, so that a share of 0.1
    // earns exactly one dispatch in ten (ten additions of the double 0.1
    // fall short of 1).
    static constexpr std::int64_t dispatch_unit = 1'000'000'000;
    std::array<std::int64_t, priority_count> share_units_{};
    std::array<std::int64_t, priority_count> credit_{};
    bool sharing_ = false;
};

}  // namespace cronoq::core::detail
