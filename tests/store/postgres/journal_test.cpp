// The PostgreSQL store's commit pipeline against a real server: what each
// change writes, group commit, reports in order from many threads,
// inspection while a leader writes, pruning, recovery, read_task and the
// schema checks at connect.
#include "pg_support.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace cronoq::test {
namespace {

using namespace std::chrono_literals;
using store::Batch;
using store::Sequence;

class PgTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(pg_conninfo().empty()) << "CRONOQ_TEST_PG is not set: run through ctest (label postgres)";
    }
};

/// The background prune keeps every row unless a test asks otherwise.
std::shared_ptr<PostgresStore> connect(const PgSchema& schema, std::chrono::nanoseconds lease = 10s,
                                       std::chrono::nanoseconds keep_finished = std::chrono::hours(100000)) {
    PostgresStoreConfig config = schema.config(lease);
    config.keep_finished = keep_finished;
    return PostgresStore::connect(pg_conninfo(), config);
}

struct Leader {
    explicit Leader(const PgSchema& schema, std::chrono::nanoseconds lease = 10s,
                    std::chrono::nanoseconds retention = std::chrono::hours(1))
        : store(connect(schema, lease)) {
        store->journal().lead(reports.handlers(retention));
        EXPECT_TRUE(reports.wait_leading());
    }
    Sequence commit(Batch batch) {
        const Sequence sequence = store->journal().enqueue(std::move(batch));
        EXPECT_TRUE(reports.wait_committed(sequence));
        return sequence;
    }
    Reports reports;
    std::shared_ptr<PostgresStore> store;
};

store::Recovered recover(const PgSchema& schema, std::chrono::nanoseconds retention = std::chrono::hours(1)) {
    Leader next(schema, 10s, retention);
    return *next.reports.recovered;
}

const store::TaskRow* find(const store::Recovered& r, std::uint64_t id) {
    for (const auto& row : r.tasks)
        if (row.id.value == id) return &row;
    return nullptr;
}

using PgJournal = PgTest;

TEST_F(PgJournal, EveryChangeKindIsWrittenAndRecovered) {
    PgSchema schema;
    const auto t0 = std::chrono::system_clock::now();
    const auto run_at = t0 + 1h;
    {
        Leader leader(schema);
        store::TaskRow scheduled = task_row(1, "order-1");
        scheduled.status = TaskStatus::Scheduled;
        scheduled.run_at = run_at;
        scheduled.payload = std::string("\0binary\xff", 8);
        scheduled.options = R"({"deadline":"x"})";
        store::TaskRow succeeded = task_row(2, "order-2");
        Batch batch{{store::TaskInserted{scheduled}, store::TaskInserted{succeeded},
                     store::TaskTransition{TaskId{2}, TaskStatus::Running, 1, "", t0, std::nullopt, std::nullopt},
                     store::TaskTransition{TaskId{2}, TaskStatus::Succeeded, 1, "", t0, std::nullopt,
                                           std::string("out\0-2", 6)},
                     store::TaskTransition{TaskId{2}, TaskStatus::Succeeded, 1, "late", t0, std::nullopt, std::nullopt},
                     store::TaskInserted{task_row(3)},
                     store::TaskTransition{TaskId{3}, TaskStatus::Retrying, 2, "timeout", t0, run_at, std::nullopt},
                     store::TaskKeyReleased{TaskId{1}},
                     store::RecurringPut{"nightly", "def-1"}, store::RecurringFired{"nightly", t0},
                     store::RecurringPut{"nightly", "def-2"},
                     store::RecurringPut{"gone", "x"}, store::RecurringRemoved{"gone"},
                     store::HighWaterMarks{10, 50}, store::HighWaterMarks{4, 60}}};
        leader.commit(std::move(batch));
        leader.commit(Batch{{store::TaskTransition{TaskId{99}, TaskStatus::Failed, 1, "x", t0, {}, {}}}});

        const auto stored = leader.store->get_task(TaskId{2});
        ASSERT_TRUE(stored);
        EXPECT_EQ(stored->status, TaskStatus::Succeeded);
        EXPECT_EQ(stored->output, std::string("out\0-2", 6));
        EXPECT_EQ(stored->last_error, "late");
        EXPECT_EQ(leader.store->get_task("order-2")->id, TaskId{2});
        EXPECT_FALSE(leader.store->get_task("order-1")) << "the key was released";
        EXPECT_FALSE(leader.store->get_task(TaskId{99}));
        const auto row = leader.store->journal().read_task(TaskId{1});
        ASSERT_TRUE(row);
        EXPECT_EQ(row->options, R"({"deadline":"x"})");
        EXPECT_EQ(row->payload, std::string("\0binary\xff", 8));
        leader.store->journal().release();
        ASSERT_TRUE(leader.reports.wait_lost());
        EXPECT_EQ(leader.reports.lost->reason, store::LostReason::Released);
    }
    const store::Recovered r = recover(schema);
    EXPECT_EQ(r.epoch, 2u);
    ASSERT_EQ(r.tasks.size(), 3u);
    const auto* one = find(r, 1);
    ASSERT_TRUE(one);
    EXPECT_EQ(one->status, TaskStatus::Scheduled);
    EXPECT_EQ(one->key, std::nullopt);
    EXPECT_EQ(one->run_at, run_at);
    EXPECT_EQ(one->payload, std::string("\0binary\xff", 8));
    EXPECT_EQ(one->options, R"({"deadline":"x"})");
    EXPECT_EQ(one->pool, "default");
    EXPECT_EQ(one->kind, "work");
    const auto* three = find(r, 3);
    ASSERT_TRUE(three);
    EXPECT_EQ(three->status, TaskStatus::Retrying);
    EXPECT_EQ(three->attempt, 2u);
    EXPECT_EQ(three->last_error, "timeout");
    EXPECT_EQ(three->run_at, run_at);
    EXPECT_EQ(three->updated_at, t0);
    ASSERT_EQ(r.recurring.size(), 1u);
    EXPECT_EQ(r.recurring[0].name, "nightly");
    EXPECT_EQ(r.recurring[0].definition, "def-2");
    EXPECT_EQ(r.recurring[0].last_fired, t0);
    EXPECT_EQ(r.marks.next_task_id, 10u);
    EXPECT_EQ(r.marks.next_lease_id, 60u);
}

