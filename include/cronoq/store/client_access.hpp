#pragma once
// ClientAccess: what a client of a store (a process that submits, cancels,
// looks up and awaits tasks without leading, docs/guide/replicas.md) writes
// and reads. The leader's half, taking up what clients wrote, is in
// <cronoq/store/journal.hpp> (`InboxEntry`, `InboxTaken`, `ShardConfig`).
// For `cronoq::Client`'s use; users see a store only through `cronoq::Store`.
#include <cronoq/ids.hpp>
#include <cronoq/store/journal.hpp>
#include <cronoq/task_ref.hpp>
#include <cronoq/task_status.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cronoq::store {

/// Client ids are handed out by the store from their own range, at and above
/// this id, so that they never meet the ids a leader reserves ahead in blocks
/// from below it (docs/store.md, "Clients").
inline constexpr std::uint64_t first_client_task_id = std::uint64_t{1} << 48;

/// What became of one submitted row.
struct ClientSubmitted {
    /// The new task's id, or the id of the task its key resolved to.
    TaskId id{};
    /// False when the row's key resolved to a task the store already held
    /// (live or ended within the retention its shard's leader wrote), or
    /// to an earlier row of the same call: nothing was inserted for it.
    bool created = true;
};

/// Waits for commits of other processes that may concern a client: on
/// SQLite a poll of `PRAGMA data_version`, on PostgreSQL a notification
/// (`LISTEN`), each on a connection of its own. One per client.
class ChangeWatch {
public:
    virtual ~ChangeWatch() = default;
    /// Returns true once something was committed since the previous call
    /// returned (or since the watch was made), false after `timeout`.
    /// Throws StoreError when the store cannot be read.
    virtual bool wait(std::chrono::milliseconds timeout) = 0;
    /// Makes a `wait` in progress return false at once (from any thread);
    /// with none in progress, the next `wait` does, so that an interrupt is
    /// never lost.
    virtual void interrupt() = 0;
};

/// Every member reads or writes in one short transaction of its own on the
/// calling thread, never waits to lead, and throws StoreError when the store
/// cannot be read or written. Thread-safe.
class ClientAccess {
public:
    virtual ~ClientAccess() = default;

    /// In one write transaction: resolves each row's key (a key that a row
    /// of the store holds, live or retained, or that an earlier row of
    /// `rows` holds, gives that task), gives every other row a new id from
    /// the store-wide client range (the row's `id` is ignored), inserts
    /// them with the status they carry (`Blocked`, `Scheduled` or `Ready`,
    /// as admission would make it) and queues them, in order, for the
    /// leader of their pool's shard (`InboxEntry`). One result per row, in
    /// order. Two clients racing with one key get one task. Throws
    /// std::invalid_argument, inserting nothing, for a row of another status.
    std::vector<ClientSubmitted> submit(std::vector<TaskRow> rows) {
        return submit_rows(std::move(rows), std::nullopt);
    }

    /// `submit` of one row that retries the ended task `old` (a client's
    /// `retry`; docs/store.md, "Clients"): in the same transaction `old`
    /// gives up its key first, so that the row takes it over, as
    /// `Scheduler::retry` moves it, unless a task other than `old` holds it
    /// (then nothing is inserted and that task's id comes back: a retry
    /// of `old` committed first). The caller
    /// checked that `old` ended `Failed`, `DeadLettered` or `Cancelled`.
    ClientSubmitted retry(TaskId old, TaskRow row) {
        std::vector<TaskRow> one;
        one.push_back(std::move(row));
        return submit_rows(std::move(one), old).at(0);
    }

    /// Commits a cancel request for the task's leader. True when the task
    /// exists and had not ended as committed; false (and nothing queued)
    /// otherwise.
    virtual bool cancel(const TaskRef& task) = 0;

    /// Commits a pause (`paused`) or a resume of `pool` for the leader,
    /// which applies it as a local `Scheduler::pause` or `resume` does,
    /// once, in commit order with the other entries (docs/store.md, "Paused
    /// pools"). The name is not checked here: a client checks it against
    /// the configurations first. Throws std::invalid_argument for an empty
    /// name.
    virtual void set_paused(const std::string& pool, bool paused) = 0;

    /// Of `ids`, those whose committed status is terminal, with it: one read
    /// for every handle a client awaits.
    virtual std::vector<std::pair<TaskId, TaskStatus>> ended(const std::vector<TaskId>& ids) const = 0;

    /// The configurations the shards' leaders wrote (none before any led).
    virtual std::vector<ShardConfig> configs() const = 0;

    /// A new watch, on a connection of its own.
    virtual std::unique_ptr<ChangeWatch> watch() = 0;

protected:
    /// `submit`, and `retry` when `old` is set: one write transaction for
    /// both, so a backend resolves keys and hands ids out in one place.
    virtual std::vector<ClientSubmitted> submit_rows(std::vector<TaskRow> rows, std::optional<TaskId> old) = 0;

    ClientAccess() = default;
    ClientAccess(const ClientAccess&) = delete;
    ClientAccess& operator=(const ClientAccess&) = delete;
};

}  // namespace cronoq::store
