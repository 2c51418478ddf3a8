// The schema, the changes a commit writes, the inspection queries and the
// recovery load, in the store's PostgreSQL schema.
#include "store_impl.hpp"

#include "../shard_ranges.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace cronoq::store::postgres {

namespace {

/// FNV-1a: a stable 64-bit key for the schema's advisory lock.
std::int64_t lock_key_of(const std::string& schema) {
    std::uint64_t hash = 14695981039346656037ull;
    const std::string text = std::string("cronoq:") + schema;
    for (const unsigned char c : text) {
        hash ^= c;
        hash *= 1099511628211ull;
    }
    return static_cast<std::int64_t>(hash);
}

}  // namespace

TaskRow read_row(const Result& r, int i, const Names& names) {
    TaskRow row;
    row.id = TaskId{static_cast<std::uint64_t>(r.int64(i, 0))};
    row.key = r.optional_text(i, 1);
    row.pool = r.text(i, 2);
    row.kind = r.text(i, 3);
    const std::string status = r.text(i, 4);
    const auto parsed = status_from_string(status);
    if (!parsed) {
        std::string what = "task " + std::to_string(row.id.value);
        what += " in the PostgreSQL schema ";
        what += names.schema;
        what += " has an unknown status \"";
        what += status;
        what += '"';
        throw StoreError(StoreErrorKind::Corrupt, what);
    }
    row.status = *parsed;
    row.attempt = static_cast<std::uint32_t>(r.int64(i, 5));
    row.last_error = r.text(i, 6);
    row.submitted_at = from_stored(r.int64(i, 7));
    row.updated_at = from_stored(r.int64(i, 8));
    if (!r.is_null(i, 9)) row.run_at = from_stored(r.int64(i, 9));
    row.options = r.text(i, 10);
    row.payload = r.bytes(i, 11);
    row.output = r.optional_bytes(i, 12);
    row.fair_key = r.optional_text(i, 13);
    return row;
}

