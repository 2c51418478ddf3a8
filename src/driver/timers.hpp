#pragma once
// What the driver does when time passes (docs/design.md, the driver): the
// engine's timer, armed for its next wakeup after every step, and the
// recurring table's, which admits each due occurrence
// (docs/guide/time-and-cron.md). The timers themselves are the scheduler's
// (`State::timer`, `RecurringTable`); this type arms them and serves them.
#include "scheduler_state.hpp"

#include <chrono>
#include <optional>

namespace cronoq::detail {

class Timers {
public:
    using WallTime = std::chrono::system_clock::time_point;

    explicit Timers(SchedulerCore::State& s) : s_(s) {}

    /// Arms the engine's timer for its next wakeup. Every step's actions
    /// end with it, and mostly the wakeup has not moved: that test is inline.
    void rearm(const EngineHeld& held) {
        s_.holding(held);
        if (s_.shutdown.finished(s_.held())) return;
        const auto next = s_.engine.next_wakeup();
        if (next == s_.armed) return;
        arm(next);
    }
    /// Arms the recurring table's timer for its next occurrence.
    void rearm_recurring(const EngineHeld& held);
    /// The recurring table's timer (no mutex): admits what is due, in a step.
    void on_recurring_due();

private:
    void arm(std::optional<core::Time> next) CRONOQ_REQUIRES(s_.mu);
    /// The engine's timer (no mutex): the engine's tick, in a step.
    void on_wakeup();
    /// A schedule's occurrence at `at`, admitted (its overlap policy permitting).
    void fire(Schedule& s, WallTime at, core::Time now, WallTime wall) CRONOQ_REQUIRES(s_.mu);

    SchedulerCore::State& s_;
};

}  // namespace cronoq::detail
