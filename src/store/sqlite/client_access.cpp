// Clients of a SQLite store (docs/store.md, "Clients"): key resolution, ids
// from the client range and inbox entries in one write transaction, and a
// watch over the file's data version.
#include "client_access.hpp"

#include "../stored_values.hpp"
#include "inbox.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace cronoq::store::sqlite {

using std::chrono::system_clock;

namespace {

/// An entry's shard, for the record (`cronoq-store`): the shard that
/// claimed the task's pool, "" when none has yet. Leaders take entries by
/// the shard of the task's pool when they read (docs/store.md, "Shards").
constexpr const char* queue_sql =
    "INSERT INTO inbox (op, task_id, shard, committed_at) "
    "VALUES (?1, ?2, coalesce((SELECT shard FROM shard_pools WHERE pool = ?3), ''), ?4)";

/// The longest retention any shard's leader wrote, or none before any led.
/// With one shard it is that shard's; a key resolves "whatever its pool or
/// shard" (docs/store.md, "Clients").
std::optional<std::chrono::nanoseconds> written_retention(Connection& c) {
    Statement statement(c, "SELECT max(retention) FROM shard_config");
    if (!statement.step() || statement.is_null(0)) return std::nullopt;
    return std::chrono::nanoseconds(statement.int64(0));
}

}  // namespace

SqliteClientAccess::SqliteClientAccess(std::filesystem::path file, std::chrono::milliseconds busy)
    : file_(std::move(file)), busy_(busy) {}

SqliteClientAccess::~SqliteClientAccess() {
    writer_.reset();  // its statements before their connection
}

Connection& SqliteClientAccess::connection() const {
    if (!connection_) connection_ = std::make_unique<Connection>(file_, Connection::Mode::ReadWrite, busy_);
    return *connection_;
}

std::vector<ClientSubmitted> SqliteClientAccess::submit_rows(std::vector<TaskRow> rows, std::optional<TaskId> old) {
    check_client_rows(rows);
    std::lock_guard lock(mutex_);
    Connection& c = connection();
    // BEGIN IMMEDIATE: the write lock from the start, so no other writer
    // (client or leader) commits a key or an id between the reads and the
    // inserts.
    WriteTransaction transaction(c);
    if (!writer_) writer_.emplace(c, "default");
    // Before the look-ups: the key of a retried task is free for its retry.
    if (old) writer_->apply(TaskKeyReleased{*old});
    const auto retention = written_retention(c);
    const WallTime now = system_clock::now();
    Statement by_key(c, "SELECT id, status, updated_at FROM tasks WHERE key = ?1 ORDER BY id DESC LIMIT 1");
    Statement queue(c, queue_sql);
    std::int64_t next = c.query_int("SELECT value FROM meta WHERE name = 'next_client_id'");
    std::unordered_map<std::string, TaskId> keys;  // those this call resolved or inserted
    std::vector<ClientSubmitted> out;
    out.reserve(rows.size());
    for (TaskRow& row : rows) {
        if (row.key) {
            if (const auto it = keys.find(*row.key); it != keys.end()) {
                out.push_back(ClientSubmitted{it->second, false});
                continue;
            }
            by_key.bind(1, *row.key);
            std::optional<TaskId> held;
            if (by_key.step() && key_holds(by_key.text(1), from_stored(by_key.int64(2)), retention, now))
                held = TaskId{static_cast<std::uint64_t>(by_key.int64(0))};
            by_key.reset();
            if (held) {
                keys.emplace(*row.key, *held);
                out.push_back(ClientSubmitted{*held, false});
                continue;
            }
        }
        row.id = TaskId{static_cast<std::uint64_t>(next++)};
        if (row.key) keys.emplace(*row.key, row.id);
        const TaskId id = row.id;
        const std::string pool = row.pool;
        writer_->apply(TaskInserted{std::move(row)});
        queue.bind(1, std::string_view("submit")).bind(2, to_int64(id.value)).bind(3, pool).bind(4, to_stored(now)).run();
        out.push_back(ClientSubmitted{id, true});
    }
    Statement bump(c, "UPDATE meta SET value = ?1 WHERE name = 'next_client_id'");
    bump.bind(1, next).run();
    transaction.commit();
    return out;
}