namespace {

/// `sql` with each "{table}" replaced by that table's qualified name in
/// `n` ("{schema}": the quoted schema): the schema's statements read as
/// SQL instead of as a string built a name at a time.
std::string with_names(const Names& n, std::string_view sql) {
    const std::pair<std::string_view, const std::string*> names[] = {
        {"schema", &n.quoted}, {"tasks", &n.tasks}, {"recurring", &n.recurring},       {"meta", &n.meta},
        {"leader", &n.leader}, {"inbox", &n.inbox}, {"shard_config", &n.shard_config}, {"shard_pools", &n.shard_pools}};
    std::string out;
    for (std::size_t at = 0; at < sql.size();) {
        const std::size_t open = sql.find('{', at), close = sql.find('}', open);
        if (open == std::string_view::npos || close == std::string_view::npos) {
            out.append(sql.substr(at));
            break;
        }
        out.append(sql.substr(at, open - at));
        const std::string_view name = sql.substr(open + 1, close - open - 1);
        const auto found =
            std::find_if(std::begin(names), std::end(names), [&](const auto& e) { return e.first == name; });
        if (found == std::end(names)) {
            std::string what = "no table named {";
            what += name;
            what += '}';
            throw std::logic_error(what);
        }
        out.append(*found->second);
        at = close + 1;
    }
    return out;
}

std::string schema_v1(const Names& n) {
    return with_names(
        n,
        "CREATE TABLE {tasks} (id bigint PRIMARY KEY, key text, pool text NOT NULL, kind text NOT NULL, "
        "status text NOT NULL, attempt bigint NOT NULL, last_error text NOT NULL, submitted_at bigint NOT NULL, "
        "updated_at bigint NOT NULL, run_at bigint, options text NOT NULL, payload bytea NOT NULL, output bytea);"
        "CREATE INDEX tasks_by_key ON {tasks} (key) WHERE key IS NOT NULL;"
        "CREATE INDEX tasks_by_status ON {tasks} (status, updated_at);"
        "CREATE TABLE {recurring} (name text PRIMARY KEY, definition text NOT NULL, last_fired bigint);"
        "CREATE TABLE {meta} (name text PRIMARY KEY, value bigint NOT NULL);"
        "INSERT INTO {meta} (name, value) VALUES ('schema_version', 1), ('next_task_id', 0), ('next_lease_id', 0);"
        "CREATE TABLE {leader} (id integer PRIMARY KEY CHECK (id = 1), epoch bigint NOT NULL, holder text, "
        "backend_pid integer, expires_at timestamptz NOT NULL);"
        "INSERT INTO {leader} (id, epoch, holder, backend_pid, expires_at) VALUES (1, 0, NULL, NULL, '-infinity');");
}

/// Version 2: fair keys (a nullable column, docs/store.md "Queries") and the
/// index that keeps a page of `Store::query` cheap on a large store.
std::string migrate_v1_to_v2(const Names& n) {
    return with_names(n,
                      "ALTER TABLE {tasks} ADD COLUMN fair_key text;"
                      "CREATE INDEX tasks_by_pool ON {tasks} (pool, status, id);"
                      "CREATE INDEX tasks_by_fair_key ON {tasks} (fair_key, id) WHERE fair_key IS NOT NULL;"
                      "UPDATE {meta} SET value = 2 WHERE name = 'schema_version';");
}

/// Version 3: clients (docs/postgres.md, "Clients"): the inbox a leader
/// takes client submissions and cancels from (seqs in commit order: the
/// transactions that add entries are serialized, see client_access.cpp),
/// the shards' configurations and the next id of the client range (2^48).
std::string migrate_v2_to_v3(const Names& n) {
    return with_names(n,
                      "CREATE TABLE {inbox} (seq bigserial PRIMARY KEY, op text NOT NULL, task_id bigint NOT NULL, "
                      "shard text NOT NULL, committed_at bigint NOT NULL);"
                      "CREATE TABLE {shard_config} (shard text PRIMARY KEY, body text NOT NULL, "
                      "retention bigint NOT NULL, written_at bigint NOT NULL);"
                      "INSERT INTO {meta} (name, value) VALUES ('next_client_id', 281474976710656);"
                      "UPDATE {meta} SET value = 3 WHERE name = 'schema_version';");
}

/// Version 4: shards (docs/postgres.md, "Shards"; docs/store.md, "Shards"):
/// one leader row per shard, each with its epoch, lease and the base of its
/// range of ids (its marks live in `meta` under names of their own, the
/// "default" shard's under the old ones); `shard_pools` says which shard
/// claimed each pool; a recurring schedule belongs to the shard that put it.
std::string migrate_v3_to_v4(const Names& n) {
    return with_names(
        n,
        "CREATE TABLE {schema}.leader_v4 (shard text PRIMARY KEY, epoch bigint NOT NULL, holder text, "
        "backend_pid integer, expires_at timestamptz NOT NULL, id_base bigint NOT NULL);"
        "INSERT INTO {schema}.leader_v4 (shard, epoch, holder, backend_pid, expires_at, id_base) "
        "SELECT 'default', epoch, holder, backend_pid, expires_at, 0 FROM {leader} WHERE id = 1;"
        "DROP TABLE {leader};"
        "ALTER TABLE {schema}.leader_v4 RENAME TO leader;"
        "CREATE TABLE {shard_pools} (pool text PRIMARY KEY, shard text NOT NULL);"
        "ALTER TABLE {recurring} ADD COLUMN shard text NOT NULL DEFAULT 'default';"
        "UPDATE {meta} SET value = 4 WHERE name = 'schema_version';");
}

/// The schema's version; 0 when the schema is missing or holds nothing.
std::int64_t read_version(Connection& c, const Names& n) {
    Result shape = c.exec(
        "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = $1), "
        "(SELECT count(*) FROM pg_class k JOIN pg_namespace s ON s.oid = k.relnamespace WHERE s.nspname = $1), "
        "(SELECT count(*) FROM pg_class k JOIN pg_namespace s ON s.oid = k.relnamespace "
        " WHERE s.nspname = $1 AND k.relname = 'meta' AND k.relkind = 'r')",
        {n.schema});
    if (shape.int64(0, 0) == 0 || shape.int64(0, 1) == 0) return 0;
    std::string not_ours = "not a cronoq store: the PostgreSQL schema ";
    not_ours += n.schema;
    not_ours += " holds other tables";
    if (shape.int64(0, 2) == 0) throw StoreError(StoreErrorKind::Corrupt, not_ours);
    std::int64_t version = 0;
    try {
        Result r = c.exec("SELECT value FROM " + n.meta + " WHERE name = 'schema_version'");
        if (r.rows() != 1) throw StoreError(StoreErrorKind::Corrupt, not_ours);
        version = r.int64(0, 0);
    } catch (const StoreError& error) {
        if (error.kind() == StoreErrorKind::Corrupt || !c.alive()) throw;
        std::string what = not_ours;
        what += " (";
        what += error.what();
        what += ')';
        throw StoreError(StoreErrorKind::Corrupt, what);
    }
    if (version > schema_version) {
        std::string what = "the store in the PostgreSQL schema " + n.schema;
        what += " has schema version " + std::to_string(version);
        what += ", newer than this cronoq reads (" + std::to_string(schema_version);
        what += "): a newer cronoq migrated it; use that version";
        throw StoreError(StoreErrorKind::SchemaTooNew, what);
    }
    if (version < 1) throw StoreError(StoreErrorKind::Corrupt, not_ours);
    return version;
}

/// The shard's marks, never below the start of its range of ids.
HighWaterMarks read_marks(Connection& c, const Names& n, const std::string& shard) {
    const std::string task = mark_name("next_task_id", shard), lease = mark_name("next_lease_id", shard);
    Result m = c.exec("SELECT coalesce((SELECT value FROM " + n.meta + " WHERE name = $1), 0), coalesce((SELECT value FROM " +
                          n.meta + " WHERE name = $2), 0), coalesce((SELECT id_base FROM " + n.leader +
                          " WHERE shard = $3), 0)",
                      {Param(task), Param(lease), Param(shard)});
    const auto base = static_cast<std::uint64_t>(m.int64(0, 2));
    HighWaterMarks marks;
    marks.next_task_id = std::max(static_cast<std::uint64_t>(m.int64(0, 0)), base);
    marks.next_lease_id = std::max(static_cast<std::uint64_t>(m.int64(0, 1)), base);
    return marks;
}

// Runs `body` between `begin` and COMMIT, rolling back on failure.
template <class Body>
void in_transaction(Connection& c, const char* begin, Body&& body) {
    c.exec(begin);
    rolling_back(c, [&] {
        body();
        c.exec("COMMIT");
    });
}

}  // namespace

