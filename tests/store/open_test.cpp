// Opening a store: creation, recognition, schema versions and the errors of
// a file or folder that cannot be used.
#include "store_support.hpp"

#include <cronoq/config_error.hpp>
#include <cronoq/store/client_access.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace cronoq::test::open_test {
namespace {

using namespace std::chrono_literals;

template <class F>
StoreError store_error_of(F&& f) {
    try {
        f();
    } catch (const StoreError& error) {
        return error;
    }
    ADD_FAILURE() << "no StoreError";
    return StoreError(StoreErrorKind::Io, "none");
}

unsigned mode_of(const std::filesystem::path& file) {
    struct stat st {};
    ::stat(file.c_str(), &st);
    return st.st_mode & 0777;
}

TEST(SqliteOpen, CreatesTheStoreReadableByItsOwnerOnly) {
    ScratchDir dir;
    const auto file = dir.file("s.db");
    Reports reports;
    auto store = SqliteStore::open(file);
    store->journal().lead(reports.handlers());
    ASSERT_TRUE(reports.wait_leading());
    ASSERT_TRUE(reports.wait_committed(store->journal().enqueue(insert_batch(1))));
    EXPECT_EQ(mode_of(file), 0600u);
    ASSERT_TRUE(std::filesystem::exists(file.string() + "-wal"));
    EXPECT_EQ(mode_of(file.string() + "-wal"), 0600u);
    EXPECT_EQ(mode_of(file.string() + "-shm"), 0600u);
    RawDb raw(file);
    EXPECT_EQ(raw.query_int("PRAGMA application_id"), 0x43524E51);
    EXPECT_EQ(raw.query_int("PRAGMA user_version"), 4);
}

// Schema version 3 added the clients' tables (docs/store.md, "Clients"): a
// version 2 store migrates at open, keeps its rows, and hands client ids
// out from the client range.
TEST(SqliteOpen, AStoreOfSchemaVersionTwoMigratesToThree) {
    ScratchDir dir;
    const auto file = dir.file("s.db");
    ASSERT_TRUE(commit_and_close(SqliteStore::open(file), {insert_batch(1)}));
    RawDb(file).exec(std::string(sqlite_v4_to_v3) +
                     "DROP TABLE inbox; DROP TABLE shard_config; DELETE FROM meta WHERE name = 'next_client_id'; "
                     "PRAGMA user_version = 2");
    auto store = SqliteStore::open(file);
    RawDb raw(file);
    EXPECT_EQ(raw.query_int("PRAGMA user_version"), 4);
    EXPECT_EQ(raw.query_int("SELECT value FROM meta WHERE name = 'next_client_id'"),
              static_cast<std::int64_t>(store::first_client_task_id));
    expect_clients_after_migration(*store);
}

// Schema version 4 made shards (docs/store.md, "Shards"): a version 3
// store migrates at open; its one leader row becomes the "default" shard's,
// epoch and marks kept, so its ids go on where they were and a standby
// fences the old epoch.
TEST(SqliteOpen, AStoreOfSchemaVersionThreeMigratesToFourKeepingItsLeaseAsTheDefaultShards) {
    ScratchDir dir;
    const auto file = dir.file("s.db");
    const store::Batch marks{{store::HighWaterMarks{4096, 77}}};
    ASSERT_TRUE(commit_and_close(SqliteStore::open(file), {insert_batch(1), marks}));
    RawDb(file).exec(std::string(sqlite_v4_to_v3) + "UPDATE leader SET epoch = 6; "
                                                     "INSERT INTO recurring (name, definition) VALUES ('nightly', 'd')");
    {
        RawDb raw(file);
        ASSERT_EQ(raw.query_int("PRAGMA user_version"), 3);
        ASSERT_EQ(raw.query_int("SELECT epoch FROM leader WHERE id = 1"), 6);
    }
    Reports reports;  // outlives the store, whose destruction reports to it
    auto store = SqliteStore::open(file);
    RawDb raw(file);
    EXPECT_EQ(raw.query_int("PRAGMA user_version"), 4);
    EXPECT_EQ(raw.query_int("SELECT epoch FROM leader WHERE shard = 'default'"), 6);
    EXPECT_EQ(raw.query_int("SELECT count(*) FROM shard_pools"), 0);
    EXPECT_EQ(raw.query_int("SELECT count(*) FROM recurring WHERE shard = 'default'"), 1);
    ASSERT_TRUE(store->get_task(TaskId{1}));
    expect_takes_over_the_v3_lease(*store, reports);
}

TEST(SqliteOpen, ReopensAnExistingStore) {
    ScratchDir dir;
    ASSERT_TRUE(commit_and_close(SqliteStore::open(dir.file("s.db")), {insert_batch(1)}));
    auto store = SqliteStore::open(dir.file("s.db"));
    ASSERT_TRUE(store->get_task(TaskId{1}));
    EXPECT_EQ(store->get_task(TaskId{1})->payload, "payload-1");
}

TEST(SqliteOpen, AFileThatIsNotADatabaseIsNotACronoqStore) {
    ScratchDir dir;
    std::ofstream(dir.file("notes.txt")) << "shopping list: tea, milk, bread, and a few more lines of text\n";
    const StoreError error = store_error_of([&] { SqliteStore::open(dir.file("notes.txt")); });
    EXPECT_EQ(error.kind(), StoreErrorKind::Corrupt);
    EXPECT_NE(std::string(error.what()).find("not a cronoq store"), std::string::npos) << error.what();
}

TEST(SqliteOpen, AnotherApplicationsDatabaseIsNotACronoqStore) {
    ScratchDir dir;
    RawDb(dir.file("app.db")).exec("CREATE TABLE users (id INTEGER PRIMARY KEY)");
    const StoreError error = store_error_of([&] { SqliteStore::open(dir.file("app.db")); });
    EXPECT_EQ(error.kind(), StoreErrorKind::Corrupt);
    EXPECT_NE(std::string(error.what()).find("not a cronoq store"), std::string::npos) << error.what();
    // Untouched: still the other application's.
    EXPECT_EQ(RawDb(dir.file("app.db")).query_int("PRAGMA application_id"), 0);
}

std::string bytes_of(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(SqliteOpen, AForeignDatabaseIsRefusedBeforeAnythingIsWritten) {
    ScratchDir dir;
    const auto file = dir.file("app.db");
    RawDb(file).exec("CREATE TABLE users (id INTEGER PRIMARY KEY); INSERT INTO users VALUES (1)");
    const std::string before = bytes_of(file);
    ASSERT_EQ(before.substr(18, 2), std::string("\x01\x01", 2));  // a rollback journal, not WAL
    const StoreError error = store_error_of([&] { SqliteStore::open(file); });
    EXPECT_EQ(error.kind(), StoreErrorKind::Corrupt) << error.what();
    const std::string after = bytes_of(file);
    EXPECT_EQ(after.substr(18, 2), before.substr(18, 2)) << "switched to WAL mode (header bytes 18-19)";
    EXPECT_TRUE(after == before) << "the refused file was changed";
}

// A table or the leader row of a cronoq store dropped by hand: refused at
// open, naming it, rather than a scheduler's open() waiting forever for a
// lead it cannot take (no leader table) or failing later as if fenced.
TEST(SqliteOpen, AStoreMissingATableOrItsLeaderRowIsCorrupt) {
    for (const std::string table : {"leader", "tasks", "meta", "recurring"}) {
        ScratchDir dir;
        SqliteStore::open(dir.file("s.db"));
        RawDb(dir.file("s.db")).exec("DROP TABLE " + table);
        const StoreError error = store_error_of([&] { SqliteStore::open(dir.file("s.db")); });
        EXPECT_EQ(error.kind(), StoreErrorKind::Corrupt) << table << ": " << error.what();
        EXPECT_NE(std::string(error.what()).find(table), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find("missing"), std::string::npos) << error.what();
    }
    ScratchDir dir;
    SqliteStore::open(dir.file("s.db"));
    RawDb(dir.file("s.db")).exec("DELETE FROM leader");
    const StoreError error = store_error_of([&] { SqliteStore::open(dir.file("s.db")); });
    EXPECT_EQ(error.kind(), StoreErrorKind::Corrupt) << error.what();
    EXPECT_NE(std::string(error.what()).find("leader row is missing"), std::string::npos) << error.what();
}

TEST(SqliteOpen, ANewerSchemaIsRefused) {
    ScratchDir dir;
    SqliteStore::open(dir.file("s.db"));
    RawDb(dir.file("s.db")).exec("PRAGMA user_version = 7");
    const StoreError error = store_error_of([&] { SqliteStore::open(dir.file("s.db")); });
    EXPECT_EQ(error.kind(), StoreErrorKind::SchemaTooNew);
    EXPECT_NE(std::string(error.what()).find("schema version 7"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("newer"), std::string::npos) << error.what();
}

TEST(SqliteOpen, ALockHeldPastTheLeaseIsBusy) {
    ScratchDir dir;
    // A new file, so open must take the write lock to create the schema;
    // another connection holds it (a store that is current opens without it).
    RawDb holder(dir.file("s.db"));
    holder.exec("PRAGMA journal_mode=WAL; BEGIN IMMEDIATE; CREATE TABLE pending (x)");
    const StoreError error = store_error_of(
        [&] { SqliteStore::open(dir.file("s.db"), SqliteStoreConfig{Durability::Full, 200ms, 24h}); });
    EXPECT_EQ(error.kind(), StoreErrorKind::Busy) << error.what();
    holder.exec("ROLLBACK");
}

// docs/store.md, "Schema (version 4)", Opening: switching a new file to WAL
// mode while another connection writes it (the file still in rollback mode),
// SQLite answers "database is locked" at once, without its busy wait; open
// waits for the lock as a migration does.
TEST(SqliteOpen, ANewFileAnotherProcessWritesIsSwitchedToWalOnceItLetsGo) {
    ScratchDir dir;
    RawDb holder(dir.file("s.db"));
    holder.exec("BEGIN IMMEDIATE; CREATE TABLE pending (x)");
    const auto since = std::chrono::steady_clock::now();
    const StoreError error = store_error_of(
        [&] { SqliteStore::open(dir.file("s.db"), SqliteStoreConfig{Durability::Full, 300ms, 24h}); });
    EXPECT_EQ(error.kind(), StoreErrorKind::Busy) << error.what();
    EXPECT_GE(std::chrono::steady_clock::now() - since, 300ms) << "refused at once: " << error.what();

    // Let go while open waits: it opens, and makes the store.
    std::thread writer([&] {
        std::this_thread::sleep_for(100ms);
        holder.exec("ROLLBACK");
    });
    std::shared_ptr<SqliteStore> store;
    EXPECT_NO_THROW(store = SqliteStore::open(dir.file("s.db"), SqliteStoreConfig{Durability::Full, 10s, 24h}));
    writer.join();
    EXPECT_EQ(RawDb(dir.file("s.db")).query_int("PRAGMA user_version"), 4);
}

// docs/store.md, "Schema (version 4)", Opening: replicas started together
// all open a new file. Only one of them creates the schema; the others wait
// for it rather than fail with "database is locked".
TEST(SqliteOpen, ProcessesOpeningANewFileAtOnceAllOpenIt) {
    constexpr int rounds = 12;
    constexpr int processes = 5;
    ScratchDir dir;
    for (int round = 0; round < rounds; ++round) {
        const auto file = dir.file("s" + std::to_string(round) + ".db");
        // Inherited (no O_CLOEXEC) by the children, which close their copies
        // of the write end: the parent's close then ends every read at once.
        int go[2];
        ASSERT_EQ(::pipe(go), 0);
        const std::string go_arg = "go=" + std::to_string(go[0]) + "," + std::to_string(go[1]);
        std::vector<std::unique_ptr<Child>> children;
        for (int i = 0; i < processes; ++i)
            children.push_back(std::make_unique<Child>(std::vector<std::string>{"open", "file=" + file.string(), go_arg}));
        ::close(go[0]);
        for (auto& child : children) {
            const auto ready = child->read_line();
            ASSERT_EQ(ready.value_or("(none)"), "R");
        }
        ::close(go[1]);
        for (auto& child : children) {
            const auto line = child->read_line();
            EXPECT_EQ(line.value_or("(none)"), "O") << "round " << round;
            EXPECT_EQ(child->wait(), 0);
        }
        RawDb db(file);
        EXPECT_EQ(db.query_int("PRAGMA user_version"), 4);
        EXPECT_EQ(db.query_int("SELECT count(*) FROM meta WHERE name = 'next_task_id'"), 1);
        EXPECT_EQ(db.query_int("SELECT count(*) FROM leader"), 1);
        if (HasFailure()) break;
    }
}

TEST(SqliteOpen, AFolderThatCannotBeWrittenIsAnIoError) {
    ScratchDir dir;
    const auto readonly = dir.file("readonly");
    std::filesystem::create_directory(readonly);
    // Root ignores permissions: the child drops to an unprivileged user.
    std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
    std::filesystem::permissions(readonly, std::filesystem::perms(0555));
    Child child({"open", "file=" + (readonly / "s.db").string(), "uid=65534"});
    const auto line = child.read_line();
    ASSERT_TRUE(line);
    EXPECT_EQ(line->rfind("F io ", 0), 0u) << *line;
    EXPECT_NE(line->find("Permission denied"), std::string::npos) << *line;
    EXPECT_EQ(child.wait(), 1);
    EXPECT_FALSE(std::filesystem::exists(readonly / "s.db"));
}

TEST(SqliteOpen, ConfigurationIsValidated) {
    ScratchDir dir;
    EXPECT_THROW(SqliteStore::open(dir.file("s.db"), SqliteStoreConfig{Durability::Full, 0s, 24h}), ConfigError);
    EXPECT_THROW(SqliteStore::open(dir.file("s.db"), SqliteStoreConfig{Durability::Full, 1s, -1s}), ConfigError);
}

TEST(SqliteOpen, NormalDurabilityOpensAndCommits) {
    ScratchDir dir;
    Reports reports;
    auto store = SqliteStore::open(dir.file("s.db"), SqliteStoreConfig{Durability::Normal, 10s, 24h});
    store->journal().lead(reports.handlers());
    ASSERT_TRUE(reports.wait_committed(store->journal().enqueue(insert_batch(1))));
    EXPECT_TRUE(store->get_task(TaskId{1}));
}

}  // namespace
}  // namespace cronoq::test::open_test
