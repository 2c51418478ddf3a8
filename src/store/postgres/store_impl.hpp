#pragma once
// PostgresStore's state: the inspection connection and its queries, and the
// database half of the store's thread (store::CommitBackend) under the
// backend-neutral store::PipelineStore; the SQL of the schema, its rows and
// its lease.
#include "../pipeline_store.hpp"
#include "../store_stats.hpp"
#include "../stored_values.hpp"
#include "../task_query_plan.hpp"
#include "client_access.hpp"
#include "pg.hpp"

#include <cronoq/store/journal.hpp>
#include <cronoq/store/postgres_store.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cronoq::store::postgres {

inline constexpr std::int64_t schema_version = 4;

/// The store's tables, qualified with its quoted schema, and its lock key.
struct Names {
    Names(const Connection& connection, const std::string& schema);
    std::string schema;  ///< unquoted
    std::string quoted;
    std::string tasks, recurring, meta, leader, inbox, shard_config, shard_pools;
    /// The advisory lock the leader's session holds (derived from the schema).
    std::int64_t lock_key = 0;
    /// The advisory lock of the leader of `shard` (docs/postgres.md, "Shards").
    std::int64_t lock_key_for(const std::string& shard) const;
};

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
    /// `shard`: the shard whose leader writes (its marks, its schedules).
    ChangeStatements(const Names& names, std::vector<Query>& out, std::string shard = "default");
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
    const std::string shard_;
    std::vector<Pending> rows_;
    std::unordered_map<std::uint64_t, std::size_t> by_task_;
    std::size_t bytes_ = 0;
    bool joins_by_index_ = false;  ///< the transaction's UPDATEs look tasks up by id
};

/// The columns every task read selects, in `read_row`'s order.
inline constexpr const char* task_columns =
    "id, key, pool, kind, status, attempt, last_error, submitted_at, updated_at, run_at, options, payload, output, "
    "fair_key";
/// Row `i` of `r`, columns 0 to 13 (`task_columns`). Throws Corrupt for a
/// status this build does not know.
TaskRow read_row(const Result& r, int i, const Names& names);

/// Clients' inbox entries, oldest first (inbox.cpp; docs/postgres.md,
/// "Clients"), each submission with its task's row as stored now.
/// Only `shard`'s: entries for tasks of its pools (docs/store.md, "Shards").
std::vector<InboxEntry> read_inbox(Connection& connection, const Names& names, const std::string& shard,
                                   std::size_t limit);
std::vector<ShardConfig> read_configs(Connection& connection, const Names& names);

std::optional<TaskRow> find_task(Connection& connection, const Names& names, const TaskRef& task);
std::vector<TaskRow> list_tasks(Connection& connection, const Names& names, TaskStatus status, std::size_t limit);
/// The plan's walks in one read-only transaction of its own.
std::vector<TaskRow> query_tasks(Connection& connection, const Names& names, const TaskQueryPlan& plan);
std::string prune_sql(const Names& names);
std::size_t prune_tasks(Connection& connection, const Names& names, WallTime cutoff, std::size_t limit);
/// The pools the store holds paused, by name.
std::vector<std::string> paused_pools(Connection& c, const Names& n);
/// In a transaction of its own: applies `change` when no session leads the
/// store (the leader's advisory lock is free, and held by this transaction
/// until it commits, so a takeover waits and then recovers the change).
/// False, writing nothing, while a leader runs: it would not see the change
/// (docs/store.md, "Paused pools").
bool apply_unless_led(Connection& c, const Names& n, const Change& change);
Recovered load(Connection& connection, const Names& names, const std::string& shard, WallTime terminal_since);

// Shards (shards.cpp; docs/store.md, "Shards").
/// Inside the caller's transaction: the leader row of a shard that never
/// led, with the next free range of ids.
void ensure_leader_row(Connection& connection, const Names& names, const std::string& shard);
/// Every shard's lease (held: unexpired and its session alive) and the
/// pools' shards.
ShardMap read_shard_map(Connection& connection, const Names& names);
/// Inside the caller's transaction, right after a takeover of `shard`: claims
/// `pools` for it (and gives up its claims of pools it no longer declares),
/// unless one belongs to another shard that leads now or holds unfinished
/// tasks of it: then claims nothing and returns why, naming both shards.
std::string claim_pools(Connection& connection, const Names& names, const std::string& shard,
                        const std::vector<std::string>& pools);

/// `now() + lease` as SQL over parameter `$n` (microseconds, bounded).
std::string lease_expiry(int n);
Param lease_param(std::chrono::nanoseconds lease);

StoreStats read_stats(Connection& connection, const Names& names);

}  // namespace cronoq::store::postgres

namespace cronoq {

struct PostgresStore::Impl final : store::PipelineStore {
    Impl(std::string conninfo, PostgresStoreConfig config);
    /// Releases and joins the store's thread while the connections live.
    ~Impl() override;

    /// A row is read back hex-escaped in one server message (at most 1 GiB):
    /// a payload and an output of 128 MiB each stay well inside it.
    std::size_t max_value_bytes() const override { return std::size_t{128} << 20; }

    // store::CommitBackend, on the store's thread (journal.cpp).
    std::string name() const override { return "the PostgreSQL schema " + names->schema; }
    std::optional<std::uint64_t> try_take_over(std::chrono::nanoseconds& next_look) override;
    store::Recovered recover(std::uint64_t epoch, store::WallTime terminal_since) override;
    std::size_t commit(const store::Transaction& transaction) override;
    /// Gives the writer's session up: the advisory lock goes with it.
    void stopped() override {
        writer.reset();
        listener.reset();
    }
    std::chrono::nanoseconds inbox_poll() const override { return std::chrono::milliseconds(1); }
    bool inbox_signalled() override;

    const std::string conninfo;
    const PostgresStoreConfig config;
    const std::string holder;
    std::unique_ptr<store::postgres::Names> names;

    /// Inspection reads and prunes, on a connection of their own; replaced
    /// when the server dropped it.
    mutable std::unique_ptr<store::postgres::Connection> inspection;
    /// Used by the store's thread only, once it runs.
    std::unique_ptr<store::postgres::Connection> writer;
    std::unique_ptr<store::postgres::PostgresClientAccess> clients;
    /// While leading, on the store's thread: `LISTEN cronoq_inbox`, made
    /// before the recovery read so that no client commit after it goes
    /// unnoticed; made again when the server dropped it.
    std::unique_ptr<store::postgres::Connection> listener;

private:
    store::postgres::Connection& inspection_connection() const;
    // store::PipelineStore's inspection queries (postgres_store.cpp).
    std::optional<store::TaskRow> find_row(const TaskRef& task) const override;
    store::LeaseView lease_row(const std::string& shard) const override;
    store::ShardMap shard_rows() const override;
    std::vector<store::InboxEntry> inbox_rows(const std::string& shard, std::size_t limit) const override;
    std::vector<store::TaskRow> list_rows(TaskStatus status, std::size_t limit) const override;
    std::vector<store::TaskRow> query_rows(const store::TaskQueryPlan& plan) const override;
    std::size_t prune_rows(store::WallTime cutoff, std::size_t limit) override;

    /// The lease statements of every commit, made at the first.
    std::string check_sql_, renew_sql_, give_up_sql_;
    /// The shard this store leads (`lead`) and its advisory lock.
    std::string shard_name_;
    std::int64_t shard_lock_ = 0;
    /// The next look at the inbox without a notification (a slow safety
    /// net, should one be lost).
    std::chrono::steady_clock::time_point next_inbox_poll_;
};

}  // namespace cronoq
