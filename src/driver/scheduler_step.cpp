// The driver's step pipeline: engine calls under one mutex, the actions they
// emit, and what is delivered after the mutex (see scheduler_state.hpp).
// Starting attempts and taking their ends back: scheduler_attempts.cpp.
#include <cronoq/logging.hpp>

#include "event_queue.hpp"
#include "scheduler_state.hpp"

#include <asio/post.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <vector>

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

core::Outcome to_outcome(const AttemptOutput& out) {
    if (!out.error) return core::Outcome::success();
    const TaskError& e = *out.error;
    switch (e.kind()) {
        case TaskError::Kind::Retryable: return core::Outcome::retryable(e.message(), e.retry_after());
        case TaskError::Kind::Permanent: return core::Outcome::permanent(e.message());
        case TaskError::Kind::Cancelled: return core::Outcome::cancelled(e.message());
    }
    return core::Outcome::permanent(e.message());
}

}  // namespace

SchedulerCore::State::State(asio::any_io_executor ex, SchedulerOptions opts)
    : executor(std::move(ex)), options(std::move(opts)), clock(options.clock ? options.clock : Clock::steady()),
      engine(options.engine), durable(options.store ? std::make_unique<DurableLink>(options.store) : nullptr),
      encoder(pools, *clock, options.store != nullptr, options.codec,
              options.store ? options.store->journal().max_value_bytes() : 0),
      admission(pools, *clock, encoder, self, durable.get()), launcher(clock->make_timer(executor)) {
    set_engine_modes();
    debug_logging = logger()->should_log(spdlog::level::debug);
}

SchedulerCore::State::~State() {
    // Records the engine still held each refer to themselves: let go of them here.
    auto refs = admission.release_all();
}

void SchedulerCore::State::admit(Submissions& group, AdmitMode mode, core::Time now) {
    if (shutting_down && mode != AdmitMode::Restoring) {
        for (std::size_t i = 0; i < group.size(); ++i)
            group.result(i, {SubmitError::ShuttingDown, "the scheduler is shutting down"});
        return;
    }
    admission.admit(held(), engine, group, mode, now);
}

void SchedulerCore::State::set_engine_modes() {
    // Without a store or a subscriber, the transitions other results imply
    // (Ready at admission, Running at each Dispatch) need no Status action
    // of their own: the record starts Ready, and on(Dispatch) records
    // Running. subscribe() turns them on for good; a new engine comes only
    // before the first subscriber (construction) or with a store.
    engine.report_implied_transitions(options.store != nullptr);
    // A task without a key lets go of its record at its terminal status
    // (on(Status)): the engine forgets the pointer there too.
    engine.release_users_at_end(true);
}

// ---- steps -------------------------------------------------------------------------

SchedulerCore::State::Step::~Step() { s_.end_step(lock_); }

void SchedulerCore::State::end_step(std::unique_lock<EngineMutex>& lock) {
    for (;;) {
        if (inbox.filled(std::memory_order_acquire)) serve_ends(clock->now());
        const store::Sequence step_seq = durable ? durable->enqueue_step(held(), engine) : 0;
        std::shared_ptr<Attempt> starting = starts.take();
        if (deferred.empty()) {
            lock.unlock();  // nothing to deliver, nothing to keep in order
        } else {
            // In order: this step's work is delivered before the next step's.
            delivery.deliver_step(deferred, lock, step_seq);
        }
        // Free of both locks: a start may run the executor on this thread,
        // and the executor may call into the scheduler.
        if (starting) AttemptLauncher::start_all(self.lock(), std::move(starting));
        // An end posted while this step held the mutex found it taken and
        // left itself to us: serve it, unless another step already does.
        // The unlock above and this load are sequentially consistent, as
        // are offer()'s store of the flag and its try_lock: either that
        // try_lock sees the unlock, or this load sees the flag.
        if (!inbox.filled(std::memory_order_seq_cst) || !lock.try_lock()) return;
    }
}

void SchedulerCore::State::end_read(std::unique_lock<EngineMutex>& lock) {
    lock.unlock();
    // As at the end of a step (sequentially consistent, as there): an end
    // that found the mutex held by this reader is served here.
    if (inbox.filled(std::memory_order_seq_cst) && lock.try_lock()) end_step(lock);
}

