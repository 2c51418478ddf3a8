// The engine's public API over its state (engine_state.hpp), and the
// housekeeping every call ends with: dispatch, retention, settle.
#include "config_checks.hpp"
#include "engine_state.hpp"

namespace cronoq::core {

// ---- housekeeping after every call --------------------------------------------

// Due fixed starts first, then the best ready task that does not take
// a slot held for an upcoming start (docs/guide/time-and-cron.md holds): a task may use a
// free slot if, after it, enough stay free for the starts that fall
// within its expected duration (and within `max_hold`). A head that does
// not fit is passed over for the other classes' heads, never scanned
// past: O(classes) per decision.
void Engine::State::dispatch(PoolState& p, Time now) {
    p.dirty = false;
    if (handing_over) return;  // what is queued stays for the next leader
    const auto live = [this](detail::QueueRef r) { return slots[r.slot].gen == r.gen; };
    bool passed_over = false;  // a better task was parked on a resource
    // No task ready: what the queues still hold is stale (dropped by a later
    // pop). The dispatch after a completion in an idle pool ends here,
    // without a look at every class's heads.
    while (can_dispatch(p)) {
        std::optional<std::uint32_t> s;
        took_best = true;  // a due start is where it must be
        while (!s && !p.due_starts.empty()) {
            if (live(p.due_starts.front())) s = p.due_starts.front().slot;
            p.due_starts.pop_front();
        }
        if (!s) {
            const std::size_t free = p.capacity - p.counters.running;
            unsigned classes = 0;  // those with ready tasks: most pools use one or two
            for (std::size_t c = 0; c < priority_count; ++c)
                if (p.counters.ready_by_class[c] > 0) classes |= 1u << c;
            s = p.queue.pop_best(live, [this, now](std::uint32_t slot) { return rank(slot, now); },
                                 [this, &p, now, free](std::uint32_t slot) {
                                     if (p.held_starts.empty()) return true;
                                     const Duration d = std::min(expected_duration(slots[slot]), p.config.max_hold);
                                     return p.held_between(now, later(now, d), free) < free;
                                 },
                                 took_best, classes);
        }
        if (!s) break;
        // In a remote pool, a worker must take it: a free slot (there is
        // one, since the capacity is the slots granted), its labels, not
        // one that nacked it. Else it waits parked, as for a resource.
        WorkerId worker{};
        if (p.config.remote && !(worker = pick_worker(*s))) {
            park_for_worker(*s);
            passed_over = true;
            continue;
        }
        if (slots[*s].has_needs && !acquire(*s, now)) {
            passed_over = true;
            continue;  // parked: try the next
        }
        took_best = took_best && !passed_over;
        start_attempt(*s, now, worker);
        // The head behind the one taken was queued long ago: with a
        // large backlog its slot is out of cache, and the next decision
        // reads it. Start loading it now.
        p.queue.for_each_head([this](std::uint32_t slot) { __builtin_prefetch(&slots[slot]); });
    }
}

void Engine::State::forget_retained(Time now) {
    constexpr std::size_t slot_lookahead = 4;
    while (!retained.empty()) {
        const std::uint32_t s = retained.front();
        TaskSlot& t = slots[s];
        if (retained.size() <= config.retention_max && now - t.ready_since < config.retention) break;
        by_task.erase(t.id.value);
        if (const std::string* key = key_of(t)) keys.erase(keys.find(*key));  // by iterator: the key lives in that node
        actions.emplace_back(Forget{t.id, t.user});
        t.id = TaskId{};
        if (t.extras != no_slot) {
            extras.release(t.extras);
            t.extras = no_slot;
        }
        free_slots.push_back(s);  // the next admission takes it, still in cache
        retained.pop_front();
        // Tasks are forgotten in this order, one or a few per call, long
        // after they ended: in a large engine their slots and id entries
        // are out of cache. Start loading the slot of a task a few places
        // on, and the id entry of the next one (its slot, loaded calls
        // ago, names the id).
        if (retained.size() > 1) by_task.prefetch(slots[retained[1]].id.value);
        if (retained.size() > slot_lookahead) __builtin_prefetch(&slots[retained[slot_lookahead]]);
    }
}

void Engine::State::settle(Time now) {
    // Handing over, waiting tasks keep their status: the next leader
    // evaluates their dependencies again when it restores them.
    if (!graph.resolved.empty() && !handing_over) resolve_dependents(now);
    for (std::size_t i = 0; i < pools.size(); ++i)
        if (pools[i].autoscale_config && !handing_over) autoscale(static_cast<PoolId>(i), now);
    for (PoolState& p : pools) {
        if (!p.dirty) continue;
        // A call only when the dispatch has something to do: not after most
        // completions, nor after a submission that started at once.
        if (can_dispatch(p))
            dispatch(p, now);
        else
            p.dirty = false;
    }
    if (parked_tasks) revisit_parked(now);
    if (full_pools > 0) announce_space();
    forget_retained(now);
    // Keep the heap top live, so that next_wakeup() never names a
    // wakeup with nothing to do, and an idle engine has none.
    while (!timers.empty() && !timer_live(timers.front())) {
        std::pop_heap(timers.begin(), timers.end());
        timers.pop_back();
    }
}

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
    for (const Resource& r : s_->config.resources) s_->registry.add(r, Time{});  // buckets start full
    s_->parked.resize(s_->registry.size());
    s_->refill_at.assign(s_->registry.size(), never);
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
        // The capacity is what connected workers are granted (engine_remote.cpp).
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
    PoolState p(s_->config.metrics_window);
    p.autoscale_config = config.autoscale;
    p.may_shed = config.overflow == OverflowPolicy::ShedLowest || config.overflow == OverflowPolicy::ShedOldest ||
                 s_->config.global_bounds.bounded();
    // At least one slot, as docs/guide/time-and-cron.md says, even for a fraction of 0.
    p.reservations.set_limit(std::max<std::size_t>(
        1, static_cast<std::size_t>(std::floor(config.reservable_fraction * static_cast<double>(config.max_workers)))));
    p.capacity = config.capacity;
    p.counters.capacity = config.capacity;
    p.queue.set_shares(s_->config.priority.min_share);
    p.config = std::move(config);
    s_->pools.push_back(std::move(p));
    s_->remote_pools.resize(s_->pools.size());
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
        auto r = s.admit(std::span(&spec, 1), now);
        if (!r) return {r.error(), r.message()};
        return r.value().front();
    }
    // The common case, without the batch's bookkeeping.
    if (s.shutting_down) return {SubmitError::ShuttingDown, "the scheduler is shutting down"};
    std::string why;
    if (auto error = s.check_spec(spec, why)) return {*error, std::move(why)};
    s.run_due_timers(now);
    if (spec.key) {
        if (auto held = s.keys.find(*spec.key); held != s.keys.end()) {
            s.settle(now);
            return held->second;
        }
    }
    if (auto error = s.make_room(spec.pool, spec.priority, why, now)) {
        s.settle(now);
        return {*error, std::move(why)};
    }
    const std::uint32_t slot = s.allocate_slot();
    const TaskId id = s.admit_one(spec, slot);
    if (!s.start_at_once(slot, now)) s.make_ready(slot, now, false, /*admitting=*/true);
    s.settle(now);
    return id;
}