TEST_F(PgJournal, BatchesQueuedBeforeLeadingCommitInOneTransaction) {
    PgSchema schema;
    Reports reports;
    auto store = connect(schema);
    constexpr int threads = 4, per_thread = 500;
    std::vector<std::thread> enqueuers;
    std::atomic<std::uint64_t> next_id{1};
    for (int t = 0; t < threads; ++t)
        enqueuers.emplace_back([&] {
            for (int i = 0; i < per_thread; ++i) store->journal().enqueue(insert_batch(next_id++));
        });
    for (auto& t : enqueuers) t.join();
    EXPECT_EQ(store->journal().figures().pending_changes, std::uint64_t{threads * per_thread});
    store->journal().lead(reports.handlers());
    ASSERT_TRUE(reports.wait_committed(threads * per_thread));
    ASSERT_EQ(reports.commits.size(), 1u);
    EXPECT_EQ(reports.commits[0].batches, std::size_t{threads * per_thread});
    const auto figures = store->journal().figures();
    EXPECT_EQ(figures.commits, 1u);
    EXPECT_EQ(figures.pending_changes, 0u);
    EXPECT_TRUE(figures.leading);
    EXPECT_EQ(figures.epoch, 1u);
    EXPECT_EQ(store->list(TaskStatus::Ready, 10000).size(), std::size_t{threads * per_thread});
}

TEST_F(PgJournal, ReportsFromManyThreadsArriveInOrderAndGroup) {
    PgSchema schema;
    Leader leader(schema);
    constexpr int threads = 4, per_thread = 1000;
    std::atomic<std::uint64_t> next_id{1};
    std::vector<std::thread> enqueuers;
    for (int t = 0; t < threads; ++t)
        enqueuers.emplace_back([&] {
            for (int i = 0; i < per_thread; ++i) leader.store->journal().enqueue(insert_batch(next_id++));
        });
    // Inspection while the leader writes: reads never wait for commits.
    std::size_t seen = 0;
    for (int i = 0; i < 20; ++i) seen = std::max(seen, leader.store->list(TaskStatus::Ready, 100000).size());
    for (auto& t : enqueuers) t.join();
    ASSERT_TRUE(leader.reports.wait_committed(threads * per_thread));
    Sequence previous = 0;
    std::size_t batches = 0;
    for (const auto& c : leader.reports.commits) {
        ASSERT_FALSE(c.error);
        EXPECT_EQ(c.committed, previous + c.batches) << "each report follows the one before";
        previous = c.committed;
        batches += c.batches;
    }
    EXPECT_EQ(batches, std::size_t{threads * per_thread});
    EXPECT_LT(leader.reports.commits.size(), std::size_t{threads * per_thread}) << "batches were grouped";
    EXPECT_EQ(leader.store->list(TaskStatus::Ready, 100000).size(), std::size_t{threads * per_thread});
    std::cout << "4000 batches in " << leader.reports.commits.size() << " transactions; " << seen
              << " rows seen while writing\n";
}

