// Admission of tasks (docs/guide/ordering.md, docs/guide/time-and-cron.md, docs/guide/dependencies-and-keys.md): a batch is checked whole (fields,
// keys, dependency references, cycles, reservations) before anything is
// admitted, so a failing batch leaves no trace. A single submit with
// dependencies or a fixed start is a batch of one; Engine::submit admits
// the others directly, without the batch's bookkeeping.
#include "engine_state.hpp"
#include "text.hpp"

#include <string>
#include <unordered_set>

namespace cronoq::core {

using detail::quoted;

namespace {

std::vector<detail::ResourceRequest> requests_of(const TaskSpec& spec) {
    std::vector<detail::ResourceRequest> out;
    out.reserve(spec.resources.size());
    for (const ResourceUse& use : spec.resources) out.push_back({use.name, use.amount});
    return out;
}

}  // namespace

// Where one dependency edge of a batch task points.
struct Engine::State::Target {
    enum class Where : std::uint8_t { Task, InBatch, AwaitKey } where;
    Dep::Kind kind;
    TaskId task{};               // Where::Task
    std::size_t index = 0;       // Where::InBatch
    std::string_view key{};      // Where::AwaitKey
};

// A batch on its way in: what the phases of `admit` learn about it, each
// from the ones before.
struct Engine::State::Admission {
    std::span<const TaskSpec> specs;
    /// Per spec: the task holding its key (it admits nothing), and once
    /// placed, the new task.
    std::vector<std::optional<TaskId>> ids;
    /// The batch's own keys, to the spec defining each.
    detail::StringMap<std::size_t> defined;
    /// Per spec: where each of its dependency edges points.
    std::vector<std::vector<Target>> targets;
    /// The specs to admit, each after every batch member it depends on.
    std::vector<std::size_t> order;

