#pragma once
// How a scheduler stops (docs/guide/operations.md, docs/guide/durability.md):
// a shutdown's grace, the end of the lead reported by the store, the wait
// for attempts that ignore cancellation, and the moment it is drained. It
// owns the scheduler's mode (shutting down, finished, its waiters told),
// which every way in reads through it; each call runs inside a step (it
// takes an EngineHeld) unless it says otherwise.
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/store/journal.hpp>

#include "engine_mutex.hpp"

#include <chrono>

namespace cronoq::detail {

class Shutdown {
public:
    explicit Shutdown(SchedulerCore::State& s) : s_(s) {}

    /// `Scheduler::shutdown`: no new work; what runs gets `grace`, then is
    /// aborted (without a store) or handed over to the next leader (with one).
    void begin(const EngineHeld& held, std::chrono::nanoseconds grace);
    /// The store's report that the lead ended, on its thread (no mutex):
    /// stops at once, and what has not ended stays in the store.
    void lead_lost(const store::LeadershipLost& lost);
    /// Ends a shutdown once nothing runs; called at the end of every step,
    /// so the common case (no shutdown) is one test, inline.
    void check_drained(const EngineHeld& held) {
        if (shutting_down_) drain(held);
    }
    /// Whether a shutdown began (or the lead was lost): no new work is taken.
    bool shutting_down(const EngineHeld&) const { return shutting_down_; }
    /// Whether it completed: no timer may be armed again.
    bool finished(const EngineHeld&) const { return finished_; }

private:
    /// What both ways to stop share: no new work, waiting submitters told.
    void stop_taking_work(const EngineHeld& held);
    void drain(const EngineHeld& held);
    /// Shutdown waits `abandon_after` for coroutines of attempts the engine
    /// has ended (all aborted by now); what ignores cancellation longer is
    /// abandoned: it keeps what it uses alive, and its late result is ignored.
    void arm_abandon(const EngineHeld& held);
    void abandon_deaf_attempts();
    /// Every remote worker is told the scheduler stops (docs/remote.md).
    void tell_workers(const EngineHeld& held);

    SchedulerCore::State& s_;
    bool shutting_down_ = false;
    bool finished_ = false;      // no timer may be armed again
    bool drained_sent_ = false;  // its waiters were told
};

}  // namespace cronoq::detail
