#include "lifecycle.hpp"

#include <algorithm>
#include <string>

namespace cronoq::core {

void Lifecycle::leave(TaskSlot& t) {
    PoolState& p = pools_[t.pool];
    PoolCounters& c = p.counters;
    switch (t.status) {
        case TaskStatus::Ready:
            --c.ready;
            p.fair.remove_ready(t.fair_key);
            if (--c.ready_by_class[index_of(t.priority)] == 0) p.queue.drop_credit(t.priority);
            if (p.may_shed) bounds_.unlink_ready(tasks_.index_of(t));
            break;
        case TaskStatus::Retrying: --c.retrying; break;
        case TaskStatus::Scheduled:
            --c.scheduled;
            // Its hold ends: what it kept off a slot may run now.
            p.held_starts.erase(p.held_starts.find(waiting_.start_of(t).start));
            p.dirty = true;
            break;
        case TaskStatus::Blocked:
            --c.blocked;
            waiting_.drop_blocked(t.id);
            break;
        default: break;
    }
}

double Lifecycle::become_ready(std::uint32_t s, Time now) {
    TaskSlot& t = tasks_[s];
    PoolState& p = pools_[t.pool];
    leave(t);
    t.status = TaskStatus::Ready;
    t.ready_since = now;
    ++t.gen;
    ++p.counters.ready;
    ++p.counters.ready_by_class[index_of(t.priority)];
    if (auto* a = p.scaler(now)) a->record_arrival(now);
    if (p.may_shed) bounds_.link_ready(s);
    return p.fair.add_ready(t.fair_key, tasks_.fair_keys);
}

bool Lifecycle::start_at_once(std::uint32_t s, Time now) {
    TaskSlot& t = tasks_[s];
    PoolState& p = pools_[t.pool];
    // What settle() does before its dispatch (dependents resolved, the
    // pool rescaled) or what the dispatch weighs (other ready tasks, slots
    // held for fixed starts, resources, workers) could choose otherwise.
    if (handing_over_ || p.paused || p.counters.running >= p.capacity || p.counters.ready > 0 || !p.held_starts.empty() ||
        p.config.remote || p.autoscale_config || t.has_needs || waiting_.has_resolved() || p.fair.at_cap(t.fair_key, p.counters.running))
        return false;
    become_ready(s, now);
    if (report_implied) out_.emit_status(t, now);
    start_attempt(s, now, WorkerId{}, /*took_best=*/true);  // the only ready task
    return true;
}

void Lifecycle::make_ready(std::uint32_t s, Time now, bool due_start, bool admitting) {
    TaskSlot& t = tasks_[s];
    PoolState& p = pools_[t.pool];
    const double weight = become_ready(s, now);
    if (due_start) {
        p.due_starts.push_back({s, t.gen});
    } else if (t.has_deadline) {
        TaskExtras& e = tasks_.extras(t);
        e.latest_start = add_saturated(e.deadline, -expected_duration(t));
        p.queue.push_deadline(t.priority, e.latest_start, t.id.value, {s, t.gen});
    } else {
        p.queue.push(t.priority, t.fair_key, weight, {s, t.gen}, p.fair.at_cap(t.fair_key, p.counters.running));
    }
    p.dirty = true;
    if (report_implied || !admitting) out_.emit_status(t, now);
}

void Lifecycle::start_attempt(std::uint32_t s, Time now, WorkerId worker, bool took_best) {
    TaskSlot& t = tasks_[s];
    PoolState& p = pools_[t.pool];
    // Counted running before it leaves Ready, so that its key's state stays.
    if (p.fair.add_running(t.fair_key, tasks_.fair_keys, p.counters.running)) p.queue.park_key(t.fair_key);
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
    if (t.has_start && t.attempt == 1) waiting_.count_start(t, now);
    AttemptState& a = tasks_.open_attempt(t);
    a.lease = LeaseId{next_lease_id.fetch_add(1, std::memory_order_relaxed)};
    a.started = now;
    const Duration timeout = timeout_of(t);
    a.deadline = timeout.count() > 0 ? later(now, timeout) : never;
    a.lease_expiry = p.config.lease_ttl ? later(now, *p.config.lease_ttl) : never;
    a.worker = worker;
    if (worker) workers_.lease_started(worker, a.lease);
    tasks_.add_lease(a.lease, s);
    const Time check = std::min(a.deadline, a.lease_expiry);
    if (check != never) timers_.push(check, s, t.gen, TimerKind::Attempt);
    Dispatch& d = out_.emit<Dispatch>();
    d.task = t.id;
    d.lease = a.lease;
    d.pool = t.pool;
    d.attempt = t.attempt;
    d.user = t.user;
    if (timeout.count() > 0) d.timeout = timeout;
    if (t.has_deadline) d.deadline = tasks_.extras(t).deadline;
    d.worker = worker;
    if (report_implied) out_.emit_status(t, now);  // else its Dispatch says so
}

AttemptState Lifecycle::end_lease(TaskSlot& t, Time now) {
    const AttemptState a = tasks_.close_attempt(t);
    if (t.holds_resources) resources_.release(t, now);
    if (a.worker) workers_.lease_ended(a.worker, a.lease);
    PoolState& p = pools_[t.pool];
    if (auto* scaler = p.scaler(now)) scaler->record_service(now - a.started);
    p.metrics.accrue(now, p.counters.running, p.capacity);
    p.metrics.record_run(now, now - a.started);
    --p.counters.running;
    p.dirty = true;
    if (p.fair.remove_running(t.fair_key, p.counters.running)) unpark_key(p, t.fair_key);
    return a;
}

void Lifecycle::finish(std::uint32_t s, TaskStatus status, std::string message, Time now) {
    TaskSlot& t = tasks_[s];
    PoolCounters& c = pools_[t.pool].counters;
    leave(t);
    if (t.has_start) waiting_.drop_start(t);
    if (t.has_needs) resources_.drop_needs(t);
    if (t.has_remote) workers_.drop_task(t);
    waiting_.ended(t.id, status);
    t.status = status;
    ++t.gen;
    detail::MetricsSlice& m = pools_[t.pool].metrics.at(now);
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
    --tasks_.live_count;
    kinds_.task_ended(t.kind);
    out_.emit_status(t, now, std::nullopt, std::move(message));
    // Retained in its own slot: its id entry stays as it is (in a large
    // table that entry is long out of cache; the slot is not).
    t.ready_since = now;
    if (release_users_at_end && !tasks_.key_of(t)) t.user = 0;
    retention_.retain(s);
}

void Lifecycle::fail_retryable(std::uint32_t s, std::string message, std::optional<Duration> retry_after, Time now) {
    TaskSlot& t = tasks_[s];
    if (shutting_down_ && !handing_over_) return finish(s, TaskStatus::Cancelled, "shutdown: " + message, now);
    workers_.clear_nacks(t);  // a new attempt may go anywhere
    const RetryPolicy& retry = retry_of(t);
    if (t.attempt >= retry.max_attempts) return finish(s, TaskStatus::DeadLettered, std::move(message), now);
    PoolState& p = pools_[t.pool];
    ++p.counters.retried;
    ++p.metrics.at(now).retried;
    ++p.counters.retrying;
    t.status = TaskStatus::Retrying;
    ++t.gen;
    const Duration delay = detail::retry_delay(retry, t.attempt + 1, retry_after, rng_);
    const Time at = delay.count() > 0 ? later(now, delay) : now;
    out_.emit_status(t, now, at, std::move(message));
    // Handing over, it stays Retrying for the next leader even without a delay.
    if (delay.count() <= 0 && !handing_over_) return make_ready(s, now);
    if (at != never) timers_.push(at, s, t.gen, TimerKind::RetryDone);
}

void Lifecycle::abandon_attempt(std::uint32_t s, AbortReason reason, Time now) {
    TaskSlot& t = tasks_[s];
    const AttemptState ended = end_lease(t, now);
    out_.emit(Abort{t.id, ended.lease, t.pool, reason, t.user});
    PoolCounters& c = pools_[t.pool].counters;
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

void Lifecycle::shed(std::uint32_t s, const std::string& why, Time now) {
    std::string message = "shed: ";
    message.append(why);
    ++pools_[tasks_[s].pool].counters.shed;
    finish(s, TaskStatus::Shed, std::move(message), now);
}

void Lifecycle::fail_stranded(std::uint32_t s, Time now) {
    TaskSlot& t = tasks_[s];
    leave(t);
    // As at the nack: the attempt counts after all, and fails from
    // Running (whose count leave() does not keep).
    t.status = TaskStatus::Running;
    ++t.attempt;
    fail_retryable(s, "nacked, and no other connected worker can take it", std::nullopt, now);
}

void Lifecycle::restore_retrying(std::uint32_t s, Time until) {
    TaskSlot& t = tasks_[s];
    leave(t);
    t.status = TaskStatus::Retrying;
    ++t.gen;
    ++pools_[t.pool].counters.retrying;
    timers_.push(until, s, t.gen, TimerKind::RetryDone);
}

void Lifecycle::abort_all_running(Time now) {
    for (std::uint32_t s = 0; s < tasks_.size(); ++s) {
        TaskSlot& t = tasks_[s];
        if (!t.id || t.status != TaskStatus::Running || t.run == no_slot) continue;
        if (!handing_over_) {
            abandon_attempt(s, AbortReason::Shutdown, now);
            continue;
        }
        const AttemptState ended = end_lease(t, now);
        ++t.gen;  // its attempt's timer is stale
        out_.emit(Abort{t.id, ended.lease, t.pool, AbortReason::Shutdown, t.user});
    }
}

void Lifecycle::shorten_grace(Time now, Time end) {
    if (end >= grace_end_) return;
    grace_end_ = end;
    if (end <= now)
        abort_all_running(now);
    else
        timers_.push(end, no_slot, 0, TimerKind::ShutdownGrace);
}

// ---- moves out of waiting ------------------------------------------------------

namespace {

std::string describe_lateness(Duration late) {
    std::string m = "missed its start by ";
    m.append(std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(late).count()));
    m.append(" ms");
    return m;
}

}  // namespace

void Lifecycle::release(std::uint32_t s, Time now, bool admitting) {
    TaskSlot& t = tasks_[s];
    if (!t.has_start) return make_ready(s, now, false, admitting);
    const StartInfo& start = waiting_.start_of(t);
    if (start.start <= now) return start_due(s, now);
    leave(t);
    t.status = TaskStatus::Scheduled;
    ++t.gen;
    ++pools_[t.pool].counters.scheduled;
    pools_[t.pool].held_starts.insert(start.start);
    timers_.push(start.start, s, t.gen, TimerKind::Start);
    out_.emit_status(t, now, start.start);
}

void Lifecycle::start_due(std::uint32_t s, Time now) {
    TaskSlot& t = tasks_[s];
    const StartInfo& start = waiting_.start_of(t);
    const Duration late = diff_saturated(now, start.start);
    // Paused, it waits in the due starts: resume_starts() judges it.
    if (late > start.tolerance && start.on_miss != MissPolicy::RunLate && !pools_[t.pool].paused)
        return miss_start(s, now);
    make_ready(s, now, true);
    // Still within the tolerance: if no slot frees by its end, it is missed.
    if (start.on_miss != MissPolicy::RunLate && late <= start.tolerance) arm_miss_check(s, t.gen, start);
}

void Lifecycle::arm_miss_check(std::uint32_t s, std::uint32_t gen, const StartInfo& start) {
    // Saturating: a tolerance of Duration::max() never ends, so it arms
    // nothing (its end + 1 ns used to wrap into the past and miss at once).
    const Time miss_at = later(later(start.start, start.tolerance), Duration(1));
    if (miss_at != never) timers_.push(miss_at, s, gen, TimerKind::MissCheck);
}

void Lifecycle::miss_start(std::uint32_t s, Time now) {
    TaskSlot& t = tasks_[s];
    const StartInfo& start = waiting_.start_of(t);
    ++pools_[t.pool].counters.starts_late;
    ++pools_[t.pool].metrics.at(now).starts_late;
    std::string message = describe_lateness(diff_saturated(now, start.start));
    finish(s, start.on_miss == MissPolicy::Skip ? TaskStatus::Missed : TaskStatus::Failed, std::move(message), now);
}

void Lifecycle::resume_starts(PoolState& p, Time now) {
    std::vector<std::uint32_t> missed;
    for (std::size_t i = 0; i < p.due_starts.size(); ++i) {
        const detail::QueueRef r = p.due_starts[i];
        if (!tasks_.live(r)) continue;
        const StartInfo& start = waiting_.start_of(tasks_[r.slot]);
        if (start.on_miss == MissPolicy::RunLate) continue;
        if (diff_saturated(now, start.start) > start.tolerance) {
            missed.push_back(r.slot);
        } else {
            arm_miss_check(r.slot, r.gen, start);
        }
    }
    // Ending them bumps their generations: their entries go stale.
    for (const std::uint32_t s : missed) miss_start(s, now);
}

void Lifecycle::expire_await(std::uint32_t s, Time now) {
    const std::string* key = waiting_.first_awaited(tasks_[s].id);
    if (!key) return;
    std::string message = "dependency key \"";
    message.append(*key);
    message.append("\" was not submitted in time");
    finish(s, TaskStatus::Skipped, std::move(message), now);
}

void Lifecycle::resolve_dependents(Time now) {
    while (std::optional<Resolved> r = waiting_.take_resolved()) {
        for (const detail::Edge& e : r->edges) {
            const auto child = tasks_.live_slot(e.child);
            if (!child || tasks_[*child].status != TaskStatus::Blocked) continue;  // ended meanwhile
            if (!dep_met(e.kind, r->status)) {
                std::string message = "dependency " + tasks_.describe(r->parent);
                message.append(" ended ");
                message.append(to_string(r->status));
                finish(*child, TaskStatus::Skipped, std::move(message), now);
                continue;
            }
            if (waiting_.meet_edge(e.child)) release(*child, now);
        }
    }
}

// Below its cap again: its tasks compete again, those that waited at the
// cap with their ready time (aging and order kept).
void Lifecycle::unpark_key(PoolState& p, std::uint32_t key) {
    p.queue.unpark_key(key);
    p.fair.unpark(key, [this, &p](detail::QueueRef r) {
        if (!tasks_.live(r)) return;
        const TaskSlot& t = tasks_[r.slot];
        p.requeue(t, t.has_deadline ? tasks_.extras(t).latest_start : Time{}, r);
    });
}

}  // namespace cronoq::core