    explicit Admission(std::span<const TaskSpec> s) : specs(s), ids(s.size()), targets(s.size()) {}
    std::size_t size() const { return specs.size(); }
    bool admits(std::size_t i) const { return !ids[i]; }
    /// The prefix naming spec `i` in a message about a batch.
    std::string where(std::size_t i) const { return size() > 1 ? "task " + std::to_string(i) + ": " : std::string{}; }
};

std::optional<SubmitError> Engine::State::check_spec(const TaskSpec& spec, std::string& why, bool with_resources) const {
    if (spec.pool >= pools.size()) {
        why = "no pool with id " + std::to_string(spec.pool);
        return SubmitError::UnknownPool;
    }
    const auto invalid = [&why](const char* message) {
        why = message;
        return SubmitError::Invalid;
    };
    if (!kinds.known(spec.kind)) return invalid("kind id was not interned, or was forgotten");
    if (spec.timeout && spec.timeout->count() <= 0) return invalid("timeout must be positive");
    if (spec.duration_hint && spec.duration_hint->count() <= 0) return invalid("duration_hint must be positive");
    if (index_of(spec.priority) >= priority_count) return invalid("unknown priority");
    if (spec.key && spec.key->empty()) return invalid("key must not be empty");
    if (spec.start_tolerance.count() < 0) return invalid("start_tolerance must not be negative");
    if (spec.on_miss > MissPolicy::Fail) return invalid("unknown miss policy");
    for (const Dep& d : spec.depends_on) {
        if (!d.ref.id && !d.ref.key) return invalid("a dependency names no task");
        if (d.ref.key && d.ref.key->empty()) return invalid("a dependency key must not be empty");
        if (d.kind > Dep::Kind::OnComplete) return invalid("unknown dependency kind");
    }
    if (!spec.labels.empty()) {
        if (!pools[spec.pool].config.remote) return invalid("labels need a remote pool (Pool::remote)");
        for (std::size_t i = 0; i < spec.labels.size(); ++i) {
            if (spec.labels[i].first.empty()) return invalid("a label name must not be empty");
            if (i > 0 && !(spec.labels[i - 1].first < spec.labels[i].first))
                return invalid("labels must be sorted by name, each name once");
        }
    }
    if (with_resources && !spec.resources.empty()) {
        auto resolved = registry.resolve(requests_of(spec));
        if (!resolved) {
            why = resolved.message();
            return resolved.error();
        }
    }
    if (spec.retry) {
        if (auto problem = detail::check_retry_policy(*spec.retry)) {
            why = "retry: " + *problem;
            return SubmitError::Invalid;
        }
    }
    return std::nullopt;
}

// Every phase but the last may reject the batch; none changes the engine's
// state before the last, so a rejected batch leaves no trace. Due timers
// run first, and a rejection after them still settles what they changed.
SubmitResult<std::vector<TaskId>> Engine::State::admit(std::span<const TaskSpec> specs, Time now) {
    if (shutting_down) return {SubmitError::ShuttingDown, "the scheduler is shutting down"};
    Admission batch(specs);
    if (auto rejected = validate_specs(batch)) return {rejected->error, std::move(rejected->message)};
    run_due_timers(now);
    std::optional<Rejection> rejected = resolve_keys(batch);
    if (!rejected) rejected = resolve_dependencies(batch);
    if (!rejected) rejected = order_within_batch(batch);
    if (!rejected) rejected = check_cycles_through_awaited_keys(batch);
    if (!rejected) rejected = check_reservations(batch);
    if (!rejected) rejected = check_bounds(batch, now);
    if (rejected) {
        settle(now);
        return {rejected->error, std::move(rejected->message)};
    }
    // Nothing can fail from here on.
    for (std::size_t i : batch.order) place(batch, i, now);
    std::vector<TaskId> out(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) out[i] = *batch.ids[i];
    settle(now);
    return out;
}

std::optional<Engine::State::Rejection> Engine::State::validate_specs(const Admission& batch) const {
    std::string why;
    for (std::size_t i = 0; i < batch.size(); ++i)
        if (auto error = check_spec(batch.specs[i], why)) return Rejection{*error, batch.where(i) + why};
    return std::nullopt;
}

// Keys: defined once per batch; one already held names its holder, and its
// spec admits nothing.
std::optional<Engine::State::Rejection> Engine::State::resolve_keys(Admission& batch) const {
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (!batch.specs[i].key) continue;
        const std::string& key = *batch.specs[i].key;
        if (!batch.defined.emplace(key, i).second)
            return Rejection{SubmitError::DuplicateKeyInBatch, "key " + quoted(key) + " is defined twice"};
        if (auto held = keys.find(key); held != keys.end()) batch.ids[i] = held->second;
    }
    return std::nullopt;
}

// Dependency references: a task, a batch member, or an awaited key.
std::optional<Engine::State::Rejection> Engine::State::resolve_dependencies(Admission& batch) const {
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (!batch.admits(i)) continue;
        for (const Dep& d : batch.specs[i].depends_on) {
            Target t{Target::Where::Task, d.kind};
            if (d.ref.id) {
                if (!status_of(*d.ref.id))
                    return Rejection{SubmitError::UnknownDependency,
                                     batch.where(i) + "no task with id " + std::to_string(d.ref.id->value) +
                                         " (never submitted, or forgotten after its retention)"};
                t.task = *d.ref.id;
            } else if (auto in_batch = batch.defined.find(*d.ref.key); in_batch != batch.defined.end()) {
                if (batch.ids[in_batch->second]) {
                    t.task = *batch.ids[in_batch->second];
                } else {
                    t.where = Target::Where::InBatch;
                    t.index = in_batch->second;
                }
            } else if (auto held = keys.find(*d.ref.key); held != keys.end()) {
                t.task = held->second;
            } else if (pools[batch.specs[i].pool].config.unknown_dependency.awaits()) {
                t.where = Target::Where::AwaitKey;
                t.key = *d.ref.key;
            } else {
                return Rejection{SubmitError::UnknownDependency,
                                 batch.where(i) + "no task holds key " + quoted(*d.ref.key)};
            }
            batch.targets[i].push_back(t);
        }
    }
    return std::nullopt;
}

