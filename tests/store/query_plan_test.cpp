// The SQLite store's schema for queries (docs/store.md, "Queries"): a store
// of schema version 1 migrates to 2 at open and keeps its rows, and each
// walk of a query reads an index in id order, so that a page costs the
// same on a store of any size (no sort of every match).
#include "store_support.hpp"
#include "task_query_plan.hpp"

#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

#include <sqlite3.h>

namespace cronoq::test::query_plan_test {
namespace {

/// EXPLAIN QUERY PLAN's lines for `sql`, its parameters bound to 1 / "x".
std::string plan_of(RawDb& db, const store::WalkSql& walk) {
    sqlite3_stmt* statement = nullptr;
    const std::string sql = "EXPLAIN QUERY PLAN " + walk.sql;
    EXPECT_EQ(sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &statement, nullptr), SQLITE_OK) << sql;
    for (std::size_t i = 0; i < walk.params.size(); ++i) {
        const int at = static_cast<int>(i + 1);
        if (const auto* n = std::get_if<std::int64_t>(&walk.params[i])) sqlite3_bind_int64(statement, at, *n);
        else sqlite3_bind_text(statement, at, std::get<std::string>(walk.params[i]).c_str(), -1, SQLITE_TRANSIENT);
    }
    std::string out;
    while (sqlite3_step(statement) == SQLITE_ROW)
        out += reinterpret_cast<const char*>(sqlite3_column_text(statement, 3)) + std::string("\n");
    sqlite3_finalize(statement);
    return out;
}

TEST(SqliteQueryPlan, EveryWalkReadsAnIndexInIdOrder) {
    ScratchDir dir;
    SqliteStore::open(dir.file("s.db"));
    RawDb db(dir.file("s.db"));
    const std::vector<TaskQuery> queries{
        {},
        {.statuses = {TaskStatus::DeadLettered}},
        {.statuses = {TaskStatus::DeadLettered, TaskStatus::Failed}, .cursor = "100"},
        {.pool = "p"},
        {.statuses = {TaskStatus::Ready}, .pool = "p", .kind = "k", .cursor = "100"},
        {.statuses = {TaskStatus::Ready}, .key_prefix = "a", .submitted_after = std::chrono::system_clock::now()},
    };
    for (const TaskQuery& query : queries) {
        const store::TaskQueryPlan plan(query);
        EXPECT_EQ(plan.needs_pools(), !query.statuses.empty() && !query.pool);
        const auto walks = plan.walks(store::SqlDialect::Sqlite, "tasks", "id, key", {"p", "q"});
        EXPECT_FALSE(walks.empty());
        for (const store::WalkSql& walk : walks) {
            const std::string lines = plan_of(db, walk);
            EXPECT_EQ(lines.find("TEMP B-TREE"), std::string::npos) << walk.sql << "\n" << lines;
            const char* index = query.pool || !query.statuses.empty() ? "tasks_by_pool" : "";
            EXPECT_NE(lines.find(index), std::string::npos) << walk.sql << "\n" << lines;
        }
    }
    // The pool names: index probes, not a scan of the table.
    const std::string lines = plan_of(db, store::WalkSql{store::pools_sql("tasks"), {}});
    EXPECT_NE(lines.find("tasks_by_pool"), std::string::npos) << lines;
    EXPECT_EQ(lines.find("SCAN tasks"), std::string::npos) << lines;
}

TEST(SqliteQueryPlan, AStoreOfSchemaVersionOneMigratesAndKeepsItsRows) {
    ScratchDir dir;
    const auto file = dir.file("s.db");
    ASSERT_TRUE(commit_and_close(SqliteStore::open(file), {insert_batch(1), insert_batch(2)}));
    {
        // Back to version 1 as it was written: no fair_key, no query
        // indexes, none of version 3's client tables.
        RawDb raw(file);
        raw.exec(std::string(sqlite_v4_to_v3) +
                 "DROP INDEX tasks_by_pool; DROP INDEX tasks_by_fair_key; "
                 "ALTER TABLE tasks DROP COLUMN fair_key; DROP TABLE inbox; DROP TABLE shard_config; "
                 "DELETE FROM meta WHERE name = 'next_client_id'; PRAGMA user_version = 1");
    }
    auto store = SqliteStore::open(file);
    RawDb raw(file);
    EXPECT_EQ(raw.query_int("PRAGMA user_version"), 4);
    EXPECT_EQ(raw.query_int("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name IN "
                            "('tasks_by_pool', 'tasks_by_fair_key')"),
              2);
    const TaskPage page = store->query({});
    ASSERT_EQ(page.tasks.size(), 2u);
    EXPECT_EQ(page.tasks[0].id, TaskId{2});
    EXPECT_EQ(page.tasks[0].payload, "payload-2");
    EXPECT_FALSE(page.tasks[0].fair_key);
    EXPECT_EQ(store->query({.fair_key = ""}).tasks.size(), 2u);
    EXPECT_EQ(store->query({.statuses = {TaskStatus::Ready}}).tasks.size(), 2u);
}

}  // namespace
}  // namespace cronoq::test::query_plan_test