std::int64_t Names::lock_key_for(const std::string& shard) const {
    // The "default" shard keeps the lock a store of one shard had.
    return shard == "default" ? lock_key : lock_key_of(schema + "\n" + shard);
}

Names::Names(const Connection& connection, const std::string& name)
    : schema(name), quoted(connection.identifier(name)), lock_key(lock_key_of(name)) {
    tasks = quoted + ".tasks";
    recurring = quoted + ".recurring";
    meta = quoted + ".meta";
    leader = quoted + ".leader";
    shard_pools = quoted + ".shard_pools";
    inbox = quoted + ".inbox";
    shard_config = quoted + ".shard_config";
}

std::string lease_expiry(int n) {
    std::string sql = "now() + interval '1 microsecond' * $";
    sql += std::to_string(n);
    sql += "::bigint";
    return sql;
}

Param lease_param(std::chrono::nanoseconds lease) {
    // At most a century: a lease of nanoseconds::max() lasts until released
    // without overflowing the server's timestamps.
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
        std::min<std::chrono::nanoseconds>(lease, std::chrono::hours(24 * 365 * 100)));
    return Param(static_cast<std::int64_t>(std::max<std::int64_t>(micros.count(), 1)));
}

void migrate(Connection& c, const Names& n) {
    try {
        if (read_version(c, n) == schema_version) return;
    } catch (const StoreError& error) {
        if (error.kind() != StoreErrorKind::Io) throw;
        // Missing privileges on the catalog are reported by the locked pass.
    }
    in_transaction(c, "BEGIN", [&] {
        c.exec("SELECT pg_advisory_xact_lock($1::bigint)", {Param(n.lock_key ^ 1)});
        std::int64_t version = read_version(c, n);
        if (version == 0) {
            c.exec("CREATE SCHEMA IF NOT EXISTS " + n.quoted);
            c.exec(schema_v1(n));
            version = 1;
        }
        // Migrations from version n to n + 1, in this transaction.
        if (version == 1) {
            c.exec(migrate_v1_to_v2(n));
            version = 2;
        }
        if (version == 2) {
            c.exec(migrate_v2_to_v3(n));
            version = 3;
        }
        if (version == 3) {
            c.exec(migrate_v3_to_v4(n));
            version = 4;
        }
    });
}

