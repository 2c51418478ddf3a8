#pragma once
// The backend-neutral interface between a scheduler and its store: what is
// written (rows and changes), the asynchronous commit pipeline, leadership
// and the state recovered at takeover. For the scheduler's use; users see a
// store only through `cronoq::Store` (<cronoq/store/store.hpp>).
#include <cronoq/ids.hpp>
#include <cronoq/store/store.hpp>
#include <cronoq/store_snapshot.hpp>
#include <cronoq/task_ref.hpp>
#include <cronoq/task_status.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace cronoq::store {

/// Stored times are wall-clock: engine time is per process and is re-based
/// at recovery.
using WallTime = std::chrono::system_clock::time_point;

/// Everything a store keeps of one task. `options` is text the scheduler
/// encodes (priority, deadline, timeout, retry policy, dependencies,
/// resources, start policy); a store only reads its priority from it, for
/// `StoredTask::priority`.
struct TaskRow {
    TaskId id;
    std::optional<std::string> key;
    std::string pool, kind;
    TaskStatus status = TaskStatus::Ready;
    std::uint32_t attempt = 0;
    std::string last_error;
    WallTime submitted_at, updated_at;
    /// A `Scheduled` task's start, a `Retrying` task's retry time.
    std::optional<WallTime> run_at;
    std::string options;
    std::string payload;
    std::optional<std::string> output;
    /// The task's fair key (docs/guide/fairness.md); none for the key "".
    std::optional<std::string> fair_key;
};

// ---- changes: one per engine state change, applied in order -----------------

/// Admission: the full row.
struct TaskInserted {
    TaskRow row;
};

/// A status transition. `output`, when set, is written too (a success);
/// when empty the stored output is kept. A transition of a row the store no
/// longer holds (pruned) changes nothing.
struct TaskTransition {
    TaskId id;
    TaskStatus status = TaskStatus::Ready;
    std::uint32_t attempt = 0;
    std::string last_error;
    WallTime updated_at;
    std::optional<WallTime> run_at;
    std::optional<std::string> output;
};

/// The task's key moved to another task (`Scheduler::retry`): the old row
/// keeps its status and loses its key.
struct TaskKeyReleased {
    TaskId id;
};

/// A recurring schedule added or replaced under `name`; `definition` is
/// opaque text the scheduler encodes. Replacing keeps its last firing.
struct RecurringPut {
    std::string name;
    std::string definition;
};

struct RecurringRemoved {
    std::string name;
};

/// The schedule fired the occurrence of `fired_at` (wall time).
struct RecurringFired {
    std::string name;
    WallTime fired_at;
};

/// A pool paused or resumed (`Scheduler::pause`, docs/store.md "Paused
/// pools"). Pausing a pool the store has paused already keeps the earlier
/// time.
struct PoolPaused {
    std::string pool;
    bool paused = true;
    WallTime at;
};

/// `Scheduler::set_fair_weight`: the weight of `key` in `pool`, which
/// overrides the configured one after recovery (docs/store.md, "Fair
/// weights"). The store keeps the last one written per pool and key.
struct FairWeightSet {
    std::string pool;
    std::string key;
    double weight = 1.0;
};

/// High-water marks: every id below them may have been handed out. The
/// store keeps the largest value ever written for each (a lower one
/// changes nothing), so a scheduler can reserve ranges ahead: commit a
/// mark above the ids it will use before it uses them.
struct HighWaterMarks {
    std::uint64_t next_task_id = 0;
    std::uint64_t next_lease_id = 0;
};

// ---- clients (docs/store.md, "Clients") --------------------------------------

/// What a shard's leader writes when it starts leading, so that clients can
/// check a task before they commit it: `body` is JSON text the scheduler
/// encodes (pools, kinds, resources, labels, retention).
struct ShardConfig {
    std::string shard;
    std::string body;
    WallTime written_at;
    /// The leader's retention (`Builder::retention`): a key that a
    /// task ended at most this long ago holds resolves to that task when a
    /// client submits (docs/store.md, "Clients"). Kept apart from `body` so
    /// that the store need not parse it.
    std::chrono::nanoseconds retention{0};
};

/// Replaces the configuration of `config.shard`.
struct ConfigWritten {
    ShardConfig config;
};

/// Something a client committed for a leader to take up.
struct InboxEntry {
    /// `Pause` and `Resume` name a pool (`pool`), not a task: the leader
    /// applies them as a local pause or resume (docs/store.md, "Paused pools").
    enum class Op : std::uint8_t { Submit, Cancel, Pause, Resume };
    /// Increasing in commit order among the entries one read returns.
    std::uint64_t seq = 0;
    Op op = Op::Submit;
    TaskId task{};
    /// `Submit`: the row as the client committed it.
    std::optional<TaskRow> row;
    /// `Pause`, `Resume`: the pool.
    std::string pool;
};

