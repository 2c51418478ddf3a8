// The engine's public API (include/cronoq/core/engine.hpp) over its
// components (engine_state.hpp); the remote-worker calls are in
// engine_workers.cpp.
#include "config_checks.hpp"
#include "engine_state.hpp"

namespace cronoq::core {

namespace {

bool may_resubmit(TaskStatus s) {
    return s == TaskStatus::Failed || s == TaskStatus::DeadLettered || s == TaskStatus::Cancelled;
}

}  // namespace

// ---- public API -------------------------------------------------------------

Engine::Engine(EngineConfig config) {
    const PriorityConfig& p = config.priority;
    for (double b : p.base) check_finite_nonneg(b, "priority.base");
    check_finite_nonneg(p.aging_rate, "priority.aging_rate");
    check_finite_nonneg(p.age_cap, "priority.age_cap");
    if (auto problem = detail::check_min_share(p.min_share)) throw ConfigError(*problem);
    const UrgencyConfig& u = config.urgency;
    if (u.window.count() < 0) throw ConfigError("urgency.window must not be negative");
    check_finite_nonneg(u.max, "urgency.max");
    check_finite_nonneg(u.overdue_rate, "urgency.overdue_rate");
    check_finite_nonneg(u.overdue_cap, "urgency.overdue_cap");
    check_finite_nonneg(u.window_factor, "urgency.window_factor");
    if (config.retention.count() < 0) throw ConfigError("retention must not be negative");
    if (config.metrics_window.count() <= 0) throw ConfigError("metrics_window must be positive");
    if (auto problem = detail::check_bounds(config.global_bounds, "global_bounds")) throw ConfigError(*problem);
    if (auto problem = detail::check_resources(config.resources)) throw ConfigError("resources: " + *problem);
    raise_counter(next_task_id, config.first_task_id);
    raise_counter(next_lease_id, config.first_lease_id);
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
    if (!std::isfinite(config.reservable_fraction) || config.reservable_fraction < 0 || config.reservable_fraction > 1)
        throw ConfigError(describe_pool(config) + "reservable_fraction must be within [0, 1]");
    if (config.max_hold.count() < 0) throw ConfigError(describe_pool(config) + "max_hold must not be negative");
    if (config.unknown_dependency.awaits() && config.unknown_dependency.timeout().count() <= 0)
        throw ConfigError(describe_pool(config) + "unknown_dependency: the Await timeout must be positive");
    if (config.remote) {
        // The capacity is what connected workers are granted (worker_roster.hpp).
        if (config.autoscale || config.user_scaler)
            throw ConfigError(describe_pool(config) +
                              "autoscale: a remote pool's capacity is the slots granted to its workers");
        if (!config.lease_ttl) config.lease_ttl = std::chrono::seconds(30);
        config.capacity = 0;
        config.min_workers = 0;
    } else if (config.max_workers == 0) {
        config.max_workers = config.capacity;
    }
    if (config.max_workers < config.capacity)
        throw ConfigError(describe_pool(config) + "max_workers must not be below the capacity");
    if (auto problem = detail::check_bounds(config.bounds)) throw ConfigError(describe_pool(config) + *problem);
    if (config.min_workers > config.capacity)
        throw ConfigError(describe_pool(config) + "min_workers must not be above the capacity");
    if (config.autoscale)
        if (auto problem = detail::check_autoscale(*config.autoscale)) throw ConfigError(describe_pool(config) + *problem);
    if (auto problem = detail::check_fairness(config.fairness)) throw ConfigError(describe_pool(config) + *problem);
    PoolState p(s_->config.metrics_window);
    p.autoscale_config = config.autoscale;
    // At least one slot, as docs/guide/time-and-cron.md says, even for a fraction of 0.
    p.reservations.set_limit(std::max<std::size_t>(
        1, static_cast<std::size_t>(std::floor(config.reservable_fraction * static_cast<double>(config.max_workers)))));
    p.capacity = config.capacity;
    p.counters.capacity = config.capacity;
    p.queue.set_shares(s_->config.priority.min_share);
    p.fair.configure(config.fairness);
    p.config = std::move(config);
    s_->bounds.add_pool(p);
    s_->pools.push_back(std::move(p));
    s_->workers.add_pool();
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
    const auto interned = s_->kinds.intern(name);
    if (interned.reused)  // the id of a forgotten kind: what was learned of that one is not this one's
        for (PoolState& p : s_->pools)
            if (interned.id < p.run_times.size()) p.run_times[interned.id] = RunTimeMean{};
    return interned.id;
}

const std::string& Engine::kind_name(KindId kind) const { return s_->kinds.name(kind); }
std::size_t Engine::known_kinds() const { return s_->kinds.size(); }

SubmitResult<TaskId> Engine::submit(const TaskSpec& spec, Time now) {
    State& s = *s_;
    s.kinds.next_admission();
    if (!spec.depends_on.empty() || spec.start) {
        auto r = s.admit_batch(std::span(&spec, 1), now);
        if (!r) return {r.error(), r.message()};
        return r.value().front();
    }
    // The common case, without the batch's bookkeeping.
    if (s.life.shutting_down()) return {SubmitError::ShuttingDown, "the scheduler is shutting down"};
    // With thousands of keys the key's name bucket is out of cache: start
    // loading it before the checks (docs/design.md#fair-sharing, "Cost").
    std::optional<std::uint64_t> key_hash;
    if (!spec.fair_key.empty()) {
        key_hash = detail::FairKeyNames::hash(spec.fair_key);
        s.tasks.fair_keys.prefetch(*key_hash);
    }
    std::string why;
    if (auto error = s.admission.check_spec(spec, why)) return {*error, std::move(why)};
    s.run_due_timers(now);
    if (spec.key) {
        if (auto held = s.tasks.key_holder(*spec.key)) {
            s.settle(now);
            return *held;
        }
    }
    if (auto error = s.admission.make_room(spec.pool, spec.priority, why, now)) {
        s.settle(now);
        return {*error, std::move(why)};
    }
    const std::uint32_t slot = s.tasks.allocate();
    const TaskId id = s.admission.admit_one(spec, slot, now, {}, key_hash);
    if (!s.life.start_at_once(slot, now)) s.life.make_ready(slot, now, false, /*admitting=*/true);
    s.settle(now);
    return id;
}

SubmitResult<std::vector<TaskId>> Engine::submit_batch(std::span<const TaskSpec> specs, Time now) {
    s_->kinds.next_admission();
    return s_->admit_batch(specs, now);
}

bool Engine::complete(LeaseId lease, const Outcome& outcome, Time now, WorkerId from) {
    State& s = *s_;
    const auto found = s.live_lease(lease, now, from);
    if (!found) return false;
    const std::uint32_t slot = *found;
    TaskSlot& t = s.tasks[slot];
    const AttemptState ended = s.life.end_lease(t, now);
    switch (outcome.kind) {
        case Outcome::Kind::Success:
            s.pools[t.pool].run_times[t.kind].add(now - ended.started);
            s.life.finish(slot, TaskStatus::Succeeded, {}, now);
            break;
        case Outcome::Kind::Permanent: s.life.finish(slot, TaskStatus::Failed, outcome.message, now); break;
        case Outcome::Kind::Cancelled: s.life.finish(slot, TaskStatus::Cancelled, outcome.message, now); break;
        case Outcome::Kind::Retryable: s.life.fail_retryable(slot, outcome.message, outcome.retry_after, now); break;
    }
    s.settle(now);
    return true;
}

bool Engine::heartbeat(LeaseId lease, Time now, WorkerId from) {
    State& s = *s_;
    const auto found = s.live_lease(lease, now, from);
    if (!found) return false;
    TaskSlot& t = s.tasks[*found];
    const auto& ttl = s.pools[t.pool].config.lease_ttl;
    if (ttl) s.tasks.attempt(t).lease_expiry = later(now, *ttl);
    s.settle(now);
    return true;
}

bool Engine::cancel(TaskId task, Time now) {
    State& s = *s_;
    s.run_due_timers(now);
    const auto found = s.tasks.live_slot(task);  // terminal tasks are not live
    if (!found) {
        s.settle(now);
        return false;
    }
    const std::uint32_t slot = *found;
    TaskSlot& t = s.tasks[slot];
    // A Running task without an attempt had it aborted at a hand-over.
    if (t.status == TaskStatus::Running && t.run != no_slot)
        s.life.abandon_attempt(slot, AbortReason::Cancelled, now);
    else
        s.life.finish(slot, TaskStatus::Cancelled, "cancelled", now);
    s.settle(now);
    return true;
}

bool Engine::skip_blocked(TaskId task, std::string reason, Time now) {
    State& s = *s_;
    s.run_due_timers(now);
    const auto found = s.tasks.live_slot(task);
    const bool blocked = found && s.tasks[*found].status == TaskStatus::Blocked;
    if (blocked) s.life.finish(*found, TaskStatus::Skipped, std::move(reason), now);
    s.settle(now);
    return blocked;
}

void Engine::set_capacity(PoolId pool, std::size_t capacity, Time now) {
    PoolState& p = s_->pools.at(pool);
    if (p.config.remote) return;  // its workers' granted slots are its capacity
    if (auto* a = p.scaler(now)) a->wake(now);
    p.metrics.accrue(now, p.counters.running, p.capacity);
    p.capacity = capacity;
    p.counters.capacity = capacity;
    p.dirty = true;
    s_->run_due_timers(now);
    s_->settle(now);
}

bool Engine::pause(PoolId pool, Time now) {
    State& s = *s_;
    PoolState& p = s.pools.at(pool);
    s.run_due_timers(now);  // what was due before the pause happens as if unpaused
    const bool was_running = !p.paused;
    p.paused = true;
    s.settle(now);
    return was_running;
}

bool Engine::resume(PoolId pool, Time now) {
    State& s = *s_;
    PoolState& p = s.pools.at(pool);
    s.run_due_timers(now);
    const bool was_paused = p.paused;
    if (was_paused) {
        p.paused = false;
        s.life.resume_starts(p, now);
        if (auto* a = p.scaler(now)) a->wake(now);
        p.dirty = true;
    }
    s.settle(now);
    return was_paused;
}

bool Engine::paused(PoolId pool) const { return s_->pools.at(pool).paused; }

std::optional<ScalerInput> Engine::scaler_question(PoolId pool) const {
    const PoolState& p = s_->pools.at(pool);
    if (!p.autoscaler || !p.autoscaler->asking()) return std::nullopt;
    return p.autoscaler->last_input();
}

bool Engine::answer_scaler(PoolId pool, std::optional<std::size_t> desired, Time now) {
    State& s = *s_;
    s.pools.at(pool);  // throws for an unknown pool, as counters() does
    s.run_due_timers(now);
    const bool open = s.scaling.answer(pool, desired, now);
    s.settle(now);
    return open;
}

void Engine::tick(Time now) {
    s_->run_due_timers(now);
    s_->settle(now);
}

void Engine::shutdown(Time now, Time grace_end) {
    State& s = *s_;
    s.run_due_timers(now);
    s.life.begin_shutdown();
    for (std::uint32_t slot = 0; slot < s.tasks.size(); ++slot) {
        const TaskSlot& t = s.tasks[slot];
        if (t.id && !is_terminal(t.status) && (t.status != TaskStatus::Running || t.run == no_slot))
            s.life.finish(slot, TaskStatus::Cancelled, "shutdown", now);
    }
    s.life.shorten_grace(now, grace_end);
    s.settle(now);
}

bool Engine::is_shutting_down() const { return s_->life.shutting_down(); }

void Engine::hand_over(Time now, Time grace_end) {
    State& s = *s_;
    // Once shutting down, nothing is left to hand over.
    if (s.life.shutting_down() && !s.life.handing_over()) return shutdown(now, grace_end);
    s.run_due_timers(now);
    s.life.begin_hand_over();
    s.life.shorten_grace(now, grace_end);
    s.settle(now);
}

bool Engine::is_handed_over() const { return s_->life.handing_over() && !s_->life.any_running(); }

std::optional<std::string> Engine::set_rate(std::string_view bucket, double rate_per_s, Time now) {
    State& s = *s_;
    if (!s.resources.registry().find(bucket)) return "unknown resource \"" + std::string(bucket) + "\"";
    s.run_due_timers(now);
    auto problem = s.resources.set_rate(bucket, rate_per_s, now);
    s.settle(now);
    return problem;
}

void Engine::set_fair_weight(PoolId pool, std::string_view key, double weight, Time now) {
    State& s = *s_;
    if (pool >= s.pools.size()) throw ConfigError("unknown pool id " + std::to_string(pool));
    PoolState& p = s.pools[pool];
    if (auto problem = detail::check_fair_weight(key, weight)) throw ConfigError(describe_pool(p.config) + *problem);
    s.run_due_timers(now);
    const auto id = s.tasks.fair_keys.find(key);
    p.fair.set_weight(key, id, weight);
    if (id) p.queue.set_weight(*id, weight);
    s.settle(now);
}

std::size_t Engine::known_fair_keys() const { return s_->tasks.fair_keys.size(); }

bool Engine::next_wakeup_into(Time& at) const {
    if (s_->timers.empty()) return false;
    at = s_->timers.top().at;
    return true;
}

std::optional<TaskId> Engine::find_key(std::string_view key) const {
    return s_->tasks.key_holder(key);
}

std::optional<std::uint64_t> Engine::user(TaskId task) const { return s_->tasks.user_of(task); }

void Engine::release_user(TaskId task) {
    if (TaskSlot* t = s_->tasks.retained_slot(task)) t->user = 0;
}

std::optional<TaskStatus> Engine::status(TaskId task) const {
    return s_->tasks.status_of(task);
}

void Engine::report_implied_transitions(bool on) { s_->life.report_implied = on; }
void Engine::release_users_at_end(bool on) { s_->life.release_users_at_end = on; }

void Engine::drain(std::vector<Action>& out) { s_->out.drain(out); }

bool Engine::has_actions() const { return !s_->out.empty(); }

PoolCounters Engine::counters(PoolId pool) const {
    const PoolState& p = s_->pools.at(pool);
    PoolCounters c = p.counters;
    c.desired = p.autoscaler ? p.autoscaler->desired() : p.capacity;
    return c;
}
PoolStats Engine::stats(PoolId pool, Time now) const {
    const PoolState& p = s_->pools.at(pool);
    const PoolCounters& c = p.counters;
    PoolStats out;
    out.window = p.metrics.window();
    out.capacity = p.capacity;
    out.busy = c.running;
    out.desired = p.autoscaler ? p.autoscaler->desired() : p.capacity;
    out.pending = c.ready_by_class;
    out.blocked = c.blocked;
    out.scheduled = c.scheduled;
    out.retrying = c.retrying;
    out.paused = p.paused;
    const std::size_t free = p.capacity > c.running ? p.capacity - c.running : 0;
    out.held = p.held_between(now, later(later(now, p.config.max_hold), Duration(1)), free);  // up to max_hold inclusive
    detail::MetricsSlice m;
    p.metrics.total(now, c.running, p.capacity, m);
    out.dispatched = m.dispatched;
    out.succeeded = m.succeeded;
    out.failed = m.failed;
    out.retried = m.retried;
    out.dead_lettered = m.dead_lettered;
    out.shed = m.shed;
    out.waits = m.wait.count();
    out.runs = m.run.count();
    out.wait_p50 = m.wait.percentile(0.50);
    out.wait_p90 = m.wait.percentile(0.90);
    out.wait_p99 = m.wait.percentile(0.99);
    out.run_p50 = m.run.percentile(0.50);
    out.run_p99 = m.run.percentile(0.99);
    out.worker_seconds = m.busy_seconds;
    out.utilization = m.capacity_seconds > 0 ? m.busy_seconds / m.capacity_seconds : 0.0;
    out.active_keys = p.fair.active(c.ready, c.running);
    out.top_keys = p.fair.top(10, s_->tasks.fair_keys, c.ready, c.running);
    if (m.dispatched > 0) out.priority_adherence = static_cast<double>(m.adherent) / static_cast<double>(m.dispatched);
    if (const auto starts = m.starts_on_time + m.starts_late; starts > 0)
        out.fixed_start_hit_rate = static_cast<double>(m.starts_on_time) / static_cast<double>(starts);
    p.metrics.fill_since_start(c, out);
    return out;
}

// ---- durable state (docs/guide/durability.md) --------------------------------

std::vector<SubmitResult<TaskId>> Engine::restore(std::span<const RestoredTask> tasks, Time now) {
    State& s = *s_;
    s.kinds.next_admission();
    // Whatever becomes of them, these ids were issued: never again.
    std::uint64_t highest = 0;
    for (const RestoredTask& task : tasks)
        if (task.id.value < s.config.given_ids_from) highest = std::max(highest, task.id.value);
    if (highest != 0) raise_counter(next_task_id, highest == UINT64_MAX ? highest : highest + 1);
    if (s.life.shutting_down())
        return std::vector<SubmitResult<TaskId>>(
            tasks.size(), SubmitResult<TaskId>(SubmitError::ShuttingDown, "the scheduler is shutting down"));
    s.run_due_timers(now);
    auto out = s.recovery.restore(tasks, now);
    s.settle(now);
    return out;
}

SubmitResult<TaskId> Engine::resubmit(TaskId old, const TaskSpec& spec, Time now) {
    State& s = *s_;
    // A task whose retention ended by `now` is forgotten before it is looked at.
    s.run_due_timers(now);
    s.retention.forget_expired(now, s.tasks, s.out);
    const auto status = s.tasks.status_of(old);
    if (!status || !may_resubmit(*status)) {
        std::string why = !status ? "no task with id " + std::to_string(old.value) +
                                        " (never submitted, or forgotten after its retention)"
                                  : s.tasks.describe(old) + " is " + std::string(to_string(*status)) +
                                        ": only a failed, dead-lettered or cancelled task may be resubmitted";
        s.settle(now);
        return {SubmitError::Invalid, std::move(why)};
    }
    TaskSlot& ended = *s.tasks.retained_slot(old);  // terminal: may_resubmit
    const std::string* ended_key = s.tasks.key_of(ended);
    if (!spec.key || !ended_key || *ended_key != *spec.key) return submit(spec, now);
    // The key is free while the new task is admitted, and goes back to
    // `old` if it is not: from outside, it moves or stays in one call.
    s.tasks.drop_key(*spec.key);
    s.tasks.extras_of(ended).key = nullptr;
    // Looked up again below: the admission may move the slots.
    auto result = submit(spec, now);
    if (!result)
        if (TaskSlot* still = s.tasks.retained_slot(old))  // a shed victim may have pushed it out
            s.tasks.extras_of(*still).key = s.tasks.hold_key(*spec.key, old);
    return result;
}

std::size_t Engine::live_tasks() const { return s_->tasks.live_count; }
std::size_t Engine::retained_tasks() const { return s_->retention.size(); }
std::uint64_t Engine::late_reports() const { return s_->late; }

NextIds Engine::next_ids() const {
    return {next_task_id.load(std::memory_order_relaxed), next_lease_id.load(std::memory_order_relaxed)};
}

}  // namespace cronoq::core