TEST_F(PgJournal, PruneAndRecoveryFilter) {
    PgSchema schema;
    const auto now = std::chrono::system_clock::now();
    {
        Leader leader(schema);
        Batch batch;
        for (std::uint64_t id = 1; id <= 6; ++id) batch.changes.push_back(store::TaskInserted{task_row(id)});
        // 1, 2: ended long ago; 3: ended just now; 4: failed long ago; 5, 6: live.
        batch.changes.push_back(store::TaskTransition{TaskId{1}, TaskStatus::Succeeded, 1, "", now - 48h, {}, "o"});
        batch.changes.push_back(store::TaskTransition{TaskId{2}, TaskStatus::Cancelled, 0, "", now - 3h, {}, {}});
        batch.changes.push_back(store::TaskTransition{TaskId{3}, TaskStatus::Succeeded, 1, "", now, {}, {}});
        batch.changes.push_back(store::TaskTransition{TaskId{4}, TaskStatus::Failed, 1, "e", now - 48h, {}, {}});
        batch.changes.push_back(store::TaskTransition{TaskId{5}, TaskStatus::Running, 1, "", now - 48h, {}, {}});
        leader.commit(std::move(batch));
        EXPECT_EQ(leader.store->prune(24h), 2u) << "tasks 1 and 4";
        EXPECT_FALSE(leader.store->get_task(TaskId{1}));
        EXPECT_TRUE(leader.store->get_task(TaskId{5})) << "a live task is never pruned";
        EXPECT_EQ(leader.store->prune(24h), 0u);
    }
    const store::Recovered r = recover(schema, 1h);
    std::vector<std::uint64_t> ids;
    for (const auto& row : r.tasks) ids.push_back(row.id.value);
    EXPECT_EQ(ids, (std::vector<std::uint64_t>{3, 5, 6})) << "task 2 ended before the retention";
}

TEST_F(PgJournal, TheLeaderPrunesInTheBackground) {
    PgSchema schema;
    Reports reports;
    auto store = connect(schema, 10s, 5s);
    const auto now = std::chrono::system_clock::now();
    store->journal().lead(reports.handlers());
    ASSERT_TRUE(reports.wait_leading());
    const Sequence s = store->journal().enqueue(Batch{{store::TaskInserted{task_row(1)}, store::TaskInserted{task_row(2)},
        store::TaskTransition{TaskId{1}, TaskStatus::Succeeded, 1, "", now - 2h, {}, {}}}});
    ASSERT_TRUE(reports.wait_committed(s));
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (store->get_task(TaskId{1}) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(store->get_task(TaskId{1})) << "the leader prunes old terminal rows by itself";
    EXPECT_TRUE(store->get_task(TaskId{2}));
}

TEST_F(PgJournal, AFailingCommitIsRetriedInOrderThenTheLeadIsGivenUp) {
    PgSchema schema;
    Leader leader(schema, 600ms);
    leader.commit(insert_batch(1));
    // Task 1 again: the insert fails, and so does every retry; the batch
    // behind it waits, and nothing after the failing one commits first.
    const auto failing = leader.store->journal().enqueue(insert_batch(1));
    leader.store->journal().enqueue(insert_batch(2));
    ASSERT_TRUE(leader.reports.wait_lost());
    EXPECT_EQ(leader.reports.lost->reason, store::LostReason::Failed);
    EXPECT_NE(leader.reports.lost->message.find("duplicate key"), std::string::npos) << leader.reports.lost->message;
    std::size_t failures = 0;
    for (const auto& c : leader.reports.commits) {
        if (!c.error) continue;
        ++failures;
        EXPECT_EQ(c.committed, failing - 1);
        EXPECT_TRUE(c.failing_since);
    }
    EXPECT_GE(failures, 2u) << "retried with backoff";
    EXPECT_FALSE(leader.store->get_task(TaskId{2}));
    EXPECT_GE(leader.store->journal().figures().failed_commits, failures);
}

TEST_F(PgJournal, SchemaChecksAtConnect) {
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

TEST_F(PgJournal, UnreachableServerFailsAfterTheConnectTimeout) {
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

TEST_F(PgJournal, ConcurrentConnectsMigrateOnce) {
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
}  // namespace cronoq::test