template <class Put>
void SchedulerCore::State::offer(Put&& put) {
    {
        // Nobody holds the engine: serve these reports at once, without the
        // inbox, after what the inbox holds (a worker's reports keep their
        // order: a heartbeat, then the lease's end). Never wait for the
        // engine: its holder may be waiting for this thread (a reader whose
        // clock the application holds, say).
        std::unique_lock lock(mu, std::try_to_lock);
        if (lock) {
            inbox.take(ends, remote_ends);
            put(ends, remote_ends);
            serve_ends(clock->now());
            return end_step(lock);
        }
    }
    // Sequentially consistent, as the try_lock below and the holder's
    // unlock and load (end_step): either this try_lock sees the holder's
    // unlock, or the holder, after unlocking, sees the flag.
    inbox.put(put);
    std::unique_lock lock(mu, std::try_to_lock);
    if (lock) end_step(lock);
}

void SchedulerCore::State::post_end(AttemptEnd&& end) {
    offer([&](std::vector<AttemptEnd>& to, std::vector<RemoteEnd>&) { to.push_back(std::move(end)); });
}

void SchedulerCore::State::post_ends(std::vector<AttemptEnd>& batch) {
    offer([&](std::vector<AttemptEnd>& to, std::vector<RemoteEnd>&) { move_all(to, batch); });
}

void SchedulerCore::State::post_remote(RemoteEnd end) {
    offer([&](std::vector<AttemptEnd>&, std::vector<RemoteEnd>& to) { to.push_back(std::move(end)); });
}

void SchedulerCore::State::serve_ends(core::Time now) {
    inbox.take(ends, remote_ends);
    for (RemoteEnd& end : remote_ends) serve_remote(end, now);
    remote_ends.clear();
    for (AttemptEnd& end : ends) {
        Attempt& a = *end.attempt;
        const bool live = engine.complete(a.lease, to_outcome(end.output), now);
        if (live) {
            a.record->output = std::move(end.output.output);
            if (a.record->live.get() == &a) a.record->live.reset();
            // Not live: the engine abandoned the attempt, and what it threw
            // on the way out (operation_aborted) is expected, not a panic.
            if (end.output.error && end.output.error->message().rfind("panic: ", 0) == 0)
                log([id = task_id(*a.task), attempt = a.attempt, message = end.output.error->message()] {
                    logger()->warn("task {} attempt {}: executor {}", id.value, attempt, message);
                });
        }
        if (!launcher.unlink(held(), a))
            log([id = task_id(*a.task), lease = a.lease] {
                logger()->warn("task {} lease {}: abandoned attempt returned after shutdown; its result was ignored",
                               id.value, lease.value);
            });
    }
    ends.clear();
    apply(now);
    check_drained();
    // Idle now: no other task could run before the waiters these ends
    // complete, so if this thread is in an attempt's completion they resume
    // in place, not after a trip round the io_context. A busy scheduler
    // posts them, and one awaiting coroutine then finds many results ready
    // at once.
    if (engine.live_tasks() == 0) ResumeInPlace::want();
}

// A remote report: the lease must be live and the worker's (the engine
// checks both and counts the rest late).
void SchedulerCore::State::serve_remote(RemoteEnd& end, core::Time now) {
    switch (end.kind) {
        case RemoteEnd::Kind::Heartbeat: engine.heartbeat(end.lease, now, end.worker); return;
        case RemoteEnd::Kind::Nack:
            if (engine.nack(end.lease, end.reason, now, end.worker)) break;
            return;
        case RemoteEnd::Kind::Ended:
            if (engine.complete(end.lease, to_outcome(end.output), now, end.worker)) break;
            return;
    }
    auto attempt = remote.end_lease(held(), end.lease);
    if (!attempt) return;
    if (end.kind == RemoteEnd::Kind::Ended) attempt->record->output = std::move(end.output.output);
    if (attempt->record->live == attempt) attempt->record->live.reset();
}

// ---- actions (mutex held) ------------------------------------------------------------

