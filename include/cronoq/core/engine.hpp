#pragma once
// The scheduling engine: a deterministic, single-threaded, sans-IO state
// machine (docs/design.md). It reads no clock, starts no thread and never sees a
// payload. Every call takes `now`; the answers are actions, drained with
// `drain()`. Each mutating call first processes what was due by `now` (as
// `tick` would), so outcomes never depend on whether the owner ticked in
// between: a completion or heartbeat that arrives at or after its attempt's
// timeout or lease expiry is late. Not thread-safe: its owner serializes
// calls.
// Defined so that a check can tell this header was reached (tests/CMakeLists.txt,
// "no_engine"): the driver's public headers must not include it.
#define CRONOQ_CORE_ENGINE_HPP_INCLUDED 1
#include <cronoq/core/action.hpp>
#include <cronoq/core/task_scan.hpp>
#include <cronoq/core/task_spec.hpp>
#include <cronoq/core/time.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/pool_stats.hpp>
#include <cronoq/scaler.hpp>
#include <cronoq/submit_error.hpp>
#include <cronoq/task_status.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cronoq::core {

/// The ids the engine's counters would hand out next (`Engine::next_ids`).
struct NextIds {
    std::uint64_t task;
    std::uint64_t lease;
};

class Engine {
public:
    /// Throws ConfigError naming the field on a bad constant.
    explicit Engine(EngineConfig config = {});
    ~Engine();
    Engine(Engine&&) noexcept;
    Engine& operator=(Engine&&) noexcept;

    /// Adds a pool; ids are dense, in order. Throws ConfigError (empty or
    /// duplicate name, zero or negative durations, bad retry policy).
    PoolId add_pool(PoolConfig config);
    std::optional<PoolId> find_pool(std::string_view name) const;
    std::size_t pool_count() const;
    const PoolConfig& pool_config(PoolId pool) const;

    /// Interns a kind name; the same name gives the same id while the kind
    /// is remembered, with the run times pools learned of it. A kind is
    /// remembered while a task of it is live; of the kinds with none, the
    /// `EngineConfig::kind_capacity` most recently used are kept, and
    /// interning a new name beyond them forgets the least recently used
    /// one: its learned run times are lost (its next tasks are expected to
    /// take the pool's `default_duration` until it learns again) and its id
    /// is reused. So intern just before submitting rather than keeping ids:
    /// an id interned since the last `submit` or `submit_batch` call is
    /// never forgotten before the next one.
    KindId intern_kind(std::string_view name);
    /// Throws std::out_of_range for an id that names no kind.
    const std::string& kind_name(KindId kind) const;
    /// Kind names remembered, "" included (bounded as `intern_kind` says).
    std::size_t known_kinds() const;

    /// Admits a task: `Blocked` while a dependency is unmet, `Scheduled`
    /// until a future fixed start, else `Ready` (and dispatched at once if
    /// its pool has a free slot that no upcoming fixed start holds). Errors:
    /// UnknownPool, ShuttingDown, Invalid (bad timeout, retry policy, kind,
    /// tolerance, dependency), UnknownResource, ResourceExceedsCapacity,
    /// and with dependencies or a start Cycle, UnknownDependency,
    /// ReservationConflict; a rejected task leaves no trace. A key held by
    /// a live or retained task returns that task's id and admits nothing
    /// (no action is emitted).
    ///
    /// Bounds (docs/guide/resources-and-bounds.md): a task beyond its pool's or the global
    /// `max_pending` (tasks admitted and not running) follows its pool's
    /// `OverflowPolicy`: `Wait` → `Full` (and a `SpaceAvailable` for the
    /// pool once there is room), `Reject` → `Overloaded`, `ShedLowest` /
    /// `ShedOldest` → a queued (Ready) victim ends `Shed` and the task is
    /// admitted, or `Overloaded` when there is none.
    SubmitResult<TaskId> submit(const TaskSpec& spec, Time now);

    /// Admits all of `specs` or none (docs/guide/dependencies-and-keys.md). Tasks may depend on each
    /// other by key, in any order; ids come back in the order of `specs`.
    /// Beyond `submit`'s errors: DuplicateKeyInBatch, Cycle,
    /// UnknownDependency, ReservationConflict; each message names the
    /// offending task by its index. A batch that does not fit its bounds
    /// sheds nothing: `Full` under `Wait`, else `Overloaded`. A spec whose key is held returns the
    /// holder's id and admits nothing.
    SubmitResult<std::vector<TaskId>> submit_batch(std::span<const TaskSpec> specs, Time now);