bool SqliteClientAccess::cancel(const TaskRef& task) {
    std::lock_guard lock(mutex_);
    Connection& c = connection();
    WriteTransaction transaction(c);
    const auto row = find_task(c, task);
    if (!row || is_terminal(row->status)) return false;  // rolled back: nothing queued
    Statement queue(c, queue_sql);
    queue.bind(1, std::string_view("cancel")).bind(2, to_int64(row->id.value)).bind(3, row->pool);
    queue.bind(4, to_stored(system_clock::now())).run();
    transaction.commit();
    return true;
}

void SqliteClientAccess::set_paused(const std::string& pool, bool paused) {
    if (pool.empty()) throw std::invalid_argument("ClientAccess::set_paused: no pool");
    std::lock_guard lock(mutex_);
    Connection& c = connection();
    WriteTransaction transaction(c);
    // No task: task_id 0, and the entry's shard is the pool's.
    Statement queue(c, queue_sql);
    queue.bind(1, inbox_op_text(paused ? InboxEntry::Op::Pause : InboxEntry::Op::Resume, pool));
    queue.bind(2, std::int64_t{0}).bind(3, pool).bind(4, to_stored(system_clock::now())).run();
    transaction.commit();
}

std::vector<std::pair<TaskId, TaskStatus>> SqliteClientAccess::ended(const std::vector<TaskId>& ids) const {
    std::vector<std::pair<TaskId, TaskStatus>> out;
    if (ids.empty()) return out;
    // One statement whatever the count: the ids as one JSON array.
    std::string list = "[";
    for (const TaskId& id : ids) {
        if (list.size() > 1) list += ',';
        list += std::to_string(to_int64(id.value));
    }
    list += ']';
    const std::string sql = "SELECT id, status FROM tasks WHERE id IN (SELECT value FROM json_each(?1)) AND status IN " +
                            terminal_status_list();
    std::lock_guard lock(mutex_);
    Statement statement(connection(), sql.c_str());
    statement.bind(1, list);
    while (statement.step())
        if (const auto status = status_from_string(statement.text(1)))
            out.emplace_back(TaskId{static_cast<std::uint64_t>(statement.int64(0))}, *status);
    return out;
}

std::vector<ShardConfig> SqliteClientAccess::configs() const {
    std::lock_guard lock(mutex_);
    return read_configs(connection());
}

std::unique_ptr<ChangeWatch> SqliteClientAccess::watch() { return std::make_unique<SqliteChangeWatch>(file_, busy_); }

SqliteChangeWatch::SqliteChangeWatch(const std::filesystem::path& file, std::chrono::milliseconds busy)
    : connection_(file, Connection::Mode::ReadWrite, busy), data_version_(connection_, "PRAGMA data_version"),
      seen_(version()) {}

std::int64_t SqliteChangeWatch::version() {
    data_version_.step();
    const std::int64_t value = data_version_.int64(0);
    data_version_.reset();
    return value;
}

bool SqliteChangeWatch::wait(std::chrono::milliseconds timeout) {
    // One read of the WAL index per millisecond: cheap, and a commit of
    // another process is seen within about that.
    constexpr auto poll = std::chrono::milliseconds(1);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const std::int64_t now = version();
        if (now != seen_) {
            seen_ = now;
            return true;
        }
        std::unique_lock lock(mutex_);
        const auto until = std::min(deadline, std::chrono::steady_clock::now() + poll);
        if (woken_.wait_until(lock, until, [&] { return interrupted_; })) {
            interrupted_ = false;
            return false;
        }
        if (std::chrono::steady_clock::now() >= deadline) return false;
    }
}

void SqliteChangeWatch::interrupt() {
    std::lock_guard lock(mutex_);
    interrupted_ = true;
    woken_.notify_all();
}

}  // namespace cronoq::store::sqlite
