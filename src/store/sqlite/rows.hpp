#pragma once
// Rows in and out of the SQLite schema: the changes a commit applies, the
// inspection queries and the recovery load. Each function runs inside the
// caller's transaction.
#include "../store_stats.hpp"
#include "../stored_values.hpp"
#include "../task_query_plan.hpp"
#include "connection.hpp"

#include <cronoq/store/journal.hpp>
#include <cronoq/task_ref.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cronoq::store::sqlite {

/// The write statements, prepared once per connection.
class ChangeWriter {
public:
    /// `shard`: the shard whose leader writes (its marks, its schedules).
    ChangeWriter(Connection& connection, std::string shard);
    ~ChangeWriter();
    void apply(const Change& change);

private:
    struct Statements;
    std::unique_ptr<Statements> statements_;
    const std::string shard_, task_mark_, lease_mark_;
};

/// The columns every task read selects, in `read_row`'s order.
inline constexpr const char* task_columns =
    "id, key, pool, kind, status, attempt, last_error, submitted_at, updated_at, run_at, options, payload, output, "
    "fair_key";
/// A task row from columns 0 to 13 of `statement` (`task_columns`). Throws
/// Corrupt for a status this build does not know.
TaskRow read_row(const Statement& statement, const Connection& connection);

std::optional<TaskRow> find_task(Connection& connection, const TaskRef& task);
std::vector<TaskRow> list_tasks(Connection& connection, TaskStatus status, std::size_t limit);
/// The plan's walks in one read transaction of its own.
std::vector<TaskRow> query_tasks(Connection& connection, const TaskQueryPlan& plan);
/// Deletes up to `limit` terminal rows updated before `cutoff`.
std::size_t prune_tasks(Connection& connection, WallTime cutoff, std::size_t limit);
/// The pools the store holds paused, by name.
std::vector<std::string> paused_pools(Connection& connection);
/// Recovered of `shard` (docs/store.md, "Shards"), except its epoch.
Recovered load(Connection& connection, const std::string& shard, WallTime terminal_since);


StoreStats read_stats(Connection& connection);

}  // namespace cronoq::store::sqlite