std::int64_t verify(Connection& c, const Names& n) {
    const std::int64_t version = read_version(c, n);
    if (version == 0) {
        std::string what = "not a cronoq store: the PostgreSQL schema ";
        what += n.schema;
        what += " is missing or empty";
        throw StoreError(StoreErrorKind::Corrupt, what);
    }
    if (version < schema_version) {
        std::string what = "the store in the PostgreSQL schema " + n.schema;
        what += " has schema version " + std::to_string(version);
        what += ": connect to it with PostgresStore::connect once to migrate it";
        throw StoreError(StoreErrorKind::Corrupt, what);
    }
    return version;
}

std::optional<TaskRow> find_task(Connection& c, const Names& n, const TaskRef& task) {
    std::string sql = std::string("SELECT ") + task_columns;
    sql += " FROM " + n.tasks;
    if (task.id) {
        sql += " WHERE id = $1";
        Result r = c.exec(sql, {Param(to_int64(task.id->value))});
        if (r.rows() == 0) return std::nullopt;
        return read_row(r, 0, n);
    }
    if (!task.key) return std::nullopt;
    sql += " WHERE key = $1 ORDER BY id DESC LIMIT 1";
    Result r = c.exec(sql, {Param(*task.key)});
    if (r.rows() == 0) return std::nullopt;
    return read_row(r, 0, n);
}

std::vector<TaskRow> list_tasks(Connection& c, const Names& n, TaskStatus status, std::size_t limit) {
    std::string sql = std::string("SELECT ") + task_columns;
    sql += " FROM " + n.tasks;
    sql += " WHERE status = $1 ORDER BY id LIMIT $2";
    Result r = c.exec(sql, {Param(std::string(to_string(status))), Param(to_int64(limit))});
    std::vector<TaskRow> rows;
    for (int i = 0; i < r.rows(); ++i) rows.push_back(read_row(r, i, n));
    return rows;
}

std::vector<TaskRow> query_tasks(Connection& c, const Names& n, const TaskQueryPlan& plan) {
    std::vector<TaskRow> rows;
    // One snapshot for every walk.
    in_transaction(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", [&] {
        std::vector<std::string> pools;
        if (plan.needs_pools()) {
            Result r = c.exec(pools_sql(n.tasks));
            for (int i = 0; i < r.rows(); ++i) pools.push_back(r.text(i, 0));
        }
        for (const WalkSql& walk : plan.walks(SqlDialect::Postgres, n.tasks, task_columns, pools)) {
            std::vector<Param> params;
            for (const auto& value : walk.params) std::visit([&](const auto& v) { params.emplace_back(v); }, value);
            Result r = c.exec(walk.sql, params);
            for (int i = 0; i < r.rows(); ++i) rows.push_back(read_row(r, i, n));
        }
    });
    return rows;
}

std::string prune_sql(const Names& n) {
    std::string sql = "DELETE FROM " + n.tasks;
    sql += " WHERE id IN (SELECT id FROM " + n.tasks;
    sql += " WHERE status IN " + terminal_status_list();
    sql += " AND updated_at < $1 LIMIT $2)";
    return sql;
}

std::size_t prune_tasks(Connection& c, const Names& n, WallTime cutoff, std::size_t limit) {
    Result r = c.exec(prune_sql(n), {Param(to_stored(cutoff)), Param(to_int64(limit))});
    return static_cast<std::size_t>(r.affected());
}

