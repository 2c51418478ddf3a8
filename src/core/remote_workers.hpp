#pragma once
// Remote workers in the engine (docs/remote.md): who is connected to each remote
// pool, with how many granted slots and which labels, and the tasks of the
// pool that wait for a worker able to take them. Private to the engine;
// the WorkerRoster (worker_roster.hpp) owns them.
#include <cronoq/core/task_spec.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/priority.hpp>

#include "ready_queue.hpp"
#include "ring.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cronoq::core::detail {

// Worker ids come from a process-wide counter, as task and lease ids do:
// unique across the engines of the process, never reused.
inline std::atomic<std::uint64_t> next_worker_id{1};

/// Whether a worker registered with `worker` labels may run a task that
/// needs `task` labels: every one of them, name and value. Both sorted by
/// name with each name once, hence sorted as pairs too.
inline bool labels_cover(const Labels& worker, const Labels& task) {
    return std::includes(worker.begin(), worker.end(), task.begin(), task.end());
}

struct RemoteWorker {
    WorkerId id;
    PoolId pool = 0;
    std::size_t granted = 0;
    Labels labels;
    std::vector<std::uint64_t> leases;  // live leases, by id: few per worker
    /// One of its leases expired unheartbeated and nothing came from it
    /// since: a stopped process or a dead link whose stream has not ended
    /// yet. It takes no new lease (each would only expire in turn, burning
    /// an attempt) until it is heard from again.
    bool silent = false;
    /// Granted slots without a lease; 0 while lowered slots retire or while
    /// the worker is silent.
    std::size_t free() const { return !silent && leases.size() < granted ? granted - leases.size() : 0; }
};

/// Ready tasks of one label set that found no worker with a free slot,
/// per class in the order they parked: out of the pool's queue, so that
/// the tasks behind them go on (docs/guide/ordering.md, no head-of-line blocking), as a
/// task short of a resource is parked on it.
struct LabelGroup {
    Labels labels;
    std::array<Ring<QueueRef>, priority_count> parked;
};

struct RemotePool {
    std::vector<WorkerId> workers;  // connected, in connection order
    std::size_t granted = 0;        // sum of the workers' granted slots: the capacity
    /// Distinct label sets of the pool's tasks; [0] is the empty one.
    std::vector<LabelGroup> groups = std::vector<LabelGroup>(1);
    /// Parked tasks whose attempt a worker nacked: each excludes its own
    /// workers, so they cannot share a group's queue. Few, scanned whole.
    std::vector<QueueRef> after_nack;
};

/// A task of a remote pool with labels or a nacked attempt (the others
/// have none): its label group, and the workers that nacked its current
/// attempt (never offered it again; cleared when an attempt fails).
struct RemoteTask {
    std::uint32_t group = 0;
    std::vector<WorkerId> nacked_by;
    bool excludes(WorkerId w) const { return std::find(nacked_by.begin(), nacked_by.end(), w) != nacked_by.end(); }
};

}  // namespace cronoq::core::detail
