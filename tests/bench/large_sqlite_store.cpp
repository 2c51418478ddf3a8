// See large_sqlite_store.hpp.
#include "large_sqlite_store.hpp"

#include <sqlite3.h>

#include <stdexcept>
#include <string>

namespace cronoq_bench {

namespace {

void exec(sqlite3* db, const std::string& sql) {
    char* message = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
        const std::string what = message ? message : "?";
        sqlite3_free(message);
        throw std::runtime_error("large_sqlite_store: " + what + " in " + sql);
    }
}

}  // namespace

std::shared_ptr<cronoq::SqliteStore> build_large_store(const std::filesystem::path& file, std::int64_t rows, std::int64_t first_ns) {
    cronoq::SqliteStore::open(file);  // the schema, at the current version
    sqlite3* db = nullptr;
    if (sqlite3_open(file.c_str(), &db) != SQLITE_OK) throw std::runtime_error("large_sqlite_store: cannot open " + file.string());
    exec(db, "PRAGMA synchronous=OFF; PRAGMA cache_size=-1000000; BEGIN");
    exec(db, R"sql(
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < )sql" + std::to_string(rows) + R"sql()
INSERT INTO tasks (id, key, pool, kind, status, attempt, last_error, submitted_at, updated_at, run_at, options,
                   payload, output)
SELECT i,
       CASE WHEN i % 10 = 0 THEN 'key-' || i END,
       'pool-' || (i % 8),
       'kind-' || (i % 5),
       CASE WHEN i % 200 = 7 THEN 'ready' WHEN i % 200 = 8 THEN 'running'
            WHEN i % 100 = 3 THEN 'dead_lettered' WHEN i % 100 = 4 THEN 'failed' ELSE 'succeeded' END,
       1, '', )sql" + std::to_string(first_ns) + R"sql( + i * 1000000, )sql" + std::to_string(first_ns) + R"sql( + i * 1000000, NULL,
       '{"v":1,"priority":2}', 'payload-' || i, NULL
FROM n
)sql");
    exec(db, "UPDATE meta SET value = " + std::to_string(rows + 1) + " WHERE name = 'next_task_id'; COMMIT");
    sqlite3_close(db);
    return cronoq::SqliteStore::open(file);
}

}  // namespace cronoq_bench
