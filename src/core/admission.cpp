#include "admission.hpp"

#include "text.hpp"

#include <string>
#include <unordered_set>

namespace cronoq::core {

using detail::quoted;

std::optional<SubmitError> Admission::check_spec(const TaskSpec& spec, std::string& why, bool with_resources) const {
    if (spec.pool >= pools_.size()) {
        why = "no pool with id " + std::to_string(spec.pool);
        return SubmitError::UnknownPool;
    }
    const auto invalid = [&why](const char* message) {
        why = message;
        return SubmitError::Invalid;
    };
    if (!kinds_.known(spec.kind)) return invalid("kind id was not interned, or was forgotten");
    if (spec.timeout && spec.timeout->count() <= 0) return invalid("timeout must be positive");
    if (spec.duration_hint && spec.duration_hint->count() <= 0) return invalid("duration_hint must be positive");
    if (index_of(spec.priority) >= priority_count) return invalid("unknown priority");
    if (spec.key && spec.key->empty()) return invalid("key must not be empty");
    if (spec.given_id && tasks_.status_of(spec.given_id)) {
        why = "task id " + std::to_string(spec.given_id.value) + " is already known";
        return SubmitError::Invalid;
    }
    if (spec.start_tolerance.count() < 0) return invalid("start_tolerance must not be negative");
    if (spec.on_miss > MissPolicy::Fail) return invalid("unknown miss policy");
    for (const Dep& d : spec.depends_on) {
        if (!d.ref.id && !d.ref.key) return invalid("a dependency names no task");
        if (d.ref.key && d.ref.key->empty()) return invalid("a dependency key must not be empty");
        if (d.kind > Dep::Kind::OnComplete) return invalid("unknown dependency kind");
    }
    if (!spec.labels.empty()) {
        if (!pools_[spec.pool].config.remote) return invalid("labels need a remote pool (Pool::remote)");
        for (std::size_t i = 0; i < spec.labels.size(); ++i) {
            if (spec.labels[i].first.empty()) return invalid("a label name must not be empty");
            if (i > 0 && !(spec.labels[i - 1].first < spec.labels[i].first))
                return invalid("labels must be sorted by name, each name once");
        }
    }
    if (with_resources && !spec.resources.empty())
        if (auto error = resources_.check_needs(spec, why)) return error;
    if (spec.retry) {
        if (auto problem = detail::check_retry_policy(*spec.retry)) {
            why = "retry: " + *problem;
            return SubmitError::Invalid;
        }
    }
    return std::nullopt;
}


std::optional<Rejection> Admission::check(Batch& batch, Time now) {
    std::optional<Rejection> rejected = resolve_keys(batch);
    if (!rejected) rejected = resolve_dependencies(batch);
    if (!rejected) rejected = order_within_batch(batch);
    if (!rejected) rejected = check_cycles_through_awaited_keys(batch);
    if (!rejected) rejected = check_reservations(batch);
    if (!rejected) rejected = check_bounds(batch, now);
    return rejected;
}

std::vector<TaskId> Admission::place(Batch& batch, Time now) {
    // Each key's name bucket starts loading one placement ahead
    // (docs/design.md#fair-sharing, "Cost").
    std::optional<std::uint64_t> next = prefetch_fair_key(batch, 0);
    for (std::size_t k = 0; k < batch.order.size(); ++k) {
        const std::optional<std::uint64_t> key_hash = next;
        next = prefetch_fair_key(batch, k + 1);
        place_one(batch, batch.order[k], now, key_hash);
    }
    std::vector<TaskId> out(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) out[i] = *batch.ids[i];
    return out;
}

std::optional<Rejection> Admission::validate(const Batch& batch) const {
    std::string why;
    for (std::size_t i = 0; i < batch.size(); ++i)
        if (auto error = check_spec(batch.specs[i], why)) return Rejection{*error, batch.where(i) + why};
    return std::nullopt;
}

// Keys: defined once per batch; one already held names its holder, and its
// spec admits nothing.
std::optional<Rejection> Admission::resolve_keys(Batch& batch) const {
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (!batch.specs[i].key) continue;
        const std::string& key = *batch.specs[i].key;
        if (!batch.defined.emplace(key, i).second)
            return Rejection{SubmitError::DuplicateKeyInBatch, "key " + quoted(key) + " is defined twice"};
        if (auto held = tasks_.key_holder(key)) batch.ids[i] = *held;
    }
    return std::nullopt;
}

