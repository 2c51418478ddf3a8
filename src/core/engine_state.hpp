#pragma once
// The engine behind Engine (docs/design.md#engine-source-layout): the
// components that own its data, wired together, and what every call ends
// with. Private to the engine: included by engine.cpp, engine_state.cpp and
// engine_workers.cpp only.
//
//   TaskTable      task slots, extras, attempts, ids, leases, keys
//   TimerHeap      every wakeup; Outbox: the actions owed to the owner
//   Retention      terminal tasks until their retention ends
//   BacklogBounds  bounds on pending tasks, shedding, SpaceAvailable
//   ResourceGate   resources, each task's needs, tasks parked on them
//   WorkerRoster   remote workers, their leases, tasks parked for them
//   WaitingRoom    dependencies (Blocked) and fixed starts (Scheduled)
//   Autoscaling    evaluates each pool's autoscaler
//   Lifecycle      every transition of a task; the shutdown mode
//   Dispatcher     which ready task takes a free slot
//   Admission      new tasks, alone or in batches
//   Recovery       tasks restored after a restart
//
// A pool's own state (PoolState, engine_types.hpp: its config, capacity,
// counters, ready queue, reservations, metrics and autoscaler) is shared:
// components reach a pool through the `pools` they are given.
//
// Each holds references to the components it uses, given here at
// construction, so the order of the members below is the order of their
// dependencies.
#include <cronoq/config_error.hpp>
#include <cronoq/core/engine.hpp>

#include "admission.hpp"
#include "autoscaling.hpp"
#include "backlog_bounds.hpp"
#include "dispatcher.hpp"
#include "engine_types.hpp"
#include "kind_table.hpp"
#include "lifecycle.hpp"
#include "outbox.hpp"
#include "recovery.hpp"
#include "resource_gate.hpp"
#include "retention.hpp"
#include "task_table.hpp"
#include "timer_heap.hpp"
#include "waiting_room.hpp"
#include "worker_roster.hpp"

#include <optional>
#include <vector>

namespace cronoq::core {

struct Engine::State {
    explicit State(EngineConfig c);
    State(const State&) = delete;
    State& operator=(const State&) = delete;

    EngineConfig config;
    std::vector<PoolState> pools;
    TaskTable tasks;
    TimerHeap timers;
    Outbox out;
    detail::KindTable kinds{config.kind_capacity};
    Retention retention{config.retention, config.retention_max};
    BacklogBounds bounds{config.global_bounds, tasks, pools};
    ResourceGate resources{config.resources, tasks, pools, timers};
    WorkerRoster workers{tasks, pools};
    WaitingRoom waiting{tasks, pools, timers};
    Autoscaling scaling{tasks, pools, timers, out};
    Lifecycle life{tasks, {pools, out, timers, bounds, resources, workers, waiting, retention, kinds}, config.seed};
    Dispatcher dispatcher{config.priority, config.urgency, tasks, pools, workers, resources, life};
    Admission admission{tasks, {pools, kinds, resources, workers, waiting, bounds, life, out}};
    Recovery recovery{tasks, {pools, out, resources, waiting, retention, admission, life}};
    std::uint64_t late = 0;  // reports for leases that had already ended

    // ---- reports for a lease ---------------------------------------------------
    // The slot of the attempt holding `lease`, for a report made at `now`.
    // What was due by `now` happens first, so a completion or heartbeat at or
    // after its attempt's timeout or lease expiry is late, whether or not the
    // owner ticked in between; a late report is counted and changes nothing.
    // With `from`, the lease must also be that remote worker's.
    std::optional<std::uint32_t> live_lease(LeaseId lease, Time now, WorkerId from = {}) {
        run_due_timers(now);
        if (from) workers.heard(from);  // any report, even a late one, shows it is alive
        if (const std::uint32_t* found = tasks.find_lease(lease))
            if (!from || tasks.attempt(tasks[*found]).worker == from) return *found;
        ++late;
        settle(now);
        return std::nullopt;
    }

    /// Engine::submit_batch, and Engine::submit with dependencies or a
    /// fixed start (a batch of one).
    SubmitResult<std::vector<TaskId>> admit_batch(std::span<const TaskSpec> specs, Time now);

    // ---- timers ------------------------------------------------------------------
    void run_due_timers(Time now) {
        while (!timers.empty() && timers.top().at <= now) {
            const Timer tm = timers.top();
            timers.pop();
            if (timer_live(tm)) fire(tm, now);
        }
    }
    // The shutdown grace matters only while some attempt still runs. Once
    // handing over, only running attempts and the grace have timers.
    bool timer_live(const Timer& tm) const {
        if (tm.kind == TimerKind::ShutdownGrace) return life.any_running();
        if (life.handing_over() && tm.kind != TimerKind::Attempt) return false;
        if (tm.kind == TimerKind::Refill) return resources.refill_live(tm.slot, tm.at);
        if (tm.kind == TimerKind::Autoscale) return pools[tm.slot].autoscale_armed == tm.at;
        if (tm.kind == TimerKind::Horizon) return true;  // fires once
        return tasks[tm.slot].gen == tm.gen;
    }
    void fire(const Timer& tm, Time now);

    /// After every call: resolves dependents, autoscales, dispatches,
    /// unparks, announces space, forgets, and keeps the timer heap's top live.
    void settle(Time now);
};

}  // namespace cronoq::core