// Cycles inside the batch: admit in topological order (Kahn), so that
// every edge points at a task admitted before it.
std::optional<Engine::State::Rejection> Engine::State::order_within_batch(Admission& batch) const {
    const std::size_t n = batch.size();
    batch.order.reserve(n);
    std::vector<std::size_t> waiting_on(n, 0);
    std::vector<std::vector<std::size_t>> children(n);
    for (std::size_t i = 0; i < n; ++i)
        for (const Target& t : batch.targets[i])
            if (t.where == Target::Where::InBatch) {
                ++waiting_on[i];
                children[t.index].push_back(i);
            }
    for (std::size_t i = 0; i < n; ++i)
        if (batch.admits(i) && waiting_on[i] == 0) batch.order.push_back(i);
    for (std::size_t k = 0; k < batch.order.size(); ++k)
        for (std::size_t c : children[batch.order[k]])
            if (--waiting_on[c] == 0) batch.order.push_back(c);
    std::size_t admitted = 0;
    for (std::size_t i = 0; i < n; ++i) admitted += batch.admits(i) ? 1 : 0;
    if (batch.order.size() < admitted) {
        for (std::size_t i = 0; i < n; ++i)
            if (batch.admits(i) && waiting_on[i] > 0)
                return Rejection{SubmitError::Cycle, batch.where(i) + "its dependencies form a cycle"};
    }
    return std::nullopt;
}

// Cycles through keys that Blocked tasks await: a new key closes a cycle
// if one of its awaiters is among the new task's ancestors.
std::optional<Engine::State::Rejection> Engine::State::check_cycles_through_awaited_keys(const Admission& batch) const {
    const std::size_t n = batch.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (!batch.admits(i) || !batch.specs[i].key) continue;
        auto w = graph.awaiting.find(*batch.specs[i].key);
        if (w == graph.awaiting.end()) continue;
        std::unordered_set<std::uint64_t> awaiters, seen;
        for (const detail::Edge& e : w->second) awaiters.insert(e.child.value);
        std::vector<std::size_t> batch_stack{i};
        std::vector<TaskId> task_stack;
        std::vector<bool> batch_seen(n, false);
        while (!batch_stack.empty() || !task_stack.empty()) {
            if (!batch_stack.empty()) {
                const std::size_t j = batch_stack.back();
                batch_stack.pop_back();
                if (batch_seen[j]) continue;
                batch_seen[j] = true;
                for (const Target& t : batch.targets[j]) {
                    if (t.where == Target::Where::InBatch) batch_stack.push_back(t.index);
                    if (t.where == Target::Where::Task) task_stack.push_back(t.task);
                }
                continue;
            }
            const TaskId id = task_stack.back();
            task_stack.pop_back();
            if (!seen.insert(id.value).second) continue;
            if (awaiters.count(id.value))
                return Rejection{SubmitError::Cycle, batch.where(i) + "key " + quoted(*batch.specs[i].key) +
                                                         " is awaited by a task it depends on"};
            if (auto b = graph.blocked.find(id.value); b != graph.blocked.end()) {
                for (TaskId parent : b->second.parents) task_stack.push_back(parent);
                // A key it awaits that this batch defines is a parent too.
                for (const std::string& key : b->second.awaited)
                    if (auto j = batch.defined.find(key); j != batch.defined.end() && batch.admits(j->second))
                        batch_stack.push_back(j->second);
            }
        }
    }
    return std::nullopt;
}

