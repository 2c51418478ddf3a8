// Clients of a PostgreSQL store (docs/postgres.md, "Clients"). A submit is
// one transaction of two round trips: the key locks, the key look-ups, the
// inbox lock and the client ids in one pipeline; the rows, the inbox
// entries, the notification and COMMIT in a second.
//
// Key races: each key's advisory transaction lock (a hash of the schema
// and the key), taken in the order of their hashes so that two clients
// never wait on each other in a cycle, makes a second client with the key
// look it up only once the first committed (READ COMMITTED: each look-up
// sees what was committed before it).
//
// Commit order: a bigserial is handed out when a row is inserted, not when
// its transaction commits. Every transaction that adds inbox entries takes
// the schema's inbox lock first and holds it until it commits, so entries
// are numbered, and become visible, one transaction after the other: a
// reader that sees an entry sees every entry of a lower seq that will ever
// commit.
#include "client_access.hpp"

#include "store_impl.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace cronoq::store::postgres {

using std::chrono::system_clock;

namespace {

/// An entry's shard, for the record (`cronoq-store`), over the task id `t`:
/// the shard that claimed the task's pool, "" when none has yet. Leaders
/// take entries by the shard of the task's pool when they read
/// (docs/store.md, "Shards").
std::string shard_of_task_sql(const Names& n) {
    return "coalesce((SELECT p.shard FROM " + n.shard_pools + " p JOIN " + n.tasks +
           " k ON k.pool = p.pool WHERE k.id = t), '')";
}

/// FNV-1a: a stable 64-bit advisory lock key.
std::int64_t hash_of(const std::string& text) {
    std::uint64_t hash = 14695981039346656037ull;
    for (const unsigned char c : text) {
        hash ^= c;
        hash *= 1099511628211ull;
    }
    return static_cast<std::int64_t>(hash);
}

/// `{1,2,3}`: a bigint[] in its text form.
std::string array_of(const std::vector<std::int64_t>& values) {
    std::string out = "{";
    for (const std::int64_t v : values) {
        if (out.size() > 1) out += ',';
        out += std::to_string(v);
    }
    out += '}';
    return out;
}

}  // namespace

PostgresClientAccess::PostgresClientAccess(std::string conninfo, const Names& names,
                                           std::chrono::nanoseconds connect_timeout)
    : conninfo_(std::move(conninfo)), names_(names), connect_timeout_(connect_timeout),
      inbox_lock_(hash_of("cronoq:" + names.schema + ":inbox")) {}

PostgresClientAccess::~PostgresClientAccess() = default;

Connection& PostgresClientAccess::connection() const {
    // A connection the server dropped is replaced (one attempt per call).
    if (!connection_ || !connection_->alive()) {
        connection_.reset();
        connection_ = std::make_unique<Connection>(conninfo_, connect_timeout_);
    }
    return *connection_;
}

std::vector<ClientSubmitted> PostgresClientAccess::submit_rows(std::vector<TaskRow> rows, std::optional<TaskId> old) {
    check_client_rows(rows);
    const Names& n = names_;
    std::vector<std::string> keys;
    for (const TaskRow& row : rows)
        if (row.key) keys.push_back(*row.key);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    std::vector<std::int64_t> locks;
    for (const std::string& key : keys) locks.push_back(hash_of("cronoq:" + n.schema + ":key:" + key));
    std::sort(locks.begin(), locks.end());
    locks.erase(std::unique(locks.begin(), locks.end()), locks.end());

    std::lock_guard lock(mutex_);
    Connection& c = connection();
    std::vector<Query> first{{"BEGIN", {}}};
    if (!locks.empty())
        first.push_back(Query{"SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k", {Param(array_of(locks))}});
    // After the key's lock, before its look-up: the key of a retried task
    // is free for its retry.
    if (old) first.push_back(Query{"UPDATE " + n.tasks + " SET key = NULL WHERE id = $1", {Param(to_int64(old->value))}});
    const std::size_t looked_up = first.size();
    for (const std::string& key : keys)
        first.push_back(Query{"SELECT id, status, updated_at FROM " + n.tasks + " WHERE key = $1 ORDER BY id DESC LIMIT 1",
                              {Param(key)}});
    first.push_back(Query{"SELECT max(retention) FROM " + n.shard_config, {}});
    first.push_back(Query{"SELECT pg_advisory_xact_lock($1::bigint)", {Param(inbox_lock_)}});
    // Ids for every row, those whose key resolves included: the range is
    // large, and one round trip fewer is worth more than dense ids.
    first.push_back(Query{"UPDATE " + n.meta + " SET value = value + $1::bigint WHERE name = 'next_client_id' "
                          "RETURNING value - $1::bigint",
                          {Param(static_cast<std::int64_t>(rows.size()))}});
    return rolling_back(c, [&] {
        const std::vector<Result> results = c.pipeline(first);
        const Result& retention_result = results[results.size() - 3];
        std::optional<std::chrono::nanoseconds> retention;
        if (!retention_result.is_null(0, 0)) retention = std::chrono::nanoseconds(retention_result.int64(0, 0));
        const Result& ids = results.back();
        if (ids.rows() != 1) {
            std::string what = "the PostgreSQL schema " + n.schema;
            what += " is damaged: its meta row next_client_id is missing";
            throw StoreError(StoreErrorKind::Corrupt, what);
        }
        std::int64_t next = ids.int64(0, 0);
        const WallTime now = system_clock::now();
        std::unordered_map<std::string, TaskId> held;
        for (std::size_t i = 0; i < keys.size(); ++i) {
            const Result& r = results[looked_up + i];
            if (r.rows() == 1 && key_holds(r.text(0, 1), from_stored(r.int64(0, 2)), retention, now))
                held.emplace(keys[i], TaskId{static_cast<std::uint64_t>(r.int64(0, 0))});
        }
        std::vector<ClientSubmitted> out;
        out.reserve(rows.size());
        std::vector<Change> inserts;
        std::vector<std::int64_t> queued;
        for (TaskRow& row : rows) {
            if (row.key)
                if (const auto it = held.find(*row.key); it != held.end()) {
                    out.push_back(ClientSubmitted{it->second, false});
                    continue;
                }
            row.id = TaskId{static_cast<std::uint64_t>(next++)};
            if (row.key) held.emplace(*row.key, row.id);
            out.push_back(ClientSubmitted{row.id, true});
            queued.push_back(to_int64(row.id.value));
            inserts.emplace_back(TaskInserted{std::move(row)});
        }
        std::vector<Query> second;
        if (!inserts.empty()) {
            ChangeStatements statements(n, second);
            for (const Change& change : inserts) statements.add(change);
            statements.finish();
            // Numbered in the order of the rows.
            second.push_back(Query{"INSERT INTO " + n.inbox +
                                       " (op, task_id, shard, committed_at) SELECT 'submit', t, " +
                                       shard_of_task_sql(n) +
                                       ", $2 FROM unnest($1::bigint[]) WITH ORDINALITY AS u(t, o) ORDER BY o",
                                   {Param(array_of(queued)), Param(to_stored(now))}});
            second.push_back(Query{"SELECT pg_notify('cronoq_inbox', $1)", {Param(n.schema)}});
        }
        second.push_back(Query{"COMMIT", {}});
        c.pipeline(second);
        return out;
    });
}

