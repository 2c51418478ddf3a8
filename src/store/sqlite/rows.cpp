#include "rows.hpp"

#include "inbox.hpp"
#include "lease.hpp"
#include "../shard_ranges.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace cronoq::store::sqlite {

namespace {

std::optional<WallTime> optional_time(const Statement& statement, int column) {
    if (statement.is_null(column)) return std::nullopt;
    return from_stored(statement.int64(column));
}

}  // namespace

TaskRow read_row(const Statement& statement, const Connection& connection) {
    TaskRow row;
    row.id = TaskId{static_cast<std::uint64_t>(statement.int64(0))};
    row.key = statement.optional_text(1);
    row.pool = statement.text(2);
    row.kind = statement.text(3);
    const std::string status = statement.text(4);
    const auto parsed = status_from_string(status);
    if (!parsed)
        throw StoreError(StoreErrorKind::Corrupt, "task " + std::to_string(row.id.value) + " in " +
                                                      connection.path().string() + " has an unknown status \"" +
                                                      status + "\"");
    row.status = *parsed;
    row.attempt = static_cast<std::uint32_t>(statement.int64(5));
    row.last_error = statement.text(6);
    row.submitted_at = from_stored(statement.int64(7));
    row.updated_at = from_stored(statement.int64(8));
    row.run_at = optional_time(statement, 9);
    row.options = statement.text(10);
    row.payload = statement.text(11);
    row.output = statement.optional_text(12);
    row.fair_key = statement.optional_text(13);
    return row;
}

namespace {

std::optional<std::int64_t> optional_stored(const std::optional<WallTime>& time) {
    if (!time) return std::nullopt;
    return to_stored(*time);
}

std::uint64_t read_mark(Connection& connection, const std::string& name) {
    Statement statement(connection, "SELECT value FROM meta WHERE name = ?1");
    return statement.bind(1, name).step() ? static_cast<std::uint64_t>(statement.int64(0)) : 0;
}

/// The shard's marks, never below the start of its range of ids.
HighWaterMarks read_marks(Connection& connection, const std::string& shard) {
    const std::uint64_t base = id_base(connection, shard);
    HighWaterMarks marks;
    marks.next_task_id = std::max(read_mark(connection, mark_name("next_task_id", shard)), base);
    marks.next_lease_id = std::max(read_mark(connection, mark_name("next_lease_id", shard)), base);
    return marks;
}

}  // namespace

struct ChangeWriter::Statements {
    explicit Statements(Connection& c)
        : insert(c, "INSERT INTO tasks (id, key, pool, kind, status, attempt, last_error, submitted_at, updated_at, "
                    "run_at, options, payload, output, fair_key) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"),
          transition(c, "UPDATE tasks SET status = ?2, attempt = ?3, last_error = ?4, updated_at = ?5, run_at = ?6, "
                        "output = coalesce(?7, output) WHERE id = ?1"),
          release_key(c, "UPDATE tasks SET key = NULL WHERE id = ?1"),
          put_recurring(c, "INSERT INTO recurring (name, definition, shard) VALUES (?1, ?2, ?3) "
                           "ON CONFLICT (name) DO UPDATE SET definition = excluded.definition, shard = excluded.shard"),
          remove_recurring(c, "DELETE FROM recurring WHERE name = ?1"),
          fire_recurring(c, "UPDATE recurring SET last_fired = ?2 WHERE name = ?1"),
          raise_mark(c, "INSERT INTO meta (name, value) VALUES (?1, ?2) "
                        "ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)"),
          put_config(c, "INSERT INTO shard_config (shard, body, retention, written_at) VALUES (?1, ?2, ?3, ?4) "
                        "ON CONFLICT (shard) DO UPDATE SET body = excluded.body, retention = excluded.retention, "
                        "written_at = excluded.written_at"),
          take_entry(c, "DELETE FROM inbox WHERE seq = ?1"),
          pause(c, "INSERT INTO meta (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING"),
          resume(c, "DELETE FROM meta WHERE name = ?1"),
          put_setting(c, "INSERT INTO meta (name, value) VALUES (?1, ?2) "
                         "ON CONFLICT (name) DO UPDATE SET value = excluded.value") {}
    Statement insert, transition, release_key, put_recurring, remove_recurring, fire_recurring, raise_mark, put_config,
        take_entry, pause, resume, put_setting;
};

ChangeWriter::ChangeWriter(Connection& connection, std::string shard)
    : statements_(std::make_unique<Statements>(connection)),
      shard_(std::move(shard)),
      task_mark_(mark_name("next_task_id", shard_)),
      lease_mark_(mark_name("next_lease_id", shard_)) {}
