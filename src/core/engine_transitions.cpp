// The engine's transitions of a task (ready, running, terminal, retrying,
// abandoned) and its timers: the moves every other part of the engine makes
// through (declared in engine_state.hpp, with what each does).
#include "engine_state.hpp"

#include <algorithm>
#include <string>

namespace cronoq::core {

// ---- transitions ------------------------------------------------------------
void Engine::State::leave(TaskSlot& t) {
    PoolCounters& c = pools[t.pool].counters;
    switch (t.status) {
        case TaskStatus::Ready:
            --c.ready;
            if (--c.ready_by_class[index_of(t.priority)] == 0) pools[t.pool].queue.drop_credit(t.priority);
            if (pools[t.pool].may_shed) unlink_ready(static_cast<std::uint32_t>(&t - slots.data()));
            break;
        case TaskStatus::Retrying: --c.retrying; break;
        case TaskStatus::Scheduled: {
            --c.scheduled;
            // Its hold ends: what it kept off a slot may run now.
            PoolState& p = pools[t.pool];
            p.held_starts.erase(p.held_starts.find(starts.at(t.id.value).start));
            p.dirty = true;
            break;
        }
        case TaskStatus::Blocked:
            --c.blocked;
            drop_blocked(t.id);
            break;
        default: break;
    }
}

void Engine::State::become_ready(std::uint32_t s, Time now) {
    TaskSlot& t = slots[s];
    PoolState& p = pools[t.pool];
    leave(t);
    t.status = TaskStatus::Ready;
    t.ready_since = now;
    ++t.gen;
    ++p.counters.ready;
    ++p.counters.ready_by_class[index_of(t.priority)];
    if (auto* a = scaler_of(p, now)) a->record_arrival(now);
    if (p.may_shed) link_ready(s);
}

bool Engine::State::start_at_once(std::uint32_t s, Time now) {
    TaskSlot& t = slots[s];
    PoolState& p = pools[t.pool];
    // What settle() does before its dispatch (dependents resolved, the
    // pool rescaled) or what the dispatch weighs (other ready tasks, slots
    // held for fixed starts, resources, workers) could choose otherwise.
    if (handing_over || p.counters.running >= p.capacity || p.counters.ready > 0 || !p.held_starts.empty() ||
        p.config.remote || p.autoscale_config || t.has_needs || !graph.resolved.empty())
        return false;
    become_ready(s, now);
    if (report_implied) emit_status(t, now);
    took_best = true;  // the only ready task
    start_attempt(s, now);
    return true;
}

void Engine::State::make_ready(std::uint32_t s, Time now, bool due_start, bool admitting) {
    become_ready(s, now);
    TaskSlot& t = slots[s];
    PoolState& p = pools[t.pool];
    if (due_start) {
        p.due_starts.push_back({s, t.gen});
    } else if (t.has_deadline) {
        TaskExtras& e = extras[t.extras];
        e.latest_start = add_saturated(e.deadline, -expected_duration(t));
        p.queue.push_deadline(t.priority, e.latest_start, t.id.value, {s, t.gen});
    } else {
        p.queue.push(t.priority, {s, t.gen});
    }
    p.dirty = true;
    if (report_implied || !admitting) emit_status(t, now);
}

void Engine::State::start_attempt(std::uint32_t s, Time now, WorkerId worker) {
    TaskSlot& t = slots[s];
    PoolState& p = pools[t.pool];
    leave(t);
    p.metrics.accrue(now, p.counters.running, p.capacity);
    detail::MetricsSlice& m = p.metrics.at(now);
    ++m.dispatched;
    m.adherent += took_best ? 1 : 0;
    p.metrics.record_wait(m, t.priority, now - t.ready_since);
    ++p.counters.running;
    ++p.counters.dispatched;
    t.status = TaskStatus::Running;
    ++t.attempt;
    ++t.gen;
    if (t.has_start && t.attempt == 1) count_start(t, now);
    t.run = attempts.acquire();
    AttemptState& a = attempts[t.run];
    a.lease = LeaseId{next_lease_id.fetch_add(1, std::memory_order_relaxed)};
    a.started = now;
    const Duration timeout = timeout_of(t);
    a.deadline = timeout.count() > 0 ? later(now, timeout) : never;
    a.lease_expiry = p.config.lease_ttl ? later(now, *p.config.lease_ttl) : never;
    a.worker = worker;
    if (worker) workers.at(worker.value).leases.push_back(a.lease.value);
    by_lease.insert(a.lease.value, s);
    const Time check = std::min(a.deadline, a.lease_expiry);
    if (check != never) push_timer(check, s, t.gen, TimerKind::Attempt);
    Dispatch& d = emit<Dispatch>();
    d.task = t.id;
    d.lease = a.lease;
    d.pool = t.pool;
    d.attempt = t.attempt;
    d.user = t.user;
    if (timeout.count() > 0) d.timeout = timeout;
    if (t.has_deadline) d.deadline = extras[t.extras].deadline;
    d.worker = worker;
    if (report_implied) emit_status(t, now);  // else its Dispatch says so
}

AttemptState Engine::State::end_lease(TaskSlot& t, Time now) {
    const AttemptState a = attempts[t.run];
    attempts.release(t.run);
    t.run = no_slot;
    if (t.holds_resources) release_resources(t, now);
    if (a.worker) worker_lease_ended(a.worker, a.lease, now);
    by_lease.erase(a.lease.value);
    PoolState& p = pools[t.pool];
    if (auto* scaler = scaler_of(p, now)) scaler->record_service(now - a.started);
    p.metrics.accrue(now, p.counters.running, p.capacity);
    p.metrics.record_run(now, now - a.started);
    --p.counters.running;
    p.dirty = true;
    return a;
}

void Engine::State::finish(std::uint32_t s, TaskStatus status, std::string message, Time now) {
    TaskSlot& t = slots[s];
    PoolCounters& c = pools[t.pool].counters;
    leave(t);
    if (t.has_start) drop_start(t);
    if (t.has_needs) {
        needs.erase(t.id.value);
        t.has_needs = false;
    }
    if (t.has_remote) {
        remote_tasks.erase(t.id.value);
        t.has_remote = false;
    }
    if (!graph.dependents.empty() && graph.dependents.count(t.id.value)) graph.resolved.emplace_back(t.id, status);
    t.status = status;
    ++t.gen;
    detail::MetricsSlice& m = pools[t.pool].metrics.at(now);
    switch (status) {
        case TaskStatus::Succeeded: ++c.succeeded; ++m.succeeded; break;
        case TaskStatus::Failed: ++c.failed; ++m.failed; break;
        case TaskStatus::DeadLettered: ++c.dead_lettered; ++m.dead_lettered; break;
        case TaskStatus::Shed: ++m.shed; break;
        case TaskStatus::Cancelled: ++c.cancelled; break;
        case TaskStatus::Skipped: ++c.skipped; break;
        case TaskStatus::Missed: ++c.missed; break;
        default: break;
    }
    --live;
    kinds.task_ended(t.kind);
    emit_status(t, now, std::nullopt, std::move(message));
    // Retained in its own slot: its entry in by_task stays as it is (in a
    // large table that entry is long out of cache; the slot is not).
    t.ready_since = now;
    if (release_users_at_end && !key_of(t)) t.user = 0;
    retained.push_back(s);
}

void Engine::State::fail_retryable(std::uint32_t s, std::string message, std::optional<Duration> retry_after, Time now) {
    TaskSlot& t = slots[s];
    if (shutting_down && !handing_over) return finish(s, TaskStatus::Cancelled, "shutdown: " + message, now);
    if (t.has_remote) remote_tasks.at(t.id.value).nacked_by.clear();  // a new attempt may go anywhere
    const RetryPolicy& retry = retry_of(t);
    if (t.attempt >= retry.max_attempts) return finish(s, TaskStatus::DeadLettered, std::move(message), now);
    PoolState& p = pools[t.pool];
    ++p.counters.retried;
    ++p.metrics.at(now).retried;
    ++p.counters.retrying;
    t.status = TaskStatus::Retrying;
    ++t.gen;
    const Duration delay = detail::retry_delay(retry, t.attempt + 1, retry_after, rng);
    const Time at = delay.count() > 0 ? later(now, delay) : now;
    emit_status(t, now, at, std::move(message));
    // Handing over, it stays Retrying for the next leader even without a delay.
    if (delay.count() <= 0 && !handing_over) return make_ready(s, now);
    if (at != never) push_timer(at, s, t.gen, TimerKind::RetryDone);
}

void Engine::State::abandon_attempt(std::uint32_t s, AbortReason reason, Time now) {
    TaskSlot& t = slots[s];
    const AttemptState ended = end_lease(t, now);
    actions.emplace_back(Abort{t.id, ended.lease, t.pool, reason, t.user});
    PoolCounters& c = pools[t.pool].counters;
    switch (reason) {
        case AbortReason::Timeout:
            ++c.timed_out;
            return fail_retryable(s, "timeout", std::nullopt, now);
        case AbortReason::LeaseExpired:
            ++c.lease_expired;
            return fail_retryable(s, "lease expired", std::nullopt, now);
        case AbortReason::Cancelled: return finish(s, TaskStatus::Cancelled, "cancelled", now);
        case AbortReason::Shutdown: return finish(s, TaskStatus::Cancelled, "shutdown", now);
        case AbortReason::WorkerLost: return fail_retryable(s, "worker disconnected", std::nullopt, now);
    }
}

// ---- timers -----------------------------------------------------------------
void Engine::State::fire(const Timer& tm, Time now) {
    if (tm.kind == TimerKind::ShutdownGrace) return abort_all_running(now);
    if (tm.kind == TimerKind::Horizon) {
        if (auto* a = scaler_of(pools[tm.slot], now)) a->wake(now);
        return;
    }
    if (tm.kind == TimerKind::Autoscale) {
        pools[tm.slot].autoscale_armed = never;  // settle() evaluates and re-arms
        return;
    }
    if (tm.kind == TimerKind::Refill) {
        refill_at[tm.slot] = never;
        return unpark(tm.slot, now);
    }
    TaskSlot& t = slots[tm.slot];
    switch (tm.kind) {
        case TimerKind::RetryDone: return make_ready(tm.slot, now);
        case TimerKind::Start: return start_due(tm.slot, now);
        case TimerKind::MissCheck: return miss_start(tm.slot, now);
        case TimerKind::AwaitExpiry: return expire_await(tm.slot, now);
        default: break;
    }
    const AttemptState& a = attempts[t.run];
    if (now >= a.deadline) return abandon_attempt(tm.slot, AbortReason::Timeout, now);
    if (now >= a.lease_expiry) {
        if (a.worker) worker_silent(a.worker);  // before its slot frees: no lease goes back to it
        return abandon_attempt(tm.slot, AbortReason::LeaseExpired, now);
    }
    // A heartbeat moved the expiry since this check was armed.
    const Time next = std::min(a.deadline, a.lease_expiry);
    if (next != never) push_timer(next, tm.slot, tm.gen, TimerKind::Attempt);
}

void Engine::State::run_due_timers(Time now) {
    while (!timers.empty() && timers.front().at <= now) {
        const Timer tm = timers.front();
        std::pop_heap(timers.begin(), timers.end());
        timers.pop_back();
        if (timer_live(tm)) fire(tm, now);
    }
}

void Engine::State::abort_all_running(Time now) {
    for (std::uint32_t s = 0; s < slots.size(); ++s) {
        TaskSlot& t = slots[s];
        if (!t.id || t.status != TaskStatus::Running || t.run == no_slot) continue;
        if (!handing_over) {
            abandon_attempt(s, AbortReason::Shutdown, now);
            continue;
        }
        const AttemptState ended = end_lease(t, now);
        ++t.gen;  // its attempt's timer is stale
        actions.emplace_back(Abort{t.id, ended.lease, t.pool, AbortReason::Shutdown, t.user});
    }
}

void Engine::State::shorten_grace(Time now, Time end) {
    if (end >= grace_end) return;
    grace_end = end;
    if (end <= now)
        abort_all_running(now);
    else
        push_timer(end, no_slot, 0, TimerKind::ShutdownGrace);
}

}  // namespace cronoq::core
