#pragma once
// Store: where a scheduler keeps its durable state (docs/guide/durability.md), the errors a
// store reports; what it knows of one task is <cronoq/stored_task.hpp>.
#include <cronoq/codec.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/stored_task.hpp>
#include <cronoq/task_query.hpp>
#include <cronoq/task_ref.hpp>
#include <cronoq/task_status.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cronoq {

namespace store {
class ClientAccess;
class Journal;
}

/// How far a committed transaction survives.
enum class Durability {
    Full,    ///< the WAL is synced at every commit: survives power loss
    Normal,  ///< survives a process crash; a power loss may drop the last commits
};

enum class StoreErrorKind {
    Io,            ///< the file could not be created, read or written (permissions, disk full, I/O error)
    Corrupt,       ///< not a cronoq store, or a damaged one
    SchemaTooNew,  ///< written by a newer cronoq: this one does not know its schema
    Fenced,        ///< another process took leadership over: this one must not write again
    Busy,          ///< another process held the store's lock for longer than this one waits
};

/// "io", "corrupt", "schema_too_new", "fenced", "busy".
std::string_view to_string(StoreErrorKind kind);

/// What a store throws, or reports to the scheduler, on failure. `what()`
/// says what failed and where (the file, the operation, the database's
/// own message).
class StoreError : public std::runtime_error {
public:
    StoreError(StoreErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
    StoreErrorKind kind() const { return kind_; }

private:
    StoreErrorKind kind_;
};

/// A durable store, shared by `std::shared_ptr` between the scheduler that
/// leads on it and whoever inspects it. The inspection members may be
/// called from any thread at any time, also while a scheduler writes: they
/// read in short transactions of their own and never wait for a commit.
///
/// Failure modes: every member throws `StoreError` when the store cannot
/// be read or written (`Io`), is damaged (`Corrupt`) or stays locked by
/// another process for longer than the store waits (`Busy`).
class Store {
public:
    virtual ~Store() = default;

    /// The task named by id, or by key (the newest task that holds it);
    /// empty if the store holds no such row.
    virtual std::optional<StoredTask> get_task(TaskRef task) const = 0;

    /// Up to `limit` tasks with status `status`, oldest id first.
    virtual std::vector<StoredTask> list(TaskStatus status, std::size_t limit) const = 0;

    /// One page of the tasks `query` selects, newest first (docs/store.md,
    /// "Queries"), read in one short transaction. Throws
    /// `std::invalid_argument` for a cursor that no page returned.
    virtual TaskPage query(const TaskQuery& query) const = 0;

    /// Removes terminal tasks last updated more than `older_than` ago (wall
    /// clock) and returns how many. Non-terminal rows are never removed.
    virtual std::size_t prune(std::chrono::nanoseconds older_than) = 0;

    /// For the scheduler's use (`<cronoq/store/journal.hpp>`): the commit
    /// pipeline, leadership and recovery. Lives as long as the store.
    virtual store::Journal& journal() = 0;

    /// For `cronoq::Client`'s use (`<cronoq/store/client_access.hpp>`):
    /// submissions, cancels and results of processes that do not lead.
    virtual store::ClientAccess& client_access() = 0;

protected:
    Store() = default;
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;
};

}  // namespace cronoq