    /// Brings back tasks a durable store kept, after a restart (docs/guide/durability.md
    /// "Recovery"). One result per task, in order: its id, or why it could
    /// not come back (id 0 or already known, given twice, ShuttingDown,
    /// and `submit`'s field errors: UnknownPool, Invalid).
    ///
    /// Tasks keep their ids (the id counter moves above the largest given),
    /// keys, priorities, deadlines, attempts and times; dependencies are
    /// resolved among the restored tasks, in any order, and the tasks
    /// already known. They are admitted past bounds and reservation limits
    /// (they were acknowledged). A status the store already holds is not
    /// announced again; every change is, with the usual actions:
    ///  - `Ready`, `Scheduled`, `Retrying`, `Blocked` come back as such: a
    ///    Retrying task waits until `until` (Ready if it passed or is
    ///    empty); a Scheduled one for its start (`until`, else
    ///    `spec.start`), whose miss policy applies if it passed, as does a
    ///    Ready one's that never started; a Blocked one's edges are
    ///    evaluated again (released, Skipped, or Blocked on what is still
    ///    live; an edge to an id no longer known, or to a key no task holds
    ///    under `UnknownDependency::Reject`, is broken: Skipped). Ready
    ///    tasks are dispatched as usual.
    ///  - `Running`: that attempt counts as a retryable failure ("lease
    ///    lost: scheduler restarted") under the task's retry policy.
    ///  - terminal: retained (for keys, dependencies and lookups) under the
    ///    retention rules, counted from `now`. Not counted in the pool's
    ///    counters, which count what this engine saw end.
    ///  - a live task that needs a resource this engine does not declare
    ///    ends `Failed` ("unknown resource after restart: <name>"), one that
    ///    needs more than a resource's capacity too.
    /// Keys: a key two restored tasks name goes to the one with the larger
    /// id (a `resubmit` moved it; the other comes back without it); a key
    /// a task already known holds is an error result for the restored one.
    std::vector<SubmitResult<TaskId>> restore(std::span<const RestoredTask> tasks, Time now);

    /// Admits `spec` as a new task (new id, fresh attempts) the way
    /// `submit` would, in place of the ended task `old` (docs/guide/durability.md
    /// `Scheduler::retry`). When `spec.key` is `old`'s key, the key moves
    /// to the new task in the same call: `old` keeps its terminal status
    /// and loses its key; its dependents are not revisited. Errors: Invalid
    /// when `old` is unknown (or forgotten) or did not end Failed,
    /// DeadLettered or Cancelled; else `submit`'s errors, and then nothing
    /// changes (the key stays with `old`). Like `submit`, a key held by a
    /// task other than `old` returns that task's id and admits nothing.
    SubmitResult<TaskId> resubmit(TaskId old, const TaskSpec& spec, Time now);

    /// The live or retained task holding `key`.
    std::optional<TaskId> find_key(std::string_view key) const;

    /// Reports the end of the attempt holding `lease`. Returns false, and
    /// changes nothing but the late-report count, when the lease is not live
    /// (already completed, aborted or expired), or when `from` is given
    /// and the lease is not that remote worker's.
    bool complete(LeaseId lease, const Outcome& outcome, Time now, WorkerId from = {});

    /// Keeps a live lease alive for another `lease_ttl`. False (and counted
    /// as late) for a lease that is not live, or not `from`'s when given.
    bool heartbeat(LeaseId lease, Time now, WorkerId from = {});

    // ---- remote workers (docs/remote.md) ----------------------------------------
    // A remote pool (`PoolConfig::remote`) runs its attempts on workers
    // its owner connects here; each Dispatch names the worker that holds
    // the lease. The capacity is the sum of the connected workers' granted
    // slots; a worker holds at most its granted slots' leases.

    /// Registers a worker of remote pool `pool` asking for `slots`, with
    /// its `labels` (sorted by name, as TaskSpec::labels). It is granted
    /// `slots`, or fewer when the pool's `max_workers` leaves less room
    /// (`worker_slots` tells), and may get Dispatches at once. Empty
    /// (`WorkerId{}`) for a local or unknown pool, or when shutting down.
    WorkerId connect_worker(PoolId pool, std::size_t slots, Labels labels, Time now);
    /// The worker now asks for `slots` (0: no new leases; running ones go
    /// on). Returns the slots granted (0 for an unknown worker).
    std::size_t set_worker_slots(WorkerId worker, std::size_t slots, Time now);
    /// The worker is gone: each of its live leases is aborted
    /// (`Abort{WorkerLost}`) and fails as retryable ("worker
    /// disconnected"), under the task's retry policy; its slots leave the
    /// pool's capacity. A task that a nack left waiting for another worker
    /// and that no connected worker can take any more fails the same way
    /// ("no other worker ..."). Does nothing for an unknown worker.
    void disconnect_worker(WorkerId worker, Time now);
    /// The worker holding `lease` gives it back without running it: the
    /// attempt does not count, and the task waits (Ready) for another
    /// connected worker of its pool whose labels match, never one that
    /// nacked this attempt. When no such worker is connected the attempt
    /// fails as retryable ("nacked: <reason>; no other worker can take
    /// it"), and its next attempt may go to any worker again. False (and
    /// counted as late) for a lease that is not live, not `from`'s when
    /// given, or of a local pool.
    bool nack(LeaseId lease, std::string_view reason, Time now, WorkerId from = {});
    /// Slots granted to a connected worker (0 for an unknown one).
    std::size_t worker_slots(WorkerId worker) const;
    /// Leases a connected worker holds now.
    std::size_t worker_leases(WorkerId worker) const;
    /// Workers connected to a pool (0 for a local pool).
    std::size_t connected_workers(PoolId pool) const;

