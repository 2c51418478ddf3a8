#pragma once
// Helpers for the store tests: scratch folders, rows, waiting for the
// store's thread, raw SQLite access and child processes.
#include <cronoq/store/journal.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include "child_process.hpp"
#include "scratch_dir.hpp"

#include <sqlite3.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cronoq::test {

/// A Ready task row with id `id`, payload "payload-<id>".
store::TaskRow task_row(std::uint64_t id, std::optional<std::string> key = std::nullopt);
store::Batch insert_batch(std::uint64_t id);

/// What the store's thread reported, for a test to wait on. Only a guard
/// against a hang bounds each wait; no test asserts how long one takes.
class Reports {
public:
    store::LeadHandlers handlers(std::chrono::nanoseconds retention = std::chrono::hours(1));

    /// Waits until `ready(*this)` holds (under the lock); false after the
    /// hang guard.
    bool wait(const std::function<bool(const Reports&)>& ready);
    /// The same, giving up after `timeout`.
    bool wait(const std::function<bool(const Reports&)>& ready, std::chrono::nanoseconds timeout);
    bool wait_leading();
    bool wait_committed(store::Sequence sequence);
    bool wait_lost();

    // Under the lock of `wait`, or after it returned.
    std::optional<store::Recovered> recovered;
    std::vector<store::CommitReport> commits;
    std::optional<store::LeadershipLost> lost;
    store::Sequence committed = 0;

    /// Called on the store's thread after each commit report is recorded,
    /// outside the lock (a test may block there to hold the commit thread).
    std::function<void(const store::CommitReport&)> after_commit;

private:
    std::mutex mutex_;
    std::condition_variable changed_;
};

/// Leads `store`, commits `batches` one after another and lets the store
/// go (it releases the lead): a store with rows for a test to reopen,
/// tamper with or migrate. False when a commit was not reported.
[[nodiscard]] bool commit_and_close(std::shared_ptr<Store> store, std::initializer_list<store::Batch> batches);

/// A store migrated to the clients' schema (version 3 and later) that held
/// task 1 before still holds it, and a client's submission gets the first
/// id of the client range and an inbox entry.
void expect_clients_after_migration(Store& store);

/// Leads `store`, migrated from schema version 3, where the "default"
/// shard's lease was in epoch 6 with marks {4096, 77}, one task and one
/// schedule: it takes over in epoch 7 and recovers all of that. `reports`
/// must outlive the store (its destruction reports to them).
void expect_takes_over_the_v3_lease(Store& store, Reports& reports);

/// SQL that takes a SQLite store of schema version 4 back to version 3 as
/// that version wrote it: one leader row (id 1, the "default" shard's), no
/// pools' shards, schedules without a shard. For migration tests.
inline constexpr const char* sqlite_v4_to_v3 =
    "CREATE TABLE leader_v3 (id INTEGER PRIMARY KEY CHECK (id = 1), epoch INTEGER NOT NULL, holder TEXT, "
    "expires_at INTEGER NOT NULL); "
    "INSERT INTO leader_v3 SELECT 1, epoch, holder, expires_at FROM leader WHERE shard = 'default'; "
    "DROP TABLE leader; ALTER TABLE leader_v3 RENAME TO leader; DROP TABLE shard_pools; "
    "ALTER TABLE recurring DROP COLUMN shard; PRAGMA user_version = 3; ";

/// A raw SQLite connection for checks and tampering.
class RawDb {
public:
    explicit RawDb(const std::filesystem::path& file);
    ~RawDb();
    void exec(const std::string& sql);
    std::int64_t query_int(const std::string& sql);
    sqlite3* get() { return db_; }

private:
    sqlite3* db_ = nullptr;
};

/// Dispatches `--child <mode> ...`; returns the child's exit status.
int child_main(int argc, char** argv);

}  // namespace cronoq::test
