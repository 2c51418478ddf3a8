// Applying the engine's actions (actions.hpp).
#include "actions.hpp"

#include <cronoq/logging.hpp>

#include "ingestion.hpp"
#include "scheduler_state.hpp"

#include <asio/post.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

namespace cronoq::detail {

namespace {

// Runs one step of the abort sequence; what it throws is logged and the
// sequence goes on (docs/guide/executors.md: exceptions are contained).
template <class F>
void contained(const char* step, const Attempt& a, F&& f) noexcept {
    try {
        f();
    } catch (const std::exception& e) {
        logger()->warn("task {} lease {}: {} threw: {}", task_id(*a.task).value, a.lease.value, step, e.what());
    } catch (...) {
        logger()->warn("task {} lease {}: {} threw a non-standard exception", task_id(*a.task).value, a.lease.value, step);
    }
}

}  // namespace

void Actions::apply(const EngineHeld& held, core::Time now) {
    s_.holding(held);
    s_.engine.drain(actions_);
    if (actions_.empty()) return s_.timers.rearm(s_.held());
    // Wall time stamps events and stored rows: read that clock only for them.
    const bool events = s_.delivery.has_subscribers();
    const auto wall = events || s_.durable || s_.observers.active() ? s_.clock->system_now()
                                                                      : std::chrono::system_clock::time_point{};
    // Under a backlog, a dispatched task's record was last touched at its
    // admission and is long out of cache: the record of the dispatch a few
    // ahead starts loading while this one is handled, so that their misses
    // overlap instead of following one another. Not all at once: a core
    // holds only about ten misses in flight, and drops what is asked
    // beyond. Only in a step of many actions (a burst's): in one of a few
    // (a round trip's) the scan costs more than it saves, so it starts at
    // the end and finds nothing.
    constexpr std::size_t loading_ahead_from = 16;
    constexpr int dispatches_ahead = 4;
    std::size_t ahead = actions_.size() >= loading_ahead_from ? 0 : actions_.size();  // the next to look at
    const auto load_next_dispatch = [&]() CRONOQ_REQUIRES(s_.mu) {
        while (ahead < actions_.size())
            if (const auto* d = std::get_if<core::Dispatch>(&actions_[ahead++])) return prefetch_for_dispatch(from_user(d->user));
    };
    for (int i = 0; i < dispatches_ahead; ++i) load_next_dispatch();
    for (core::Action& action : actions_) {
        if (std::holds_alternative<core::Dispatch>(action)) load_next_dispatch();
        std::visit([&](auto& a) { on(held, a, now, wall); }, action);
    }
    s_.timers.rearm(s_.held());
    s_.shutdown.check_drained(s_.held());
}

void Actions::on(const EngineHeld& held, core::Dispatch& d, core::Time now, WallTime wall) {
    s_.holding(held);
    TaskRecord* record = from_user(d.user);
    PoolRuntime& pool = s_.pools[d.pool];
    record->set_status(TaskStatus::Running);  // also when the engine reports it
    // Told before the attempt starts: the starts come after this step's
    // deferred work (StepPipeline::end_step), a remote lease with it.
    if (s_.observers.active()) s_.observers.started(held, *record, d.lease, d.attempt, now, wall, s_.pipeline.deferred(held));
    if (d.worker) return dispatch_remote(held, d, *record, pool);
    auto attempt = attempt_blocks_.make<Attempt>();
    attempt->task = std::shared_ptr<const TaskInfo>(record->engine_ref, static_cast<const TaskInfo*>(record));
    attempt->lease = d.lease;
    attempt->attempt = d.attempt;
    attempt->needs_heartbeat = pool.def.engine.lease_ttl.has_value();
    attempt->record = record;
    attempt->pool = &pool;
    record->live = attempt;
    s_.launcher.link(s_.held(), *attempt);
    // Started when the step ends, after the engine's mutex: the executor
    // must never run under it.
    s_.pipeline.start_after(held, std::move(attempt));
}

void Actions::on(const EngineHeld& held, core::Abort& a, core::Time now, WallTime) {
    s_.holding(held);
    // Handing over (a store-backed shutdown's grace ended, or the lead was
    // lost), no status follows: the attempt is left to the next leader.
    if (s_.observers.active() && s_.durable && s_.engine.is_shutting_down() && a.reason == core::AbortReason::Shutdown)
        s_.observers.handed_over(held, a.task, now, s_.pipeline.deferred(held));
    TaskRecord* record = from_user(a.user);
    if (!record->live || record->live->lease != a.lease) return;
    std::shared_ptr<Attempt> owner = std::move(record->live);
    if (owner->worker) return abort_remote(held, a, std::move(owner));
    Attempt* found = owner.get();
    if (s_.debug_logging)
        s_.log([task = a.task, lease = a.lease, reason = a.reason] {
            logger()->debug("task {} lease {}: aborting attempt ({})", task.value, lease.value, core::to_string(reason));
        });
    const auto& lane = found->pool->lane(a.lease);
    // On the attempt's lane, in the order of docs/guide/executors.md: the executor's
    // abort, then the context, then Asio cancellation of the coroutine.
    // Each step is contained, so a throwing abort or on_cancel callback
    // neither escapes the application's run() nor skips the later steps.
    // The core is held: the coroutine may have returned meanwhile.
    asio::post(lane, [core = s_.self.lock(), owner, found, lease = a.lease] {
        if (const auto& abort = found->pool->def.executor.abort)
            contained("the executor's abort", *found, [&] { abort(lease); });
        found->cancel.cancel();  // contains its callbacks
        // Not started yet, the signal has no handler: the start, after this
        // on the lane, sees the cancellation and never spawns.
        contained("cancellation of the coroutine", *found, [&] { found->signal.emit(asio::cancellation_type::terminal); });
    });
}

void Actions::on(const EngineHeld& held, core::Status& s, core::Time now, WallTime wall) {
    s_.holding(held);
    std::vector<Deferred>& deferred = s_.pipeline.deferred(held);
    if (s_.observers.active()) s_.observers.status(held, s.task, s.status, s.message, s.at, deferred);
    TaskRecord* record = from_user(s.user);
    if (!record) return;
    record->set_status(s.status);
    if (s_.durable) s_.durable->write_status(s_.held(), s, *record, now, wall);
    if (s_.delivery.has_subscribers())
        deferred.emplace_back(StatusEvent{s.task, record->key(), *record->pool, record->kind, s.status, s.attempt,
                                          wall + (s.at - now), s.message,
                                          record->fair_key()});
    if (!is_terminal(s.status)) return;
    if (s.status == TaskStatus::Failed || s.status == TaskStatus::DeadLettered)
        s_.log([task = s.task, status = s.status, attempt = s.attempt, message = s.message] {
            logger()->info("task {} {} after {} attempt(s): {}", task.value, to_string(status), attempt, message);
        });
    // Made in place: a Deferred is a large variant.
    Finish& f = *std::get_if<Finish>(&deferred.emplace_back(std::in_place_type<Finish>));
    f.status = s.status;
    f.attempt = s.attempt;
    if (!s.message.empty()) f.message = std::move(s.message);  // a success has none: no call
    if (s.status == TaskStatus::Succeeded) f.output = std::move(record->output.value);
    record->output = {};
    // A keyed task's record stays while the engine retains the task, so
    // that a resubmitted key gets a handle to its outcome (until Forget).
    if (record->keyed()) {
        f.record = record->engine_ref;
    } else {
        // The engine has let go of the pointer (release_users_at_end).
        // The attempt that just ended may still be returning: it holds the
        // record through its context, not through this reference.
        f.record = s_.admission.release(s_.held(), *record);
    }
}

void Actions::on(const EngineHeld& held, core::Forget& f, core::Time, WallTime) {
    s_.holding(held);
    if (TaskRecord* record = from_user(f.user)) {
        // Released after the mutex, with the step's other work.
        s_.pipeline.deferred(held).emplace_back(UniqueFunction<void()>([ref = s_.admission.release(s_.held(), *record)] {}));
    }
}

void Actions::on(const EngineHeld& held, core::ScaleTo& s, core::Time, WallTime) {
    s_.holding(held);
    if (s_.debug_logging)
        s_.log([name = s_.pools[s.pool].name, capacity = s.capacity] { logger()->debug("pool \"{}\": capacity {}", *name, capacity); });
}

void Actions::on(const EngineHeld& held, core::SpaceAvailable& s, core::Time, WallTime) {
    s_.holding(held);
    wake_next_submit(held, s_.pools[s.pool]);
    // A client's submission may wait in the store for this room.
    if (s_.durable) Ingestion(s_).room_made(s_.held());
}

void Actions::wake_next_submit(const EngineHeld& held, PoolRuntime& pool) {
    s_.holding(held);
    if (pool.waiting_submits.empty()) return;
    auto next = std::move(pool.waiting_submits.front());
    pool.waiting_submits.pop_front();
    next->set();  // posts the waiter's resumption
}

void Actions::dispatch_remote(const EngineHeld& held, core::Dispatch& d, TaskRecord& record, PoolRuntime& pool) {
    s_.holding(held);
    auto attempt = attempt_blocks_.make<Attempt>();
    attempt->task = std::shared_ptr<const TaskInfo>(record.engine_ref, static_cast<const TaskInfo*>(&record));
    attempt->lease = d.lease;
    attempt->attempt = d.attempt;
    attempt->record = &record;
    attempt->pool = &pool;
    attempt->worker = d.worker;
    record.live = attempt;
    // A lease that cannot be sent fails as its worker would report it
    // (posted: the sending runs while delivering).
    auto failed = [weak = s_.self, ex = s_.executor](RemoteEnd end) {
        asio::post(ex, [weak, end = std::move(end)]() mutable {
            if (auto core = weak.lock()) SchedulerCore::State::of(*core).pipeline.post_remote(std::move(end));
        });
    };
    if (auto send = s_.remote.lease(s_.held(), std::move(attempt), d.timeout, s_.encoder, std::move(failed)))
        s_.pipeline.deferred(held).emplace_back(std::move(send));
}

void Actions::abort_remote(const EngineHeld& held, const core::Abort& a, std::shared_ptr<Attempt> attempt) {
    s_.holding(held);
    if (auto tell = s_.remote.abort(held, *attempt, std::string(core::to_string(a.reason))))
        s_.pipeline.deferred(held).emplace_back(std::move(tell));
}

void Actions::on(const EngineHeld& held, core::AskScaler& q, core::Time, WallTime) {
    s_.holding(held);
    auto question = s_.engine.scaler_question(q.pool);
    if (!question) return;
    // Posted, never called here: this thread holds the engine's mutex, and
    // a scaler may call back into the scheduler (snapshot, submit, ...).
    asio::post(s_.executor, [weak = s_.self, pool = q.pool, input = *question] {
        if (auto core = weak.lock()) SchedulerCore::State::of(*core).actions.ask_scaler(pool, input);
    });
}

void Actions::ask_scaler(core::PoolId pool, const ScalerInput& question) {
    PoolRuntime& p = s_.pools[pool];
    std::optional<std::size_t> desired;
    std::string failure;
    try {
        desired = p.def.scaler(question);
    } catch (const std::exception& e) {
        failure = e.what();
    } catch (...) {
        failure = "a non-standard exception";
    }
    // One line when it starts failing and one when it answers again, not
    // one per interval. Only this call touches the flag: the engine's open
    // question orders the calls for one pool.
    if (!desired && !p.scaler_failing)
        logger()->warn("pool \"{}\": the scaler threw ({}); the capacity stays until it answers", *p.name, failure);
    if (desired && p.scaler_failing) logger()->info("pool \"{}\": the scaler answers again", *p.name);
    p.scaler_failing = !desired;
    SchedulerCore::State::Step step(s_);
    const auto now = s_.clock->now();
    s_.engine.answer_scaler(pool, desired, now);
    apply(s_.held(), now);
}

}  // namespace cronoq::detail
