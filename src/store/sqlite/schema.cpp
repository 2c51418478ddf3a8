#include "schema.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace cronoq::store::sqlite {

namespace {

// Version 1. Times are nanoseconds since the Unix epoch (wall clock);
// statuses are their stable names ("dead_lettered"), readable with the
// sqlite3 shell and independent of the enum's order.
constexpr const char* schema_v1 = R"sql(
CREATE TABLE tasks (
    id INTEGER PRIMARY KEY,
    key TEXT,
    pool TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    last_error TEXT NOT NULL,
    submitted_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    run_at INTEGER,
    options TEXT NOT NULL,
    payload BLOB NOT NULL,
    output BLOB
);
CREATE INDEX tasks_by_key ON tasks (key) WHERE key IS NOT NULL;
CREATE INDEX tasks_by_status ON tasks (status, updated_at);
CREATE TABLE recurring (
    name TEXT PRIMARY KEY,
    definition TEXT NOT NULL,
    last_fired INTEGER
);
CREATE TABLE meta (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT INTO meta (name, value) VALUES ('next_task_id', 0), ('next_lease_id', 0);
CREATE TABLE leader (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    epoch INTEGER NOT NULL,
    holder TEXT,
    expires_at INTEGER NOT NULL
);
INSERT INTO leader (id, epoch, holder, expires_at) VALUES (1, 0, NULL, 0);
)sql";

// Version 2: fair keys (a nullable column, docs/store.md "Queries") and the
// index that keeps a page of `Store::query` cheap on a large store: each
// walk of one pool's status reads it newest first and stops after a page.
// One index, not also (status, id): each costs the writer on every
// transition.
constexpr const char* migrate_v1_to_v2 = R"sql(
ALTER TABLE tasks ADD COLUMN fair_key TEXT;
CREATE INDEX tasks_by_pool ON tasks (pool, status, id);
CREATE INDEX tasks_by_fair_key ON tasks (fair_key, id) WHERE fair_key IS NOT NULL;
)sql";

// Version 3: clients (docs/store.md, "Clients"). `inbox` holds what
// clients committed for a leader, in commit order (one writer at a time;
// AUTOINCREMENT never hands a taken seq out again, so a leader never
// mistakes a new entry for one it holds); `shard_config` what each shard's
// leader wrote; `next_client_id` the next id of the client range (2^48).
constexpr const char* migrate_v2_to_v3 = R"sql(
CREATE TABLE inbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    op TEXT NOT NULL,
    task_id INTEGER NOT NULL,
    shard TEXT NOT NULL,
    committed_at INTEGER NOT NULL
);
CREATE TABLE shard_config (
    shard TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    retention INTEGER NOT NULL,
    written_at INTEGER NOT NULL
);
INSERT INTO meta (name, value) VALUES ('next_client_id', 281474976710656);
)sql";

// Version 4: shards (docs/store.md, "Shards"). The leader row becomes one
// row per shard, each with its own epoch and lease, and the base of the
// shard's range of ids (its high-water marks live in `meta` under names of
// their own, the "default" shard's under the old ones); `shard_pools` says
// which shard's leader claimed each pool; a recurring schedule belongs to
// the shard that put it.
constexpr const char* migrate_v3_to_v4 = R"sql(
CREATE TABLE leader_v4 (
    shard TEXT PRIMARY KEY,
    epoch INTEGER NOT NULL,
    holder TEXT,
    expires_at INTEGER NOT NULL,
    id_base INTEGER NOT NULL
);
INSERT INTO leader_v4 (shard, epoch, holder, expires_at, id_base)
    SELECT 'default', epoch, holder, expires_at, 0 FROM leader WHERE id = 1;
DROP TABLE leader;
ALTER TABLE leader_v4 RENAME TO leader;
CREATE TABLE shard_pools (
    pool TEXT PRIMARY KEY,
    shard TEXT NOT NULL
);
ALTER TABLE recurring ADD COLUMN shard TEXT NOT NULL DEFAULT 'default';
)sql";

struct Header {
    std::int64_t application_id;
    std::int64_t version;
    std::int64_t objects;
};

Header read_header(Connection& connection) {
    return Header{connection.query_int("PRAGMA application_id"), connection.query_int("PRAGMA user_version"),
                  connection.query_int("SELECT count(*) FROM sqlite_schema")};
}

/// Throws unless `header` is a cronoq store this build can read; false for
/// an empty database, which a writer initialises.
bool check(const Header& header, const Connection& connection) {
    const std::string file = connection.path().string();
    if (header.application_id == 0 && header.version == 0) {
        if (header.objects == 0) return false;
        throw StoreError(StoreErrorKind::Corrupt,
                         "not a cronoq store: " + file + " is a SQLite database of another application");
    }
    if (header.application_id != cronoq_application_id)
        throw StoreError(StoreErrorKind::Corrupt,
                         "not a cronoq store: " + file + " is a SQLite database of another application (application_id " +
                             std::to_string(header.application_id) + ")");
    if (header.version > schema_version)
        throw StoreError(StoreErrorKind::SchemaTooNew,
                         "the store " + file + " has schema version " + std::to_string(header.version) +
                             ", newer than this cronoq reads (" + std::to_string(schema_version) +
                             "): a newer cronoq migrated it; use that version");
    return true;
}

}  // namespace