SubmitResult<std::vector<TaskId>> Engine::submit_batch(std::span<const TaskSpec> specs, Time now) {
    s_->kinds.next_admission();
    return s_->admit(specs, now);
}

bool Engine::complete(LeaseId lease, const Outcome& outcome, Time now, WorkerId from) {
    State& s = *s_;
    const auto found = s.live_lease(lease, now, from);
    if (!found) return false;
    const std::uint32_t slot = *found;
    TaskSlot& t = s.slots[slot];
    const AttemptState ended = s.end_lease(t, now);
    switch (outcome.kind) {
        case Outcome::Kind::Success:
            s.pools[t.pool].run_times[t.kind].add(now - ended.started);
            s.finish(slot, TaskStatus::Succeeded, {}, now);
            break;
        case Outcome::Kind::Permanent: s.finish(slot, TaskStatus::Failed, outcome.message, now); break;
        case Outcome::Kind::Cancelled: s.finish(slot, TaskStatus::Cancelled, outcome.message, now); break;
        case Outcome::Kind::Retryable: s.fail_retryable(slot, outcome.message, outcome.retry_after, now); break;
    }
    s.settle(now);
    return true;
}

bool Engine::heartbeat(LeaseId lease, Time now, WorkerId from) {
    State& s = *s_;
    const auto found = s.live_lease(lease, now, from);
    if (!found) return false;
    TaskSlot& t = s.slots[*found];
    const auto& ttl = s.pools[t.pool].config.lease_ttl;
    if (ttl) s.attempts[t.run].lease_expiry = later(now, *ttl);
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
    // A Running task without an attempt had it aborted at a hand-over.
    if (t.status == TaskStatus::Running && t.run != no_slot)
        s.abandon_attempt(slot, AbortReason::Cancelled, now);
    else
        s.finish(slot, TaskStatus::Cancelled, "cancelled", now);
    s.settle(now);
    return true;
}