ChangeWriter::~ChangeWriter() = default;

void ChangeWriter::apply(const Change& change) {
    Statements& s = *statements_;
    std::visit(
        [&](const auto& c) {
            using C = std::decay_t<decltype(c)>;
            // A row's values are bound where they are, not copied (each copy
            // an allocation and a free under SQLite's process-wide memory
            // mutex): the change outlives the run() that follows.
            if constexpr (std::is_same_v<C, TaskInserted>) {
                const TaskRow& r = c.row;
                s.insert.bind(1, to_int64(r.id.value)).bind_unowned(2, r.key).bind_unowned(3, r.pool);
                s.insert.bind_unowned(4, r.kind).bind_unowned(5, to_string(r.status));
                s.insert.bind(6, std::int64_t{r.attempt}).bind_unowned(7, r.last_error);
                s.insert.bind(8, to_stored(r.submitted_at)).bind(9, to_stored(r.updated_at));
                s.insert.bind(10, optional_stored(r.run_at)).bind_unowned(11, r.options).bind_blob_unowned(12, r.payload);
                if (r.output) s.insert.bind_blob_unowned(13, *r.output);
                s.insert.bind_unowned(14, r.fair_key);
                s.insert.run();
            } else if constexpr (std::is_same_v<C, TaskTransition>) {
                s.transition.bind(1, to_int64(c.id.value)).bind_unowned(2, to_string(c.status));
                s.transition.bind(3, std::int64_t{c.attempt}).bind_unowned(4, c.last_error);
                s.transition.bind(5, to_stored(c.updated_at)).bind(6, optional_stored(c.run_at));
                if (c.output) s.transition.bind_blob_unowned(7, *c.output);
                s.transition.run();
            } else if constexpr (std::is_same_v<C, TaskKeyReleased>) {
                s.release_key.bind(1, to_int64(c.id.value)).run();
            } else if constexpr (std::is_same_v<C, RecurringPut>) {
                s.put_recurring.bind(1, c.name).bind(2, c.definition).bind(3, shard_).run();
            } else if constexpr (std::is_same_v<C, RecurringRemoved>) {
                s.remove_recurring.bind(1, c.name).run();
            } else if constexpr (std::is_same_v<C, RecurringFired>) {
                s.fire_recurring.bind(1, c.name).bind(2, to_stored(c.fired_at)).run();
            } else if constexpr (std::is_same_v<C, ConfigWritten>) {
                const ShardConfig& config = c.config;
                s.put_config.bind(1, config.shard).bind(2, config.body).bind(3, std::int64_t{config.retention.count()});
                s.put_config.bind(4, to_stored(config.written_at)).run();
            } else if constexpr (std::is_same_v<C, InboxTaken>) {
                // An entry already gone (taken by a commit that was retried)
                // deletes nothing: each is taken once.
                for (const std::uint64_t seq : c.seqs) s.take_entry.bind(1, to_int64(seq)).run();
            } else if constexpr (std::is_same_v<C, PoolPaused>) {
                if (c.paused)
                    s.pause.bind(1, paused_row_name(c.pool)).bind(2, to_stored(c.at)).run();
                else
                    s.resume.bind(1, paused_row_name(c.pool)).run();
            } else if constexpr (std::is_same_v<C, FairWeightSet>) {
                s.put_setting.bind(1, fair_weight_name(c.pool, c.key)).bind(2, fair_weight_value(c.weight)).run();
            } else {
                static_assert(std::is_same_v<C, HighWaterMarks>);
                s.raise_mark.bind(1, task_mark_).bind(2, to_int64(c.next_task_id)).run();
                s.raise_mark.bind(1, lease_mark_).bind(2, to_int64(c.next_lease_id)).run();
            }
        },
        change);
}

std::optional<TaskRow> find_task(Connection& connection, const TaskRef& task) {
    const std::string by_id = std::string("SELECT ") + task_columns + " FROM tasks WHERE id = ?1";
    const std::string by_key =
        std::string("SELECT ") + task_columns + " FROM tasks WHERE key = ?1 ORDER BY id DESC LIMIT 1";
    Statement statement(connection, task.id ? by_id.c_str() : by_key.c_str());
    if (task.id) statement.bind(1, to_int64(task.id->value));
    else if (task.key) statement.bind(1, *task.key);
    else return std::nullopt;
    if (!statement.step()) return std::nullopt;
    return read_row(statement, connection);
}