void recognise(Connection& connection) {
    ReadTransaction read(connection);
    check(read_header(connection), connection);
}

void configure_writer(Connection& connection, Durability durability) {
    Statement journal(connection, "PRAGMA journal_mode=WAL");
    // Switching a new file to WAL reads its header, then writes it. When
    // another process takes the write lock in between (several processes
    // opening one new file at once), SQLite answers SQLITE_BUSY at once,
    // without waiting: waiting while holding the read lock could deadlock.
    // Having let go, this process tries again until the busy wait is over;
    // by then the other has usually switched the file, and there is
    // nothing left to write (docs/store.md, "Schema (version 4)", Opening).
    const auto give_up = std::chrono::steady_clock::now() + connection.busy();
    auto pause = std::chrono::microseconds(250);
    for (;;) {
        try {
            if (!journal.step() || journal.text(0) != "wal")
                throw StoreError(StoreErrorKind::Io, "cannot switch the store " + connection.path().string() +
                                                         " to WAL mode (is it on a network filesystem?)");
            break;
        } catch (const StoreError& error) {
            if (error.kind() != StoreErrorKind::Busy || std::chrono::steady_clock::now() >= give_up) throw;
        }
        std::this_thread::sleep_for(pause);
        pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(8));
    }
    journal.reset();
    connection.exec(durability == Durability::Full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
    // The WAL is checkpointed every 1000 pages on commit; after that it is
    // truncated back to this size, so a burst does not leave a large file.
    connection.exec("PRAGMA wal_autocheckpoint=1000; PRAGMA journal_size_limit=8388608");
    // A commit moving on tasks of earlier commits touches more pages than
    // the default cache (2 MiB) holds, and reads them again within the
    // transaction. The cache grows only as pages are used (docs/store.md,
    // "Writing a commit (SQLite)").
    connection.exec("PRAGMA cache_size=-32768");
}

void migrate(Connection& connection) {
    {
        // A current store needs no write lock: a standby opening it while
        // the leader is inside a transaction (or frozen there) does not wait.
        ReadTransaction read(connection);
        const Header header = read_header(connection);
        if (check(header, connection) && header.version == schema_version) return;
    }
    WriteTransaction transaction(connection);
    const Header header = read_header(connection);
    std::int64_t version = check(header, connection) ? header.version : 0;
    if (version == 0) {
        connection.exec(schema_v1);
        version = 1;
    }
    // Migrations from version n to n + 1, each in this transaction.
    if (version == 1) {
        connection.exec(migrate_v1_to_v2);
        version = 2;
    }
    if (version == 2) {
        connection.exec(migrate_v2_to_v3);
        version = 3;
    }
    if (version == 3) {
        connection.exec(migrate_v3_to_v4);
        version = 4;
    }
    connection.exec(("PRAGMA application_id=" + std::to_string(cronoq_application_id)).c_str());
    connection.exec(("PRAGMA user_version=" + std::to_string(version)).c_str());
    transaction.commit();
}

void check_tables(Connection& connection) {
    ReadTransaction read(connection);
    std::string missing;
    for (const char* table : {"tasks", "recurring", "meta", "leader", "inbox", "shard_config", "shard_pools"}) {
        Statement exists(connection, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1");
        if (exists.bind(1, std::string_view(table)).step()) continue;
        missing += missing.empty() ? "" : ", ";
        missing += table;
    }
    if (!missing.empty())
        throw StoreError(StoreErrorKind::Corrupt, "the store " + connection.path().string() +
                                                      " is damaged: its table(s) " + missing + " are missing");
    // Without it no process could ever take the lead: open() would wait forever.
    if (connection.query_int("SELECT count(*) FROM leader WHERE shard = 'default'") != 1)
        throw StoreError(StoreErrorKind::Corrupt,
                         "the store " + connection.path().string() + " is damaged: its leader row is missing");
}

std::int64_t verify(Connection& connection) {
    ReadTransaction transaction(connection);
    const Header header = read_header(connection);
    if (!check(header, connection))
        throw StoreError(StoreErrorKind::Corrupt,
                         "not a cronoq store: " + connection.path().string() + " is an empty SQLite database");
    if (header.version < schema_version)
        throw StoreError(StoreErrorKind::Corrupt, "the store " + connection.path().string() + " has schema version " +
                                                      std::to_string(header.version) +
                                                      ": open it with SqliteStore::open once to migrate it");
    return header.version;
}

}  // namespace cronoq::store::sqlite
