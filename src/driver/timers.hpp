#pragma once
// What the driver does when time passes (docs/design.md, the driver): the
// engine's timer, armed for its next wakeup after every step, and the
// recurring table's, which admits each due occurrence
// (docs/guide/time-and-cron.md). It owns the engine's timer and what it is
// armed for; the recurring table owns its own timer (recurring_table.hpp),
// which this type arms and serves. Every call but the timers' own
// callbacks and `disarm` runs inside a step (it takes an EngineHeld).
#include <cronoq/clock.hpp>
#include <cronoq/core/engine.hpp>
#include <cronoq/detail/scheduler_core.hpp>

#include "engine_mutex.hpp"
#include "recurring.hpp"

#include <chrono>
#include <memory>
#include <optional>

namespace cronoq::detail {

class Timers {
public:
    using WallTime = std::chrono::system_clock::time_point;

    Timers(SchedulerCore::State& s, std::unique_ptr<Clock::Timer> timer) : s_(s), timer_(std::move(timer)) {}

    /// Arms the engine's timer for its next wakeup. Every step's actions
    /// end with it, and mostly the wakeup has not moved (timers.cpp, in the
    /// batch of the step's other calls, where it inlines).
    void rearm(const EngineHeld& held);
    /// Arms the recurring table's timer for its next occurrence.
    void rearm_recurring(const EngineHeld& held);
    /// The recurring table's timer (no mutex): admits what is due, in a step.
    void on_recurring_due();
    /// The engine's timer is never armed again (a shutdown completed).
    void stop(const EngineHeld& held);
    /// No mutex: the scheduler goes; the timer's wait is cancelled (its
    /// callback holds only a weak reference).
    void disarm() { timer_->disarm(); }

private:
    void arm(const EngineHeld& held, std::optional<core::Time> next);
    /// The engine's timer (no mutex): the engine's tick, in a step.
    void on_wakeup();
    /// A schedule's occurrence at `at`, admitted (its overlap policy permitting).
    void fire(const EngineHeld& held, Schedule& s, WallTime at, core::Time now, WallTime wall);

    SchedulerCore::State& s_;
    std::unique_ptr<Clock::Timer> timer_;
    std::optional<core::Time> armed_;  // the wakeup timer_ is armed for
};

}  // namespace cronoq::detail
