#pragma once
// The simulator's own model of the ready set of a main trace (tasks ready
// from their arrival, no retries), scored by the docs/guide/ordering.md formula
//
//     score = base[class] + min(aging_rate * wait, age_cap) + urgency
//
// with the urgency window max(window, window_factor x expected duration),
// so that every dispatch of every policy can be judged against the
// best-scored ready task, without scanning the ready set.
//
// Exact maximum: a task's score is piecewise linear in time, with at most
// four breakpoints known when it becomes ready (aging reaches the cap, the
// window opens, the latest start, the overdue cap). Each ready task is a
// line of its current piece in a kinetic tournament tree (kinetic_max.hpp);
// a breakpoint replaces the line when time reaches it.
//
// The model also names the task the engine must dispatch: per class, the
// FIFO head and the deadline-heap head by latest start, best by score, then
// ready time, then id; unless a class is owed its share
// (PriorityConfig::min_share), then that class's longest-waiting head.
#include "kinetic_max.hpp"
#include "sim.hpp"

#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

namespace cronoq::sim {

class ScoreModel {
public:
    /// With `verify`, every contended dispatch also scans the whole ready set
    /// and counts a disagreement with the tree (`verify_mismatches`).
    ScoreModel(const Trace& trace, const core::EngineConfig& config, bool verify = false);

    /// `task` became ready at `now` (its arrival).
    void arrive(std::uint32_t task, Nanos now);

    struct Verdict {
        bool contended;  ///< more than one task was ready
        bool best;       ///< the task scored as high as the best ready task (within rounding)
    };
    /// Judges the dispatch of `task` at `now`, then removes it from the
    /// ready set. After `head_rule_choice`, also moves the share credit on
    /// as the engine did for that choice.
    Verdict dispatch(std::uint32_t task, Nanos now);

    /// The ready task that the engine must dispatch at `now`.
    std::optional<std::uint32_t> head_rule_choice(Nanos now);

    std::size_t ready() const { return ready_; }
    std::uint64_t verify_mismatches() const { return verify_mismatches_; }

    /// The score of a task at `now`, computed as the engine computes it.
    double score(std::uint32_t task, Nanos now) const;

private:
    static constexpr double inf = std::numeric_limits<double>::infinity();
    static constexpr std::int64_t unit = 1'000'000'000;  // one dispatch in the engine's credit units

    /// score = k + m * t (t in seconds) until `until`.
    struct Piece {
        double k;
        double m;
        double until;
    };
    Piece piece_at(std::uint32_t task, double t) const;
    double window_seconds(const TaskRec& t) const;
    void advance(double t);
    bool ranks_before(std::uint32_t a, std::uint32_t b, Nanos now) const;
    bool waited_longer(std::uint32_t a, std::uint32_t b) const;

    struct ClassState {
        std::deque<std::uint32_t> plain;  ///< deadline-free ready tasks, arrival order (lazy)
        using Entry = std::pair<Nanos, std::uint32_t>;  ///< (latest start, task)
        std::priority_queue<Entry, std::vector<Entry>, std::greater<>> deadlines;  ///< lazy
        std::size_t ready = 0;
    };

    const Trace& trace_;
    core::EngineConfig config_;
    std::vector<ClassState> classes_;
    std::vector<bool> is_ready_;
    KineticMax tree_;
    using Event = std::pair<double, std::uint32_t>;  ///< (breakpoint, task)
    std::priority_queue<Event, std::vector<Event>, std::greater<>> breakpoints_;
    std::size_t ready_ = 0;
    std::array<std::int64_t, priority_count> share_units_{};
    std::array<std::int64_t, priority_count> credit_{};
    std::array<std::int64_t, priority_count> pending_credit_{};
    bool sharing_ = false;
    bool pending_ = false;
    bool verify_;
    std::vector<std::uint32_t> ready_list_;  ///< with verify: the ready tasks, any order
    std::vector<std::uint32_t> ready_pos_;   ///< with verify: task -> index in ready_list_
    std::uint64_t verify_mismatches_ = 0;
};

}  // namespace cronoq::sim
