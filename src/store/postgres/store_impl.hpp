#pragma once
// PostgresStore's state: the inspection connection, and the commit pipeline
// and leadership (store::Journal) run by the store's own thread; the SQL of
// the schema, its rows and its lease.
#include "pg.hpp"

#include <cronoq/store/journal.hpp>
#include <cronoq/store/postgres_store.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace cronoq::store::postgres {

inline constexpr std::int64_t schema_version = 1;

/// The store's tables, qualified with its quoted schema, and its lock key.
struct Names {
    Names(const Connection& connection, const std::string& schema);
    std::string schema;  ///< unquoted
    std::string quoted;
    std::string tasks, recurring, meta, leader;
    /// The advisory lock the leader's session holds (derived from the schema).
    std::int64_t lock_key = 0;
};

std::int64_t to_stored(WallTime time);
WallTime from_stored(std::int64_t nanoseconds);
WallTime age_cutoff(WallTime now, std::chrono::nanoseconds age);

/// Creates the schema or migrates it forward (one process at a time), or
/// throws Corrupt / SchemaTooNew.
void migrate(Connection& connection, const Names& names);
/// Throws unless the schema holds a current cronoq store; its version.
std::int64_t verify(Connection& connection, const Names& names);

/// A commit's changes as statements for a pipeline, with the effect of
/// applying them in order: the inserts and transitions between two changes
/// of another kind fold into one row per task, written by at most one
/// INSERT and one UPDATE over arrays; other changes are one statement each
/// (change_statements.cpp). The changes must live until `finish`, which
/// writes the last run.
class ChangeStatements {
public:
    ChangeStatements(const Names& names, std::vector<Query>& out);
    void add(const Change& change);
    void finish();

private:
    /// One task's row in the run: inserted in it, or only transitioned.
    struct Pending {
        const TaskRow* inserted = nullptr;
        const TaskTransition* last = nullptr;  ///< its latest transition
        const std::string* output = nullptr;   ///< its latest output
    };
    Pending& pending_for(std::uint64_t id, std::size_t bytes);
    void close_run();

    const Names& names_;
    std::vector<Query>& out_;
    std::vector<Pending> rows_;
    std::unordered_map<std::uint64_t, std::size_t> by_task_;
    std::size_t bytes_ = 0;
    bool joins_by_index_ = false;  ///< the transaction's UPDATEs look tasks up by id
};

std::optional<TaskRow> find_task(Connection& connection, const Names& names, const TaskRef& task);
std::vector<TaskRow> list_tasks(Connection& connection, const Names& names, TaskStatus status, std::size_t limit);
std::string prune_sql(const Names& names);
std::size_t prune_tasks(Connection& connection, const Names& names, WallTime cutoff, std::size_t limit);
Recovered load(Connection& connection, const Names& names, WallTime terminal_since);
StoredTask to_stored_task(TaskRow row);

/// `now() + lease` as SQL over parameter `$n` (microseconds, bounded).
std::string lease_expiry(int n);
Param lease_param(std::chrono::nanoseconds lease);

struct LeaderRow {
    std::uint64_t epoch = 0;
    std::optional<std::string> holder;
    std::optional<std::int64_t> backend_pid;
    WallTime expires_at;  ///< the epoch for none
};

struct StoreStats {
    std::int64_t schema_version = 0;
    std::map<std::string, std::int64_t> tasks_by_status;
    std::int64_t tasks = 0;
    std::int64_t recurring = 0;
    HighWaterMarks marks;
    LeaderRow leader;
};
StoreStats read_stats(Connection& connection, const Names& names);

}  // namespace cronoq::store::postgres

namespace cronoq {

struct PostgresStore::Impl final : store::Journal {
    Impl(std::string conninfo, PostgresStoreConfig config);
    ~Impl() override;

    void lead(store::LeadHandlers handlers) override;
    store::Sequence enqueue(store::Batch batch) override;
    void release() override;
    store::Figures figures() const override;
    std::optional<store::TaskRow> read_task(const TaskRef& task) const override;
    /// A row is read back hex-escaped in one server message (at most 1 GiB):
    /// a payload and an output of 128 MiB each stay well inside it.
    std::size_t max_value_bytes() const override { return std::size_t{128} << 20; }

    const std::string conninfo;
    const PostgresStoreConfig config;
    const std::string holder;
    std::unique_ptr<store::postgres::Names> names;

    /// Inspection reads and prunes, on a connection of their own; replaced
    /// when the server dropped it.
    mutable std::mutex inspection_mutex;
    mutable std::unique_ptr<store::postgres::Connection> inspection;
    store::postgres::Connection& inspection_connection() const;
    /// Used by the store's thread only, once it runs.
    std::unique_ptr<store::postgres::Connection> writer;

private:
    struct Queued {
        store::Sequence sequence;
        store::Batch batch;
    };

    void run();
    std::optional<std::uint64_t> wait_to_lead();
    std::optional<std::uint64_t> try_lead();
    void lead_loop(std::uint64_t epoch);
    std::vector<Queued> take_group();
    void put_back(std::vector<Queued> group);
    void lose(store::LostReason reason, std::string message);
    void record_commit(std::chrono::nanoseconds latency, std::size_t changes);
    void pause(std::chrono::nanoseconds duration);
    std::chrono::nanoseconds poll_interval() const;

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Queued> queue_;
    store::Sequence next_sequence_ = 1;
    store::Sequence committed_ = 0;
    bool lead_called_ = false;
    bool release_requested_ = false;
    bool finished_ = false;
    store::LeadHandlers handlers_;
    std::thread thread_;

    std::uint64_t commits_ = 0;
    std::uint64_t failed_commits_ = 0;
    std::uint64_t changes_committed_ = 0;
    std::uint64_t pending_changes_ = 0;
    bool leading_ = false;
    std::uint64_t epoch_ = 0;
    std::vector<std::int64_t> latencies_;
    std::size_t latency_next_ = 0;
};

}  // namespace cronoq