std::vector<TaskRow> list_tasks(Connection& connection, TaskStatus status, std::size_t limit) {
    const std::string sql = std::string("SELECT ") + task_columns + " FROM tasks WHERE status = ?1 ORDER BY id LIMIT ?2";
    Statement statement(connection, sql.c_str());
    statement.bind(1, to_string(status)).bind(2, to_int64(limit));
    std::vector<TaskRow> rows;
    while (statement.step()) rows.push_back(read_row(statement, connection));
    return rows;
}

std::vector<TaskRow> query_tasks(Connection& connection, const TaskQueryPlan& plan) {
    ReadTransaction read(connection);  // one snapshot for every walk
    std::vector<TaskRow> rows;
    std::vector<std::string> pools;
    if (plan.needs_pools()) {
        Statement names(connection, pools_sql("tasks").c_str());
        while (names.step()) pools.push_back(names.text(0));
    }
    for (const WalkSql& walk : plan.walks(SqlDialect::Sqlite, "tasks", task_columns, pools)) {
        Statement statement(connection, walk.sql.c_str());
        for (std::size_t i = 0; i < walk.params.size(); ++i)
            std::visit([&](const auto& value) { statement.bind(static_cast<int>(i + 1), value); }, walk.params[i]);
        while (statement.step()) rows.push_back(read_row(statement, connection));
    }
    return rows;
}

std::size_t prune_tasks(Connection& connection, WallTime cutoff, std::size_t limit) {
    // Through the (status, updated_at) index; the limit keeps each write
    // transaction short so a leader's commits do not wait long.
    const std::string sql = "DELETE FROM tasks WHERE id IN (SELECT id FROM tasks WHERE status IN " +
                            terminal_status_list() + " AND updated_at < ?1 LIMIT ?2)";
    Statement statement(connection, sql.c_str());
    statement.bind(1, to_stored(cutoff)).bind(2, to_int64(limit));
    statement.run();
    return static_cast<std::size_t>(connection.query_int("SELECT changes()"));
}

Recovered load(Connection& connection, const std::string& shard, WallTime terminal_since) {
    Recovered out;
    const std::string sql = std::string("SELECT ") + task_columns + " FROM tasks WHERE (status NOT IN " +
                            terminal_status_list() + " OR updated_at >= ?1) AND " +
                            owned_pool_sql("pool", "?2", "shard_pools") + " ORDER BY id";
    Statement tasks(connection, sql.c_str());
    tasks.bind(1, to_stored(terminal_since)).bind(2, shard);
    while (tasks.step()) {
        // An unknown status is reported, not thrown: one such row must not
        // keep every other task of the store from coming back.
        if (auto bad = unknown_status(tasks.int64(0), tasks.int64(5), tasks.text(4))) {
            out.unreadable.push_back(std::move(*bad));
            continue;
        }
        out.tasks.push_back(read_row(tasks, connection));
    }

    Statement recurring(connection, "SELECT name, definition, last_fired FROM recurring WHERE shard = ?1 ORDER BY name");
    recurring.bind(1, shard);
    while (recurring.step())
        out.recurring.push_back(RecurringRow{recurring.text(0), recurring.text(1), optional_time(recurring, 2)});

    out.paused_pools = paused_pools(connection);
    out.marks = read_marks(connection, shard);
    out.inbox = read_inbox(connection, shard, std::numeric_limits<std::size_t>::max());
    Statement weights(connection, "SELECT name, value FROM meta WHERE substr(name, 1, 12) = 'fair_weight:' ORDER BY name");
    while (weights.step())
        if (auto w = read_fair_weight(weights.text(0), weights.int64(1))) out.fair_weights.push_back(std::move(*w));
    return out;
}

std::vector<std::string> paused_pools(Connection& connection) {
    const std::string sql = std::string("SELECT substr(name, 8) FROM meta WHERE ") + paused_rows_where + " ORDER BY name";
    Statement statement(connection, sql.c_str());
    std::vector<std::string> pools;
    while (statement.step()) pools.push_back(statement.text(0));
    return pools;
}

StoreStats read_stats(Connection& connection) {
    StoreStats stats;
    stats.schema_version = connection.query_int("PRAGMA user_version");
    Statement counts(connection, "SELECT status, count(*) FROM tasks GROUP BY status ORDER BY status");
    while (counts.step()) {
        stats.tasks_by_status[counts.text(0)] = counts.int64(1);
        stats.tasks += counts.int64(1);
    }
    stats.recurring = connection.query_int("SELECT count(*) FROM recurring");
    stats.paused_pools = paused_pools(connection);
    stats.marks = read_marks(connection, "default");
    stats.leader = read_leader(connection, "default");
    stats.shards = read_shard_map(connection);
    return stats;
}

}  // namespace cronoq::store::sqlite
