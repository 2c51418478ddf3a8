#pragma once
// How a scheduler stops (docs/guide/operations.md, docs/guide/durability.md):
// a shutdown's grace, the end of the lead reported by the store, the wait
// for attempts that ignore cancellation, and the moment it is drained. The
// mode itself (shutting down, finished, its waiters told) is the
// scheduler's, read by every way in; this type is the sequence that moves
// it, each call inside a step (CRONOQ_REQUIRES the engine's mutex) unless
// it says otherwise.
#include <cronoq/store/journal.hpp>

#include "scheduler_state.hpp"

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
        s_.holding(held);
        if (s_.shutting_down) drain();
    }

private:
    /// What both ways to stop share: no new work, waiting submitters told.
    void stop_taking_work() CRONOQ_REQUIRES(s_.mu);
    void drain() CRONOQ_REQUIRES(s_.mu);
    /// Shutdown waits `abandon_after` for coroutines of attempts the engine
    /// has ended (all aborted by now); what ignores cancellation longer is
    /// abandoned: it keeps what it uses alive, and its late result is ignored.
    void arm_abandon() CRONOQ_REQUIRES(s_.mu);
    void abandon_deaf_attempts();
    /// Every remote worker is told the scheduler stops (docs/remote.md).
    void tell_workers() CRONOQ_REQUIRES(s_.mu);

    SchedulerCore::State& s_;
};

}  // namespace cronoq::detail
