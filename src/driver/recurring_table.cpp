// The recurring schedules' table (recurring_table.hpp).
#include "recurring_table.hpp"

#include <algorithm>
#include <utility>

namespace cronoq::detail {

RecurringTable::RecurringTable(std::unique_ptr<Clock::Timer> timer, std::function<void()> on_due)
    : timer_(std::move(timer)), on_due_(std::move(on_due)) {}

void RecurringTable::put(const EngineHeld&, RecurringRequest r, const CronExpr& expr, std::string encoded_payload,
                         WallTime wall) {
    std::optional<WallTime> last_fired;
    if (auto old = schedules_.find(r.name); old != schedules_.end()) last_fired = old->second.last_fired;
    const auto first = expr.next_after(last_fired.value_or(wall), r.tz);
    Schedule schedule{std::move(r), expr, first.value_or(WallTime::max()), std::nullopt};
    schedule.last_fired = last_fired;
    schedule.encoded_payload = std::move(encoded_payload);
    std::string name = schedule.request.name;
    schedules_.insert_or_assign(std::move(name), std::move(schedule));
}

bool RecurringTable::remove(const EngineHeld&, std::string_view name) {
    auto it = schedules_.find(name);
    if (it == schedules_.end()) return false;
    schedules_.erase(it);
    return true;
}

void RecurringTable::restore(const EngineHeld&, Schedule schedule) {
    std::string name = schedule.request.name;
    schedules_.insert_or_assign(std::move(name), std::move(schedule));
}

std::vector<RecurringTable::Due> RecurringTable::take_due(const EngineHeld&, WallTime wall, core::Time now) {
    std::vector<Due> due;
    for (auto& [name, s] : schedules_) {
        follow_wall_clock(s, wall, now);
        if (s.next > wall) continue;
        const auto at = detail::take_due(s, wall);
        s.last_fired = at;
        due.push_back(Due{&s, at});
    }
    return due;
}

void RecurringTable::rearm(const EngineHeld&, WallTime wall, core::Time now, bool stopped) {
    auto earliest = WallTime::max();
    for (auto& [name, s] : schedules_) {
        follow_wall_clock(s, wall, now);
        earliest = std::min(earliest, s.next);
    }
    if (stopped || earliest == WallTime::max()) return timer_->disarm();
    const auto at = earliest <= wall
                        ? now
                        : now + std::min<core::Duration>(std::chrono::duration_cast<core::Duration>(earliest - wall),
                                                         wall_check_interval);
    timer_->arm(at, on_due_);  // holds the scheduler weakly
}

}  // namespace cronoq::detail