    /// Cancels a task that is not terminal: a queued or retrying one ends
    /// `Cancelled` at once; a running one is aborted (`Abort{Cancelled}`)
    /// and ends `Cancelled`. False if unknown or already terminal.
    bool cancel(TaskId task, Time now);
    /// Ends a `Blocked` task `Skipped` with `reason`, as if one of its edges
    /// broke: the driver learned that an edge can never be met here (a key
    /// it awaits is held by a task of another shard: docs/guide/replicas.md,
    /// "Shards"). Its dependents are skipped in the same call. False if the
    /// task is unknown or not `Blocked`.
    bool skip_blocked(TaskId task, std::string reason, Time now);

    /// Sets a pool's concurrency. Lowering it never aborts a running
    /// attempt: surplus slots retire as attempts end. Does nothing for a
    /// remote pool, whose capacity is its workers' granted slots.
    void set_capacity(PoolId pool, std::size_t capacity, Time now);

    /// Pauses a pool (docs/guide/operations.md, "Pause and resume"): it
    /// goes on admitting and queueing tasks (bounds apply as usual), but
    /// dispatches none, to a local slot or a remote worker; running
    /// attempts go on and end as usual. Backoffs end, fixed starts come due
    /// and dependencies resolve into `Ready`; a due fixed start that the
    /// pause holds past its tolerance follows its miss policy at `resume`.
    /// Its autoscaler holds still (no evaluation, no `ScaleTo`). Returns
    /// whether the pool was running; throws std::out_of_range for an
    /// unknown pool.
    bool pause(PoolId pool, Time now);
    /// Lets a paused pool dispatch again (ready tasks in their usual order)
    /// and its autoscaler evaluate. Returns whether it was paused; throws
    /// std::out_of_range for an unknown pool.
    bool resume(PoolId pool, Time now);
    bool paused(PoolId pool) const;

    /// The open question to a pool's user scaler (`PoolConfig::user_scaler`):
    /// what its `desired(input)` is to be called with, from the evaluation
    /// that emitted `AskScaler`; empty when no question is open.
    std::optional<ScalerInput> scaler_question(PoolId pool) const;
    /// The user scaler's answer to the open question: the capacity it
    /// wants, or empty when it had none (it threw), which keeps the
    /// capacity. Clamped to [min_workers, max_workers] and applied as is
    /// (a `ScaleTo` if it changes; scaler.hpp). False when no question is
    /// open for the pool: the answer is ignored. Throws std::out_of_range
    /// for an unknown pool.
    bool answer_scaler(PoolId pool, std::optional<std::size_t> desired, Time now);

    /// Processes everything due at `now` (timeouts, lease expiries, ends of
    /// backoff, the shutdown grace) and dispatches what can run.
    void tick(Time now);

    /// Stops admitting; every task that is not running ends `Cancelled`
    /// ("shutdown"). Running attempts may finish until `grace_end`, then are
    /// aborted (`Abort{Shutdown}`) and end `Cancelled`. A retryable failure
    /// during the grace is not retried: the task ends `Cancelled` with the
    /// error's message. Calling again can only shorten the grace.
    void shutdown(Time now, Time grace_end);
    /// True after `shutdown` or `hand_over`.
    bool is_shutting_down() const;

    /// Shutdown with a durable store (docs/guide/durability.md): the work is handed over to
    /// the next leader instead of being cancelled. Stops admitting
    /// (ShuttingDown) and dispatching; tasks that are not running keep
    /// their status and get no action (no backoff ends, no start is due,
    /// no dependency is resolved: the next leader's `restore` does that).
    /// Running attempts may finish until `grace_end`: a success, a
    /// permanent failure and a cancellation end their task as usual; a
    /// retryable failure (a timeout, a lost lease) makes it `Retrying` as
    /// usual, and it stays so. At `grace_end` the attempts still running
    /// are aborted (`Abort{Shutdown}`) without a status change: their
    /// tasks stay `Running`, as the store has them, and are recovered as
    /// after a crash. `cancel` still ends a task `Cancelled`. Calling again
    /// can only shorten the grace; a later `shutdown` cancels what is left.
    void hand_over(Time now, Time grace_end);
    /// True once `hand_over` was called and no attempt runs.
    bool is_handed_over() const;

