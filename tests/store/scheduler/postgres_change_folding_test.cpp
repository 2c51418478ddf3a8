// The PostgreSQL store writes a commit's inserts and transitions as few
// statements over arrays, folding a task's changes within a run into one
// row (src/store/postgres/change_statements.cpp). What it leaves must be
// what the changes one after the other leave: these batches, queued before
// the store leads, commit in one transaction and are read back row by row.
// Built into test_durable_postgres only.
#include "durable_support.hpp"
#include "postgres/pg_support.hpp"

#include <gtest/gtest.h>

namespace postgres_change_folding_test {

using namespace std::chrono_literals;
using namespace cronoq;
using store::Batch;
using store::TaskTransition;

namespace {

TaskTransition transition(std::uint64_t id, TaskStatus status, std::uint32_t attempt, std::string error = "",
                          std::optional<std::string> output = std::nullopt,
                          std::optional<store::WallTime> run_at = std::nullopt) {
    return TaskTransition{TaskId{id}, status, attempt, std::move(error), std::chrono::system_clock::now(), run_at,
                          std::move(output)};
}

std::shared_ptr<PostgresStore> connect(const test::PgSchema& schema) {
    return PostgresStore::connect(test::pg_conninfo(), schema.config(10s));
}

}  // namespace

TEST(PostgresChangeFolding, RunsOfInsertsAndTransitionsLeaveWhatTheChangesInOrderLeave) {
    ASSERT_FALSE(test::pg_conninfo().empty()) << "CRONOQ_TEST_PG is not set: run through ctest (label postgres)";
    test::PgSchema schema;
    {
        // Task 1 exists before: a run's UPDATE goes to it.
        test::Reports before;
        auto store = connect(schema);
        store->journal().enqueue(Batch{{store::TaskInserted{test::task_row(1)}}});
        store->journal().lead(before.handlers());
        ASSERT_TRUE(before.wait_committed(1));
    }
    const auto retry_at = std::chrono::system_clock::now() + 1h;
    test::Reports reports;
    auto store = connect(schema);
    std::vector<Batch> batches;
    // One run: task 2 inserted then moved on twice (folded into its
    // INSERT, its output kept by a later transition without one); task 1
    // twice (one UPDATE row, the latest wins, the output kept); task 3
    // inserted with a key.
    batches.push_back(Batch{{store::TaskInserted{test::task_row(2)}, transition(1, TaskStatus::Running, 1),
                             transition(2, TaskStatus::Running, 1)}});
    batches.push_back(Batch{{transition(2, TaskStatus::Succeeded, 1, "", "out-2"),
                             transition(1, TaskStatus::Retrying, 1, "flaky", std::nullopt, retry_at),
                             store::TaskInserted{test::task_row(3, "k3")}}});
    batches.push_back(Batch{{transition(2, TaskStatus::Succeeded, 1)}});
    // Another kind ends the run: the key is released after task 3's insert,
    // and task 3's next transition is a run of its own, after it.
    batches.push_back(Batch{{store::TaskKeyReleased{TaskId{3}}, transition(3, TaskStatus::Failed, 1, "told to fail"),
                             store::HighWaterMarks{4, 7}}});
    // A transition of a task that is not there (pruned) changes nothing.
    batches.push_back(Batch{{transition(99, TaskStatus::Running, 1)}});
    store::Sequence last = 0;
    for (Batch& b : batches) last = store->journal().enqueue(std::move(b));
    store->journal().lead(reports.handlers());
    ASSERT_TRUE(reports.wait_committed(last));
    ASSERT_EQ(reports.commits.size(), 1u) << "queued before leading: one transaction";

    const auto one = store->journal().read_task(TaskRef(TaskId{1}));
    ASSERT_TRUE(one.has_value());
    EXPECT_EQ(one->status, TaskStatus::Retrying);
    EXPECT_EQ(one->attempt, 1u);
    EXPECT_EQ(one->last_error, "flaky");
    ASSERT_TRUE(one->run_at.has_value());
    EXPECT_EQ(std::chrono::duration_cast<std::chrono::microseconds>(one->run_at->time_since_epoch()),
              std::chrono::duration_cast<std::chrono::microseconds>(retry_at.time_since_epoch()));
    EXPECT_FALSE(one->output.has_value());
    EXPECT_EQ(one->payload, "payload-1");

    const auto two = store->journal().read_task(TaskRef(TaskId{2}));
    ASSERT_TRUE(two.has_value());
    EXPECT_EQ(two->status, TaskStatus::Succeeded);
    EXPECT_EQ(two->output, "out-2");
    EXPECT_EQ(two->payload, "payload-2");
    EXPECT_EQ(two->pool, "default");

    const auto three = store->journal().read_task(TaskRef(TaskId{3}));
    ASSERT_TRUE(three.has_value());
    EXPECT_FALSE(three->key.has_value()) << "the key was released after the insert";
    EXPECT_EQ(three->status, TaskStatus::Failed);
    EXPECT_EQ(three->last_error, "told to fail");
    EXPECT_FALSE(store->journal().read_task(TaskRef(std::string("k3"))).has_value());

    EXPECT_FALSE(store->journal().read_task(TaskRef(TaskId{99})).has_value());
    test::RawPg raw;
    EXPECT_EQ(raw.number("SELECT count(*) FROM \"" + schema.name() + "\".tasks"), 3);
    EXPECT_EQ(raw.number("SELECT value FROM \"" + schema.name() + "\".meta WHERE name = 'next_lease_id'"), 7);
}

TEST(PostgresChangeFolding, ARunPastSixteenMebibytesIsSplitAndEveryRowArrives) {
    ASSERT_FALSE(test::pg_conninfo().empty()) << "CRONOQ_TEST_PG is not set: run through ctest (label postgres)";
    test::PgSchema schema;
    test::Reports reports;
    auto store = connect(schema);
    Batch batch;
    constexpr std::uint64_t tasks = 40;  // a MiB each, with a byte of every value
    for (std::uint64_t id = 1; id <= tasks; ++id) {
        store::TaskRow row = test::task_row(id);
        row.payload.assign(std::size_t{1} << 20, '\0');
        for (std::size_t i = 0; i < row.payload.size(); i += 997) row.payload[i] = static_cast<char>(i + id);
        batch.changes.push_back(store::TaskInserted{std::move(row)});
        batch.changes.push_back(transition(id, TaskStatus::Running, 1));
    }
    const auto sequence = store->journal().enqueue(std::move(batch));
    store->journal().lead(reports.handlers());
    ASSERT_TRUE(reports.wait_committed(sequence));
    for (std::uint64_t id = 1; id <= tasks; ++id) {
        const auto row = store->journal().read_task(TaskRef(TaskId{id}));
        ASSERT_TRUE(row.has_value()) << id;
        EXPECT_EQ(row->status, TaskStatus::Running);
        ASSERT_EQ(row->payload.size(), std::size_t{1} << 20);
        bool same = true;
        for (std::size_t i = 0; i < row->payload.size(); ++i)
            same = same && row->payload[i] == (i % 997 == 0 ? static_cast<char>(i + id) : '\0');
        EXPECT_TRUE(same) << "payload of task " << id;
    }
}
}  // namespace postgres_change_folding_test