// Reservations: all of the batch's fixed starts at once, per pool.
std::optional<Engine::State::Rejection> Engine::State::check_reservations(const Admission& batch) const {
    for (std::size_t p = 0; p < pools.size(); ++p) {
        std::vector<detail::Interval> intervals;
        for (std::size_t i = 0; i < batch.size(); ++i) {
            const TaskSpec& spec = batch.specs[i];
            if (batch.admits(i) && spec.pool == p && spec.start)
                intervals.push_back({*spec.start, later(*spec.start, expected_duration(spec))});
        }
        if (!pools[p].reservations.fits(intervals))
            return Rejection{SubmitError::ReservationConflict,
                             describe_pool(pools[p].config) + "more than " +
                                 std::to_string(pools[p].reservations.limit()) +
                                 " fixed-start reservation(s) would overlap (reservable_fraction of max_workers)"};
    }
    return std::nullopt;
}

// Bounds: a single task may shed a victim (the one change a rejection
// before placing may leave: the victim is gone either way); a batch must
// fit.
std::optional<Engine::State::Rejection> Engine::State::check_bounds(const Admission& batch, Time now) {
    std::vector<std::size_t> incoming(pools.size(), 0);
    std::optional<std::size_t> only;
    std::size_t count = 0;
    for (std::size_t i = 0; i < batch.size(); ++i)
        if (batch.admits(i)) {
            ++incoming[batch.specs[i].pool];
            only = i;
            ++count;
        }
    std::string why;
    const auto error = count == 1 ? make_room(batch.specs[*only].pool, batch.specs[*only].priority, why, now)
                                  : check_room(incoming, why);
    if (error) return Rejection{*error, std::move(why)};
    return std::nullopt;
}

// Admits spec `i` into a fresh slot, then moves it on by its edges:
// Skipped if one is already broken, released (Scheduled or Ready) if none
// is pending, else Blocked on the pending ones.
void Engine::State::place(Admission& batch, std::size_t i, Time now) {
    const std::uint32_t slot = allocate_slot();
    const TaskId id = admit_one(batch.specs[i], slot);
    batch.ids[i] = id;
    bool pending = false;
    if (std::string broken = broken_edge(batch, i, pending); !broken.empty()) {
        // Resolved at once: its only status is Skipped.
        finish(slot, TaskStatus::Skipped, std::move(broken), now);
        return;
    }
    if (!pending) return release(slot, now, /*admitting=*/true);
    block(batch, i, slot, now);
}

// Why one of spec `i`'s edges can no longer be met (its parent ended the
// wrong way), or empty; `pending` tells whether any edge is still to wait on.
std::string Engine::State::broken_edge(const Admission& batch, std::size_t i, bool& pending) const {
    std::string broken;
    for (const Target& t : batch.targets[i]) {
        if (t.where == Target::Where::AwaitKey) {
            pending = true;
            continue;
        }
        const TaskId parent = t.where == Target::Where::InBatch ? *batch.ids[t.index] : t.task;
        const TaskStatus st = *status_of(parent);
        if (!is_terminal(st)) pending = true;
        if (is_terminal(st) && !dep_met(t.kind, st) && broken.empty())
            broken = "dependency " + describe_task(parent) + " ended " + std::string(to_string(st));
    }
    return broken;
}

// Blocked on spec `i`'s pending edges: live parents tell it when they end,
// awaited keys when a task takes them (or their timeout when none does).
void Engine::State::block(const Admission& batch, std::size_t i, std::uint32_t slot, Time now) {
    TaskSlot& task = slots[slot];
    const TaskId id = task.id;
    ++task.gen;  // Blocked since admit_one
    emit_status(task, now);
    detail::BlockedTask waits;
    for (const Target& t : batch.targets[i]) {
        if (t.where == Target::Where::AwaitKey) {
            graph.awaiting[std::string(t.key)].push_back({id, t.kind});
            waits.awaited.emplace_back(t.key);
            ++waits.unmet;
            continue;
        }
        const TaskId parent = t.where == Target::Where::InBatch ? *batch.ids[t.index] : t.task;
        if (is_terminal(*status_of(parent))) continue;  // met
        graph.dependents[parent.value].push_back({id, t.kind});
        waits.parents.push_back(parent);
        ++waits.unmet;
    }
    if (!waits.awaited.empty())
        push_timer(later(now, pools[task.pool].config.unknown_dependency.timeout()), slot, task.gen,
                   TimerKind::AwaitExpiry);
    graph.blocked.emplace(id.value, std::move(waits));
}

