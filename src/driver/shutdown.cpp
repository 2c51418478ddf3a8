// How a scheduler stops (shutdown.hpp).
#include "shutdown.hpp"

#include <cronoq/logging.hpp>

#include "actions.hpp"
#include "scheduler_state.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

namespace cronoq::detail {

void Shutdown::stop_taking_work(const EngineHeld& held) {
    s_.holding(held);
    shutting_down_ = true;
    s_.recurring->stop();
    // Waiting submitters try again and fail with ShuttingDown.
    for (PoolRuntime& p : s_.pools)
        while (!p.waiting_submits.empty()) s_.actions.wake_next_submit(s_.held(), p);
}

void Shutdown::begin(const EngineHeld& held, std::chrono::nanoseconds grace) {
    s_.holding(held);
    if (!shutting_down_) s_.log([grace] { logger()->info("shutting down (grace {} ms)", grace.count() / 1000000); });
    stop_taking_work(held);
    const auto now = s_.clock->now();
    const auto grace_end = core::add_saturated(now, std::max(grace, std::chrono::nanoseconds(0)));
    // With a store the work is handed over, not cancelled
    // (docs/guide/durability.md): what has not ended stays in the store for
    // the next leader.
    if (s_.durable)
        s_.engine.hand_over(now, grace_end);
    else
        s_.engine.shutdown(now, grace_end);
    s_.actions.apply(s_.held(), now);
    check_drained(held);
}

void Shutdown::lead_lost(const store::LeadershipLost& lost) {
    {
        SchedulerCore::State::Step step(s_);
        s_.durable->end_lead(s_.held());
        if (!shutting_down_) {
            // Fenced or failing: stop at once; what the store holds is for the
            // next leader. Running attempts are aborted without a change.
            stop_taking_work(s_.held());
            const auto now = s_.clock->now();
            s_.engine.hand_over(now, now);
            s_.actions.apply(s_.held(), now);
            s_.log([message = lost.message] { logger()->error("store: leadership lost: {}; this scheduler stops", message); });
        }
    }
    std::vector<std::shared_ptr<TaskRecord>> unfinished;
    {
        SchedulerCore::State::Step step(s_);
        unfinished = s_.admission.unfinished(s_.held());
    }
    s_.delivery.lead_lost(lost);
    const std::string why = lost.reason == store::LostReason::Released
                                ? "the scheduler shut down; the task stays in the store for the next leader"
                                : "leadership lost: " + lost.message + "; the task stays in the store for the next leader";
    for (auto& record : unfinished) record->finish(record->status(), 0, std::string(why), nullptr);
    s_.durable->leading()->set();  // an open() still waiting learns it will not lead
    s_.durable->lost_waits()->set();
    SchedulerCore::State::Step step(s_);
    check_drained(s_.held());  // a shutdown that waited for the hand-over ends now
}

void Shutdown::drain(const EngineHeld& held) {
    s_.holding(held);
    if (!finished_) {
        if (s_.durable ? !s_.engine.is_handed_over() : s_.engine.live_tasks() != 0) return;
        if (s_.launcher.any_running(s_.held())) return arm_abandon(held);
        finished_ = true;
        tell_workers(held);
        s_.timers.stop(held);
        s_.launcher.stop();
        s_.recurring->stop();
    }
    if (s_.durable && !s_.durable->lead_ended(s_.held())) {
        // At the end of this step, after its changes, the store commits what
        // is queued and gives the lead up; its report (lead_lost) completes
        // the shutdown.
        s_.durable->release_after_step(s_.held());
        return;
    }
    if (!drained_sent_) {
        drained_sent_ = true;
        s_.pipeline.deferred(held).emplace_back(Drained{});  // after every handle's Finish
    }
}

void Shutdown::arm_abandon(const EngineHeld& held) {
    s_.holding(held);
    s_.launcher.arm_abandon(s_.held(), core::add_saturated(s_.clock->now(), s_.options.abandon_after), [w = s_.self] {
        if (auto core = w.lock()) SchedulerCore::State::of(*core).shutdown.abandon_deaf_attempts();
    });
}

void Shutdown::abandon_deaf_attempts() {
    SchedulerCore::State::Step step(s_);
    for (const Attempt* a : s_.launcher.abandon_all(s_.held()))
        s_.log([id = task_id(*a->task), lease = a->lease, pool = a->pool->name, attempt = a->attempt, after = s_.options.abandon_after] {
            logger()->warn("task {} lease {} (pool \"{}\", attempt {}): the executor ignored cancellation for {} ms; "
                           "abandoned, its result will be ignored",
                           id.value, lease.value, *pool, attempt, after.count() / 1000000);
        });
    check_drained(s_.held());
}

void Shutdown::tell_workers(const EngineHeld& held) {
    s_.holding(held);
    // `not_leader` only when another scheduler may lead at once: this one
    // lost the lead, or gives it up for a standby as a store-backed shutdown
    // does. Without a store nobody takes over: the workers back off
    // (docs/remote.md, Reconnects).
    std::string reason = "the scheduler shut down";
    if (s_.durable)
        reason = s_.durable->lead_ended(s_.held()) ? "the scheduler lost the lead"
                                                  : "the scheduler shut down and released the lead: a standby may take it";
    if (auto tell = s_.remote.shutdown(s_.held(), std::move(reason), s_.durable != nullptr))
        s_.pipeline.deferred(held).emplace_back(std::move(tell));
}

}  // namespace cronoq::detail
