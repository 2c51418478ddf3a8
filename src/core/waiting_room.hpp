#pragma once
// Tasks that wait before they are ready: on dependencies (Blocked,
// docs/guide/dependencies-and-keys.md) and for a fixed start (Scheduled,
// docs/guide/time-and-cron.md). Owns the dependency graph and the fixed
// starts. It moves no task out of waiting: the lifecycle does, reading and
// taking here what it needs (Lifecycle::release and the moves beside it).
#include "dependencies.hpp"
#include "engine_types.hpp"
#include "task_table.hpp"
#include "timer_heap.hpp"

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace cronoq::core {

/// An ended task and the edges of its dependents (WaitingRoom::take_resolved).
struct Resolved {
    TaskId parent;
    TaskStatus status;
    std::vector<detail::Edge> edges;
};

class WaitingRoom {
public:
    /// Reads tasks, holds reservations in the pools and arms timers; all
    /// three outlive it.
    WaitingRoom(TaskTable& tasks, std::vector<PoolState>& pools, TimerHeap& timers)
        : tasks_(tasks), pools_(pools), timers_(timers) {}

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

    /// The next ended task whose dependents are still to be told, with
    /// their edges (taken: each edge is told once), in the order the tasks
    /// ended, those that end meanwhile included; none once every one is told.
    std::optional<Resolved> take_resolved();
    /// One edge of Blocked task `child` is met; true when it was its last.
    bool meet_edge(TaskId child) { return --graph_.blocked.at(child.value).unmet == 0; }
    /// The first key that Blocked task `id` still awaits; none if it awaits none.
    const std::string* first_awaited(TaskId id) const;

private:
    /// The edges of the tasks that awaited `key`, which await it no longer
    /// (its holder is now known); empty when none did.
    std::optional<std::vector<detail::Edge>> stop_awaiting(const std::string& key);
    detail::DepGraph graph_;
    std::size_t told_ = 0;  // the resolved tasks take_resolved has given
    std::unordered_map<std::uint64_t, StartInfo> starts_;  // by task id, until the task ends
    TaskTable& tasks_;
    std::vector<PoolState>& pools_;
    TimerHeap& timers_;
};

}  // namespace cronoq::core
