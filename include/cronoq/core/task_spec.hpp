#pragma once
// What the engine knows of pools and tasks: metadata only, never payloads.
#include <cronoq/autoscale.hpp>
#include <cronoq/bounds.hpp>
#include <cronoq/core/time.hpp>
#include <cronoq/dep.hpp>
#include <cronoq/fairness.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/priority.hpp>
#include <cronoq/resource.hpp>
#include <cronoq/retry_policy.hpp>
#include <cronoq/start_policy.hpp>
#include <cronoq/task_status.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cronoq::core {

/// Dense index of a pool in its engine, in the order pools were added.
using PoolId = std::uint32_t;
/// Dense index of an interned kind name (`Engine::intern_kind`); 0 is "".
using KindId = std::uint32_t;

/// Labels of a remote worker or of a task that needs one (docs/remote.md): name
/// and value pairs, sorted by name, each name once.
using Labels = std::vector<std::pair<std::string, std::string>>;

struct PoolConfig {
    std::string name;
    std::size_t capacity = 1;  ///< concurrent attempts at start
    RetryPolicy retry{};       ///< default for tasks without a policy
    std::optional<Duration> default_timeout;
    std::optional<Duration> lease_ttl;      ///< heartbeat interval an attempt must keep
    Duration default_duration = std::chrono::seconds(1);  ///< expected run time before any is learned
    std::size_t max_workers = 0;        ///< ceiling of the capacity; 0: `capacity`
    /// Share of `max_workers` that fixed-start reservations may hold at any
    /// instant (at least one slot).
    double reservable_fraction = 0.5;
    /// How long before a fixed start the engine keeps a slot free for it.
    Duration max_hold = std::chrono::seconds(30);
    UnknownDependency unknown_dependency{};
    Bounds bounds{};  ///< cap on tasks not yet running
    OverflowPolicy overflow = OverflowPolicy::Wait;
    std::size_t min_workers = 0;  ///< floor of the capacity under autoscaling
    /// Autoscaling within [min_workers, max_workers] (docs/guide/resources-and-bounds.md); off if empty.
    std::optional<AutoscaleConfig> autoscale;
    /// A user policy replaces the default formula (with `autoscale` set).
    /// The engine never calls it: at each evaluation it emits `AskScaler`
    /// and its owner answers with `Engine::answer_scaler`.
    bool user_scaler = false;
    /// Attempts run on remote workers (docs/remote.md, `Engine::connect_worker`):
    /// the capacity is the sum of the slots granted to the pool's connected
    /// workers, capped by `max_workers` when it is not 0 (no cap else);
    /// `capacity` and `min_workers` are not used, `autoscale` is a
    /// ConfigError, and a `lease_ttl` of 30 s applies when none is given.
    bool remote = false;
    /// Shares between the pool's fair keys and their caps
    /// (docs/design.md#fair-sharing).
    FairnessConfig fairness{};
};

/// Units of a shared resource a task needs for each attempt.
struct ResourceUse {
    std::string name;
    std::uint32_t amount = 1;
};

struct EngineConfig {
    PriorityConfig priority{};
    UrgencyConfig urgency{};
    Duration retention = std::chrono::minutes(5);  ///< how long terminal tasks stay visible
    std::size_t retention_max = 100000;            ///< and at most how many
    std::uint64_t seed = 0;                        ///< of the backoff jitter generator
    /// Cap on tasks not yet running, over all pools; a submission beyond it
    /// follows the overflow policy of its own pool.
    Bounds global_bounds{};
    /// The sliding window of `Engine::stats` (docs/guide/operations.md).
    Duration metrics_window = std::chrono::seconds(60);
    /// Semaphores and token buckets shared by every pool (docs/guide/resources-and-bounds.md).
    std::vector<Resource> resources;
    /// How many kinds without a live task the engine remembers, with their
    /// learned run times; beyond it the least recently used is forgotten
    /// (see `Engine::intern_kind`). Kinds with live tasks are always kept.
    std::size_t kind_capacity = 4096;
    /// Ids are handed out from these on (docs/guide/durability.md): a leader restarted over
    /// a store starts above the marks its predecessor committed, so that no
    /// task id is reissued and no late report matches a new lease. Ids come
    /// from counters shared by every engine of the process (ids are unique
    /// in the process), so an engine hands out ids at or above these, not
    /// necessarily these exactly. 0 means 1 (0 is never an id).
    std::uint64_t first_task_id = 1;
    std::uint64_t first_lease_id = 1;
    /// Ids at and above this one are handed out by another party (a
    /// store's clients, docs/store.md "Clients"), never by the counters:
    /// restoring or admitting a task with such an id does not move them.
    std::uint64_t given_ids_from = UINT64_MAX;
};

