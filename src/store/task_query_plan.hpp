#pragma once
// How a store answers `Store::query` (docs/store.md, "Queries"), the same for
// every backend: the limit clamped, the cursor read, one walk per pool and
// status (each through the (pool, status, id) index, so each stops after a
// page), the filters as SQL, and the walks merged into one page.
#include "stored_values.hpp"

#include <cronoq/store/journal.hpp>
#include <cronoq/task_query.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace cronoq::store {

/// The rows of one page and the cursor after it.
struct RowPage {
    std::vector<TaskRow> rows;
    std::optional<std::string> next_cursor;
};

enum class SqlDialect { Sqlite, Postgres };

/// One SELECT of a walk: its text and its parameters, numbered from 1.
struct WalkSql {
    std::string sql;
    std::vector<std::variant<std::int64_t, std::string>> params;
};

class TaskQueryPlan {
public:
    static constexpr std::size_t max_limit = 1000;

    /// Throws std::invalid_argument for a cursor that no page returned.
    explicit TaskQueryPlan(const TaskQuery& query);

    /// True when the walks need the store's pool names (`pools_sql`):
    /// statuses without a pool walk each pool's rows of each status.
    bool needs_pools() const { return !statuses_.empty() && !query_.pool; }

    /// The SELECTs to run (in one read transaction), each returning at most
    /// limit + 1 rows of `columns` from `table`, newest first. `pools`: the
    /// store's pool names when `needs_pools()`, read in that transaction.
    std::vector<WalkSql> walks(SqlDialect dialect, const std::string& table, const std::string& columns,
                               const std::vector<std::string>& pools = {}) const;

    /// The page from the walks' rows, in any order.
    RowPage page(std::vector<TaskRow> rows) const;

    std::size_t limit() const { return limit_; }

private:
    WalkSql walk(SqlDialect dialect, const std::string& table, const std::string& columns,
                 std::optional<TaskStatus> status, const std::optional<std::string>& pool) const;

    const TaskQuery& query_;
    std::size_t limit_;
    std::optional<std::int64_t> before_id_;  ///< from the cursor
    std::vector<TaskStatus> statuses_;       ///< one walk each; empty: one walk of all
};

/// The distinct pool names of `table`, one index probe per pool (a loose
/// scan of the (pool, status, id) index through a recursive query), the
/// same SQL for both backends.
std::string pools_sql(const std::string& table);

/// The cursor of a page that ends at `id`.
std::string cursor_after(TaskId id);

}  // namespace cronoq::store