// Dependency references: a task, a batch member, or an awaited key.
std::optional<Rejection> Admission::resolve_dependencies(Batch& batch) const {
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (!batch.admits(i)) continue;
        for (const Dep& d : batch.specs[i].depends_on) {
            Target t{Target::Where::Task, d.kind};
            if (d.ref.id) {
                if (!tasks_.status_of(*d.ref.id))
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
            } else if (auto held = tasks_.key_holder(*d.ref.key)) {
                t.task = *held;
            } else if (pools_[batch.specs[i].pool].config.unknown_dependency.awaits()) {
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
std::optional<Rejection> Admission::order_within_batch(Batch& batch) const {
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
std::optional<Rejection> Admission::check_cycles_through_awaited_keys(const Batch& batch) const {
    const std::size_t n = batch.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (!batch.admits(i) || !batch.specs[i].key) continue;
        auto w = waiting_.graph().awaiting.find(*batch.specs[i].key);
        if (w == waiting_.graph().awaiting.end()) continue;
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
            if (auto b = waiting_.graph().blocked.find(id.value); b != waiting_.graph().blocked.end()) {
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
std::optional<Rejection> Admission::check_reservations(const Batch& batch) const {
    for (std::size_t p = 0; p < pools_.size(); ++p) {
        std::vector<detail::Interval> intervals;
        for (std::size_t i = 0; i < batch.size(); ++i) {
            const TaskSpec& spec = batch.specs[i];
            if (batch.admits(i) && spec.pool == p && spec.start)
                intervals.push_back({*spec.start, later(*spec.start, expected_duration(spec))});
        }
        if (!pools_[p].reservations.fits(intervals))
            return Rejection{SubmitError::ReservationConflict,
                             describe_pool(pools_[p].config) + "more than " +
                                 std::to_string(pools_[p].reservations.limit()) +
                                 " fixed-start reservation(s) would overlap (reservable_fraction of max_workers)"};
    }
    return std::nullopt;
}

// Bounds: a single task may shed a victim (the one change a rejection
// before placing may leave: the victim is gone either way); a batch must
// fit.
std::optional<Rejection> Admission::check_bounds(const Batch& batch, Time now) {
    std::vector<std::size_t> incoming(pools_.size(), 0);
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
                                  : bounds_.check_room(incoming, why);
    if (error) return Rejection{*error, std::move(why)};
    return std::nullopt;
}

// Admits spec `i` into a fresh slot, then moves it on by its edges:
// Skipped if one is already broken, released (Scheduled or Ready) if none
// is pending, else Blocked on the pending ones.
std::optional<std::uint64_t> Admission::prefetch_fair_key(const Batch& batch, std::size_t k) const {
    if (k >= batch.order.size()) return std::nullopt;
    const std::string& key = batch.specs[batch.order[k]].fair_key;
    if (key.empty()) return std::nullopt;
    const std::uint64_t h = detail::FairKeyNames::hash(key);
    tasks_.fair_keys.prefetch(h);
    return h;
}

void Admission::place_one(Batch& batch, std::size_t i, Time now, std::optional<std::uint64_t> key_hash) {
    const std::uint32_t slot = tasks_.allocate();
    const TaskId id = admit_one(batch.specs[i], slot, now, {}, key_hash);
    batch.ids[i] = id;
    bool pending = false;
    if (std::string broken = broken_edge(batch, i, pending); !broken.empty()) {
        // Resolved at once: its only status is Skipped.
        life_.finish(slot, TaskStatus::Skipped, std::move(broken), now);
        return;
    }
    if (!pending) return life_.release(slot, now, /*admitting=*/true);
    block(batch, i, slot, now);
}

// Why one of spec `i`'s edges can no longer be met (its parent ended the
// wrong way), or empty; `pending` tells whether any edge is still to wait on.
std::string Admission::broken_edge(const Batch& batch, std::size_t i, bool& pending) const {
    std::string broken;
    for (const Target& t : batch.targets[i]) {
        if (t.where == Target::Where::AwaitKey) {
            pending = true;
            continue;
        }
        const TaskId parent = t.where == Target::Where::InBatch ? *batch.ids[t.index] : t.task;
        const TaskStatus st = *tasks_.status_of(parent);
        if (!is_terminal(st)) pending = true;
        if (is_terminal(st) && !dep_met(t.kind, st) && broken.empty())
            broken = "dependency " + tasks_.describe(parent) + " ended " + std::string(to_string(st));
    }
    return broken;
}

// Blocked on spec `i`'s pending edges: live parents tell it when they end,
// awaited keys when a task takes them (or their timeout when none does).
void Admission::block(const Batch& batch, std::size_t i, std::uint32_t slot, Time now) {
    TaskSlot& task = tasks_[slot];
    const TaskId id = task.id;
    ++task.gen;  // Blocked since admit_one
    out_.emit_status(task, now);
    detail::BlockedTask waits;
    for (const Target& t : batch.targets[i]) {
        if (t.where == Target::Where::AwaitKey) {
            waiting_.await_key(std::string(t.key), {id, t.kind});
            waits.awaited.emplace_back(t.key);
            ++waits.unmet;
            continue;
        }
        const TaskId parent = t.where == Target::Where::InBatch ? *batch.ids[t.index] : t.task;
        if (is_terminal(*tasks_.status_of(parent))) continue;  // met
        waiting_.add_dependent(parent, {id, t.kind});
        waits.parents.push_back(parent);
        ++waits.unmet;
    }
    waiting_.block(slot, std::move(waits), now);
}

// Takes `slot` for a new task: fields, id, key, start. It counts as Blocked
// (without an event) until the caller blocks it for real or moves it on.
TaskId Admission::admit_one(const TaskSpec& spec, std::uint32_t slot, Time now, TaskId id,
                            std::optional<std::uint64_t> key_hash) {
    PoolState& p = pools_[spec.pool];
    TaskSlot& t = tasks_[slot];
    if (!id) id = spec.given_id;
    t.id = id ? id : TaskId{next_task_id.fetch_add(1, std::memory_order_relaxed)};
    tasks_.set_admitted(slot, now);
    t.pool = spec.pool;
    t.kind = spec.kind;
    t.user = spec.user;
    t.priority = spec.priority;
    t.attempt = 0;
    t.fair_paid = false;  // the slot's last task may have ended parked
    // Only what the spec sets goes out of line; the pool's defaults are
    // read where they apply (a pool's config never changes once added).
    t.has_deadline = spec.deadline.has_value();
    if (spec.deadline) tasks_.extras_of(t).deadline = *spec.deadline;
    if (spec.duration_hint) tasks_.extras_of(t).duration_hint = *spec.duration_hint;
    if (spec.timeout) tasks_.extras_of(t).timeout = spec.timeout;
    if (spec.retry) tasks_.extras_of(t).retry = spec.retry;
    t.status = TaskStatus::Blocked;
    ++p.counters.blocked;
    tasks_.add_id(t.id, slot);
    ++tasks_.live_count;
    ++p.counters.submitted;
    // Interned once the other fields are set, so that its bucket (out of
    // cache with thousands of keys, prefetched by the caller when it took
    // the hash ahead) had that long to load. The key's counts and its
    // state in the class are read when the task becomes ready, after the
    // rest of the admission: both are out of cache too
    // (docs/design.md#fair-sharing, "Cost").
    t.fair_key = key_hash ? tasks_.fair_keys.hold(spec.fair_key, *key_hash) : tasks_.fair_keys.hold(spec.fair_key);
    if (t.fair_key != 0) {
        p.fair.prefetch_key(t.fair_key);
        p.queue.prefetch_key(spec.priority, t.fair_key);
    }
    if (p.run_times.size() <= spec.kind) p.run_times.resize(spec.kind + 1);
    kinds_.task_admitted(spec.kind);
    if (!spec.resources.empty()) resources_.add_needs(t, spec);
    if (!spec.labels.empty()) workers_.set_labels(t, spec.labels);
    if (spec.start) waiting_.add_start(t, spec, expected_duration(spec));
    if (spec.key) {
        tasks_.extras_of(t).key = tasks_.hold_key(*spec.key, t.id);
        // Tasks that awaited this key now wait on this task.
        waiting_.key_taken(*spec.key, t.id);
    }
    return t.id;
}

}  // namespace cronoq::core
