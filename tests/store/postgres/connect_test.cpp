// PostgreSQL only: the schema checks at connect, a server that cannot be
// reached, and connects that race to create one schema.
#include "pg_support.hpp"

#include <cronoq/config_error.hpp>
#include <cronoq/store/client_access.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace cronoq::test::connect_test {
namespace {

/// Takes a schema of version 4 back to version 3 as that version wrote it:
/// one leader row (id 1), no pools' shards, schedules without a shard.
std::string v4_to_v3(const std::string& q) {
    return "CREATE TABLE " + q + ".leader_v3 (id integer PRIMARY KEY CHECK (id = 1), epoch bigint NOT NULL, holder "
           "text, backend_pid integer, expires_at timestamptz NOT NULL); INSERT INTO " + q +
           ".leader_v3 SELECT 1, epoch, holder, backend_pid, expires_at FROM " + q +
           ".leader WHERE shard = 'default'; DROP TABLE " + q + ".leader; ALTER TABLE " + q +
           ".leader_v3 RENAME TO leader; DROP TABLE " + q + ".shard_pools; ALTER TABLE " + q +
           ".recurring DROP COLUMN shard; UPDATE " + q + ".meta SET value = 3 WHERE name = 'schema_version'";
}

using namespace std::chrono_literals;

class PgConnect : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(pg_conninfo().empty()) << "CRONOQ_TEST_PG is not set: run through ctest (label postgres)";
    }
};

std::shared_ptr<PostgresStore> connect(const PgSchema& schema) {
    return PostgresStore::connect(pg_conninfo(), schema.config());
}

TEST_F(PgConnect, SchemaChecksAtConnect) {
    PgSchema schema;
    RawPg raw;
    raw.exec("CREATE SCHEMA \"" + schema.name() + "\"");
    raw.exec("CREATE TABLE \"" + schema.name() + "\".orders (id int)");
    try {
        connect(schema);
        FAIL() << "a schema of another application was accepted";
    } catch (const StoreError& error) {
        EXPECT_EQ(error.kind(), StoreErrorKind::Corrupt) << error.what();
        EXPECT_NE(std::string(error.what()).find("not a cronoq store"), std::string::npos) << error.what();
    }
    raw.exec("DROP TABLE \"" + schema.name() + "\".orders");
    // An empty schema (made by an administrator) is initialised.
    { auto store = connect(schema); }
    { auto again = connect(schema); }  // and a current one opened again
    raw.exec("UPDATE \"" + schema.name() + "\".meta SET value = 99 WHERE name = 'schema_version'");
    try {
        connect(schema);
        FAIL() << "a newer schema was accepted";
    } catch (const StoreError& error) {
        EXPECT_EQ(error.kind(), StoreErrorKind::SchemaTooNew) << error.what();
    }
}

// Schema version 2 added fair keys and the query indexes (docs/store.md,
// "Queries"): a version 1 store migrates at connect and keeps its rows.
TEST_F(PgConnect, ASchemaOfVersionOneMigratesAndKeepsItsRows) {
    PgSchema schema;
    ASSERT_TRUE(commit_and_close(connect(schema), {insert_batch(1), insert_batch(2)}));
    RawPg raw;
    const std::string q = "\"" + schema.name() + "\"";
    raw.exec(v4_to_v3(q));
    raw.exec("DROP INDEX " + q + ".tasks_by_pool; DROP INDEX " + q +
             ".tasks_by_fair_key; ALTER TABLE " + q + ".tasks DROP COLUMN fair_key; DROP TABLE " + q +
             ".inbox; DROP TABLE " + q + ".shard_config; DELETE FROM " + q +
             ".meta WHERE name = 'next_client_id'; UPDATE " + q + ".meta SET value = 1 WHERE name = 'schema_version'");
    auto store = connect(schema);
    EXPECT_EQ(raw.number("SELECT value FROM " + q + ".meta WHERE name = 'schema_version'"), 4);
    EXPECT_EQ(raw.number("SELECT count(*) FROM pg_indexes WHERE schemaname = '" + schema.name() +
                            "' AND indexname IN ('tasks_by_pool', 'tasks_by_fair_key')"),
              2);
    const TaskPage page = store->query({});
    ASSERT_EQ(page.tasks.size(), 2u);
    EXPECT_EQ(page.tasks[0].id, TaskId{2});
    EXPECT_FALSE(page.tasks[0].fair_key);
}