void Engine::set_capacity(PoolId pool, std::size_t capacity, Time now) {
    PoolState& p = s_->pools.at(pool);
    if (p.config.remote) return;  // its workers' granted slots are its capacity
    if (auto* a = s_->scaler_of(p, now)) a->wake(now);
    p.metrics.accrue(now, p.counters.running, p.capacity);
    p.capacity = capacity;
    p.counters.capacity = capacity;
    p.dirty = true;
    s_->run_due_timers(now);
    s_->settle(now);
}

std::optional<ScalerInput> Engine::scaler_question(PoolId pool) const {
    const PoolState& p = s_->pools.at(pool);
    if (!p.autoscaler || !p.autoscaler->asking()) return std::nullopt;
    return p.autoscaler->last_input();
}

bool Engine::answer_scaler(PoolId pool, std::optional<std::size_t> desired, Time now) {
    State& s = *s_;
    s.pools.at(pool);  // throws for an unknown pool, as counters() does
    s.run_due_timers(now);
    const bool open = s.answer_scaler(pool, desired, now);
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
    s.shutting_down = true;
    s.handing_over = false;  // after a hand-over: what is left ends here after all
    for (std::uint32_t slot = 0; slot < s.slots.size(); ++slot) {
        const TaskSlot& t = s.slots[slot];
        if (t.id && !is_terminal(t.status) && (t.status != TaskStatus::Running || t.run == no_slot))
            s.finish(slot, TaskStatus::Cancelled, "shutdown", now);
    }
    s.shorten_grace(now, grace_end);
    s.settle(now);
}

bool Engine::is_shutting_down() const { return s_->shutting_down; }

void Engine::hand_over(Time now, Time grace_end) {
    State& s = *s_;
    if (s.shutting_down && !s.handing_over) return shutdown(now, grace_end);  // nothing is left to hand over
    s.run_due_timers(now);
    s.shutting_down = true;
    s.handing_over = true;
    s.shorten_grace(now, grace_end);
    s.settle(now);
}

bool Engine::is_handed_over() const { return s_->handing_over && !s_->any_running(); }

std::optional<std::string> Engine::set_rate(std::string_view bucket, double rate_per_s, Time now) {
    State& s = *s_;
    const auto id = s.registry.find(bucket);
    if (!id) return "unknown resource \"" + std::string(bucket) + "\"";
    s.run_due_timers(now);
    auto problem = s.registry.set_rate(*id, rate_per_s, now);
    // Parked tasks re-park with a refill time at the new rate.
    if (!problem) s.unpark(*id, now);
    s.settle(now);
    return problem;
}

bool Engine::next_wakeup_into(Time& at) const {
    if (s_->timers.empty()) return false;
    at = s_->timers.front().at;
    return true;
}

std::optional<TaskId> Engine::find_key(std::string_view key) const {
    auto held = s_->keys.find(key);
    if (held == s_->keys.end()) return std::nullopt;
    return held->second;
}

std::optional<std::uint64_t> Engine::user(TaskId task) const { return s_->user_of(task); }

void Engine::release_user(TaskId task) {
    if (TaskSlot* t = s_->retained_slot(task)) t->user = 0;
}

std::optional<TaskStatus> Engine::status(TaskId task) const {
    return s_->status_of(task);
}

void Engine::report_implied_transitions(bool on) { s_->report_implied = on; }
void Engine::release_users_at_end(bool on) { s_->release_users_at_end = on; }

void Engine::drain(std::vector<Action>& out) {
    out.clear();
    out.swap(s_->actions);
}

bool Engine::has_actions() const { return !s_->actions.empty(); }

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
    if (m.dispatched > 0) out.priority_adherence = static_cast<double>(m.adherent) / static_cast<double>(m.dispatched);
    if (const auto starts = m.starts_on_time + m.starts_late; starts > 0)
        out.fixed_start_hit_rate = static_cast<double>(m.starts_on_time) / static_cast<double>(starts);
    p.metrics.fill_since_start(c, out);
    return out;
}

std::size_t Engine::live_tasks() const { return s_->live; }
std::size_t Engine::retained_tasks() const { return s_->retained.size(); }
std::uint64_t Engine::late_reports() const { return s_->late; }

NextIds Engine::next_ids() const {
    return {next_task_id.load(std::memory_order_relaxed), next_lease_id.load(std::memory_order_relaxed)};
}

}  // namespace cronoq::core
