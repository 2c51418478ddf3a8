// A scheduler on a PostgreSQL store: submissions are committed, results
// come back, and a second scheduler on the same schema, after the first
// released it, finds every task and its output.
#include "pg_support.hpp"

#include <cronoq/cronoq.hpp>

#include <gtest/gtest.h>

namespace cronoq::test::scheduler_test {
namespace {

using namespace std::chrono_literals;
using Sched = BlockingScheduler<std::string, std::string>;

Pool<std::string, std::string> echo() {
    return Pool<std::string, std::string>("default").executor_fn(
        [](TaskContext, std::shared_ptr<const std::string> job) -> Result<std::string> { return *job + " done"; });
}

TEST(PgScheduler, RunsTasksAndASecondSchedulerFindsThem) {
    ASSERT_FALSE(pg_conninfo().empty()) << "CRONOQ_TEST_PG is not set: run through ctest (label postgres)";
    PgSchema schema;
    std::vector<TaskId> ids;
    {
        auto sched = Sched::builder().pool(echo()).store(PostgresStore::connect(pg_conninfo(), schema.config(2s))).open();
        std::vector<BlockingHandle<std::string>> handles;
        for (int i = 0; i < 50; ++i) {
            auto task = Task<std::string>("job-" + std::to_string(i));
            if (i % 5 == 0) task.key("key-" + std::to_string(i));
            handles.push_back(sched.submit(std::move(task)));
        }
        for (int i = 0; i < 50; ++i) {
            EXPECT_EQ(*handles[static_cast<std::size_t>(i)].get(), "job-" + std::to_string(i) + " done");
            ids.push_back(handles[static_cast<std::size_t>(i)].id());
        }
        sched.shutdown(5s);
    }
    auto store = PostgresStore::connect(pg_conninfo(), schema.config(2s));
    for (const TaskId id : ids) {
        const auto task = store->get_task(id);
        ASSERT_TRUE(task) << id.value;
        EXPECT_EQ(task->status, TaskStatus::Succeeded);
        ASSERT_TRUE(task->output);
    }
    auto sched = Sched::builder().pool(echo()).store(store).open();
    auto found = sched.find(TaskRef(std::string("key-10")));
    ASSERT_TRUE(found);
    EXPECT_EQ(found->id(), ids[10]);
    EXPECT_EQ(*found->get(), "job-10 done");
    sched.shutdown(5s);
}

// The recovery's load shares SQLite's rule (docs/store.md, "Recovery
// load"): a row it cannot read ends Failed and the rest comes back.
TEST(PgScheduler, ARowWithAnUnknownStatusEndsFailedWithoutStoppingOpen) {
    ASSERT_FALSE(pg_conninfo().empty()) << "CRONOQ_TEST_PG is not set: run through ctest (label postgres)";
    PgSchema schema;
    TaskId zombie{};
    TaskId fine{};
    {
        auto sched = Sched::builder().pool(echo()).store(PostgresStore::connect(pg_conninfo(), schema.config(2s))).open();
        zombie = sched.submit(Task<std::string>("zombie").start_in(1h)).id();
        fine = sched.submit(Task<std::string>("fine").start_in(2h)).id();
        sched.shutdown(0s);
    }
    RawPg().exec("UPDATE \"" + schema.name() + "\".tasks SET status = 'zombie' WHERE id = " +
                 std::to_string(zombie.value));
    auto store = PostgresStore::connect(pg_conninfo(), schema.config(2s));
    auto sched = Sched::builder().pool(echo()).store(store).open();
    EXPECT_EQ(sched.status(TaskRef(fine)), TaskStatus::Scheduled);
    const auto row = store->get_task(zombie);
    ASSERT_TRUE(row);
    EXPECT_EQ(row->status, TaskStatus::Failed);
    EXPECT_EQ(row->last_error, "decode: unknown status \"zombie\"");
    sched.shutdown(5s);
}

}  // namespace
}  // namespace cronoq::test::scheduler_test
