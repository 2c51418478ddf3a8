#include <cronoq/config_error.hpp>
#include <cronoq/core/engine.hpp>

#include "backoff.hpp"
#include "flat_id_map.hpp"
#include "ready_queue.hpp"
#include "ring.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <functional>
#include <string_view>
#include <unordered_map>

namespace cronoq::core {

namespace {

// Ids come from process-wide counters so that they are unique across every
// engine in the process, as the public contract promises.
std::atomic<std::uint64_t> next_task_id{1};
std::atomic<std::uint64_t> next_lease_id{1};

constexpr Time never = Time::max();
constexpr std::uint32_t no_slot = std::numeric_limits<std::uint32_t>::max();

// `now + d` for d >= 0, saturating: a time past the end of the axis is
// `never` (e.g. a timeout of Duration::max() means no timeout) instead of a
// signed overflow that wraps into the past and fires at once.
Time later(Time now, Duration d) {
    if (now.time_since_epoch().count() > 0 && d > never - now) return never;
    return now + d;
}

// Exponentially weighted mean run time of a (pool, kind); the first sample
// sets it.
struct RunTimeMean {
    double nanos = 0;
    bool seen = false;
    void add(Duration d) {
        const auto x = static_cast<double>(d.count());
        nanos = seen ? nanos + 0.2 * (x - nanos) : x;
        seen = true;
    }
};

struct TaskSlot {
    TaskId id;                 // 0 while the slot is free
    LeaseId lease;             // live lease while Running
    Time ready_since{};        // aging origin
    Time latest_start{};       // with a deadline
    Time deadline{};
    Time attempt_started{};
    Time attempt_deadline = never;  // timeout of the running attempt
    Time lease_expiry = never;      // last heartbeat + lease_ttl
    Duration timeout{};        // 0: none
    Duration duration_hint{};  // 0: none
    RetryPolicy retry;
    std::string message;       // last error
    std::string key;           // idempotency key, "" for none
    PoolId pool = 0;
    KindId kind = 0;
    std::uint32_t attempt = 0;
    std::uint32_t gen = 0;     // bumped on every transition: stale queue and timer entries
    Priority priority = Priority::Normal;
    TaskStatus status = TaskStatus::Ready;
    bool has_deadline = false;
};

// A terminal task: all that status lookups need, so that its big slot is
// reused at once (hot in cache) while the task stays visible.
struct RetainedTask {
    TaskId id;
    Time finished_at;
    PoolId pool;
    TaskStatus status;
    std::string key;  // released when the task is forgotten
};

// `by_task` maps an id to its slot, or, with this bit set, to the sequence
// number (mod 2^31) of its RetainedTask.
constexpr std::uint32_t retained_bit = 0x80000000u;

enum class TimerKind : std::uint8_t { Attempt, RetryDone, ShutdownGrace };

struct Timer {
    Time at;
    std::uint32_t slot;
    std::uint32_t gen;
    TimerKind kind;
    // Min-heap order for std::push_heap.
    friend bool operator<(const Timer& a, const Timer& b) { return a.at > b.at; }
};

struct PoolState {
    PoolConfig config;
    std::size_t capacity = 0;
    PoolCounters counters;
    detail::ReadyQueue queue;
    std::vector<RunTimeMean> run_times;  // by kind
    bool dirty = false;                  // may dispatch
};

// Lets kind_ids be searched with a string_view.
struct KindHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

std::string describe_pool(const PoolConfig& c) { return "pool \"" + c.name + "\": "; }

void check_finite_nonneg(double v, const char* field) {
    if (!std::isfinite(v) || v < 0) throw ConfigError(std::string(field) + " must be a finite number >= 0");
}

}  // namespace

struct Engine::State {
    EngineConfig config;
    detail::Rng rng;
    std::vector<TaskSlot> slots;
    std::vector<std::uint32_t> free_slots;
    detail::FlatIdMap by_task;
    detail::FlatIdMap by_lease;
    std::vector<Timer> timers;
    detail::Ring<RetainedTask> retained;  // terminal tasks, oldest first
    std::uint32_t retained_head = 0;       // sequence number of retained.front()
    std::vector<PoolState> pools;
    std::vector<std::string> kinds{""};
    std::unordered_map<std::string, KindId, KindHash, std::equal_to<>> kind_ids{{"", 0}};
    std::unordered_map<std::string, TaskId, KindHash, std::equal_to<>> keys;  // of live and retained tasks
    std::vector<Action> actions;
    std::size_t live = 0;
    std::uint64_t late = 0;
    bool shutting_down = false;
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

