#pragma once
// Tasks that wait before they are ready: on dependencies (Blocked,
// docs/guide/dependencies-and-keys.md) and for a fixed start (Scheduled,
// docs/guide/time-and-cron.md). Owns the dependency graph and the fixed
// starts; the moves out of waiting go through the lifecycle, which each
// such call takes as a parameter.
#include "dependencies.hpp"
#include "engine_types.hpp"
#include "outbox.hpp"
#include "task_table.hpp"
#include "timer_heap.hpp"

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace cronoq::core {

class Lifecycle;

class WaitingRoom {
public:
    /// Reads tasks, holds reservations in the pools, arms timers and
    /// reports statuses; all four outlive it.
    WaitingRoom(TaskTable& tasks, std::vector<PoolState>& pools, TimerHeap& timers, Outbox& out)
        : tasks_(tasks), pools_(pools), timers_(timers), out_(out) {}

    // ---- fixed starts ---------------------------------------------------------
    /// A new task's fixed start: reserved in its pool until it ends.
    void add_start(TaskSlot& t, const TaskSpec& spec, Duration expected);
    const StartInfo& start_of(const TaskSlot& t) const { return starts_.at(t.id.value); }
    /// The first attempt of a fixed-start task began: on time or late.
    void count_start(const TaskSlot& t, Time now);
    void drop_start(TaskSlot& t);

    // ---- dependencies ---------------------------------------------------------
    const detail::DepGraph& graph() const { return graph_; }
    /// Some task ended with dependents still to tell (resolve_dependents).
    bool has_resolved() const { return !graph_.resolved.empty(); }
    /// A task ended: its dependents learn it at the next resolve_dependents.
    void ended(TaskId id, TaskStatus status) {
        if (!graph_.dependents.empty() && graph_.dependents.count(id.value)) graph_.resolved.emplace_back(id, status);
    }
    /// A task now holds `key`: tasks that awaited it wait on that task.
    void key_taken(const std::string& key, TaskId holder);
    /// A restored terminal task holds `key`: its awaiters learn how it
    /// ended, as if it had just ended.
    void key_ended(const std::string& key, TaskId holder, TaskStatus status);
    void add_dependent(TaskId parent, detail::Edge edge) { graph_.dependents[parent.value].push_back(edge); }
    void await_key(const std::string& key, detail::Edge edge) { graph_.awaiting[key].push_back(edge); }
    /// Task `s` (its gen already bumped) waits on `waits`; awaited keys get
    /// the pool's Await timeout from `now`.
    void block(std::uint32_t s, detail::BlockedTask&& waits, Time now);
    void drop_blocked(TaskId id);

    // ---- moves out of waiting ---------------------------------------------------
    /// Every edge of a Blocked or new task is met: Scheduled or Ready.
    void release(std::uint32_t s, Time now, Lifecycle& life, bool admitting = false);
    /// A fixed start has come: Ready at the front, or the miss policy.
    void start_due(std::uint32_t s, Time now, Lifecycle& life);
    void miss_start(std::uint32_t s, Time now, Lifecycle& life);
    /// The pool resumed: each of its due starts that a pause held past its
    /// tolerance follows its miss policy now; the others get their miss
    /// check again (a pause drops it: docs/guide/operations.md, "Pause and resume").
    void resumed(PoolState& p, Time now, Lifecycle& life);
    void expire_await(std::uint32_t s, Time now, Lifecycle& life);
    /// Tells the dependents of every task that ended; skips run down the
    /// graph within this one call.
    void resolve_dependents(Time now, Lifecycle& life);

private:
    /// The edges of the tasks that awaited `key`, which await it no longer
    /// (its holder is now known); empty when none did.
    std::optional<std::vector<detail::Edge>> stop_awaiting(const std::string& key);
    detail::DepGraph graph_;
    std::unordered_map<std::uint64_t, StartInfo> starts_;  // by task id, until the task ends
    TaskTable& tasks_;
    std::vector<PoolState>& pools_;
    TimerHeap& timers_;
    Outbox& out_;
};

}  // namespace cronoq::core
