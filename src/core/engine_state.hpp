#pragma once
// The engine's internal state and its transitions. Private to the engine:
// included by its sources (src/core/engine*.cpp) only; engine.cpp holds the
// public API over it and the housekeeping every call ends with, the others
// one concern each (admission, bounds, resources, waiting states,
// autoscaling).
#include <cronoq/config_error.hpp>
#include <cronoq/core/engine.hpp>

#include "backoff.hpp"
#include "dependencies.hpp"
#include "engine_types.hpp"
#include "flat_id_map.hpp"
#include "kind_table.hpp"
#include "remote_workers.hpp"
#include "resource_registry.hpp"
#include "slab.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <span>
#include <string_view>
#include <unordered_map>

namespace cronoq::core {

struct Engine::State {
    EngineConfig config;
    detail::Rng rng;
    std::vector<TaskSlot, detail::LargeAllocator<TaskSlot>> slots;
    std::vector<std::uint32_t> free_slots;
    detail::Slab<TaskExtras> extras;        // TaskSlot::extras
    detail::Slab<AttemptState> attempts;    // TaskSlot::run
    detail::FlatIdMap by_task;
    detail::FlatIdMap by_lease;
    std::vector<Timer> timers;
    detail::Ring<RetainedTask> retained;  // terminal tasks, oldest first
    std::uint32_t retained_head = 0;       // sequence number of retained.front()
    std::vector<PoolState> pools;
    detail::KindTable kinds{config.kind_capacity};
    detail::StringMap<TaskId> keys;  // of live and retained tasks
    std::unordered_map<std::uint64_t, StartInfo> starts;  // by task id, until the task ends
    detail::DepGraph graph;
    detail::ResourceRegistry registry;
    // Ready tasks short of a resource, per resource and class, in order.
    std::vector<std::array<detail::Ring<detail::QueueRef>, priority_count>> parked;
    std::vector<Time> refill_at;  // per resource: the armed Refill timer, or never
    std::unordered_map<std::uint64_t, std::vector<detail::Need>> needs;  // by task id
    // Remote pools (engine_remote.cpp): workers by id, per pool (empty for
    // a local one), and tasks with labels or nacks by task id.
    std::unordered_map<std::uint64_t, detail::RemoteWorker> workers;
    std::vector<detail::RemotePool> remote_pools;
    std::unordered_map<std::uint64_t, detail::RemoteTask> remote_tasks;
    std::vector<Action> actions;
    std::size_t live = 0;
    std::uint64_t late = 0;
    bool shutting_down = false;
    // hand_over: nothing is dispatched and only running attempts move on.
    bool handing_over = false;
    Time grace_end = never;

    explicit State(EngineConfig c) : config(std::move(c)), rng(config.seed) {}

    // ---- slots ------------------------------------------------------------
    std::uint32_t allocate_slot() {
        if (!free_slots.empty()) {
            const std::uint32_t s = free_slots.back();
            free_slots.pop_back();
            return s;
        }
        slots.emplace_back();
        return static_cast<std::uint32_t>(slots.size() - 1);
    }

    /// The slot of a task that is not terminal.
    std::optional<std::uint32_t> live_slot(TaskId id) const {
        const std::uint32_t* v = by_task.find(id.value);
        if (!v || (*v & retained_bit)) return std::nullopt;
        return *v;
    }

    std::uint64_t* user_slot(TaskId id) {
        const std::uint32_t* v = by_task.find(id.value);
        if (!v) return nullptr;
        if (!(*v & retained_bit)) return &slots[*v].user;
        const std::uint32_t offset = ((*v & ~retained_bit) - retained_head) & ~retained_bit;
        return &retained[offset].user;
    }

    std::optional<std::uint64_t> user_of(TaskId id) const {
        const std::uint32_t* v = by_task.find(id.value);
        if (!v) return std::nullopt;
        if (!(*v & retained_bit)) return slots[*v].user;
        const std::uint32_t offset = ((*v & ~retained_bit) - retained_head) & ~retained_bit;
        return retained[offset].user;
    }

    std::optional<TaskStatus> status_of(TaskId id) const {
        const std::uint32_t* v = by_task.find(id.value);
        if (!v) return std::nullopt;
        if (!(*v & retained_bit)) return slots[*v].status;
        const std::uint32_t offset = ((*v & ~retained_bit) - retained_head) & ~retained_bit;
        return retained[offset].status;
    }

