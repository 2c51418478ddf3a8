// What a durable store needs of the engine (docs/guide/durability.md): tasks brought back
// after a restart (restore) and a new task in place of an ended one
// (resubmit, for Scheduler::retry). The hand-over shutdown is beside
// `shutdown` in engine.cpp.
#include "engine_state.hpp"
#include "text.hpp"

#include <string>
#include <unordered_set>

namespace cronoq::core {

using detail::quoted;

namespace {

bool may_resubmit(TaskStatus s) {
    return s == TaskStatus::Failed || s == TaskStatus::DeadLettered || s == TaskStatus::Cancelled;
}

}  // namespace

TaskSlot* Engine::State::retained_slot(TaskId id) {
    TaskSlot* t = slot_of(id);
    return t && is_terminal(t->status) ? t : nullptr;
}

// Errors that keep a task from coming back. A resource the engine cannot
// serve is not one: the task comes back to end Failed (`resource_problem`),
// so that the store learns why.
std::optional<Engine::State::Rejection> Engine::State::check_restored(const RestoredTask& task,
                                                                      std::string& resource_problem) const {
    if (!task.id) return Rejection{SubmitError::Invalid, "task id 0 names no task"};
    const std::string name = "task " + std::to_string(task.id.value) + ": ";
    if (status_of(task.id)) return Rejection{SubmitError::Invalid, name + "a task with this id is already known"};
    std::string why;
    if (auto error = check_spec(task.spec, why, false)) return Rejection{*error, name + why};
    if (is_terminal(task.status) || task.spec.resources.empty()) return std::nullopt;
    std::vector<detail::ResourceRequest> requests;
    for (const ResourceUse& use : task.spec.resources) {
        if (!registry.find(use.name)) {
            resource_problem = "unknown resource after restart: " + use.name;
            return std::nullopt;
        }
        requests.push_back({use.name, use.amount});
    }
    if (auto resolved = registry.resolve(requests); !resolved) resource_problem = "after restart: " + resolved.message();
    return std::nullopt;
}

void Engine::State::retain_restored(const RestoredTask& task, const std::string* key, Time now) {
    const std::uint32_t s = allocate_slot();
    TaskSlot& t = slots[s];
    const std::uint32_t gen = t.gen + 1;  // a reused slot's old queue and timer entries stay stale
    t = TaskSlot{};
    t.gen = gen;
    t.id = task.id;
    t.user = task.spec.user;
    t.ready_since = now;
    t.pool = task.spec.pool;
    t.kind = task.spec.kind;
    t.attempt = task.attempts;
    t.status = task.status;
    t.priority = task.spec.priority;
    if (key) extras_of(t).key = key;
    by_task.insert(task.id.value, s);
    retained.push_back(s);
    if (!key) return;
    // Tasks that awaited its key learn how it ended, as if it had just ended.
    auto w = graph.awaiting.find(*key);
    if (w == graph.awaiting.end()) return;
    std::vector<detail::Edge> edges = std::move(w->second);
    graph.awaiting.erase(w);
    for (const detail::Edge& e : edges) {
        detail::BlockedTask& b = graph.blocked.at(e.child.value);
        if (auto k = std::find(b.awaited.begin(), b.awaited.end(), *key); k != b.awaited.end()) b.awaited.erase(k);
    }
    graph.dependents[task.id.value] = std::move(edges);
    graph.resolved.emplace_back(task.id, task.status);
}

// A Blocked task's edges, evaluated again against what is known now.
void Engine::State::restore_edges(const RestoredTask& task, std::uint32_t slot, Time now) {
    const TaskId id = task.id;
    std::vector<std::pair<TaskId, Dep::Kind>> parents;
    std::vector<std::pair<std::string, Dep::Kind>> awaited;
    std::string broken;
    for (const Dep& d : task.spec.depends_on) {
        std::optional<TaskId> parent;
        if (d.ref.id) {
            if (status_of(*d.ref.id))
                parent = *d.ref.id;
            else
                broken = "dependency task " + std::to_string(d.ref.id->value) + " is unknown after restart";
        } else if (auto held = keys.find(*d.ref.key); held != keys.end()) {
            parent = held->second;
        } else if (pools[task.spec.pool].config.unknown_dependency.awaits()) {
            awaited.emplace_back(*d.ref.key, d.kind);
        } else {
            broken = "dependency key " + quoted(*d.ref.key) + " is unknown after restart";
        }
        if (parent && *parent == id) broken = "the task depends on itself";
        if (parent && broken.empty()) {
            const TaskStatus st = *status_of(*parent);
            if (!is_terminal(st))
                parents.emplace_back(*parent, d.kind);
            else if (!dep_met(d.kind, st))
                broken = "dependency " + describe_task(*parent) + " ended " + std::string(to_string(st));
        }
        if (!broken.empty()) return finish(slot, TaskStatus::Skipped, std::move(broken), now);
    }
    if (parents.empty() && awaited.empty()) return release(slot, now);
    TaskSlot& t = slots[slot];
    ++t.gen;  // Blocked since admit_one
    detail::BlockedTask waits;
    for (const auto& [parent, kind] : parents) {
        graph.dependents[parent.value].push_back({id, kind});
        waits.parents.push_back(parent);
        ++waits.unmet;
    }
    for (auto& [key, kind] : awaited) {
        graph.awaiting[key].push_back({id, kind});
        waits.awaited.push_back(std::move(key));
        ++waits.unmet;
    }
    // An awaited key gets the pool's whole timeout again, from now.
    if (!waits.awaited.empty())
        push_timer(later(now, pools[t.pool].config.unknown_dependency.timeout()), slot, t.gen, TimerKind::AwaitExpiry);
    graph.blocked.emplace(id.value, std::move(waits));
}

// A live task, admitted as Blocked by admit_one, moved to the status it
// had, through the ordinary transitions. What lands where the store
// already is is not announced again; a change is.
void Engine::State::place_restored(const RestoredTask& task, std::uint32_t slot, Time now) {
    const std::size_t mark = actions.size();
    TaskSlot& t = slots[slot];
    switch (task.status) {
        case TaskStatus::Running:
            leave(t);
            t.status = TaskStatus::Running;
            t.attempt = std::max<std::uint32_t>(t.attempt, 1);
            ++t.gen;
            fail_retryable(slot, "lease lost: scheduler restarted", std::nullopt, now);
            break;
        case TaskStatus::Retrying: {
            const Time until = task.until.value_or(now);
            if (until <= now) {
                make_ready(slot, now);
                break;
            }
            leave(t);
            t.status = TaskStatus::Retrying;
            ++t.gen;
            ++pools[t.pool].counters.retrying;
            push_timer(until, slot, t.gen, TimerKind::RetryDone);
            break;
        }
        case TaskStatus::Ready:
            // One that never started may still be waiting for its start, or
            // have missed it.
            if (t.has_start && t.attempt == 0)
                release(slot, now);
            else
                make_ready(slot, now);
            break;
        case TaskStatus::Scheduled: release(slot, now); break;
        default: restore_edges(task, slot, now); break;  // Blocked
    }
    if (status_of(task.id) != task.status) return;
    actions.erase(std::remove_if(actions.begin() + static_cast<std::ptrdiff_t>(mark), actions.end(),
                                 [id = task.id](const Action& a) {
                                     const Status* st = std::get_if<Status>(&a);
                                     return st && st->task == id;
                                 }),
                  actions.end());
}

std::vector<SubmitResult<TaskId>> Engine::State::restore(std::span<const RestoredTask> tasks, Time now) {
    const std::size_t n = tasks.size();
    // Whatever becomes of them, these ids were issued: never again.
    std::uint64_t highest = 0;
    for (const RestoredTask& task : tasks) highest = std::max(highest, task.id.value);
    if (highest != 0) raise_counter(next_task_id, highest == UINT64_MAX ? highest : highest + 1);
    std::vector<SubmitResult<TaskId>> out;
    out.reserve(n);
    if (shutting_down) {
        for (std::size_t i = 0; i < n; ++i) out.emplace_back(SubmitError::ShuttingDown, "the scheduler is shutting down");
        return out;
    }
    run_due_timers(now);

    std::vector<std::optional<Rejection>> rejected(n);
    std::vector<std::string> resource_problem(n);
    std::unordered_set<std::uint64_t> seen;
    for (std::size_t i = 0; i < n; ++i) {
        rejected[i] = check_restored(tasks[i], resource_problem[i]);
        if (!rejected[i] && !seen.insert(tasks[i].id.value).second)
            rejected[i] = Rejection{SubmitError::Invalid,
                                    "task " + std::to_string(tasks[i].id.value) + ": restored twice in one call"};
    }
    // A key goes to the restored task with the largest id: a resubmit
    // moved it there (a store may still show it on the older task too).
    detail::StringMap<std::size_t> holder;
    for (std::size_t i = 0; i < n; ++i) {
        const auto& key = tasks[i].spec.key;
        if (rejected[i] || !key) continue;
        if (auto held = keys.find(*key); held != keys.end()) {
            rejected[i] = Rejection{SubmitError::Invalid, "task " + std::to_string(tasks[i].id.value) + ": key " +
                                                              quoted(*key) + " is held by " + describe_task(held->second)};
            continue;
        }
        auto [it, fresh] = holder.emplace(*key, i);
        if (!fresh && tasks[i].id > tasks[it->second].id) it->second = i;
    }

    // Every task is known (ids, keys) before any edge is evaluated, so
    // that dependencies resolve in any order.
    std::vector<std::uint32_t> placed(n, no_slot);
    for (std::size_t i = 0; i < n; ++i) {
        if (rejected[i]) continue;
        const RestoredTask& task = tasks[i];
        const bool keeps_key = task.spec.key && holder.at(*task.spec.key) == i;
        if (is_terminal(task.status)) {
            const std::string* key = keeps_key ? &keys.emplace(*task.spec.key, task.id).first->first : nullptr;
            retain_restored(task, key, now);
            continue;
        }
        const bool moved_start = task.status == TaskStatus::Scheduled && task.until && task.until != task.spec.start;
        const TaskSpec* spec = &task.spec;
        TaskSpec adjusted;
        if ((task.spec.key && !keeps_key) || !resource_problem[i].empty() || moved_start) {
            adjusted = task.spec;
            if (!keeps_key) adjusted.key.reset();
            if (!resource_problem[i].empty()) adjusted.resources.clear();  // it ends Failed before it needs them
            if (moved_start) adjusted.start = task.until;
            spec = &adjusted;
        }
        placed[i] = allocate_slot();
        admit_one(*spec, placed[i], task.id);
        slots[placed[i]].attempt = task.attempts;
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (placed[i] == no_slot) continue;
        if (!resource_problem[i].empty())
            finish(placed[i], TaskStatus::Failed, std::move(resource_problem[i]), now);
        else
            place_restored(tasks[i], placed[i], now);
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (rejected[i])
            out.emplace_back(rejected[i]->error, std::move(rejected[i]->message));
        else
            out.emplace_back(tasks[i].id);
    }
    settle(now);
    return out;
}

// ---- public API -----------------------------------------------------------------

std::vector<SubmitResult<TaskId>> Engine::restore(std::span<const RestoredTask> tasks, Time now) {
    s_->kinds.next_admission();
    return s_->restore(tasks, now);
}

SubmitResult<TaskId> Engine::resubmit(TaskId old, const TaskSpec& spec, Time now) {
    State& s = *s_;
    // A task whose retention ended by `now` is forgotten before it is looked at.
    s.run_due_timers(now);
    s.forget_retained(now);
    const auto status = s.status_of(old);
    if (!status || !may_resubmit(*status)) {
        std::string why = !status ? "no task with id " + std::to_string(old.value) +
                                        " (never submitted, or forgotten after its retention)"
                                  : s.describe_task(old) + " is " + std::string(to_string(*status)) +
                                        ": only a failed, dead-lettered or cancelled task may be resubmitted";
        s.settle(now);
        return {SubmitError::Invalid, std::move(why)};
    }
    TaskSlot& ended = *s.retained_slot(old);  // terminal: may_resubmit
    const std::string* ended_key = s.key_of(ended);
    if (!spec.key || !ended_key || *ended_key != *spec.key) return submit(spec, now);
    // The key is free while the new task is admitted, and goes back to
    // `old` if it is not: from outside, it moves or stays in one call.
    s.keys.erase(s.keys.find(*spec.key));
    s.extras_of(ended).key = nullptr;
    // Looked up again below: the admission may move the slots.
    auto result = submit(spec, now);
    if (!result)
        if (TaskSlot* still = s.retained_slot(old))  // a shed victim may have pushed it out
            s.extras_of(*still).key = &s.keys.emplace(*spec.key, old).first->first;
    return result;
}

}  // namespace cronoq::core