    std::optional<TaskStatus> status_of(TaskId id) const {
        const std::uint32_t* v = by_task.find(id.value);
        if (!v) return std::nullopt;
        if (!(*v & retained_bit)) return slots[*v].status;
        const std::uint32_t offset = ((*v & ~retained_bit) - retained_head) & ~retained_bit;
        return retained[offset].status;
    }

    // ---- actions ----------------------------------------------------------
    void emit_status(const TaskSlot& t, Time now) {
        actions.emplace_back(Status{t.id, t.pool, t.status, t.attempt, now, std::string{}});
    }

    // ---- timing helpers ---------------------------------------------------
    void push_timer(Time at, std::uint32_t slot, std::uint32_t gen, TimerKind kind) {
        timers.push_back(Timer{at, slot, gen, kind});
        std::push_heap(timers.begin(), timers.end());
    }

    // The shutdown grace matters only while some attempt still runs.
    bool timer_live(const Timer& tm) const {
        if (tm.kind == TimerKind::ShutdownGrace) return any_running();
        return slots[tm.slot].gen == tm.gen;
    }

    bool any_running() const {
        for (const PoolState& p : pools)
            if (p.counters.running > 0) return true;
        return false;
    }

    Duration expected_duration(const TaskSlot& t) const {
        if (t.duration_hint.count() > 0) return t.duration_hint;
        const PoolState& p = pools[t.pool];
        if (t.kind < p.run_times.size() && p.run_times[t.kind].seen)
            return Duration(static_cast<Duration::rep>(p.run_times[t.kind].nanos));
        return p.config.default_duration;
    }

    double urgency(const TaskSlot& t, Time now) const {
        const UrgencyConfig& u = config.urgency;
        const double until = to_seconds(t.latest_start - now);
        const double window = to_seconds(u.window);
        if (until > window) return 0.0;
        if (until >= 0) return window > 0 ? u.max * (1.0 - until / window) : u.max;
        return u.max + std::min(u.overdue_rate * -until, u.overdue_cap);
    }

    detail::Rank rank(std::uint32_t s, Time now) const {
        const TaskSlot& t = slots[s];
        const PriorityConfig& p = config.priority;
        const double waited = std::max(0.0, to_seconds(now - t.ready_since));
        double score = p.base[index_of(t.priority)] + std::min(p.aging_rate * waited, p.age_cap);
        if (t.has_deadline) score += urgency(t, now);
        return {score, t.ready_since, t.id.value};
    }

    // ---- transitions ------------------------------------------------------
    void make_ready(std::uint32_t s, Time now) {
        TaskSlot& t = slots[s];
        PoolState& p = pools[t.pool];
        t.status = TaskStatus::Ready;
        t.ready_since = now;
        ++t.gen;
        ++p.counters.ready;
        if (t.has_deadline) {
            t.latest_start = t.deadline - expected_duration(t);
            p.queue.push_deadline(t.priority, t.latest_start, t.id.value, {s, t.gen});
        } else {
            p.queue.push(t.priority, {s, t.gen});
        }
        p.dirty = true;
        emit_status(t, now);
    }

