#pragma once
// Which ready task takes a free slot (docs/guide/ordering.md): due fixed
// starts first, then the best-ranked task (class, aging, deadline urgency)
// that does not take a slot held for an upcoming start
// (docs/guide/time-and-cron.md). Owns the ranking configuration; a task it
// picks starts through the lifecycle, after the worker roster and the
// resource gate have had their say.
#include "engine_types.hpp"
#include "lifecycle.hpp"
#include "resource_gate.hpp"
#include "task_table.hpp"
#include "worker_roster.hpp"

#include <vector>

namespace cronoq::core {

class Dispatcher {
public:
    Dispatcher(const PriorityConfig& priority, const UrgencyConfig& urgency, TaskTable& tasks,
               std::vector<PoolState>& pools, WorkerRoster& workers, ResourceGate& resources, Lifecycle& life)
        : priority_(priority), urgency_(urgency), tasks_(tasks), pools_(pools), workers_(workers),
          resources_(resources), life_(life) {}

    /// Fills the pool's free slots.
    void dispatch(PoolState& p, Time now);
    /// Every pool a call changed: those with a free slot and a ready task.
    void dispatch_dirty(Time now) {
        for (PoolState& p : pools_) {
            if (!p.dirty) continue;
            // A call only when the dispatch has something to do: not after
            // most completions, nor after a submission that started at once.
            if (p.can_dispatch())
                dispatch(p, now);
            else
                p.dirty = false;
        }
    }

private:
    /// A task parks (a resource, a remote worker) after the fair order took
    /// it, which charged its key: its start, when it comes back outside
    /// that order, is not charged again.
    void paid_when_parked(std::uint32_t s, bool outside_fair_order) {
        if (!outside_fair_order) tasks_[s].fair_paid = true;
    }
    /// For a Ready task with a deadline.
    double urgency(const TaskExtras& e, Time now) const;
    detail::Rank rank(const TaskTable& tasks, std::uint32_t s, Time now) const {
        const TaskSlot& t = tasks[s];
        const double waited = std::max(0.0, to_seconds(now - t.ready_since));
        double score =
            priority_.base[index_of(t.priority)] + std::min(priority_.aging_rate * waited, priority_.age_cap);
        if (t.has_deadline) score += urgency(tasks.extras(t), now);
        return {score, t.ready_since, t.id.value};
    }

    PriorityConfig priority_;
    UrgencyConfig urgency_;
    TaskTable& tasks_;
    std::vector<PoolState>& pools_;
    WorkerRoster& workers_;
    ResourceGate& resources_;
    Lifecycle& life_;
};

}  // namespace cronoq::core
