// What the driver does when time passes (timers.hpp).
#include "timers.hpp"

#include <cronoq/logging.hpp>

#include "actions.hpp"
#include "recurring_definition.hpp"
#include "scheduler_state.hpp"
#include "task_options.hpp"

#include <spdlog/spdlog.h>

namespace cronoq::detail {

void Timers::rearm(const EngineHeld& held) {
    s_.holding(held);
    if (s_.shutdown.finished(held)) return;
    const auto next = s_.engine.next_wakeup();
    if (next == armed_) return;
    arm(held, next);
}

void Timers::arm(const EngineHeld&, std::optional<core::Time> next) {
    armed_ = next;
    if (!next) return timer_->disarm();
    timer_->arm(*next, [w = s_.self] {
        if (auto core = w.lock()) SchedulerCore::State::of(*core).timers.on_wakeup();
    });
}

void Timers::stop(const EngineHeld&) {
    armed_.reset();
    timer_->disarm();
}

void Timers::on_wakeup() {
    SchedulerCore::State::Step step(s_);
    armed_.reset();
    const auto now = s_.clock->now();
    s_.engine.tick(now);
    s_.actions.apply(s_.held(), now);
}

void Timers::on_recurring_due() {
    SchedulerCore::State::Step step(s_);
    if (s_.shutdown.shutting_down(s_.held())) return;
    const auto now = s_.clock->now();
    const auto wall = s_.clock->system_now();
    // Admitting an occurrence changes no schedule but its own `last`.
    for (const RecurringTable::Due& due : s_.recurring->take_due(s_.held(), wall, now))
        fire(s_.held(), *due.schedule, due.at, now, wall);
    rearm_recurring(s_.held());
}

void Timers::fire(const EngineHeld& held, Schedule& s, WallTime at, core::Time now, WallTime wall) {
    s_.holding(held);
    const std::string& name = s.request.name;
    // In the step's batch with the occurrence's row: a new leader either
    // sees both (and fires neither again) or neither (and fires it).
    if (s_.durable) s_.durable->write(s_.held(), store::RecurringFired{name, at});
    const std::optional<TaskStatus> previous = s.last ? s_.engine.status(*s.last) : std::nullopt;
    auto request = occurrence(s, at, previous);
    if (!request) {
        if (s_.debug_logging)
            s_.log([name = name, at] {
                logger()->debug("recurring \"{}\": no occurrence at {} (overlap policy)", name, utc_rfc3339(at));
            });
        return;
    }
    // The occurrence's bytes: the template's payload, encoded when the
    // schedule was added, and its own options (no application code).
    Submission submission(*request);
    if (s_.durable) submission.encoded = s_.encoder.with_payload(s.encoded_payload, submission.request, wall);
    OneSubmission one(submission);
    s_.admit(one, AdmitMode::Each, now);
    s_.actions.apply(s_.held(), now);
    auto handle = std::move(one).take();
    if (handle)
        s.last = handle.value()->id();
    else
        s_.log([name = name, at, message = handle.message()] {
            logger()->warn("recurring \"{}\": occurrence at {} not submitted: {}", name, utc_rfc3339(at), message);
        });
}

void Timers::rearm_recurring(const EngineHeld& held) {
    s_.holding(held);
    if (s_.shutdown.finished(held)) return;
    s_.recurring->rearm(s_.held(), s_.clock->system_now(), s_.clock->now(), s_.shutdown.shutting_down(held));
}

}  // namespace cronoq::detail
