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
        auto bytes = s_->encoder.encode(r.task);
        if (!bytes) throw ConfigError(where + "task: " + bytes.message());
        definition = encode_schedule(r, bytes.value().payload, bytes.value().wall);
        payload = std::move(bytes).value().payload;
    }
    State::Step step(*s_);
    if (r.task.pool && !s_->engine.find_pool(*r.task.pool))
        throw ConfigError(where + "no pool named \"" + *r.task.pool + "\"");
    if (s_->shutting_down) throw ConfigError(where + "the scheduler is shutting down");
    const std::string name = r.name;
    s_->recurring->put(s_->held(), std::move(r), *expr, std::move(payload), s_->clock->system_now());
    if (s_->durable) s_->durable->write(s_->held(), store::RecurringPut{name, std::move(definition)});
    s_->rearm_recurring();
}

bool SchedulerCore::remove_recurring(std::string_view name) {
    State::Step step(*s_);
    if (!s_->recurring->remove(s_->held(), name)) return false;
    if (s_->durable) s_->durable->write(s_->held(), store::RecurringRemoved{std::string(name)});
    s_->rearm_recurring();
    return true;
}

// ---- recurring schedules (mutex held) -----------------------------------------------------

void SchedulerCore::State::on_recurring_due() {
    if (shutting_down) return;
    const auto now = clock->now();
    const auto wall = clock->system_now();
    // Admitting an occurrence changes no schedule but its own `last`.
    for (const RecurringTable::Due& due : recurring->take_due(held(), wall, now)) fire(*due.schedule, due.at, now, wall);
    rearm_recurring();
}

void SchedulerCore::State::fire(Schedule& s, std::chrono::system_clock::time_point at, core::Time now,
                                std::chrono::system_clock::time_point wall) {
    const std::string& name = s.request.name;
    // In the step's batch with the occurrence's row: a new leader either
    // sees both (and fires neither again) or neither (and fires it).
    if (durable) durable->write(held(), store::RecurringFired{name, at});
    const std::optional<TaskStatus> previous = s.last ? engine.status(*s.last) : std::nullopt;
    auto request = occurrence(s, at, previous);
    if (!request) {
        if (debug_logging)
            log([name = name, at] {
                logger()->debug("recurring \"{}\": no occurrence at {} (overlap policy)", name, utc_rfc3339(at));
            });
        return;
    }
    // The occurrence's bytes: the template's payload, encoded when the
    // schedule was added, and its own options (no application code).
    Submission submission(*request);
    if (durable) submission.encoded = encoder.with_payload(s.encoded_payload, submission.request, wall);
    OneSubmission one(submission);
    admit(one, AdmitMode::Each, now);
    apply(now);
    auto handle = std::move(one).take();
    if (handle)
        s.last = handle.value()->id();
    else
        log([name = name, at, message = handle.message()] {
            logger()->warn("recurring \"{}\": occurrence at {} not submitted: {}", name, utc_rfc3339(at), message);
        });
}

void SchedulerCore::State::rearm_recurring() {
    if (finished) return;
    recurring->rearm(held(), clock->system_now(), clock->now(), shutting_down);
}

}  // namespace cronoq::detail