    void start_attempt(std::uint32_t s, Time now) {
        TaskSlot& t = slots[s];
        PoolState& p = pools[t.pool];
        --p.counters.ready;
        ++p.counters.running;
        ++p.counters.dispatched;
        t.status = TaskStatus::Running;
        ++t.attempt;
        ++t.gen;
        t.lease = LeaseId{next_lease_id.fetch_add(1, std::memory_order_relaxed)};
        t.attempt_started = now;
        t.attempt_deadline = t.timeout.count() > 0 ? later(now, t.timeout) : never;
        t.lease_expiry = p.config.lease_ttl ? later(now, *p.config.lease_ttl) : never;
        by_lease.insert(t.lease.value, s);
        const Time check = std::min(t.attempt_deadline, t.lease_expiry);
        if (check != never) push_timer(check, s, t.gen, TimerKind::Attempt);
        actions.emplace_back(Dispatch{t.id, t.lease, t.pool, t.attempt});
        emit_status(t, now);
    }

    // Ends the running attempt's lease; the slot it held is free again.
    void end_lease(TaskSlot& t) {
        by_lease.erase(t.lease.value);
        PoolState& p = pools[t.pool];
        --p.counters.running;
        p.dirty = true;
    }

    void finish(std::uint32_t s, TaskStatus status, std::string message, Time now) {
        TaskSlot& t = slots[s];
        PoolCounters& c = pools[t.pool].counters;
        if (t.status == TaskStatus::Ready) --c.ready;
        if (t.status == TaskStatus::Retrying) --c.retrying;
        t.status = status;
        ++t.gen;
        switch (status) {
            case TaskStatus::Succeeded: ++c.succeeded; break;
            case TaskStatus::Failed: ++c.failed; break;
            case TaskStatus::DeadLettered: ++c.dead_lettered; break;
            case TaskStatus::Cancelled: ++c.cancelled; break;
            default: break;
        }
        --live;
        actions.emplace_back(Status{t.id, t.pool, status, t.attempt, now, std::move(message)});
        // Retain the task in compact form and free its slot.
        const std::uint32_t seq = (retained_head + static_cast<std::uint32_t>(retained.size())) & ~retained_bit;
        retained.push_back(RetainedTask{t.id, now, t.pool, status, std::move(t.key)});
        by_task.assign(t.id.value, retained_bit | seq);
        t.id = TaskId{};
        t.message.clear();
        t.key.clear();
        free_slots.push_back(s);
    }

    void fail_retryable(std::uint32_t s, std::string message, std::optional<Duration> retry_after, Time now) {
        TaskSlot& t = slots[s];
        if (shutting_down) return finish(s, TaskStatus::Cancelled, "shutdown: " + message, now);
        if (t.attempt >= t.retry.max_attempts) return finish(s, TaskStatus::DeadLettered, std::move(message), now);
        PoolState& p = pools[t.pool];
        ++p.counters.retried;
        ++p.counters.retrying;
        t.status = TaskStatus::Retrying;
        t.message = std::move(message);
        ++t.gen;
        actions.emplace_back(Status{t.id, t.pool, t.status, t.attempt, now, t.message});
        const Duration delay = detail::retry_delay(t.retry, t.attempt + 1, retry_after, rng);
        if (delay.count() <= 0) {
            --p.counters.retrying;
            return make_ready(s, now);
        }
        const Time at = later(now, delay);
        if (at != never) push_timer(at, s, t.gen, TimerKind::RetryDone);
    }

    void abandon_attempt(std::uint32_t s, AbortReason reason, Time now) {
        TaskSlot& t = slots[s];
        end_lease(t);
        actions.emplace_back(Abort{t.id, t.lease, t.pool, reason});
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
        }
    }

