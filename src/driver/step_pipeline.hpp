#pragma once
// The driver's step pipeline (docs/design.md, the driver).
//
// Engine steps: every call that changes the engine runs inside a `Step`
// (`SchedulerCore::State::Step`), which holds the engine's mutex; a call
// that only reads the engine holds it in a `Read`. An attempt's end takes
// the mutex only if it is free; otherwise it goes to an inbox that the
// holder, step or reader, serves when letting go, so one acquisition serves
// many reports.
//
// Under the mutex the driver only calls the engine and does its own cheap
// bookkeeping (aborting an attempt is a post). Attempts dispatched in a
// step start after it, free of every lock: on a thread that runs their
// executor they start at once, otherwise they are posted. What touches
// waiters or the application — completing handles, publishing events,
// logging, waking the shutdown — is collected as `Deferred` work and done
// after the mutex is released, still in the engine's order: the next step
// cannot deliver before the previous one has (a second mutex, taken before
// the engine's is released, Delivery's).
//
// It owns what a step fills on the way: the inbox, the buffers it is
// drained into, the attempts to start and the deferred work.
#include <cronoq/core/engine.hpp>
#include <cronoq/detail/scheduler_core.hpp>

#include "attempt_state.hpp"
#include "delivery.hpp"
#include "engine_mutex.hpp"
#include "inbox.hpp"
#include "remote_bridge.hpp"

#include <memory>
#include <mutex>
#include <vector>

namespace cronoq::detail {

class StepPipeline {
public:
    explicit StepPipeline(SchedulerCore::State& s) : s_(s) {}

    /// Ends a step: with `lock` held, serves the inbox and collects the
    /// deferred work; then releases it and delivers that work in order.
    void end_step(std::unique_lock<EngineMutex>& lock) CRONOQ_NO_THREAD_SAFETY_ANALYSIS;
    /// Ends a read: releases `lock`, then serves an end posted meanwhile.
    void end_read(std::unique_lock<EngineMutex>& lock) CRONOQ_NO_THREAD_SAFETY_ANALYSIS;

    /// Queues an attempt's end; served by whichever step comes next, at
    /// once if nobody holds the engine.
    void post_end(AttemptEnd&& end);
    /// The same for several ends at once; leaves `batch` empty.
    void post_ends(std::vector<AttemptEnd>& batch);
    /// The same for a remote worker's report.
    void post_remote(RemoteEnd end);

    /// What the step leaves for after the mutex, in the engine's order.
    std::vector<Deferred>& deferred(const EngineHeld&) { return deferred_; }
    /// An attempt dispatched in this step, started once the step has let go
    /// of the engine (a start may run the executor inline).
    void start_after(const EngineHeld&, std::shared_ptr<Attempt> attempt) { starts_.push_back(std::move(attempt)); }

private:
    /// What the three posts share: `put(ends, remote_ends)` moves the
    /// report(s) into the vectors it is given.
    template <class Put>
    void offer(Put&& put) CRONOQ_NO_THREAD_SAFETY_ANALYSIS;
    /// Applies the ends the inbox holds to the engine, then its actions.
    void serve_ends(const EngineHeld& held, core::Time now);
    /// Applies one remote report to the engine.
    void serve_remote(const EngineHeld& held, RemoteEnd& end, core::Time now);

    SchedulerCore::State& s_;
    // The fields below are reached with the engine's mutex held, but the
    // inbox (its own lock).
    std::vector<Deferred> deferred_;
    std::vector<AttemptEnd> ends_;        // the inbox drained into this buffer
    std::vector<RemoteEnd> remote_ends_;  // and its remote reports
    StartList starts_;                    // in the order they were dispatched
    Inbox inbox_;
};

}  // namespace cronoq::detail
