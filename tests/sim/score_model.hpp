#pragma once
// The simulator's own model of the ready set, scored by the SPEC §3 formula
//
//     score = base[class] + min(aging_rate * wait, age_cap) + urgency
//
// so that every dispatch of every policy can be judged against the
// best-scored ready task, without scanning the ready set.
//
// Exact maximum: within a class, deadline-free tasks score highest at their
// oldest. Deadline tasks sit in segment trees over their latest-start order,
// one for tasks still aging and one for tasks whose aging is capped; within
// one urgency region (none, ramp, overdue, overdue capped) the score is
// linear in (ready time, latest start), so one range minimum per region and
// tree gives the region's best.
//
// The model also names the task the SPEC's head rule picks (per class, the
// FIFO head and the deadline-heap head by latest start, best by score, then
// ready time, then id), which the engine must dispatch exactly.
#include "sim.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace cronoq::sim {

class ScoreModel {
public:
    /// With `verify`, every contended dispatch also scans the whole ready set
    /// and counts a disagreement with the closed form (`verify_mismatches`).
    ScoreModel(const Trace& trace, const core::EngineConfig& config, bool verify = false);

    /// `task` became ready (it arrived).
    void arrive(std::uint32_t task);

    struct Verdict {
        bool contended;  ///< more than one task was ready
        bool best;       ///< the task scored as high as the best ready task (within rounding)
    };
    /// Judges the dispatch of `task` at `now`, then removes it from the ready set.
    Verdict dispatch(std::uint32_t task, Nanos now);

    /// The ready task that the SPEC §3 head comparison picks at `now`.
    std::optional<std::uint32_t> head_rule_choice(Nanos now);

    std::size_t ready() const { return ready_; }
    std::uint64_t verify_mismatches() const { return verify_mismatches_; }

    /// The score of a task at `now`, computed as the engine computes it.
    double score(std::uint32_t task, Nanos now) const;

private:
    static constexpr double inf = std::numeric_limits<double>::infinity();

    /// Minima over a set of deadline tasks; +inf when the set is empty.
    struct Mins {
        double ready = inf;    ///< ready time (s)
        double ramp = inf;     ///< aging_rate * ready + ramp_slope * latest_start
        double overdue = inf;  ///< aging_rate * ready + overdue_rate * latest_start
        double latest = inf;   ///< latest start (s)
    };

    class MinTree {
    public:
        explicit MinTree(std::size_t n = 0);
        void set(std::size_t pos, const Mins& leaf);
        void clear(std::size_t pos) { set(pos, Mins{}); }
        Mins query(std::size_t lo, std::size_t hi) const;
        /// Position of the leftmost occupied leaf, if any.
        std::optional<std::size_t> first() const;

    private:
        static Mins combine(const Mins& a, const Mins& b);
        std::size_t size_ = 1;
        std::vector<Mins> nodes_;
    };

    struct ClassState {
        std::vector<std::uint32_t> plain;        ///< deadline-free tasks, arrival order
        std::size_t plain_head = 0;
        std::vector<std::uint32_t> by_arrival;   ///< deadline tasks, arrival order
        std::size_t promote_next = 0;            ///< next deadline task whose aging may cap
        std::vector<std::uint32_t> by_latest;    ///< deadline tasks by (latest start, index)
        std::vector<double> latest;              ///< their latest starts (s), sorted
        MinTree aging;                           ///< ready deadline tasks still aging
        MinTree capped;                          ///< ready deadline tasks at the age cap
    };

    enum class State : std::uint8_t { Waiting, Ready, Gone };

    Mins leaf(std::uint32_t task) const;
    void promote(ClassState& c, Nanos now);
    std::optional<std::uint32_t> plain_head(ClassState& c);
    double best_score(Nanos now);
    bool ranks_before(std::uint32_t a, std::uint32_t b, Nanos now) const;

    const Trace& trace_;
    core::EngineConfig config_;
    double ramp_slope_;     ///< urgency points per second in the window
    double overdue_span_;   ///< seconds past the latest start until the overdue cap
    double age_cap_wait_;   ///< seconds of waiting until the age cap
    std::vector<ClassState> classes_;
    std::vector<std::uint32_t> rank_;  ///< task -> position in its class's latest-start order
    std::vector<State> state_;
    std::vector<bool> in_capped_;
    std::size_t ready_ = 0;
    bool verify_;
    std::vector<std::uint32_t> ready_list_;  ///< with verify: the ready tasks, any order
    std::vector<std::uint32_t> ready_pos_;   ///< with verify: task -> index in ready_list_
    std::uint64_t verify_mismatches_ = 0;
};

}  // namespace cronoq::sim