    /// Changes a token bucket's refill rate from `now` on (tokens accrued
    /// so far stay). Returns why it cannot (unknown name, a semaphore, a
    /// negative or non-finite rate); nothing changes then.
    std::optional<std::string> set_rate(std::string_view bucket, double rate_per_s, Time now);
    /// The weight of `key` in `pool` from the next decision on
    /// (docs/design.md#fair-sharing), overriding the configured one. Throws
    /// ConfigError for a pool id out of range or a weight that is not
    /// finite and > 0; nothing changes then.
    void set_fair_weight(PoolId pool, std::string_view key, double weight, Time now);
    /// Fair key names the engine holds interned: those of its live and
    /// retained tasks ("" not counted).
    std::size_t known_fair_keys() const;

    /// When `tick` next has work; empty when nothing is timed.
    std::optional<Time> next_wakeup() const {
        Time at;
        if (!next_wakeup_into(at)) return std::nullopt;
        return at;
    }

    /// A live or retained task's `TaskSpec::user`; empty once forgotten.
    std::optional<std::uint64_t> user(TaskId task) const;
    /// For a terminal task whose owner let go of what its `user` value
    /// refers to: `user()` and its `Forget` give 0 from now on. Does
    /// nothing for a live or unknown task.
    void release_user(TaskId task);
    /// Whether a task without a key releases its `user` value as it ends
    /// (off by default): on, its terminal `Status` still carries the value,
    /// and from then on it is as if `release_user` had been called. For an
    /// owner that lets go, at that status, of what the value refers to;
    /// saves it a look-up per task. Takes effect from the next call.
    void release_users_at_end(bool on);
    /// Up to `limit` live or retained tasks with ids below `below` that
    /// `filter` selects, newest (highest id) first. Bounded work: with up
    /// to `scan_all_below` tasks held it reads each once (so a page is full
    /// when enough match); with more, it walks ids down from `below`,
    /// looking at most at `id_budget` of them, and the page may be short
    /// (its `next_below` says where to go on). Every matching task is on
    /// exactly one page of a walk from `below` = max down; tasks admitted
    /// after the first page have higher ids and do not appear.
    TaskScanPage scan(const TaskFilter& filter, std::uint64_t below, std::size_t limit) const;
    static constexpr std::size_t scan_all_below = 65536;
    static constexpr std::size_t id_budget = 8192;

    /// A live or retained task's status; empty once forgotten.
    std::optional<TaskStatus> status(TaskId task) const;
    /// Whether `Status` actions also report the two transitions other
    /// results imply (the default): the Ready of a task admitted ready (a
    /// submission that returns its id without another status) and the
    /// Running of each attempt (its `Dispatch`). Every other transition is
    /// reported either way. A driver with nobody to tell of those two (no
    /// store, no subscriber) turns them off and infers them. Takes effect
    /// from the next call.
    void report_implied_transitions(bool on);

    /// Moves the pending actions into `out` (cleared first), in the order
    /// they happened. Buffers are swapped, so reusing `out` avoids allocation.
    void drain(std::vector<Action>& out);
    bool has_actions() const;

    PoolCounters counters(PoolId pool) const;
    /// The pool's figures over the metrics window ending at `now`. Reads
    /// only: O(window slices x histogram size), cheap enough every second.
    PoolStats stats(PoolId pool, Time now) const;
    /// Tasks not yet terminal, over all pools.
    std::size_t live_tasks() const;
    /// Terminal tasks still retained.
    std::size_t retained_tasks() const;
    /// Reports (completions, heartbeats) for leases that were not live.
    std::uint64_t late_reports() const;

    /// The next task id and lease id the counters would hand out: every id
    /// issued so far is below them. A driver with a store commits marks at
    /// or above these before it acknowledges what used the ids, and starts
    /// the next leader there (`EngineConfig::first_task_id`). The counters
    /// are shared by the engines of the process, so with several engines
    /// these only grow faster.
    NextIds next_ids() const;

private:
    // next_wakeup() without an optional across the call: GCC returns one
    // through the stack with a byte store that the load after it cannot
    // forward, a stall on every step of the driver.
    bool next_wakeup_into(Time& at) const;

    struct State;
    std::unique_ptr<State> s_;
};

}  // namespace cronoq::core
