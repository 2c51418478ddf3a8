#pragma once
// The ready tasks of one pool (docs/guide/ordering.md). Per class, the deadline-free
// tasks shared fairly between their fair keys (fair_queue.hpp,
// docs/design.md#fair-sharing: FIFO inside a key) and a min-heap of
// deadline tasks by latest start. Aging adds the same
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
#include "fair_queue.hpp"
#include "queue_ref.hpp"
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

    /// A deadline-free task, behind the others of its fair key; `parked`:
    /// the key is at its cap.
    void push(Priority p, FairKeyId key, double weight, QueueRef ref, bool parked) {
        classes_[index_of(p)].fair.push(key, weight, ref, parked);
    }

    // ---- fair keys (docs/design.md#fair-sharing) ------------------------------
    /// A task of `key` started after it won outside the fair order (a
    /// deadline, a return from a resource): its key pays for the dispatch.
    void charge(Priority p, FairKeyId key) { classes_[index_of(p)].fair.charge(key); }
    /// The key reached its cap: its deadline-free tasks wait, in every class.
    void park_key(FairKeyId key) {
        for (ClassQueue& c : classes_) c.fair.park(key);
    }
    void unpark_key(FairKeyId key) {
        for (ClassQueue& c : classes_) c.fair.unpark(key);
    }
    /// The key's state in the class and where its push will write in its
    /// ring, which a push will touch soon.
    void prefetch_key(Priority p, FairKeyId key) const { classes_[index_of(p)].fair.prefetch_key(key); }
    void set_weight(FairKeyId key, double weight) {
        for (ClassQueue& c : classes_) c.fair.set_weight(key, weight);
    }
    /// Whether the last entry `pop_best` took came from outside the fair
    /// order (a deadline heap or the returned heap).
    bool took_outside() const { return took_outside_; }
    /// Fair keys holding entries in the queue, over the classes.
    std::size_t fair_states() const {
        std::size_t n = 0;
        for (const ClassQueue& c : classes_) n += c.fair.keys();
        return n;
    }

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
    /// when `fits` is ignored (priority adherence). `classes` has a bit per
    /// class that may hold a live entry (it has ready tasks); the others
    /// are not looked at, and their stale entries wait for a later pop.
    ///
    /// With shares, when two or more classes have a head that fits, each of
    /// them earns its share in credit; a class at 1 or more (the most
    /// credit first, then the better class) takes the slot with its
    /// longest-waiting head and pays 1, else the best head does, and its
    /// class pays 1 down to 0 if that head is also its longest-waiting one.
    template <class Live, class RankOf, class Fits>
    std::optional<std::uint32_t> pop_best(Live&& live, RankOf&& rank, Fits&& fits, bool& took_best, unsigned classes) {
        // Two instances, so that a pool without shares runs none of the
        // credit bookkeeping: this is every dispatch's hot path.
        if (sharing_) return pop<true>(live, rank, fits, took_best, classes);
        return pop<false>(live, rank, fits, took_best, classes);
    }
    static constexpr unsigned all_classes = (1u << priority_count) - 1;

    /// The longest-waiting of a class's deadline-free tasks in the fair
    /// order (fair_queue.hpp `oldest`): O(active keys), for the autoscaler.
    template <class Live, class Older>
    std::optional<std::uint32_t> oldest_fair(std::size_t cls, Live&& live, Older&& older) {
        return classes_[cls].fair.oldest(live, older);
    }

    /// Calls `f(slot)` for the head entry of each FIFO and heap, stale or
    /// not: the next decision reads their tasks, so a caller may start
    /// loading them while it does other work.
    template <class F>
    void for_each_head(F&& f) const {
        for (const ClassQueue& c : classes_) {
            if (const auto slot = c.fair.peek()) f(*slot);
            if (!c.deadlines.empty()) f(c.deadlines.front().ref.slot);
            if (!c.returned.empty()) f(c.returned.front().ref.slot);
        }
    }

private:
    enum class Source : std::uint8_t { Fifo, Deadline, Returned };
    struct Head {
        Rank rank;
        std::size_t cls;
        Source source;
    };

    template <bool Sharing, class Live, class RankOf, class Fits>
    std::optional<std::uint32_t> pop(Live& live, RankOf& rank, Fits& fits, bool& took_best, unsigned classes) {
        std::optional<Rank> best_any;
        Head best{};
        bool have_best = false;
        // Per class, its longest-waiting head that fits; kept only with
        // shares, and meaningful where `present` has the class's bit (plain
        // arrays and a mask: this is the hot path of every dispatch).
        [[maybe_unused]] std::array<Head, priority_count> oldest;
        [[maybe_unused]] unsigned present = 0;
        for (unsigned left = classes & all_classes; left != 0; left &= left - 1) {
            const auto cls = static_cast<std::size_t>(__builtin_ctz(left));  // the better classes first
            ClassQueue& c = classes_[cls];
            while (!c.deadlines.empty() && !live(c.deadlines.front().ref)) pop_heap(c.deadlines);
            while (!c.returned.empty() && !live(c.returned.front().ref)) pop_heap(c.returned);
            const auto consider = [&](Source source, std::uint32_t slot) {
                const Rank r = rank(slot);
                if (!best_any || r.beats(*best_any)) best_any = r;
                if (!fits(slot)) return;
                if constexpr (Sharing) {
                    if (!(present >> cls & 1u) || waited_longer(r, oldest[cls].rank)) {
                        oldest[cls] = Head{r, cls, source};
                        present |= 1u << cls;
                    }
                }
                if (have_best && !r.beats(best.rank)) return;
                best = Head{r, cls, source};
                have_best = true;
            };
            if (const auto slot = c.fair.head(live)) consider(Source::Fifo, *slot);
            if (!c.deadlines.empty()) consider(Source::Deadline, c.deadlines.front().ref.slot);
            if (!c.returned.empty()) consider(Source::Returned, c.returned.front().ref.slot);
        }
        if (!have_best) return std::nullopt;
        Head chosen = best;
        if constexpr (Sharing) {
            if (const auto owed = owed_class(present)) {
                chosen = oldest[*owed];
                credit_[*owed] -= dispatch_unit;
            } else if (oldest[chosen.cls].rank.id == chosen.rank.id) {
                credit_[chosen.cls] = std::max<std::int64_t>(0, credit_[chosen.cls] - dispatch_unit);
            }
        }
        took_best = chosen.rank.id == best_any->id;
        took_outside_ = chosen.source != Source::Fifo;
        return take(chosen);
    }

    static bool waited_longer(const Rank& a, const Rank& b) {
        if (a.ready_since != b.ready_since) return a.ready_since < b.ready_since;
        return a.id < b.id;
    }

    // Credits are earned only when there is a choice to make: a class alone
    // with ready work takes every slot anyway.
    // `present`: a bit per class with a head that fits.
    std::optional<std::size_t> owed_class(unsigned present) {
        if ((present & (present - 1)) == 0) return std::nullopt;  // fewer than two classes
        std::optional<std::size_t> owed;
        for (std::size_t cls = 0; cls < priority_count; ++cls) {
            if (!(present >> cls & 1u)) continue;
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
                slot = c.fair.pop();  // the head `pop` just found live
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
        FairQueue fair;  // deadline-free tasks, by fair key
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
    bool took_outside_ = false;
};

}  // namespace cronoq::core::detail