struct TaskSpec {
    PoolId pool = 0;
    Priority priority = Priority::Normal;
    KindId kind = 0;
    std::optional<Time> deadline;        ///< soft: raises urgency near the latest start
    std::optional<Duration> duration_hint;
    std::optional<Duration> timeout;     ///< per attempt; else the pool's default
    std::optional<RetryPolicy> retry;    ///< else the pool's policy
    /// Idempotency key: while a live or retained task holds it, submitting
    /// it again admits nothing and returns that task's id.
    std::optional<std::string> key;
    /// Fixed start: `Scheduled` until then, dispatched at it, ahead of
    /// ordinary ready work; a start missed by more than `start_tolerance`
    /// follows `on_miss`. Reserves a slot of the pool for the expected
    /// duration.
    std::optional<Time> start;
    Duration start_tolerance = std::chrono::seconds(1);
    MissPolicy on_miss = MissPolicy::RunLate;
    /// `Blocked` until every edge is met; `Skipped` once one cannot be.
    std::vector<Dep> depends_on;
    /// Taken all together at dispatch (or not at all); a semaphore's units
    /// are held until the attempt ends. A task short of one waits parked on
    /// it without holding back other tasks.
    std::vector<ResourceUse> resources;
    /// Remote pools only (Invalid elsewhere): the task runs only on a
    /// worker registered with every one of these labels; sorted by name,
    /// each name once (Invalid else). Until such a worker has a free slot
    /// it waits, parked, without holding back tasks other workers can run.
    Labels labels;
    /// The owner's value for this task (the driver's record), opaque to the
    /// engine and handed back in every action about the task, so that its
    /// owner needs no map from task id to what it keeps.
    std::uint64_t user = 0;
    /// An id another party handed out (a store's client, docs/store.md
    /// "Clients"): the task is admitted with it instead of the counter's
    /// next; `Invalid` when a live or retained task has it. 0: the next.
    TaskId given_id{};
    /// The tenant it counts against (docs/design.md#fair-sharing): between
    /// the ready tasks of a pool and class, dispatches go to fair keys in
    /// proportion to their weights. Empty: the key "", shared by every task
    /// without one.
    std::string fair_key;
};

/// A task as a durable store last committed it, for `Engine::restore`
/// (docs/guide/durability.md "Recovery").
struct RestoredTask {
    TaskId id;
    /// As first submitted. `spec.pool` must name a pool of the restoring
    /// engine (the caller maps pool names to ids; an id out of range is an
    /// error result) and `spec.kind` a kind interned there.
    TaskSpec spec;
    TaskStatus status;           ///< as last committed
    std::uint32_t attempts = 0;  ///< attempts started so far
    /// `Retrying`: when its backoff ends; `Scheduled`: its start (else
    /// `spec.start` is). Empty otherwise.
    std::optional<Time> until;
    /// Carried for the caller: the engine keeps no last error (a Status
    /// it emits carries its own message).
    std::string last_error;
};

/// How an attempt ended, as reported by its executor.
struct Outcome {
    enum class Kind : std::uint8_t { Success, Retryable, Permanent, Cancelled };
    Kind kind = Kind::Success;
    std::string message;
    std::optional<Duration> retry_after;  ///< floor on the next backoff delay

    static Outcome success() { return {}; }
    static Outcome retryable(std::string m, std::optional<Duration> after = std::nullopt) {
        return {Kind::Retryable, std::move(m), after};
    }
    static Outcome permanent(std::string m) { return {Kind::Permanent, std::move(m), std::nullopt}; }
    static Outcome cancelled(std::string m = "cancelled") { return {Kind::Cancelled, std::move(m), std::nullopt}; }
};

}  // namespace cronoq::core