// Schema version 3 added the clients' tables (docs/postgres.md, "Clients"):
// a version 2 store migrates at connect, keeps its rows, and hands client
// ids out from the client range.
TEST_F(PgConnect, ASchemaOfVersionTwoMigratesToThree) {
    PgSchema schema;
    ASSERT_TRUE(commit_and_close(connect(schema), {insert_batch(1)}));
    RawPg raw;
    const std::string q = "\"" + schema.name() + "\"";
    raw.exec(v4_to_v3(q));
    raw.exec("DROP TABLE " + q + ".inbox; DROP TABLE " + q + ".shard_config; DELETE FROM " + q +
             ".meta WHERE name = 'next_client_id'; UPDATE " + q + ".meta SET value = 2 WHERE name = 'schema_version'");
    auto store = connect(schema);
    EXPECT_EQ(raw.number("SELECT value FROM " + q + ".meta WHERE name = 'schema_version'"), 4);
    EXPECT_EQ(raw.number("SELECT value FROM " + q + ".meta WHERE name = 'next_client_id'"),
              static_cast<std::int64_t>(store::first_client_task_id));
    expect_clients_after_migration(*store);
}

// Schema version 4 made shards (docs/store.md, "Shards"): a version 3
// schema migrates at connect; its one leader row becomes the "default"
// shard's, its epoch and marks kept.
TEST_F(PgConnect, ASchemaOfVersionThreeMigratesToFourKeepingItsLeaseAsTheDefaultShards) {
    PgSchema schema;
    const store::Batch marks{{store::HighWaterMarks{4096, 77}}};
    ASSERT_TRUE(commit_and_close(connect(schema), {insert_batch(1), marks}));
    RawPg raw;
    const std::string q = "\"" + schema.name() + "\"";
    raw.exec(v4_to_v3(q));
    raw.exec("UPDATE " + q + ".leader SET epoch = 6; INSERT INTO " + q +
             ".recurring (name, definition) VALUES ('nightly', 'd')");
    ASSERT_EQ(raw.number("SELECT epoch FROM " + q + ".leader WHERE id = 1"), 6);
    Reports reports;  // outlives the store, whose destruction reports to it
    auto store = connect(schema);
    EXPECT_EQ(raw.number("SELECT value FROM " + q + ".meta WHERE name = 'schema_version'"), 4);
    EXPECT_EQ(raw.number("SELECT epoch FROM " + q + ".leader WHERE shard = 'default'"), 6);
    EXPECT_EQ(raw.number("SELECT count(*) FROM " + q + ".shard_pools"), 0);
    expect_takes_over_the_v3_lease(*store, reports);
}

TEST_F(PgConnect, UnreachableServerFailsAfterTheConnectTimeout) {
    PostgresStoreConfig config;
    config.connect_timeout = 300ms;
    const auto start = std::chrono::steady_clock::now();
    try {
        PostgresStore::connect("host=/nonexistent-cronoq-socket-dir dbname=x user=postgres", config);
        FAIL() << "connected to nothing";
    } catch (const StoreError& error) {
        EXPECT_EQ(error.kind(), StoreErrorKind::Io) << error.what();
    }
    EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms) << "it retried until the timeout";
}

TEST_F(PgConnect, ASchemaNamePostgresqlWouldTruncateIsAConfigError) {
    PgSchema schema;
    RawPg raw;
    ASSERT_EQ(raw.number("SELECT current_setting('max_identifier_length')::int"), 63);
    // Two names that differ only past byte 63: one schema to PostgreSQL,
    // two advisory locks to the stores.
    const std::string common = schema.name() + std::string(63 - schema.name().size(), 'x');
    for (const std::string& name : {common + "a", common + "b"}) {
        PostgresStoreConfig config = schema.config();
        config.schema = name;
        try {
            PostgresStore::connect(pg_conninfo(), config);
            FAIL() << "a schema name of " << name.size() << " bytes was accepted";
        } catch (const ConfigError& error) {
            EXPECT_NE(std::string(error.what()).find("at most 63 bytes"), std::string::npos) << error.what();
        }
    }
    EXPECT_EQ(raw.number("SELECT count(*) FROM pg_namespace WHERE nspname = '" + common + "'"), 0)
        << "the refused name's truncation was created";
    // 63 bytes is a name PostgreSQL keeps whole.
    PostgresStoreConfig config = schema.config();
    config.schema = common;
    EXPECT_NO_THROW(PostgresStore::connect(pg_conninfo(), config));
    EXPECT_EQ(raw.number("SELECT count(*) FROM pg_namespace WHERE nspname = '" + common + "'"), 1);
    raw.exec("DROP SCHEMA IF EXISTS \"" + common + "\" CASCADE");
}

TEST_F(PgConnect, ConcurrentConnectsMigrateOnce) {
    PgSchema schema;
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int i = 0; i < 4; ++i)
        threads.emplace_back([&] {
            try {
                connect(schema);
            } catch (const StoreError&) {
                ++failures;
            }
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace cronoq::test::connect_test