// Takes `slot` for a new task: fields, id, key, start. It counts as Blocked
// (without an event) until the caller blocks it for real or moves it on.
TaskId Engine::State::admit_one(const TaskSpec& spec, std::uint32_t slot, TaskId id) {
    PoolState& p = pools[spec.pool];
    TaskSlot& t = slots[slot];
    t.id = id ? id : TaskId{next_task_id.fetch_add(1, std::memory_order_relaxed)};
    t.pool = spec.pool;
    t.kind = spec.kind;
    t.user = spec.user;
    t.priority = spec.priority;
    t.attempt = 0;
    // Only what the spec sets goes out of line; the pool's defaults are
    // read where they apply (a pool's config never changes once added).
    t.has_deadline = spec.deadline.has_value();
    if (spec.deadline) extras_of(t).deadline = *spec.deadline;
    if (spec.duration_hint) extras_of(t).duration_hint = *spec.duration_hint;
    if (spec.timeout) extras_of(t).timeout = spec.timeout;
    if (spec.retry) extras_of(t).retry = spec.retry;
    t.status = TaskStatus::Blocked;
    ++p.counters.blocked;
    by_task.insert(t.id.value, slot);
    ++live;
    ++p.counters.submitted;
    if (p.run_times.size() <= spec.kind) p.run_times.resize(spec.kind + 1);
    kinds.task_admitted(spec.kind);
    if (!spec.resources.empty()) {
        std::vector<detail::Need> n = std::move(registry.resolve(requests_of(spec))).value();  // checked
        if (!n.empty()) {
            needs.emplace(t.id.value, std::move(n));
            t.has_needs = true;
        }
    }
    if (!spec.labels.empty()) set_labels(t, spec.labels);
    if (spec.start) {
        const Time end = later(*spec.start, expected_duration(spec));
        starts.emplace(t.id.value, StartInfo{*spec.start, spec.start_tolerance, spec.on_miss});
        p.reservations.add({*spec.start, end}, t.id);
        t.has_start = true;
        // The autoscaler counts reservations within its horizon: wake it
        // when this one enters it, even if the pool is idle by then.
        if (p.autoscale_config) {
            const Duration horizon = p.autoscale_config->reservation_horizon;
            // [now, now + horizon) holds the start from start - horizon + 1 ns.
            const Time enters = spec.start->time_since_epoch() > horizon ? *spec.start - horizon + Duration(1) : Time{};
            push_timer(enters, static_cast<std::uint32_t>(spec.pool), 0, TimerKind::Horizon);
        }
    }
    if (spec.key) {
        extras_of(t).key = &keys.emplace(*spec.key, t.id).first->first;
        // Tasks that awaited this key now wait on this task.
        if (auto w = graph.awaiting.find(*spec.key); w != graph.awaiting.end()) {
            std::vector<detail::Edge> edges = std::move(w->second);
            graph.awaiting.erase(w);
            for (const detail::Edge& e : edges) {
                detail::BlockedTask& b = graph.blocked.at(e.child.value);
                if (auto k = std::find(b.awaited.begin(), b.awaited.end(), *spec.key); k != b.awaited.end()) b.awaited.erase(k);
                b.parents.push_back(t.id);
            }
            auto& mine = graph.dependents[t.id.value];
            mine.insert(mine.end(), edges.begin(), edges.end());
        }
    }
    return t.id;
}

}  // namespace cronoq::core