void SchedulerCore::State::apply(core::Time now) {
    engine.drain(actions);
    if (actions.empty()) return rearm();
    // Wall time stamps events and stored rows: read that clock only for them.
    const bool events = delivery.has_subscribers();
    const auto wall = events || durable ? clock->system_now() : std::chrono::system_clock::time_point{};
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
    std::size_t ahead = actions.size() >= loading_ahead_from ? 0 : actions.size();  // the next to look at
    const auto load_next_dispatch = [&]() CRONOQ_REQUIRES(mu) {
        while (ahead < actions.size())
            if (const auto* d = std::get_if<core::Dispatch>(&actions[ahead++])) return prefetch_for_dispatch(from_user(d->user));
    };
    for (int i = 0; i < dispatches_ahead; ++i) load_next_dispatch();
    for (core::Action& action : actions) {
        if (std::holds_alternative<core::Dispatch>(action)) load_next_dispatch();
        std::visit([&](auto& a) CRONOQ_REQUIRES(mu) { on(a, now, wall); }, action);
    }
    rearm();
    check_drained();
}

void SchedulerCore::State::on(core::Dispatch& d, core::Time, std::chrono::system_clock::time_point) {
    TaskRecord* record = from_user(d.user);
    PoolRuntime& pool = pools[d.pool];
    record->set_status(TaskStatus::Running);  // also when the engine reports it
    if (d.worker) return dispatch_remote(d, *record, pool);
    auto attempt = attempt_blocks.make<Attempt>();
    attempt->task = std::shared_ptr<const TaskInfo>(record->engine_ref, static_cast<const TaskInfo*>(record));
    attempt->lease = d.lease;
    attempt->attempt = d.attempt;
    attempt->needs_heartbeat = pool.def.engine.lease_ttl.has_value();
    attempt->record = record;
    attempt->pool = &pool;
    record->live = attempt;
    launcher.link(held(), *attempt);
    // Started when the step ends, after the engine's mutex: the executor
    // must never run under it.
    starts.push_back(std::move(attempt));
}

void SchedulerCore::State::on(core::Abort& a, core::Time, std::chrono::system_clock::time_point) {
    TaskRecord* record = from_user(a.user);
    if (!record->live || record->live->lease != a.lease) return;
    std::shared_ptr<Attempt> owner = std::move(record->live);
    if (owner->worker) return abort_remote(a, std::move(owner));
    Attempt* found = owner.get();
    if (debug_logging)
        log([task = a.task, lease = a.lease, reason = a.reason] {
            logger()->debug("task {} lease {}: aborting attempt ({})", task.value, lease.value, core::to_string(reason));
        });
    const auto& lane = found->pool->lane(a.lease);
    // On the attempt's lane, in the order of docs/guide/executors.md: the executor's
    // abort, then the context, then Asio cancellation of the coroutine.
    // Each step is contained, so a throwing abort or on_cancel callback
    // neither escapes the application's run() nor skips the later steps.
    // The core is held: the coroutine may have returned meanwhile.
    asio::post(lane, [core = self.lock(), owner, found, lease = a.lease] {
        if (const auto& abort = found->pool->def.executor.abort)
            contained("the executor's abort", *found, [&] { abort(lease); });
        found->cancel.cancel();  // contains its callbacks
        // Not started yet, the signal has no handler: the start, after this
        // on the lane, sees the cancellation and never spawns.
        contained("cancellation of the coroutine", *found, [&] { found->signal.emit(asio::cancellation_type::terminal); });
    });
}

