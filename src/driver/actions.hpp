#pragma once
// The engine's actions, applied at the end of each engine call
// (docs/design.md, the driver): a Dispatch starts an attempt (after the
// step) or sends a remote worker its lease, an Abort cancels one, a Status
// records a transition (its row, its event, a handle's outcome), a Forget
// lets a retained record go, ScaleTo and AskScaler are a pool's capacity,
// SpaceAvailable wakes a submitter waiting for room. It owns the buffer the
// engine's actions are drained into and the blocks attempts are made in.
// Everything here runs inside a step (it takes an EngineHeld) but
// `ask_scaler`; what touches the application is left as the step's
// deferred work.
#include <cronoq/core/engine.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/scaler.hpp>

#include "attempt_state.hpp"
#include "engine_mutex.hpp"
#include "pool_runtime.hpp"
#include "runtime/block_pool.hpp"

#include <chrono>
#include <memory>
#include <vector>

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
    void on(const EngineHeld& held, core::Dispatch& d, core::Time now, WallTime wall);
    void on(const EngineHeld& held, core::Abort& a, core::Time now, WallTime wall);
    void on(const EngineHeld& held, core::Status& s, core::Time now, WallTime wall);
    void on(const EngineHeld& held, core::Forget& f, core::Time now, WallTime wall);
    void on(const EngineHeld& held, core::ScaleTo& s, core::Time now, WallTime wall);
    void on(const EngineHeld& held, core::SpaceAvailable& s, core::Time now, WallTime wall);
    void on(const EngineHeld& held, core::AskScaler& q, core::Time now, WallTime wall);
    /// A Dispatch naming a worker: a lease sent after the mutex (docs/remote.md).
    void dispatch_remote(const EngineHeld& held, core::Dispatch& d, TaskRecord& record, PoolRuntime& pool);
    /// An abandoned remote lease; the worker is told after the mutex.
    void abort_remote(const EngineHeld& held, const core::Abort& a, std::shared_ptr<Attempt> attempt);
    /// No mutex: calls the pool's user scaler, then answers the engine in a
    /// step of its own (docs/guide/resources-and-bounds.md). A scaler is
    /// application code: on(AskScaler) copies the question and posts this
    /// call. The engine keeps one question per pool open at a time, so a
    /// scaler is never called concurrently with itself, and each call
    /// happens after the previous answer was applied.
    void ask_scaler(core::PoolId pool, const ScalerInput& question);

    SchedulerCore::State& s_;
    std::vector<core::Action> actions_;  // the engine's, drained by apply
    // Where attempts are made: freed blocks are kept for reuse, up to a
    // bound (runtime/block_pool.hpp).
    OwnedPool attempt_blocks_{shared_block_size<Attempt>};
};

}  // namespace cronoq::detail
