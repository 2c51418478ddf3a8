// Recurring schedules of a scheduler (docs/guide/time-and-cron.md): adding and removing them,
// and the timer that submits each occurrence when it is due. With a store
// (docs/guide/durability.md) a schedule, its removal and each occurrence taken are written
// in the step that makes them.
#include <cronoq/config_error.hpp>
#include <cronoq/cron_expr.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/logging.hpp>

#include "recurring_definition.hpp"
#include "scheduler_state.hpp"
#include "task_options.hpp"

#include <spdlog/spdlog.h>

namespace cronoq::detail {

void SchedulerCore::add_recurring(RecurringRequest r) {
    if (r.name.empty()) throw ConfigError("recurring: name must not be empty");
    const std::string where = "recurring \"" + r.name + "\": ";
    std::optional<CronExpr> expr;
    try {
        expr = CronExpr::parse(r.cron);
        (void)expr->next_after(std::chrono::system_clock::now(), r.tz);  // validates the zone
    } catch (const ConfigError& e) {
        throw ConfigError(where + e.what());
    }
    if (r.deadline_after && r.deadline_after->count() <= 0) throw ConfigError(where + "deadline_after must be positive");
    // With a store: made off the mutex (the codec is the application's).
    std::string definition;
    std::string payload;
    if (s_->durable) {
        auto bytes = s_->encode(r.task);
        if (!bytes) throw ConfigError(where + "task: " + bytes.message());
        definition = encode_schedule(r, bytes.value().payload, bytes.value().wall);
        payload = std::move(bytes).value().payload;
    }
    State::Step step(*s_);
    if (r.task.pool && !s_->engine.find_pool(*r.task.pool))
        throw ConfigError(where + "no pool named \"" + *r.task.pool + "\"");
    if (s_->shutting_down) throw ConfigError(where + "the scheduler is shutting down");
    // A schedule replaced under its name (a process re-adding its
    // schedules after a restart, say) goes on from its last occurrence, so
    // that it fires none twice and one it missed once.
    std::optional<std::chrono::system_clock::time_point> last_fired;
    if (auto old = s_->schedules.find(r.name); old != s_->schedules.end()) last_fired = old->second.last_fired;
    const auto first = expr->next_after(last_fired.value_or(s_->clock->system_now()), r.tz);
    Schedule schedule{std::move(r), *expr, first.value_or(std::chrono::system_clock::time_point::max()), std::nullopt};
    schedule.last_fired = last_fired;
    schedule.encoded_payload = std::move(payload);
    const std::string name = schedule.request.name;
    s_->schedules.insert_or_assign(name, std::move(schedule));
    if (s_->durable) s_->write(store::RecurringPut{name, std::move(definition)});
    s_->rearm_recurring();
}

bool SchedulerCore::remove_recurring(std::string_view name) {
    State::Step step(*s_);
    auto it = s_->schedules.find(name);
    if (it == s_->schedules.end()) return false;
    s_->schedules.erase(it);
    if (s_->durable) s_->write(store::RecurringRemoved{std::string(name)});
    s_->rearm_recurring();
    return true;
}

// ---- recurring schedules (mutex held) -----------------------------------------------------

void SchedulerCore::State::on_recurring_due() {
    if (shutting_down) return;
    const auto now = clock->now();
    const auto wall = clock->system_now();
    for (auto& [name, s] : schedules) {
        follow_wall_clock(s, wall, now);
        if (s.next > wall) continue;
        const auto at = take_due(s, wall);
        s.last_fired = at;
        // In the step's batch with the occurrence's row: a new leader either
        // sees both (and fires neither again) or neither (and fires it).
        if (durable) write(store::RecurringFired{name, at});
        const std::optional<TaskStatus> previous = s.last ? engine.status(*s.last) : std::nullopt;
        auto request = occurrence(s, at, previous);
        if (!request) {
            if (debug_logging)
                log([name = name, at] {
                logger()->debug("recurring \"{}\": no occurrence at {} (overlap policy)", name, utc_rfc3339(at));
            });
            continue;
        }
        // The occurrence's bytes: the template's payload, encoded when the
        // schedule was added, and its own options (no application code).
        std::optional<Encoded> encoded;
        if (durable) encoded.emplace(Encoded{s.encoded_payload, encode_options(*request, wall), wall});
        auto handle = submit_one(*request, encoded ? &*encoded : nullptr);
        if (handle)
            s.last = handle.value()->id();
        else
            log([name = name, at, message = handle.message()] {
                logger()->warn("recurring \"{}\": occurrence at {} not submitted: {}", name, utc_rfc3339(at), message);
            });
    }
    rearm_recurring();
}

void SchedulerCore::State::rearm_recurring() {
    if (finished) return;
    const auto now = clock->now();
    const auto wall = clock->system_now();
    auto earliest = std::chrono::system_clock::time_point::max();
    for (auto& [name, s] : schedules) {
        follow_wall_clock(s, wall, now);
        earliest = std::min(earliest, s.next);
    }
    if (shutting_down || earliest == std::chrono::system_clock::time_point::max()) return recurring_timer->disarm();
    const auto at = earliest <= wall ? now
                                     : now + std::min<core::Duration>(
                                                 std::chrono::duration_cast<core::Duration>(earliest - wall),
                                                 wall_check_interval);
    recurring_timer->arm(at, [w = self] {
        if (auto core = w.lock()) {
            Step step(*core->s_);
            core->s_->on_recurring_due();
        }
    });
}

}  // namespace cronoq::detail
