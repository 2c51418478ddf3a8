#pragma once
// The engine's actions, applied at the end of each engine call
// (docs/design.md, the driver): a Dispatch starts an attempt (after the
// step) or sends a remote worker its lease, an Abort cancels one, a Status
// records a transition (its row, its event, a handle's outcome), a Forget
// lets a retained record go, ScaleTo and AskScaler are a pool's capacity,
// SpaceAvailable wakes a submitter waiting for room. Everything here runs
// inside a step (CRONOQ_REQUIRES the engine's mutex) but `ask_scaler`; what
// touches the application is left as the step's deferred work.
#include "scheduler_state.hpp"

#include <chrono>

namespace cronoq::detail {

class Actions {
public:
    using WallTime = std::chrono::system_clock::time_point;

    explicit Actions(SchedulerCore::State& s) : s_(s) {}

    /// Drains the engine's actions and applies them in order, then rearms
    /// the timer and checks a shutdown's end.
    void apply(const EngineHeld& held, core::Time now);
    /// Wakes the first submitter of `pool` waiting for room (its resumption is posted).
    void wake_next_submit(const EngineHeld& held, PoolRuntime& pool);

private:
    void on(core::Dispatch& d, core::Time now, WallTime wall) CRONOQ_REQUIRES(s_.mu);
    void on(core::Abort& a, core::Time now, WallTime wall) CRONOQ_REQUIRES(s_.mu);
    void on(core::Status& s, core::Time now, WallTime wall) CRONOQ_REQUIRES(s_.mu);
    void on(core::Forget& f, core::Time now, WallTime wall) CRONOQ_REQUIRES(s_.mu);
    void on(core::ScaleTo& s, core::Time now, WallTime wall) CRONOQ_REQUIRES(s_.mu);
    void on(core::SpaceAvailable& s, core::Time now, WallTime wall) CRONOQ_REQUIRES(s_.mu);
    void on(core::AskScaler& q, core::Time now, WallTime wall) CRONOQ_REQUIRES(s_.mu);
    /// A Dispatch naming a worker: a lease sent after the mutex (docs/remote.md).
    void dispatch_remote(core::Dispatch& d, TaskRecord& record, PoolRuntime& pool) CRONOQ_REQUIRES(s_.mu);
    /// An abandoned remote lease; the worker is told after the mutex.
    void abort_remote(const core::Abort& a, std::shared_ptr<Attempt> attempt) CRONOQ_REQUIRES(s_.mu);
    /// No mutex: calls the pool's user scaler, then answers the engine in a
    /// step of its own (docs/guide/resources-and-bounds.md). A scaler is
    /// application code: on(AskScaler) copies the question and posts this
    /// call. The engine keeps one question per pool open at a time, so a
    /// scaler is never called concurrently with itself, and each call
    /// happens after the previous answer was applied.
    void ask_scaler(core::PoolId pool, const ScalerInput& question);

    SchedulerCore::State& s_;
};

}  // namespace cronoq::detail