void SchedulerCore::State::on(core::Status& s, core::Time now, std::chrono::system_clock::time_point wall) {
    TaskRecord* record = from_user(s.user);
    if (!record) return;
    record->set_status(s.status);
    if (durable) durable->write_status(held(), s, *record, now, wall);
    if (delivery.has_subscribers())
        deferred.emplace_back(StatusEvent{s.task, record->key(), *record->pool, record->kind, s.status, s.attempt,
                                          wall + (s.at - now), s.message});
    if (!is_terminal(s.status)) return;
    if (s.status == TaskStatus::Failed || s.status == TaskStatus::DeadLettered)
        log([task = s.task, status = s.status, attempt = s.attempt, message = s.message] {
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
        f.record = admission.release(held(), *record);
    }
}

void SchedulerCore::State::on(core::Forget& f, core::Time, std::chrono::system_clock::time_point) {
    if (TaskRecord* record = from_user(f.user)) {
        // Released after the mutex, with the step's other work.
        deferred.emplace_back(UniqueFunction<void()>([ref = admission.release(held(), *record)] {}));
    }
}

void SchedulerCore::State::on(core::ScaleTo& s, core::Time, std::chrono::system_clock::time_point) {
    if (debug_logging)
        log([name = pools[s.pool].name, capacity = s.capacity] { logger()->debug("pool \"{}\": capacity {}", *name, capacity); });
}

void SchedulerCore::State::on(core::SpaceAvailable& s, core::Time, std::chrono::system_clock::time_point) {
    wake_next_submit(pools[s.pool]);
}

void SchedulerCore::State::wake_next_submit(PoolRuntime& pool) {
    if (pool.waiting_submits.empty()) return;
    auto next = std::move(pool.waiting_submits.front());
    pool.waiting_submits.pop_front();
    next->set();  // posts the waiter's resumption
}

// ---- timing (mutex held) ----------------------------------------------------------------

void SchedulerCore::State::rearm() {
    if (finished) return;
    const auto next = engine.next_wakeup();
    if (next == armed) return;
    armed = next;
    if (!next) return timer->disarm();
    timer->arm(*next, [w = self] {
        if (auto core = w.lock()) core->s_->on_wakeup();
    });
}

void SchedulerCore::State::on_wakeup() {
    Step step(*this);
    armed.reset();
    const auto now = clock->now();
    engine.tick(now);
    apply(now);
}

// ---- shutdown (mutex held) ---------------------------------------------------------------

void SchedulerCore::State::begin_shutdown(std::chrono::nanoseconds grace) {
    if (!shutting_down) log([grace] { logger()->info("shutting down (grace {} ms)", grace.count() / 1000000); });
    shutting_down = true;
    recurring->stop();
    // Waiting submitters try again and fail with ShuttingDown.
    for (PoolRuntime& p : pools)
        while (!p.waiting_submits.empty()) wake_next_submit(p);
    const auto now = clock->now();
    const auto grace_end = core::add_saturated(now, std::max(grace, std::chrono::nanoseconds(0)));
    // With a store the work is handed over, not cancelled (docs/guide/durability.md): what
    // has not ended stays in the store for the next leader.
    if (durable)
        engine.hand_over(now, grace_end);
    else
        engine.shutdown(now, grace_end);
    apply(now);
    check_drained();
}

void SchedulerCore::State::check_drained() {
    if (!shutting_down) return;
    if (!finished) {
        if (durable ? !engine.is_handed_over() : engine.live_tasks() != 0) return;
        if (launcher.any_running(held())) return arm_abandon();
        finished = true;
        shutdown_sessions();
        armed.reset();
        timer->disarm();
        launcher.stop();
        recurring->stop();
    }
    if (durable && !durable->lead_ended(held())) {
        // At the end of this step, after its changes, the store commits what
        // is queued and gives the lead up; its report (on_lost) completes
        // the shutdown.
        durable->release_after_step(held());
        return;
    }
    if (!drained_sent) {
        drained_sent = true;
        deferred.emplace_back(Drained{});  // after every handle's Finish
    }
}

// Shutdown waits `abandon_after` for coroutines of attempts the engine has
// ended (all aborted by now); what ignores cancellation longer is
// abandoned: it keeps what it uses alive, and its late result is ignored.
void SchedulerCore::State::arm_abandon() {
    launcher.arm_abandon(held(), core::add_saturated(clock->now(), options.abandon_after), [w = self] {
        if (auto core = w.lock()) core->s_->abandon_deaf_attempts();
    });
}

void SchedulerCore::State::abandon_deaf_attempts() {
    Step step(*this);
    for (const Attempt* a : launcher.abandon_all(held()))
        log([id = task_id(*a->task), lease = a->lease, pool = a->pool->name, attempt = a->attempt, after = options.abandon_after] {
            logger()->warn("task {} lease {} (pool \"{}\", attempt {}): the executor ignored cancellation for {} ms; "
                           "abandoned, its result will be ignored",
                           id.value, lease.value, *pool, attempt, after.count() / 1000000);
        });
    check_drained();
}

}  // namespace cronoq::detail