    // ---- timers -----------------------------------------------------------
    void fire(const Timer& tm, Time now) {
        if (tm.kind == TimerKind::ShutdownGrace) return abort_all_running(now);
        TaskSlot& t = slots[tm.slot];
        if (tm.kind == TimerKind::RetryDone) {
            --pools[t.pool].counters.retrying;
            return make_ready(tm.slot, now);
        }
        if (now >= t.attempt_deadline) return abandon_attempt(tm.slot, AbortReason::Timeout, now);
        if (now >= t.lease_expiry) return abandon_attempt(tm.slot, AbortReason::LeaseExpired, now);
        // A heartbeat moved the expiry since this check was armed.
        const Time next = std::min(t.attempt_deadline, t.lease_expiry);
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

    void abort_all_running(Time now) {
        for (std::uint32_t s = 0; s < slots.size(); ++s)
            if (slots[s].id && slots[s].status == TaskStatus::Running) abandon_attempt(s, AbortReason::Shutdown, now);
    }

    // ---- housekeeping after every call -------------------------------------
    void dispatch(PoolState& p, Time now) {
        p.dirty = false;
        while (p.counters.running < p.capacity) {
            auto s = p.queue.pop_best([this](detail::QueueRef r) { return slots[r.slot].gen == r.gen; },
                                      [this, now](std::uint32_t slot) { return rank(slot, now); });
            if (!s) break;
            start_attempt(*s, now);
        }
    }

    void forget_retained(Time now) {
        while (!retained.empty()) {
            const RetainedTask& r = retained.front();
            if (retained.size() <= config.retention_max && now - r.finished_at < config.retention) break;
            by_task.erase(r.id.value);
            if (!r.key.empty()) keys.erase(r.key);
            actions.emplace_back(Forget{r.id});
            retained.pop_front();
            retained_head = (retained_head + 1) & ~retained_bit;
        }
    }

    void settle(Time now) {
        for (PoolState& p : pools)
            if (p.dirty) dispatch(p, now);
        forget_retained(now);
        // Keep the heap top live, so that next_wakeup() never names a
        // wakeup with nothing to do, and an idle engine has none.
        while (!timers.empty() && !timer_live(timers.front())) {
            std::pop_heap(timers.begin(), timers.end());
            timers.pop_back();
        }
    }
};

// ---- public API -------------------------------------------------------------

Engine::Engine(EngineConfig config) {
    const PriorityConfig& p = config.priority;
    for (double b : p.base) check_finite_nonneg(b, "priority.base");
    check_finite_nonneg(p.aging_rate, "priority.aging_rate");
    check_finite_nonneg(p.age_cap, "priority.age_cap");
    const UrgencyConfig& u = config.urgency;
    if (u.window.count() < 0) throw ConfigError("urgency.window must not be negative");
    check_finite_nonneg(u.max, "urgency.max");
    check_finite_nonneg(u.overdue_rate, "urgency.overdue_rate");
    check_finite_nonneg(u.overdue_cap, "urgency.overdue_cap");
    if (config.retention.count() < 0) throw ConfigError("retention must not be negative");
    s_ = std::make_unique<State>(std::move(config));
}

Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

PoolId Engine::add_pool(PoolConfig config) {
    if (config.name.empty()) throw ConfigError("pool name must not be empty");
    if (find_pool(config.name)) throw ConfigError(describe_pool(config) + "duplicate pool name");
    if (auto problem = detail::check_retry_policy(config.retry)) throw ConfigError(describe_pool(config) + "retry: " + *problem);
    if (config.default_timeout && config.default_timeout->count() <= 0)
        throw ConfigError(describe_pool(config) + "default_timeout must be positive");
    if (config.lease_ttl && config.lease_ttl->count() <= 0)
        throw ConfigError(describe_pool(config) + "lease_ttl must be positive");
    if (config.default_duration.count() <= 0) throw ConfigError(describe_pool(config) + "default_duration must be positive");
    PoolState p;
    p.capacity = config.capacity;
    p.counters.capacity = config.capacity;
    p.config = std::move(config);
    s_->pools.push_back(std::move(p));
    return static_cast<PoolId>(s_->pools.size() - 1);
}

std::optional<PoolId> Engine::find_pool(std::string_view name) const {
    for (std::size_t i = 0; i < s_->pools.size(); ++i)
        if (s_->pools[i].config.name == name) return static_cast<PoolId>(i);
    return std::nullopt;
}

std::size_t Engine::pool_count() const { return s_->pools.size(); }
const PoolConfig& Engine::pool_config(PoolId pool) const { return s_->pools.at(pool).config; }

KindId Engine::intern_kind(std::string_view name) {
    auto it = s_->kind_ids.find(name);  // heterogeneous: no string built per submit
    if (it != s_->kind_ids.end()) return it->second;
    const auto id = static_cast<KindId>(s_->kinds.size());
    s_->kinds.emplace_back(name);
    s_->kind_ids.emplace(std::string(name), id);
    return id;
}

const std::string& Engine::kind_name(KindId kind) const { return s_->kinds.at(kind); }

SubmitResult<TaskId> Engine::submit(const TaskSpec& spec, Time now) {
    State& s = *s_;
    if (s.shutting_down) return {SubmitError::ShuttingDown, "the scheduler is shutting down"};
    if (spec.pool >= s.pools.size()) return {SubmitError::UnknownPool, "no pool with id " + std::to_string(spec.pool)};
    if (spec.kind >= s.kinds.size()) return {SubmitError::Invalid, "kind id was not interned"};
    if (spec.timeout && spec.timeout->count() <= 0) return {SubmitError::Invalid, "timeout must be positive"};
    if (spec.duration_hint && spec.duration_hint->count() <= 0)
        return {SubmitError::Invalid, "duration_hint must be positive"};
    if (index_of(spec.priority) >= priority_count) return {SubmitError::Invalid, "unknown priority"};
    if (spec.retry)
        if (auto problem = detail::check_retry_policy(*spec.retry)) return {SubmitError::Invalid, "retry: " + *problem};

    if (spec.key && spec.key->empty()) return {SubmitError::Invalid, "key must not be empty"};
    s.run_due_timers(now);
    if (spec.key) {
        if (auto held = s.keys.find(*spec.key); held != s.keys.end()) {
            s.settle(now);
            return held->second;
        }
    }
    PoolState& p = s.pools[spec.pool];
    const std::uint32_t slot = s.allocate_slot();
    TaskSlot& t = s.slots[slot];
    t.id = TaskId{next_task_id.fetch_add(1, std::memory_order_relaxed)};
    t.lease = LeaseId{};
    t.pool = spec.pool;
    t.kind = spec.kind;
    t.priority = spec.priority;
    t.attempt = 0;
    t.has_deadline = spec.deadline.has_value();
    t.deadline = spec.deadline.value_or(Time{});
    t.duration_hint = spec.duration_hint.value_or(Duration{});
    t.timeout = spec.timeout ? *spec.timeout : p.config.default_timeout.value_or(Duration{});
    t.retry = spec.retry.value_or(p.config.retry);
    s.by_task.insert(t.id.value, slot);
    if (spec.key) {
        t.key = *spec.key;
        s.keys.emplace(t.key, t.id);
    }
    ++s.live;
    ++p.counters.submitted;
    if (p.run_times.size() <= spec.kind) p.run_times.resize(spec.kind + 1);
    s.make_ready(slot, now);
    s.settle(now);
    return t.id;
}

bool Engine::complete(LeaseId lease, const Outcome& outcome, Time now) {
    State& s = *s_;
    // What was due by `now` happened first: a completion that arrives after
    // its attempt's timeout is late, whether or not tick() ran in between.
    s.run_due_timers(now);
    const std::uint32_t* found = s.by_lease.find(lease.value);
    if (!found) {
        ++s.late;
        s.settle(now);
        return false;
    }
    const std::uint32_t slot = *found;
    TaskSlot& t = s.slots[slot];
    s.end_lease(t);
    switch (outcome.kind) {
        case Outcome::Kind::Success:
            s.pools[t.pool].run_times[t.kind].add(now - t.attempt_started);
            s.finish(slot, TaskStatus::Succeeded, {}, now);
            break;
        case Outcome::Kind::Permanent: s.finish(slot, TaskStatus::Failed, outcome.message, now); break;
        case Outcome::Kind::Cancelled: s.finish(slot, TaskStatus::Cancelled, outcome.message, now); break;
        case Outcome::Kind::Retryable: s.fail_retryable(slot, outcome.message, outcome.retry_after, now); break;
    }
    s.settle(now);
    return true;
}

bool Engine::heartbeat(LeaseId lease, Time now) {
    State& s = *s_;
    s.run_due_timers(now);  // a heartbeat at or after the expiry is too late
    const std::uint32_t* found = s.by_lease.find(lease.value);
    if (!found) {
        ++s.late;
        s.settle(now);
        return false;
    }
    TaskSlot& t = s.slots[*found];
    const auto& ttl = s.pools[t.pool].config.lease_ttl;
    if (ttl) t.lease_expiry = later(now, *ttl);
    s.settle(now);
    return true;
}

bool Engine::cancel(TaskId task, Time now) {
    State& s = *s_;
    s.run_due_timers(now);
    const auto found = s.live_slot(task);  // terminal tasks are not live
    if (!found) {
        s.settle(now);
        return false;
    }
    const std::uint32_t slot = *found;
    TaskSlot& t = s.slots[slot];
    if (t.status == TaskStatus::Running)
        s.abandon_attempt(slot, AbortReason::Cancelled, now);
    else
        s.finish(slot, TaskStatus::Cancelled, "cancelled", now);
    s.settle(now);
    return true;
}

void Engine::set_capacity(PoolId pool, std::size_t capacity, Time now) {
    PoolState& p = s_->pools.at(pool);
    p.capacity = capacity;
    p.counters.capacity = capacity;
    p.dirty = true;
    s_->run_due_timers(now);
    s_->settle(now);
}

void Engine::tick(Time now) {
    s_->run_due_timers(now);
    s_->settle(now);
}

void Engine::shutdown(Time now, Time grace_end) {
    State& s = *s_;
    s.run_due_timers(now);
    s.shutting_down = true;
    for (std::uint32_t slot = 0; slot < s.slots.size(); ++slot) {
        const TaskSlot& t = s.slots[slot];
        if (t.id && !is_terminal(t.status) && t.status != TaskStatus::Running)
            s.finish(slot, TaskStatus::Cancelled, "shutdown", now);
    }
    if (grace_end < s.grace_end) {
        s.grace_end = grace_end;
        if (grace_end <= now)
            s.abort_all_running(now);
        else
            s.push_timer(grace_end, no_slot, 0, TimerKind::ShutdownGrace);
    }
    s.settle(now);
}

bool Engine::is_shutting_down() const { return s_->shutting_down; }

std::optional<Time> Engine::next_wakeup() const {
    if (s_->timers.empty()) return std::nullopt;
    return s_->timers.front().at;
}

std::optional<TaskId> Engine::find_key(std::string_view key) const {
    auto held = s_->keys.find(key);
    if (held == s_->keys.end()) return std::nullopt;
    return held->second;
}

std::optional<TaskStatus> Engine::status(TaskId task) const {
    return s_->status_of(task);
}

void Engine::drain(std::vector<Action>& out) {
    out.clear();
    out.swap(s_->actions);
}

bool Engine::has_actions() const { return !s_->actions.empty(); }

PoolCounters Engine::counters(PoolId pool) const { return s_->pools.at(pool).counters; }
std::size_t Engine::live_tasks() const { return s_->live; }
std::size_t Engine::retained_tasks() const { return s_->retained.size(); }
std::uint64_t Engine::late_reports() const { return s_->late; }

}  // namespace cronoq::core
