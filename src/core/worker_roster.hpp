#pragma once
// Remote workers in the engine (docs/remote.md). A remote pool's capacity
// is the sum of the slots granted to its connected workers; each dispatch
// picks the worker that takes the lease. A task that no worker can take
// now (labels, slots, nacks) is parked out of the queue, as a task short of
// a resource is (resource_gate.hpp), and goes back to the queue when a
// worker that could take it has a free slot: a connection, more slots, or
// one of its leases ending. Owns the workers, each remote pool's roster
// and parked tasks, and the remote state of tasks with labels or nacks.
#include "engine_types.hpp"
#include "remote_workers.hpp"
#include "task_table.hpp"

#include <optional>
#include <unordered_map>
#include <vector>

namespace cronoq::core {

class WorkerRoster {
public:
    /// Reads tasks and sets remote pools' capacity, requeueing returned
    /// tasks; both outlive it.
    WorkerRoster(TaskTable& tasks, std::vector<PoolState>& pools) : tasks_(tasks), pools_(pools) {}

    void add_pool() { remote_pools_.emplace_back(); }

    // ---- connections (Engine::connect_worker and the calls after it) ----------
    /// A new worker of remote pool `pool`, granted at most `slots`.
    WorkerId connect(PoolId pool, std::size_t slots, Labels labels, Time now);
    /// The slots now granted; nullopt for an unknown worker.
    std::optional<std::size_t> set_slots(WorkerId worker, std::size_t slots, Time now);
    /// Takes away a worker's slots, so that ending its leases returns
    /// nothing to it; returns its pool and its live leases, which the
    /// caller abandons before it calls remove(). Nullopt: unknown worker.
    struct Leaving {
        PoolId pool;
        std::vector<std::uint64_t> leases;
    };
    std::optional<Leaving> begin_disconnect(WorkerId worker);
    void remove(WorkerId worker, Time now);
    /// Ready tasks of `pool` waiting after a nack that no connected worker
    /// can take any more, by id: the caller fails them.
    std::vector<std::uint32_t> stranded_after_nack(PoolId pool) const;

    std::size_t slots_of(WorkerId worker) const;
    std::size_t leases_of(WorkerId worker) const;
    std::size_t connected(PoolId pool) const {
        return pool < remote_pools_.size() ? remote_pools_[pool].workers.size() : 0;
    }

    // ---- a task's remote state ------------------------------------------------
    /// A new task's labels: the pool's group for that set (made on first use).
    void set_labels(TaskSlot& t, const Labels& labels);
    /// `worker` gave back `t`'s attempt: it is never offered `t` again.
    void nacked(TaskSlot& t, WorkerId worker) { remote_of(t).nacked_by.push_back(worker); }
    /// A new attempt may go anywhere.
    void clear_nacks(const TaskSlot& t) {
        if (t.has_remote) remote_tasks_.at(t.id.value).nacked_by.clear();
    }
    void drop_task(TaskSlot& t) {
        remote_tasks_.erase(t.id.value);
        t.has_remote = false;
    }

    // ---- dispatch ---------------------------------------------------------------
    /// The worker to take Ready task `s` now (a free slot, its labels, not
    /// one that nacked it); 0 when none can.
    WorkerId pick(std::uint32_t s) const;
    /// Whether a connected worker other than those that nacked it could
    /// ever take `s` (free slot or not).
    bool could_take(std::uint32_t s) const;
    /// Parks a Ready task no worker can take now (its pool's label group).
    void park(std::uint32_t s);

    // ---- leases -------------------------------------------------------------------
    void lease_started(WorkerId worker, LeaseId lease) { workers_.at(worker.value).leases.push_back(lease.value); }
    void lease_ended(WorkerId worker, LeaseId lease);
    /// One of its leases expired unheartbeated: it takes no new lease
    /// until it is heard from.
    void silent(WorkerId worker);
    /// Any report from it, even a late one, shows it is alive.
    void heard(WorkerId worker);

private:
    detail::RemoteTask& remote_of(TaskSlot& t) {
        t.has_remote = true;
        return remote_tasks_[t.id.value];
    }
    bool may_take(const detail::RemoteWorker& w, const TaskSlot& t) const;
    /// Sends back to the queue as many parked tasks as `w` has free slots for.
    void unpark_for(detail::RemoteWorker& w);
    void requeue(detail::QueueRef r);
    /// The pool's capacity is the slots granted to its workers.
    void update_capacity(PoolId pool, Time now);

    std::unordered_map<std::uint64_t, detail::RemoteWorker> workers_;  // by id
    std::vector<detail::RemotePool> remote_pools_;                     // per pool (empty for a local one)
    std::unordered_map<std::uint64_t, detail::RemoteTask> remote_tasks_;  // by task id
    TaskTable& tasks_;
    std::vector<PoolState>& pools_;
};

}  // namespace cronoq::core
