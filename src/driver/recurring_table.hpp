#pragma once
// The scheduler's recurring schedules and the timer at the earliest next
// occurrence (docs/guide/time-and-cron.md). The table owns both; the driver
// admits each occurrence the table finds due (through the one admission
// entry) and writes what a store keeps. Everything but `stop` needs the
// engine's mutex (an `EngineHeld`): occurrences are taken in engine steps.
#include <cronoq/clock.hpp>
#include <cronoq/cron_expr.hpp>
#include <cronoq/detail/task_request.hpp>
#include <cronoq/store/journal.hpp>

#include "engine_mutex.hpp"
#include "recurring.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cronoq::detail {

class RecurringTable {
public:
    using WallTime = std::chrono::system_clock::time_point;

    /// `timer` fires at the earliest next occurrence; `on_due` is what it runs.
    RecurringTable(std::unique_ptr<Clock::Timer> timer, std::function<void()> on_due);

    /// Adds or replaces the schedule named `r.name`. A schedule replaced
    /// under its name (a process re-adding its schedules after a restart,
    /// say) goes on from its last occurrence, so that it fires none twice
    /// and one it missed once. `encoded_payload`: with a store, the
    /// template's payload through the codec.
    void put(const EngineHeld&, RecurringRequest r, const CronExpr& expr, std::string encoded_payload, WallTime wall);
    /// False if there is no schedule of that name.
    bool remove(const EngineHeld&, std::string_view name);
    /// A schedule read back from a store.
    void restore(const EngineHeld&, Schedule schedule);

    /// A schedule due and the occurrence it takes now.
    struct Due {
        Schedule* schedule;  ///< stays valid until the table next changes
        WallTime at;
    };
    /// Each schedule due by `wall`, with the occurrence it takes now (its
    /// `last_fired` already set).
    std::vector<Due> take_due(const EngineHeld&, WallTime wall, core::Time now);
    /// Arms the timer at the earliest next occurrence (checking the wall
    /// clock at least every `wall_check_interval`); disarms it when none is
    /// left or `stopped`.
    void rearm(const EngineHeld&, WallTime wall, core::Time now, bool stopped);
    /// No schedule fires any more (shutdown; the scheduler's destruction).
    void stop() { timer_->disarm(); }
    /// Every schedule, by name (what the dashboard lists).
    const std::map<std::string, Schedule, std::less<>>& schedules(const EngineHeld&) const { return schedules_; }

private:
    std::unique_ptr<Clock::Timer> timer_;
    std::function<void()> on_due_;
    std::map<std::string, Schedule, std::less<>> schedules_;
};

}  // namespace cronoq::detail