/// The leader took these entries up: they are removed in the transaction
/// that commits what the leader made of them, so that each is taken exactly
/// once across failovers.
struct InboxTaken {
    std::vector<std::uint64_t> seqs;
};

using Change = std::variant<TaskInserted, TaskTransition, TaskKeyReleased, RecurringPut, RecurringRemoved,
                            RecurringFired, HighWaterMarks, ConfigWritten, InboxTaken, PoolPaused, FairWeightSet>;

/// Changes committed together, in order, in one write transaction (with
/// whatever other batches were queued at the time).
struct Batch {
    std::vector<Change> changes;
};

/// Batches are numbered from 1 in `enqueue` order.
using Sequence = std::uint64_t;

// ---- what the commit thread reports ------------------------------------------

/// One commit attempt, reported on the store's commit thread, in order.
struct CommitReport {
    /// Every batch with a sequence up to this one is committed. On success
    /// it is the last batch of this transaction; after a failure it is
    /// unchanged from the previous report.
    Sequence committed = 0;
    /// Batches and changes this transaction carried (or tried to).
    std::size_t batches = 0;
    std::size_t changes = 0;
    /// Set when the attempt failed. The batches stay queued, in order, and
    /// are retried with backoff (a few ms, doubling, at most
    /// `leader_lease / 4`); nothing after them commits first.
    std::optional<StoreError> error;
    /// When the current run of failures began (empty on success). Once it
    /// is `leader_lease` old the store gives up leadership by itself
    /// (`LostReason::Failed`): the scheduler need not time it.
    std::optional<std::chrono::steady_clock::time_point> failing_since;
};

/// A recurring schedule as last committed.
struct RecurringRow {
    std::string name;
    std::string definition;
    std::optional<WallTime> last_fired;
};

/// A task row the store could not read (a status this build does not
/// know): the scheduler ends it `Failed`, `"decode: <why>"`, like a row
/// whose payload or options cannot be decoded (docs/store.md, "Recovery
/// load").
struct UnreadableRow {
    TaskId id;
    std::uint32_t attempt = 0;
    std::string why;
};

/// The state a new leader starts from, read after it took the lease, so no
/// other process writes in between.
struct Recovered {
    /// Every non-terminal row, and the terminal ones updated within the
    /// retention `lead` was given; by id.
    std::vector<TaskRow> tasks;
    /// Rows of the same selection that could not be read; one such row
    /// never stops a recovery.
    std::vector<UnreadableRow> unreadable;
    std::vector<RecurringRow> recurring;
    /// The pools paused when the last leader stopped, by name.
    std::vector<std::string> paused_pools;
    /// 0 where never written.
    HighWaterMarks marks;
    /// Every weight `set_fair_weight` wrote, by pool and key.
    std::vector<FairWeightSet> fair_weights;
    /// The fencing epoch this process leads in (1 for the first leader).
    std::uint64_t epoch = 0;
    /// What clients committed and no leader took up yet, in commit order.
    /// The rows of its submissions are in `tasks` too (they are not
    /// terminal): a new leader restores them with the rest and takes the
    /// entries up in its first commit.
    std::vector<InboxEntry> inbox;
    /// Set when a pool this shard declares belongs to another shard that
    /// leads now or holds unfinished tasks of it (docs/store.md, "Shards"):
    /// says which pool and both shards. Nothing else was read or claimed;
    /// the scheduler refuses to open (`ConfigError`) and releases.
    std::string pool_conflict;
};

enum class LostReason {
    Released,  ///< `release()` (a clean shutdown) gave the lease up
    Fenced,    ///< another process took leadership over
    Failed,    ///< commits or lease renewals kept failing for `leader_lease`
};

struct LeadershipLost {
    LostReason reason = LostReason::Released;
    /// Says why, with the store's error where there is one.
    std::string message;
    /// Set when the lead ended because the store could not be read to
    /// recover (the process never led): the kind of that error, which is
    /// what a waiting `open()` throws (`Corrupt` for a damaged store, not
    /// `Fenced`).
    std::optional<StoreErrorKind> recovery_error;
};