    /// "task 12" or "task 12 (\"key\")", for messages.
    std::string describe_task(TaskId id) const {
        std::string out = "task " + std::to_string(id.value);
        const std::uint32_t* v = by_task.find(id.value);
        if (!v) return out;
        const std::string* key = nullptr;
        if (!(*v & retained_bit)) {
            key = key_of(slots[*v]);
        } else {
            key = retained[((*v & ~retained_bit) - retained_head) & ~retained_bit].key;
        }
        if (key) {
            out.append(" (\"");
            out.append(*key);
            out.append("\")");
        }
        return out;
    }

    // ---- a task's rare fields ----------------------------------------------
    /// Its TaskExtras, made on first use.
    TaskExtras& extras_of(TaskSlot& t) {
        if (t.extras == no_slot) t.extras = extras.acquire();
        return extras[t.extras];
    }
    const TaskExtras* find_extras(const TaskSlot& t) const {
        return t.extras == no_slot ? nullptr : &extras[t.extras];
    }
    const std::string* key_of(const TaskSlot& t) const {
        const TaskExtras* e = find_extras(t);
        return e ? e->key : nullptr;
    }
    const RetryPolicy& retry_of(const TaskSlot& t) const {
        const TaskExtras* e = find_extras(t);
        return e && e->retry ? *e->retry : pools[t.pool].config.retry;
    }
    /// Per attempt; 0: none.
    Duration timeout_of(const TaskSlot& t) const {
        const TaskExtras* e = find_extras(t);
        if (e && e->timeout) return *e->timeout;
        return pools[t.pool].config.default_timeout.value_or(Duration{});
    }

    // ---- actions ----------------------------------------------------------
    void emit_status(const TaskSlot& t, Time now, std::optional<Time> until = std::nullopt) {
        actions.emplace_back(Status{t.id, t.pool, t.status, t.attempt, now, std::string{}, until, t.user});
    }

    // ---- timing helpers ---------------------------------------------------
    void push_timer(Time at, std::uint32_t slot, std::uint32_t gen, TimerKind kind) {
        timers.push_back(Timer{at, slot, gen, kind});
        std::push_heap(timers.begin(), timers.end());
    }

    // The shutdown grace matters only while some attempt still runs. Once
    // handing over, only running attempts and the grace have timers.
    bool timer_live(const Timer& tm) const {
        if (tm.kind == TimerKind::ShutdownGrace) return any_running();
        if (handing_over && tm.kind != TimerKind::Attempt) return false;
        if (tm.kind == TimerKind::Refill) return refill_at[tm.slot] == tm.at;
        if (tm.kind == TimerKind::Autoscale) return pools[tm.slot].autoscale_armed == tm.at;
        if (tm.kind == TimerKind::Horizon) return true;  // fires once
        return slots[tm.slot].gen == tm.gen;
    }

    bool any_running() const {
        for (const PoolState& p : pools)
            if (p.counters.running > 0) return true;
        return false;
    }

    Duration expected_duration(const TaskSlot& t) const {
        const TaskExtras* e = find_extras(t);
        return pools[t.pool].expected_duration(t.kind, e ? e->duration_hint : Duration{});
    }

    /// For a Ready task with a deadline.
    double urgency(const TaskExtras& e, Time now) const {
        const UrgencyConfig& u = config.urgency;
        const double until = to_seconds(diff_saturated(e.latest_start, now));
        // The latest start is the deadline less the expected duration, so
        // their difference gives that duration back without another field.
        const double expected = to_seconds(diff_saturated(e.deadline, e.latest_start));
        const double window = std::max(to_seconds(u.window), u.window_factor * expected);
        if (until > window) return 0.0;
        if (until >= 0) return window > 0 ? u.max * (1.0 - until / window) : u.max;
        return u.max + std::min(u.overdue_rate * -until, u.overdue_cap);
    }

    detail::Rank rank(std::uint32_t s, Time now) const {
        const TaskSlot& t = slots[s];
        const PriorityConfig& p = config.priority;
        const double waited = std::max(0.0, to_seconds(now - t.ready_since));
        double score = p.base[index_of(t.priority)] + std::min(p.aging_rate * waited, p.age_cap);
        if (t.has_deadline) score += urgency(extras[t.extras], now);
        return {score, t.ready_since, t.id.value};
    }

