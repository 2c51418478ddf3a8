#pragma once
// The engine's internal state and the small helpers over it. Private to the
// engine: included by its sources (src/core/engine*.cpp) only; engine.cpp
// holds the public API over it and the housekeeping every call ends with,
// engine_transitions.cpp a task's transitions and the timers, the others
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
    detail::Ring<std::uint32_t> retained;  // slots of terminal tasks, oldest end first
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
    bool report_implied = true;  // Engine::report_implied_transitions
    bool release_users_at_end = false;  // Engine::release_users_at_end
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

    /// The slot of a known task (live or retained), else null.
    TaskSlot* slot_of(TaskId id) {
        const std::uint32_t* v = by_task.find(id.value);
        return v ? &slots[*v] : nullptr;
    }
    const TaskSlot* slot_of(TaskId id) const {
        const std::uint32_t* v = by_task.find(id.value);
        return v ? &slots[*v] : nullptr;
    }

    /// The slot of a task that is not terminal.
    std::optional<std::uint32_t> live_slot(TaskId id) const {
        const std::uint32_t* v = by_task.find(id.value);
        if (!v || is_terminal(slots[*v].status)) return std::nullopt;
        return *v;
    }

    std::uint64_t* user_slot(TaskId id) {
        TaskSlot* t = slot_of(id);
        return t ? &t->user : nullptr;
    }

    std::optional<std::uint64_t> user_of(TaskId id) const {
        const TaskSlot* t = slot_of(id);
        if (!t) return std::nullopt;
        return t->user;
    }

    std::optional<TaskStatus> status_of(TaskId id) const {
        const TaskSlot* t = slot_of(id);
        if (!t) return std::nullopt;
        return t->status;
    }

    /// "task 12" or "task 12 (\"key\")", for messages.
    std::string describe_task(TaskId id) const {
        std::string out = "task " + std::to_string(id.value);
        const TaskSlot* t = slot_of(id);
        if (!t) return out;
        if (const std::string* key = key_of(*t)) {
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
    // Actions are made in place: one is a large variant, and a temporary
    // moved into it would cost a second construction.
    template <class A>
    A& emit() {
        return *std::get_if<A>(&actions.emplace_back(std::in_place_type<A>));
    }
    /// `t`'s current status.
    void emit_status(const TaskSlot& t, Time now, std::optional<Time> until = std::nullopt, std::string&& message = {}) {
        Status& s = emit<Status>();
        s.task = t.id;
        s.pool = t.pool;
        s.status = t.status;
        s.attempt = t.attempt;
        s.at = now;
        s.until = until;
        s.user = t.user;
        if (!message.empty()) s.message = std::move(message);  // most have none: no call
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

    // ---- transitions (engine_transitions.cpp) ------------------------------
    // Takes a task out of the count of its waiting status; every transition
    // starts with it, so counts move in one place. (Running is counted by
    // its lease: end_lease.)
    void leave(TaskSlot& t);

    // Ready (counted, a scaler told of its arrival), in no queue yet.
    void become_ready(std::uint32_t s, Time now);

    // Ready in the pool's queue, or with `due_start` in its queue of due
    // fixed starts, which dispatch first. `admitting`: the task is being
    // admitted (its Ready is implied, Engine::report_implied_transitions).
    void make_ready(std::uint32_t s, Time now, bool due_start = false, bool admitting = false);

    // A task being admitted without needs into a local pool that has a
    // free slot and nothing else ready: the next dispatch would take it,
    // and nothing before that dispatch could change its choice, so it
    // starts now, without a round through the queue. False (nothing done)
    // when that does not hold; the caller makes it ready instead.
    bool start_at_once(std::uint32_t s, Time now);

    // `worker`: the remote worker that takes the lease (0 in a local pool).
    void start_attempt(std::uint32_t s, Time now, WorkerId worker = {});

    // Ends the running attempt's lease; the slot it held is free again.
    // Returns what the attempt was, for the caller's report of it.
    AttemptState end_lease(TaskSlot& t, Time now);

    // Terminal: the task keeps its slot, retained until forget_retained.
    void finish(std::uint32_t s, TaskStatus status, std::string message, Time now);

    // A failed attempt that may be retried: Retrying until its backoff
    // ends, else dead-lettered (or Cancelled in a shutdown).
    void fail_retryable(std::uint32_t s, std::string message, std::optional<Duration> retry_after, Time now);

    // The engine gives up a running attempt (timeout, lease expiry,
    // cancellation, shutdown, lost worker): Abort, then what follows.
    void abandon_attempt(std::uint32_t s, AbortReason reason, Time now);

    // ---- timers (engine_transitions.cpp) -----------------------------------
    void fire(const Timer& tm, Time now);

    void run_due_timers(Time now);

    // At the end of a shutdown grace. Handing over, the tasks stay Running
    // (as the store has them) with no attempt: the next leader recovers
    // them as after a crash.
    void abort_all_running(Time now);
    // A shutdown's or hand-over's grace ends at `grace_end` unless it ends
    // sooner already: then, or at once when it has passed, every running
    // attempt is aborted.
    void shorten_grace(Time now, Time end);

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
    /// The slot of a terminal task still known, else null.
    TaskSlot* retained_slot(TaskId id);

    // ---- waiting before ready: dependencies, fixed starts (engine_waiting.cpp)
    /// Every edge of a Blocked or new task is met: Scheduled or Ready.
    void release(std::uint32_t s, Time now, bool admitting = false);
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
    /// Whether a dispatch has anything to do: a free slot and a ready task.
    static bool can_dispatch(const PoolState& p) { return p.counters.running < p.capacity && p.counters.ready > 0; }
    /// Drops retained tasks past their retention (by age or count).
    void forget_retained(Time now);
    /// After every call: resolves dependents, autoscales, dispatches,
    /// unparks, announces space, forgets, and keeps the timer heap's top live.
    void settle(Time now);
};

}  // namespace cronoq::core
