#include "recovery.hpp"

#include "text.hpp"

#include <algorithm>
#include <string>
#include <unordered_set>

namespace cronoq::core {

using detail::quoted;

// Errors that keep a task from coming back. A resource the engine cannot
// serve is not one: the task comes back to end Failed (`resource_problem`),
// so that the store learns why.
std::optional<Rejection> Recovery::check_restored(const RestoredTask& task, std::string& resource_problem) const {
    if (!task.id) return Rejection{SubmitError::Invalid, "task id 0 names no task"};
    const std::string name = "task " + std::to_string(task.id.value) + ": ";
    if (tasks_.status_of(task.id)) return Rejection{SubmitError::Invalid, name + "a task with this id is already known"};
    std::string why;
    if (auto error = admission_.check_spec(task.spec, why, false)) return Rejection{*error, name + why};
    if (is_terminal(task.status) || task.spec.resources.empty()) return std::nullopt;
    std::vector<detail::ResourceRequest> requests;
    for (const ResourceUse& use : task.spec.resources) {
        if (!resources_.registry().find(use.name)) {
            resource_problem = "unknown resource after restart: " + use.name;
            return std::nullopt;
        }
        requests.push_back({use.name, use.amount});
    }
    if (auto resolved = resources_.registry().resolve(requests); !resolved) resource_problem = "after restart: " + resolved.message();
    return std::nullopt;
}

void Recovery::retain_restored(const RestoredTask& task, const std::string* key, Time now) {
    const std::uint32_t s = tasks_.allocate();
    TaskSlot& t = tasks_[s];
    const std::uint32_t gen = t.gen + 1;  // a reused slot's old queue and timer entries stay stale
    t = TaskSlot{};
    t.gen = gen;
    t.id = task.id;
    t.user = task.spec.user;
    t.fair_key = tasks_.fair_keys.hold(task.spec.fair_key);
    t.ready_since = now;
    t.pool = task.spec.pool;
    t.kind = task.spec.kind;
    t.attempt = task.attempts;
    t.status = task.status;
    t.priority = task.spec.priority;
    if (key) tasks_.extras_of(t).key = key;
    tasks_.add_id(task.id, s);
    tasks_.set_admitted(s, now);
    retention_.retain(s);
    if (!key) return;
    // Tasks that awaited its key learn how it ended, as if it had just ended.
    waiting_.key_ended(*key, task.id, task.status);
}

// A Blocked task's edges, evaluated again against what is known now.
void Recovery::restore_edges(const RestoredTask& task, std::uint32_t slot, Time now) {
    const TaskId id = task.id;
    std::vector<std::pair<TaskId, Dep::Kind>> parents;
    std::vector<std::pair<std::string, Dep::Kind>> awaited;
    std::string broken;
    for (const Dep& d : task.spec.depends_on) {
        std::optional<TaskId> parent;
        if (d.ref.id) {
            if (tasks_.status_of(*d.ref.id))
                parent = *d.ref.id;
            else
                broken = "dependency task " + std::to_string(d.ref.id->value) + " is unknown after restart";
        } else if (auto held = tasks_.key_holder(*d.ref.key)) {
            parent = *held;
        } else if (pools_[task.spec.pool].config.unknown_dependency.awaits()) {
            awaited.emplace_back(*d.ref.key, d.kind);
        } else {
            broken = "dependency key " + quoted(*d.ref.key) + " is unknown after restart";
        }
        if (parent && *parent == id) broken = "the task depends on itself";
        if (parent && broken.empty()) {
            const TaskStatus st = *tasks_.status_of(*parent);
            if (!is_terminal(st))
                parents.emplace_back(*parent, d.kind);
            else if (!dep_met(d.kind, st))
                broken = "dependency " + tasks_.describe(*parent) + " ended " + std::string(to_string(st));
        }
        if (!broken.empty()) return life_.finish(slot, TaskStatus::Skipped, std::move(broken), now);
    }
    if (parents.empty() && awaited.empty()) return life_.release(slot, now);
    TaskSlot& t = tasks_[slot];
    ++t.gen;  // Blocked since admit_one
    detail::BlockedTask waits;
    for (const auto& [parent, kind] : parents) {
        waiting_.add_dependent(parent, {id, kind});
        waits.parents.push_back(parent);
        ++waits.unmet;
    }
    for (auto& [key, kind] : awaited) {
        waiting_.await_key(key, {id, kind});
        waits.awaited.push_back(std::move(key));
        ++waits.unmet;
    }
    // An awaited key gets the pool's whole timeout again, from now.
    waiting_.block(slot, std::move(waits), now);
}

// A live task, admitted as Blocked by admit_one, moved to the status it
// had, through the ordinary transitions. What lands where the store
// already is is not announced again; a change is.
void Recovery::place_restored(const RestoredTask& task, std::uint32_t slot, Time now) {
    const std::size_t mark = out_.size();
    TaskSlot& t = tasks_[slot];
    switch (task.status) {
        case TaskStatus::Running:
            life_.leave(t);
            t.status = TaskStatus::Running;
            t.attempt = std::max<std::uint32_t>(t.attempt, 1);
            ++t.gen;
            life_.fail_retryable(slot, "lease lost: scheduler restarted", std::nullopt, now);
            break;
        case TaskStatus::Retrying: {
            const Time until = task.until.value_or(now);
            if (until <= now)
                life_.make_ready(slot, now);
            else
                life_.restore_retrying(slot, until);
            break;
        }
        case TaskStatus::Ready:
            // One that never started may still be waiting for its start, or
            // have missed it.
            if (t.has_start && t.attempt == 0)
                life_.release(slot, now);
            else
                life_.make_ready(slot, now);
            break;
        case TaskStatus::Scheduled: life_.release(slot, now); break;
        default: restore_edges(task, slot, now); break;  // Blocked
    }
    if (tasks_.status_of(task.id) != task.status) return;
    out_.drop_statuses_since(mark, task.id);
}

std::vector<SubmitResult<TaskId>> Recovery::restore(std::span<const RestoredTask> tasks, Time now) {
    const std::size_t n = tasks.size();
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
        if (auto held = tasks_.key_holder(*key)) {
            rejected[i] = Rejection{SubmitError::Invalid, "task " + std::to_string(tasks[i].id.value) + ": key " +
                                                              quoted(*key) + " is held by " + tasks_.describe(*held)};
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
            const std::string* key = keeps_key ? tasks_.hold_key(*task.spec.key, task.id) : nullptr;
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
        placed[i] = tasks_.allocate();
        admission_.admit_one(*spec, placed[i], now, task.id);
        tasks_[placed[i]].attempt = task.attempts;
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (placed[i] == no_slot) continue;
        if (!resource_problem[i].empty())
            life_.finish(placed[i], TaskStatus::Failed, std::move(resource_problem[i]), now);
        else
            place_restored(tasks[i], placed[i], now);
    }
    std::vector<SubmitResult<TaskId>> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (rejected[i])
            out.emplace_back(rejected[i]->error, std::move(rejected[i]->message));
        else
            out.emplace_back(tasks[i].id);
    }
    return out;
}


}  // namespace cronoq::core
