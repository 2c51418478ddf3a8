#pragma once
// Autoscaling in the engine (docs/guide/resources-and-bounds.md): each
// pool's Autoscaler (PoolState::scaler) is evaluated when due, from the
// pool's exact state; a new capacity is applied at once (lowering it never
// aborts a running attempt) and announced with ScaleTo. A user policy is
// the owner's code, which the engine never runs: it emits AskScaler and
// applies the answer the owner gives back (answer).
#include "engine_types.hpp"
#include "outbox.hpp"
#include "task_table.hpp"
#include "timer_heap.hpp"

#include <optional>
#include <vector>

namespace cronoq::core {

class Autoscaling {
public:
    Autoscaling(const TaskTable& tasks, std::vector<PoolState>& pools, TimerHeap& timers, Outbox& out)
        : tasks_(tasks), pools_(pools), timers_(timers), out_(out) {}

    /// Evaluates every autoscaled pool that is due: applies a new capacity
    /// with a ScaleTo, or asks a user policy (AskScaler); keeps each
    /// pool's Autoscale timer armed at its next evaluation. A paused pool
    /// holds still: not evaluated, no timer, until it resumes.
    void evaluate_due(Time now) {
        for (std::size_t i = 0; i < pools_.size(); ++i)
            if (pools_[i].autoscale_config && !pools_[i].paused) evaluate(static_cast<PoolId>(i), now);
    }
    /// The user policy's answer (Engine::answer_scaler); false when no
    /// question is open.
    bool answer(PoolId pool, std::optional<std::size_t> wanted, Time now);

private:
    void evaluate(PoolId pool, Time now);
    /// The pool as an evaluation reads it: exact state, taken as is.
    detail::PoolLoad load_of(PoolState& p, const detail::Autoscaler& a, Time now) const;
    void scale_to(PoolId pool, std::size_t capacity, Time now);

    const TaskTable& tasks_;
    std::vector<PoolState>& pools_;
    TimerHeap& timers_;
    Outbox& out_;
};

}  // namespace cronoq::core
