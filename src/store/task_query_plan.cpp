#include "task_query_plan.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace cronoq::store {

namespace {

std::int64_t parse_cursor(const std::string& cursor) {
    // Digits only, below 2^63: a task id as cursor_after writes it.
    const bool digits = !cursor.empty() && cursor.size() <= 19 &&
                        cursor.find_first_not_of("0123456789") == std::string::npos;
    const std::uint64_t id = digits ? std::stoull(cursor) : 0;
    if (!digits || id > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        throw std::invalid_argument("TaskQuery::cursor: \"" + cursor +
                                    "\" is not a cursor (pass a TaskPage::next_cursor)");
    return static_cast<std::int64_t>(id);
}

/// Appends "<column> <op> <placeholder>" and its parameter.
class Filters {
public:
    explicit Filters(SqlDialect dialect, WalkSql& out) : dialect_(dialect), out_(out) {}

    std::string param(std::variant<std::int64_t, std::string> value) {
        const bool text = std::holds_alternative<std::string>(value);
        out_.params.push_back(std::move(value));
        const std::string n = std::to_string(out_.params.size());
        if (dialect_ == SqlDialect::Sqlite) return "?" + n;
        return "$" + n + (text ? "::text" : "::int8");
    }

    void add(const std::string& condition) {
        out_.sql += conditions_++ == 0 ? " WHERE " : " AND ";
        out_.sql += condition;
    }

    void compare(const char* column, const char* op, std::variant<std::int64_t, std::string> value) {
        std::string condition = column;
        condition += ' ';
        condition += op;
        condition += ' ';
        condition += param(std::move(value));
        add(condition);
    }

    void key_prefix(const std::string& prefix) {
        const std::string p = param(prefix);
        // A prefix compared as is: LIKE would need its wildcards escaped.
        // SQLite compares bytes (as blobs: a stored key need not be valid
        // UTF-8, and text functions count characters); PostgreSQL's text is
        // valid in the server's encoding, so characters agree with bytes.
        if (dialect_ == SqlDialect::Sqlite)
            add("key IS NOT NULL AND substr(CAST(key AS BLOB), 1, length(CAST(" + p + " AS BLOB))) = CAST(" + p +
                " AS BLOB)");
        else
            add("key IS NOT NULL AND left(key, length(" + p + ")) = " + p);
    }

private:
    SqlDialect dialect_;
    WalkSql& out_;
    int conditions_ = 0;
};

}  // namespace

std::string cursor_after(TaskId id) { return std::to_string(id.value); }

TaskQueryPlan::TaskQueryPlan(const TaskQuery& query)
    : query_(query), limit_(std::clamp<std::size_t>(query.limit, 1, max_limit)) {
    if (query.cursor) before_id_ = parse_cursor(*query.cursor);
    statuses_ = query.statuses;
    std::sort(statuses_.begin(), statuses_.end());
    statuses_.erase(std::unique(statuses_.begin(), statuses_.end()), statuses_.end());
    // A pool without statuses: one walk per status, each through the
    // (pool, status, id) index, rather than one walk of the pool's rows
    // that would have to be sorted by id. Statuses without a pool: one walk
    // per pool and status (needs_pools).
    if (statuses_.empty() && query.pool)
        for (int s = static_cast<int>(TaskStatus::Blocked); s <= static_cast<int>(TaskStatus::Shed); ++s)
            statuses_.push_back(static_cast<TaskStatus>(s));
}

std::string pools_sql(const std::string& table) {
    std::string sql = "WITH RECURSIVE p(pool) AS (SELECT min(pool) FROM " + table;
    sql += " UNION ALL SELECT (SELECT min(pool) FROM " + table;
    sql += " WHERE pool > p.pool) FROM p WHERE p.pool IS NOT NULL) SELECT pool FROM p WHERE pool IS NOT NULL";
    return sql;
}

std::vector<WalkSql> TaskQueryPlan::walks(SqlDialect dialect, const std::string& table, const std::string& columns,
                                          const std::vector<std::string>& pools) const {
    std::vector<WalkSql> out;
    if (statuses_.empty()) out.push_back(walk(dialect, table, columns, std::nullopt, query_.pool));
    for (const TaskStatus s : statuses_) {
        if (!needs_pools()) out.push_back(walk(dialect, table, columns, s, query_.pool));
        else
            for (const std::string& pool : pools) out.push_back(walk(dialect, table, columns, s, pool));
    }
    return out;
}

WalkSql TaskQueryPlan::walk(SqlDialect dialect, const std::string& table, const std::string& columns,
                            std::optional<TaskStatus> status, const std::optional<std::string>& pool) const {
    WalkSql out;
    out.sql = "SELECT " + columns + " FROM " + table;
    Filters f(dialect, out);
    if (pool) f.compare("pool", "=", *pool);
    if (status) f.compare("status", "=", std::string(to_string(*status)));
    if (before_id_) f.compare("id", "<", *before_id_);
    if (query_.kind) f.compare("kind", "=", *query_.kind);
    if (query_.key_prefix) f.key_prefix(*query_.key_prefix);
    if (query_.fair_key) {
        if (query_.fair_key->empty()) f.add("fair_key IS NULL");
        else f.compare("fair_key", "=", *query_.fair_key);
    }
    if (query_.submitted_after) f.compare("submitted_at", ">=", to_stored(*query_.submitted_after));
    if (query_.submitted_before) f.compare("submitted_at", "<", to_stored(*query_.submitted_before));
    out.sql += " ORDER BY id DESC LIMIT " + std::to_string(limit_ + 1);
    return out;
}

RowPage TaskQueryPlan::page(std::vector<TaskRow> rows) const {
    std::sort(rows.begin(), rows.end(), [](const TaskRow& a, const TaskRow& b) { return a.id.value > b.id.value; });
    RowPage out;
    if (rows.size() > limit_) {
        rows.resize(limit_);
        out.next_cursor = cursor_after(rows.back().id);
    }
    out.rows = std::move(rows);
    return out;
}

}  // namespace cronoq::store