    // ---- transitions ------------------------------------------------------
    // Takes a task out of the count of its waiting status; every transition
    // starts with it, so counts move in one place. (Running is counted by
    // its lease: end_lease.)
    void leave(TaskSlot& t) {
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

    // Ready in the pool's queue, or with `due_start` in its queue of due
    // fixed starts, which dispatch first.
    void make_ready(std::uint32_t s, Time now, bool due_start = false) {
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
        emit_status(t, now);
    }

    // `worker`: the remote worker that takes the lease (0 in a local pool).
    void start_attempt(std::uint32_t s, Time now, WorkerId worker = {}) {
        TaskSlot& t = slots[s];
        PoolState& p = pools[t.pool];
        leave(t);
        p.metrics.accrue(now, p.counters.running, p.capacity);
        detail::MetricsSlice& m = p.metrics.at(now);
        ++m.dispatched;
        m.adherent += took_best ? 1 : 0;
        m.wait.record(now - t.ready_since);
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
        actions.emplace_back(Dispatch{t.id, a.lease, t.pool, t.attempt, t.user,
                                      timeout.count() > 0 ? std::optional(timeout) : std::nullopt,
                                      t.has_deadline ? std::optional(extras[t.extras].deadline) : std::nullopt, worker});
        emit_status(t, now);
    }

    // Ends the running attempt's lease; the slot it held is free again.
    // Returns what the attempt was, for the caller's report of it.
    AttemptState end_lease(TaskSlot& t, Time now) {
        const AttemptState a = attempts[t.run];
        attempts.release(t.run);
        t.run = no_slot;
        if (t.holds_resources) release_resources(t, now);
        if (a.worker) worker_lease_ended(a.worker, a.lease, now);
        by_lease.erase(a.lease.value);
        PoolState& p = pools[t.pool];
        if (auto* scaler = scaler_of(p, now)) scaler->record_service(now - a.started);
        p.metrics.accrue(now, p.counters.running, p.capacity);
        p.metrics.at(now).run.record(now - a.started);
        --p.counters.running;
        p.dirty = true;
        return a;
    }

    void finish(std::uint32_t s, TaskStatus status, std::string message, Time now) {
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
        actions.emplace_back(Status{t.id, t.pool, status, t.attempt, now, std::move(message), std::nullopt, t.user});
        // Retain the task in compact form and free its slot.
        const std::uint32_t seq = (retained_head + static_cast<std::uint32_t>(retained.size())) & ~retained_bit;
        retained.push_back(RetainedTask{t.id, now, t.pool, status, key_of(t), t.user});
        by_task.assign(t.id.value, retained_bit | seq);
        t.id = TaskId{};
        if (t.extras != no_slot) {
            extras.release(t.extras);
            t.extras = no_slot;
        }
        free_slots.push_back(s);
    }

    void fail_retryable(std::uint32_t s, std::string message, std::optional<Duration> retry_after, Time now) {
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
        actions.emplace_back(Status{t.id, t.pool, t.status, t.attempt, now, std::move(message), at, t.user});
        // Handing over, it stays Retrying for the next leader even without a delay.
        if (delay.count() <= 0 && !handing_over) return make_ready(s, now);
        if (at != never) push_timer(at, s, t.gen, TimerKind::RetryDone);
    }

    void abandon_attempt(std::uint32_t s, AbortReason reason, Time now) {
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

    // ---- timers -----------------------------------------------------------
    void fire(const Timer& tm, Time now) {
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

    void run_due_timers(Time now) {
        while (!timers.empty() && timers.front().at <= now) {
            const Timer tm = timers.front();
            std::pop_heap(timers.begin(), timers.end());
            timers.pop_back();
            if (timer_live(tm)) fire(tm, now);
        }
    }

    // At the end of a shutdown grace. Handing over, the tasks stay Running
    // (as the store has them) with no attempt: the next leader recovers
    // them as after a crash.
    void abort_all_running(Time now) {
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

    // ---- reports for a lease ---------------------------------------------------
    // The slot of the attempt holding `lease`, for a report made at `now`.
    // What was due by `now` happens first, so a completion or heartbeat at or
    // after its attempt's timeout or lease expiry is late, whether or not the
    // owner ticked in between; a late report is counted and changes nothing.
    // With `from`, the lease must also be that remote worker's.
    std::optional<std::uint32_t> live_lease(LeaseId lease, Time now, WorkerId from = {}) {
        run_due_timers(now);
        if (from) worker_heard(from, now);  // any report, even a late one, shows it is alive
        if (const std::uint32_t* found = by_lease.find(lease.value))
            if (!from || attempts[slots[*found].run].worker == from) return *found;
        ++late;
        settle(now);
        return std::nullopt;
    }

    bool took_best = true;  // the dispatch being made took the best-scored ready task

    // ---- autoscaling (engine_autoscale.cpp) ------------------------------------
    /// Evaluates the pool's autoscaler if due: applies a new capacity with
    /// a ScaleTo, or asks a user policy (AskScaler); keeps its timer armed
    /// at the next evaluation.
    void autoscale(PoolId pool, Time now);
    /// The user policy's answer (Engine::answer_scaler).
    bool answer_scaler(PoolId pool, std::optional<std::size_t> wanted, Time now);
    /// The pool as an evaluation reads it: exact state, taken as is.
    detail::PoolLoad load_of(PoolState& p, const detail::Autoscaler& a, Time now);
    /// An autoscaler's new capacity, announced with a ScaleTo.
    void scale_to(PoolId pool, std::size_t capacity, Time now);
    detail::Autoscaler* scaler_of(PoolState& p, Time now) {
        if (!p.autoscale_config) return nullptr;
        if (!p.autoscaler)
            p.autoscaler.emplace(*p.autoscale_config, p.config.min_workers, p.capacity, p.config.max_workers,
                                 p.config.default_duration, now, p.config.user_scaler);
        return &*p.autoscaler;
    }

    // ---- resources (engine_resources.cpp) --------------------------------------
    /// Takes every resource the task needs, or parks it on the first short one.
    bool acquire(std::uint32_t s, Time now);
    void release_resources(TaskSlot& t, Time now);
    /// Moves parked tasks back to their queues, as many as `r` can serve now.
    void unpark(detail::ResourceId r, Time now);
    std::uint32_t need_of(const TaskSlot& t, detail::ResourceId r) const;
    /// After dispatch: units that a returned task did not take (it parked
    /// on another resource, its pool had no slot, it was cancelled) go to
    /// the next waiters; refill timers with no waiter left are dropped.
    void revisit_parked(Time now);
    bool parked_tasks = false;  // some resource may have a parked task
    std::size_t parked_count(detail::ResourceId r) const;
    /// A parked task goes back to its pool's queue, keeping its ready time.
    void requeue(detail::QueueRef ref);

    // ---- remote workers (engine_remote.cpp) ------------------------------------
    /// The worker to take Ready task `s` now (a free slot, its labels, not
    /// one that nacked it); 0 when none can.
    WorkerId pick_worker(std::uint32_t s) const;
    /// Whether a connected worker other than those that nacked it could
    /// ever take `s` (free slot or not).
    bool worker_could_take(std::uint32_t s) const;
    bool may_take(const detail::RemoteWorker& w, const TaskSlot& t) const;
    /// Parks a Ready task no worker can take now (its pool's label group).
    void park_for_worker(std::uint32_t s);
    /// Sends back to the queue as many parked tasks as `w` has free slots for.
    void unpark_for_worker(detail::RemoteWorker& w, Time now);
    void worker_lease_ended(WorkerId w, LeaseId lease, Time now);
    void worker_silent(WorkerId w);
    void worker_heard(WorkerId w, Time now);
    void set_remote_capacity(PoolId pool, Time now);
    /// A task waiting after a nack that no connected worker can take fails.
    void recheck_after_nack(PoolId pool, Time now);
    detail::RemoteTask& remote_of(TaskSlot& t);
    /// A new task's labels: the pool's group for that set (made on first use).
    void set_labels(TaskSlot& t, const Labels& labels);

    // ---- bounds and shedding (engine_bounds.cpp) -------------------------------
    static std::size_t pending(const PoolState& p) {
        const PoolCounters& c = p.counters;
        return c.ready + c.blocked + c.scheduled + c.retrying;
    }
    std::size_t pending_total() const;
    bool has_room(const PoolState& p, std::size_t incoming) const;
    /// Room for one more task of `pool` at priority `priority`: nothing, a
    /// shed victim, or the error (Full also marks the pool for a
    /// SpaceAvailable).
    std::optional<SubmitError> make_room(PoolId pool, Priority priority, std::string& why, Time now);
    /// Room for a batch: `incoming[pool]` new tasks per pool; never sheds.
    std::optional<SubmitError> check_room(std::span<const std::size_t> incoming, std::string& why);
    void link_ready(std::uint32_t s);
    void unlink_ready(std::uint32_t s);
    void announce_space();
    std::size_t full_pools = 0;

    // ---- admission (engine_admission.cpp) -----------------------------------
    /// Admits all of `specs` or none (Engine::submit_batch), in phases:
    /// validate, resolve keys and dependencies, order the batch, check
    /// cycles, reservations and bounds, then place each task.
    SubmitResult<std::vector<TaskId>> admit(std::span<const TaskSpec> specs, Time now);
    /// `with_resources`: also whether the registry can serve its resources.
    std::optional<SubmitError> check_spec(const TaskSpec& spec, std::string& why, bool with_resources = true) const;
    struct Target;
    struct Admission;
    struct Rejection {
        SubmitError error;
        std::string message;
    };
    std::optional<Rejection> validate_specs(const Admission& batch) const;
    std::optional<Rejection> resolve_keys(Admission& batch) const;
    std::optional<Rejection> resolve_dependencies(Admission& batch) const;
    std::optional<Rejection> order_within_batch(Admission& batch) const;
    std::optional<Rejection> check_cycles_through_awaited_keys(const Admission& batch) const;
    std::optional<Rejection> check_reservations(const Admission& batch) const;
    std::optional<Rejection> check_bounds(const Admission& batch, Time now);
    void place(Admission& batch, std::size_t i, Time now);
    std::string broken_edge(const Admission& batch, std::size_t i, bool& pending) const;
    void block(const Admission& batch, std::size_t i, std::uint32_t slot, Time now);
    Duration expected_duration(const TaskSpec& spec) const {
        return pools[spec.pool].expected_duration(spec.kind, spec.duration_hint.value_or(Duration{}));
    }
    /// `id`: a restored task's own; empty takes the next id.
    TaskId admit_one(const TaskSpec& spec, std::uint32_t slot, TaskId id = {});

    // ---- durable state (engine_durable.cpp) -------------------------------------
    std::vector<SubmitResult<TaskId>> restore(std::span<const RestoredTask> tasks, Time now);
    std::optional<Rejection> check_restored(const RestoredTask& task, std::string& resource_problem) const;
    void place_restored(const RestoredTask& task, std::uint32_t slot, Time now);
    void restore_edges(const RestoredTask& task, std::uint32_t slot, Time now);
    /// A terminal task that comes back retained, as if it ended at `now`.
    void retain_restored(const RestoredTask& task, const std::string* key, Time now);
    /// The retained entry of a terminal task still known, else null.
    RetainedTask* retained_entry(TaskId id);

    // ---- waiting before ready: dependencies, fixed starts (engine_waiting.cpp)
    /// Every edge of a Blocked or new task is met: Scheduled or Ready.
    void release(std::uint32_t s, Time now);
    /// A fixed start has come: Ready at the front, or the miss policy.
    void start_due(std::uint32_t s, Time now);
    void miss_start(std::uint32_t s, Time now);
    void expire_await(std::uint32_t s, Time now);
    void count_start(const TaskSlot& t, Time now);
    void drop_start(TaskSlot& t);
    void drop_blocked(TaskId id);
    /// Tells the dependents of every task that ended; skips run down the
    /// graph within this one call.
    void resolve_dependents(Time now);

    // ---- housekeeping after every call (engine.cpp) ---------------------------
    /// Fills the pool's free slots (see engine.cpp for the order).
    void dispatch(PoolState& p, Time now);
    /// Drops retained tasks past their retention (by age or count).
    void forget_retained(Time now);
    /// After every call: resolves dependents, autoscales, dispatches,
    /// unparks, announces space, forgets, and keeps the timer heap's top live.
    void settle(Time now);
};

}  // namespace cronoq::core