Recovered load(Connection& c, const Names& n, const std::string& shard, WallTime terminal_since) {
    Recovered out;
    std::string sql = std::string("SELECT ") + task_columns;
    sql += " FROM " + n.tasks;
    sql += " WHERE (status NOT IN " + terminal_status_list();
    sql += " OR updated_at >= $1) AND " + owned_pool_sql("pool", "$2::text", n.shard_pools);
    sql += " ORDER BY id";
    Result tasks = c.exec(sql, {Param(to_stored(terminal_since)), Param(shard)});
    for (int i = 0; i < tasks.rows(); ++i) {
        // An unknown status is reported, not thrown: one such row must not
        // keep every other task of the store from coming back.
        if (auto bad = unknown_status(tasks.int64(i, 0), tasks.int64(i, 5), tasks.text(i, 4))) {
            out.unreadable.push_back(std::move(*bad));
            continue;
        }
        out.tasks.push_back(read_row(tasks, i, n));
    }
    Result recurring =
        c.exec("SELECT name, definition, last_fired FROM " + n.recurring + " WHERE shard = $1 ORDER BY name", {Param(shard)});
    for (int i = 0; i < recurring.rows(); ++i) {
        RecurringRow row{recurring.text(i, 0), recurring.text(i, 1), std::nullopt};
        if (!recurring.is_null(i, 2)) row.last_fired = from_stored(recurring.int64(i, 2));
        out.recurring.push_back(std::move(row));
    }
    out.paused_pools = paused_pools(c, n);
    out.marks = read_marks(c, n, shard);
    out.inbox = read_inbox(c, n, shard, std::numeric_limits<std::size_t>::max());
    Result weights = c.exec("SELECT name, value FROM " + n.meta + " WHERE substr(name, 1, 12) = 'fair_weight:' ORDER BY name");
    for (int i = 0; i < weights.rows(); ++i)
        if (auto w = read_fair_weight(weights.text(i, 0), weights.int64(i, 1))) out.fair_weights.push_back(std::move(*w));
    return out;
}

bool apply_unless_led(Connection& c, const Names& n, const Change& change) {
    bool applied = false;
    in_transaction(c, "BEGIN", [&] {
        // Every shard's lock: no shard may lead while the change is written.
        Result shards = c.exec("SELECT shard FROM " + n.leader);
        for (int i = 0; i < shards.rows(); ++i)
            if (!c.exec("SELECT pg_try_advisory_xact_lock($1::bigint)", {Param(n.lock_key_for(shards.text(i, 0)))})
                     .boolean(0, 0))
                return;
        std::vector<Query> queries;
        ChangeStatements statements(n, queries);
        statements.add(change);
        statements.finish();
        // A pool's pauses and resumes that clients committed earlier are
        // older than this word: the next leader must not apply them after
        // it (docs/store.md, "Paused pools").
        if (const auto* paused = std::get_if<PoolPaused>(&change))
            queries.push_back(Query{"DELETE FROM " + n.inbox + " WHERE op IN ($1, $2)",
                                    {Param(inbox_op_text(InboxEntry::Op::Pause, paused->pool)),
                                     Param(inbox_op_text(InboxEntry::Op::Resume, paused->pool))}});
        c.pipeline(queries);
        applied = true;
    });
    return applied;
}

std::vector<std::string> paused_pools(Connection& c, const Names& n) {
    Result r = c.exec("SELECT substr(name, 8) FROM " + n.meta + " WHERE " + paused_rows_where + " ORDER BY name");
    std::vector<std::string> pools;
    for (int i = 0; i < r.rows(); ++i) pools.push_back(r.text(i, 0));
    return pools;
}

StoreStats read_stats(Connection& c, const Names& n) {
    StoreStats stats;
    stats.schema_version = verify(c, n);
    Result counts = c.exec("SELECT status, count(*) FROM " + n.tasks + " GROUP BY status ORDER BY status");
    for (int i = 0; i < counts.rows(); ++i) {
        stats.tasks_by_status[counts.text(i, 0)] = counts.int64(i, 1);
        stats.tasks += counts.int64(i, 1);
    }
    stats.recurring = c.exec("SELECT count(*) FROM " + n.recurring).int64(0, 0);
    stats.paused_pools = paused_pools(c, n);
    stats.marks = read_marks(c, n, "default");
    stats.shards = read_shard_map(c, n);
    Result leader = c.exec("SELECT epoch, holder, backend_pid, CASE WHEN isfinite(expires_at) THEN "
                           "(extract(epoch FROM expires_at) * 1000000)::bigint * 1000 ELSE 0 END FROM " +
                           n.leader + " WHERE shard = 'default'");
    if (leader.rows() == 1) {
        stats.leader.epoch = static_cast<std::uint64_t>(leader.int64(0, 0));
        stats.leader.holder = leader.optional_text(0, 1);
        if (!leader.is_null(0, 2)) stats.leader.backend_pid = leader.int64(0, 2);
        stats.leader.expires_at = from_stored(leader.int64(0, 3));
    }
    return stats;
}

}  // namespace cronoq::store::postgres