struct LeadHandlers {
    /// The shard this process leads (`Builder::shard`, docs/store.md,
    /// "Shards"): its lease, epoch and fencing are its own.
    std::string shard = "default";
    /// The pools the shard declares: the store claims them for it at the
    /// takeover, and recovery and the inbox hold the tasks of the shard's
    /// pools only (the "default" shard's: of every pool no other shard
    /// claims).
    std::vector<std::string> pools;
    /// Terminal rows updated at most this long ago come back in `Recovered`.
    std::chrono::nanoseconds retention{0};
    /// Once, when this process leads, with the state to recover from.
    std::function<void(Recovered)> on_leading;
    /// After every commit attempt, successful or not, in order.
    std::function<void(const CommitReport&)> on_commit;
    /// Once: leadership ended (or `release()` ended the wait for it). No
    /// report follows; nothing is written again.
    std::function<void(const LeadershipLost&)> on_lost;
    /// While leading: a client may have committed something for the leader
    /// (a notification on PostgreSQL, a change of the file on SQLite, or the
    /// slow safety poll). The leader then calls `read_inbox`.
    std::function<void()> on_inbox;
};

/// The lease as the store holds it at one instant (`Journal::read_lease`).
struct LeaseView {
    /// The fencing epoch of the last process that took the lead.
    std::uint64_t epoch = 0;
    /// That process still holds the lease: not released, not run out (nor,
    /// on PostgreSQL, its session ended).
    bool held = false;
};

/// The shards of a store (`Journal::read_shards`).
struct ShardMap {
    struct Lease {
        std::string shard;
        LeaseView lease;
        /// Names the process that holds (or last held) the lease.
        std::optional<std::string> holder;
    };
    std::vector<Lease> leases;
    /// (pool, shard): the shard whose leader claimed the pool, by pool.
    std::vector<std::pair<std::string, std::string>> pools;
};

/// Store figures for `Scheduler::snapshot()`.
using Figures = StoreSnapshot;

/// The commit pipeline and leadership of one store. Every handler runs on
/// the store's own thread (never a caller's), one at a time and in order;
/// a handler may call `enqueue`, `release` and `figures` but must not
/// block on the store, and must not throw (the thread would end the
/// process). Nor may a handler own what owns the store: the store would
/// then be destroyed on its own thread, which cannot join itself. All
/// members are thread-safe.
class Journal {
public:
    virtual ~Journal() = default;

    /// Starts trying to lead, once per store: returns at once; the store's
    /// thread waits until no other process holds the lease (it ran out, or
    /// its holder released it), takes it over in a new fencing epoch,
    /// reads `Recovered` and calls `on_leading`. From then on it renews the
    /// lease every `leader_lease / 3`, commits queued batches and reports
    /// each attempt to `on_commit`. Every write transaction checks the
    /// epoch first: when another process took over, the store reports
    /// `on_lost(Fenced)` and never writes again. The handlers must stay
    /// callable until `on_lost` has run: destroying the store releases
    /// leadership and reports it. Throws `std::logic_error` on a second
    /// call.
    virtual void lead(LeadHandlers handlers) = 0;

    /// Queues a batch for the next commit and returns its sequence, at once,
    /// from any thread. Whatever is queued while a transaction syncs goes
    /// into the next one (group commit). Batches queued before leading wait
    /// for it; after leadership was lost they are dropped unreported.
    virtual Sequence enqueue(Batch batch) = 0;

    /// A clean shutdown: returns at once; the store commits what is queued,
    /// gives up the lease in the same transaction (a standby takes over at
    /// once) and reports `on_lost(Released)`. Before leading it just stops
    /// waiting. Destroying the store does the same and waits for it.
    virtual void release() = 0;

    virtual Figures figures() const = 0;

    /// The committed row of a task, by id or key (the newest task holding
    /// it), options and payload included; empty if the store holds none.
    /// Reads in a short transaction of its own on the calling thread, like
    /// `Store::get_task`; throws StoreError when the store cannot be read.
    virtual std::optional<TaskRow> read_task(const TaskRef& task) const = 0;

    /// Who leads now the shard `lead` was given ("default" before it), as the
    /// store says: for a standby that sends workers to the leader
    /// (docs/remote.md, Redirects). Reads on the calling thread, like
    /// `read_task`; throws StoreError when the store cannot be read.
    virtual LeaseView read_lease() const = 0;
    /// Every shard's lease, by shard name, and the shard each pool belongs
    /// to (docs/store.md, "Shards"). Reads like `read_lease`.
    virtual ShardMap read_shards() const = 0;
    /// Up to `limit` entries that clients committed for this shard (for tasks
    /// of its pools) and no commit of a leader took up yet, in commit order.
    /// Reads on the calling thread, like
    /// `read_task`; entries already taken but not yet committed come again
    /// (the caller skips those it holds).
    virtual std::vector<InboxEntry> read_inbox(std::size_t limit) const = 0;

    /// The largest payload or output (encoded bytes) the store accepts in a
    /// row. The scheduler refuses larger ones (`SubmitError::Invalid`, a
    /// failed attempt) rather than let a commit fail on them.
    virtual std::size_t max_value_bytes() const = 0;

protected:
    Journal() = default;
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;
};

}  // namespace cronoq::store