bool PostgresClientAccess::cancel(const TaskRef& task) {
    if (!task.id && !task.key) return false;
    const Names& n = names_;
    std::lock_guard lock(mutex_);
    Connection& c = connection();
    std::string find = "SELECT id, status FROM " + n.tasks;
    find += task.id ? " WHERE id = $1" : " WHERE key = $1 ORDER BY id DESC LIMIT 1";
    const Param ref = task.id ? Param(to_int64(task.id->value)) : Param(*task.key);
    std::vector<Query> first{{"BEGIN", {}},
                             {"SELECT pg_advisory_xact_lock($1::bigint)", {Param(inbox_lock_)}},
                             {find, {ref}}};
    return rolling_back(c, [&] {
        const std::vector<Result> results = c.pipeline(first);
        const Result& row = results.back();
        const auto status = row.rows() == 1 ? status_from_string(row.text(0, 1)) : std::nullopt;
        if (row.rows() != 1 || (status && is_terminal(*status))) {
            c.exec("ROLLBACK");
            return false;
        }
        c.pipeline({Query{"INSERT INTO " + n.inbox + " (op, task_id, shard, committed_at) SELECT 'cancel', t, " +
                              shard_of_task_sql(n) + ", $2 FROM (SELECT $1::bigint AS t) AS u",
                          {Param(row.int64(0, 0)), Param(to_stored(system_clock::now()))}},
                    Query{"SELECT pg_notify('cronoq_inbox', $1)", {Param(n.schema)}}, Query{"COMMIT", {}}});
        return true;
    });
}

void PostgresClientAccess::set_paused(const std::string& pool, bool paused) {
    if (pool.empty()) throw std::invalid_argument("ClientAccess::set_paused: no pool");
    const Names& n = names_;
    std::lock_guard lock(mutex_);
    Connection& c = connection();
    const std::string op = inbox_op_text(paused ? InboxEntry::Op::Pause : InboxEntry::Op::Resume, pool);
    rolling_back(c, [&] {
        c.pipeline({Query{"BEGIN", {}}, Query{"SELECT pg_advisory_xact_lock($1::bigint)", {Param(inbox_lock_)}},
                    Query{"INSERT INTO " + n.inbox + " (op, task_id, shard, committed_at) VALUES ($1, 0, " +
                              "coalesce((SELECT shard FROM " + n.shard_pools + " WHERE pool = $2), ''), $3)",
                          {Param(op), Param(pool), Param(to_stored(system_clock::now()))}},
                    Query{"SELECT pg_notify('cronoq_inbox', $1)", {Param(n.schema)}}, Query{"COMMIT", {}}});
    });
}

std::vector<std::pair<TaskId, TaskStatus>> PostgresClientAccess::ended(const std::vector<TaskId>& ids) const {
    std::vector<std::pair<TaskId, TaskStatus>> out;
    if (ids.empty()) return out;
    std::vector<std::int64_t> values;
    values.reserve(ids.size());
    for (const TaskId& id : ids) values.push_back(to_int64(id.value));
    std::string sql = "SELECT id, status FROM " + names_.tasks;
    sql += " WHERE id = ANY($1::bigint[]) AND status IN " + terminal_status_list();
    std::lock_guard lock(mutex_);
    Result r = connection().exec(sql, {Param(array_of(values))});
    for (int i = 0; i < r.rows(); ++i)
        if (const auto status = status_from_string(r.text(i, 1)))
            out.emplace_back(TaskId{static_cast<std::uint64_t>(r.int64(i, 0))}, *status);
    return out;
}

std::vector<ShardConfig> PostgresClientAccess::configs() const {
    std::lock_guard lock(mutex_);
    return read_configs(connection(), names_);
}

std::unique_ptr<ChangeWatch> PostgresClientAccess::watch() {
    return std::make_unique<PostgresChangeWatch>(conninfo_, names_.schema, connect_timeout_);
}

}  // namespace cronoq::store::postgres
