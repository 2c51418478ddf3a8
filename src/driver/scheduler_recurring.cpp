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
#include "timers.hpp"

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
    if (s_->shutdown.shutting_down(s_->held())) throw ConfigError(where + "the scheduler is shutting down");
    const std::string name = r.name;
    s_->recurring->put(s_->held(), std::move(r), *expr, std::move(payload), s_->clock->system_now());
    if (s_->durable) s_->durable->write(s_->held(), store::RecurringPut{name, std::move(definition)});
    s_->timers.rearm_recurring(s_->held());
}

bool SchedulerCore::remove_recurring(std::string_view name) {
    State::Step step(*s_);
    if (!s_->recurring->remove(s_->held(), name)) return false;
    if (s_->durable) s_->durable->write(s_->held(), store::RecurringRemoved{std::string(name)});
    s_->timers.rearm_recurring(s_->held());
    return true;
}

}  // namespace cronoq::detail
