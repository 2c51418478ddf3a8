#include "rows.hpp"

#include "inbox.hpp"

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

HighWaterMarks read_marks(Connection& connection) {
    HighWaterMarks marks;
    marks.next_task_id =
        static_cast<std::uint64_t>(connection.query_int("SELECT value FROM meta WHERE name = 'next_task_id'"));
    marks.next_lease_id =
        static_cast<std::uint64_t>(connection.query_int("SELECT value FROM meta WHERE name = 'next_lease_id'"));
    return marks;
}

}  // namespace

struct ChangeWriter::Statements {
    explicit Statements(Connection& c)
        : insert(c, "INSERT INTO tasks (id, key, pool, kind, status, attempt, last_error, submitted_at, updated_at, "
                    "run_at, options, payload, output) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"),
          transition(c, "UPDATE tasks SET status = ?2, attempt = ?3, last_error = ?4, updated_at = ?5, run_at = ?6, "
                        "output = coalesce(?7, output) WHERE id = ?1"),
          release_key(c, "UPDATE tasks SET key = NULL WHERE id = ?1"),
          put_recurring(c, "INSERT INTO recurring (name, definition) VALUES (?1, ?2) "
                           "ON CONFLICT (name) DO UPDATE SET definition = excluded.definition"),
          remove_recurring(c, "DELETE FROM recurring WHERE name = ?1"),
          fire_recurring(c, "UPDATE recurring SET last_fired = ?2 WHERE name = ?1"),
          raise_mark(c, "UPDATE meta SET value = max(value, ?2) WHERE name = ?1"),
          put_config(c, "INSERT INTO shard_config (shard, body, retention, written_at) VALUES (?1, ?2, ?3, ?4) "
                        "ON CONFLICT (shard) DO UPDATE SET body = excluded.body, retention = excluded.retention, "
                        "written_at = excluded.written_at"),
          take_entry(c, "DELETE FROM inbox WHERE seq = ?1") {}
    Statement insert, transition, release_key, put_recurring, remove_recurring, fire_recurring, raise_mark, put_config,
        take_entry;
};

ChangeWriter::ChangeWriter(Connection& connection) : statements_(std::make_unique<Statements>(connection)) {}
ChangeWriter::~ChangeWriter() = default;

void ChangeWriter::apply(const Change& change) {
    Statements& s = *statements_;
    std::visit(
        [&s](const auto& c) {
            using C = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<C, TaskInserted>) {
                const TaskRow& r = c.row;
                s.insert.bind(1, to_int64(r.id.value)).bind(2, r.key).bind(3, r.pool).bind(4, r.kind);
                s.insert.bind(5, to_string(r.status)).bind(6, std::int64_t{r.attempt}).bind(7, r.last_error);
                s.insert.bind(8, to_stored(r.submitted_at)).bind(9, to_stored(r.updated_at));
                s.insert.bind(10, optional_stored(r.run_at)).bind(11, r.options).bind_blob(12, r.payload);
                if (r.output) s.insert.bind_blob(13, *r.output);
                s.insert.run();
            } else if constexpr (std::is_same_v<C, TaskTransition>) {
                s.transition.bind(1, to_int64(c.id.value)).bind(2, to_string(c.status));
                s.transition.bind(3, std::int64_t{c.attempt}).bind(4, c.last_error).bind(5, to_stored(c.updated_at));
                s.transition.bind(6, optional_stored(c.run_at));
                if (c.output) s.transition.bind_blob(7, *c.output);
                s.transition.run();
            } else if constexpr (std::is_same_v<C, TaskKeyReleased>) {
                s.release_key.bind(1, to_int64(c.id.value)).run();
            } else if constexpr (std::is_same_v<C, RecurringPut>) {
                s.put_recurring.bind(1, c.name).bind(2, c.definition).run();
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
            } else {
                static_assert(std::is_same_v<C, HighWaterMarks>);
                s.raise_mark.bind(1, std::string_view("next_task_id")).bind(2, to_int64(c.next_task_id)).run();
                s.raise_mark.bind(1, std::string_view("next_lease_id")).bind(2, to_int64(c.next_lease_id)).run();
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

Recovered load(Connection& connection, WallTime terminal_since) {
    Recovered out;
    const std::string sql = std::string("SELECT ") + task_columns + " FROM tasks WHERE status NOT IN " +
                            terminal_status_list() + " OR updated_at >= ?1 ORDER BY id";
    Statement tasks(connection, sql.c_str());
    tasks.bind(1, to_stored(terminal_since));
    while (tasks.step()) {
        // An unknown status is reported, not thrown: one such row must not
        // keep every other task of the store from coming back.
        if (auto bad = unknown_status(tasks.int64(0), tasks.int64(5), tasks.text(4))) {
            out.unreadable.push_back(std::move(*bad));
            continue;
        }
        out.tasks.push_back(read_row(tasks, connection));
    }

    Statement recurring(connection, "SELECT name, definition, last_fired FROM recurring ORDER BY name");
    while (recurring.step())
        out.recurring.push_back(RecurringRow{recurring.text(0), recurring.text(1), optional_time(recurring, 2)});

    out.marks = read_marks(connection);
    out.inbox = read_inbox(connection, std::numeric_limits<std::size_t>::max());
    return out;
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
    stats.marks = read_marks(connection);
    Statement leader(connection, "SELECT epoch, holder, expires_at FROM leader WHERE id = 1");
    if (leader.step())
        stats.leader = LeaderRow{static_cast<std::uint64_t>(leader.int64(0)), leader.optional_text(1),
                                 from_stored(leader.int64(2))};
    return stats;
}

}  // namespace cronoq::store::sqlite
