// Scheduler::find without a store (docs/guide/durability.md): live tasks, and retained tasks
// that have a key.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

namespace find_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

Pool<int, int> echo_pool() {
    return Pool<int, int>("p").workers(1, 1, 1).retry(RetryPolicy::none()).executor_fn(
        [](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
            if (*x < 0) {
                co_await ctx.cancelled();
                co_return TaskError::cancelled();
            }
            if (*x == 0) co_return TaskError::permanent("zero");
            co_return *x * 10;
        });
}

}  // namespace

TEST(Find, ALiveTaskByIdAndByKey) {
    asio::io_context io;
    auto sched = Sched::builder().pool(echo_pool()).build(io.get_executor());
    auto running = sched.try_submit(Task<int>(-1).key("long")).value();
    auto queued = sched.try_submit(Task<int>(2)).value();  // no key: found by id while live
    io.poll();
    auto by_key = sched.find(TaskRef("long"));
    ASSERT_TRUE(by_key.has_value());
    EXPECT_EQ(by_key->id(), running.id());
    EXPECT_EQ(by_key->status(), TaskStatus::Running);
    auto by_id = sched.find(TaskRef(queued.id()));
    ASSERT_TRUE(by_id.has_value());
    EXPECT_EQ(by_id->id(), queued.id());
    EXPECT_TRUE(by_key->cancel());
    io.run();
    EXPECT_EQ(*test::run(io, by_id->result()), 20);
    EXPECT_EQ(running.status(), TaskStatus::Cancelled);
}

TEST(Find, ARetainedKeyedTaskKeepsItsOutcome) {
    asio::io_context io;
    auto sched = Sched::builder().pool(echo_pool()).build(io.get_executor());
    auto ok = sched.try_submit(Task<int>(4).key("ok")).value();
    auto failed = sched.try_submit(Task<int>(0).key("bad")).value();
    io.run();
    auto found = sched.find(TaskRef("ok"));
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->status(), TaskStatus::Succeeded);
    EXPECT_EQ(*test::run(io, found->result()), 40);
    auto found_failed = sched.find(TaskRef(failed.id()));
    ASSERT_TRUE(found_failed.has_value());
    try {
        test::run(io, found_failed->result());
        FAIL() << "a failed task's result must throw";
    } catch (const TaskFailure& f) {
        EXPECT_EQ(f.status(), TaskStatus::Failed);
        EXPECT_EQ(f.message(), "zero");
    }
}

TEST(Find, NothingForUnknownForgottenOrUnkeyedFinishedTasks) {
    asio::io_context io;
    auto sched = Sched::builder().pool(echo_pool()).build(io.get_executor());
    auto plain = sched.try_submit(Task<int>(1)).value();
    io.run();
    ASSERT_EQ(plain.status(), TaskStatus::Succeeded);
    EXPECT_FALSE(sched.find(TaskRef(plain.id())).has_value()) << "a finished task without a key keeps no record";
    EXPECT_FALSE(sched.find(TaskRef("nobody")).has_value());
    EXPECT_FALSE(sched.find(TaskRef(TaskId{987654})).has_value());

    auto forgetful = Sched::builder().retention_max(0).pool(echo_pool()).build(io.get_executor());
    auto keyed = forgetful.try_submit(Task<int>(1).key("k")).value();
    io.restart();
    io.run();
    ASSERT_EQ(keyed.status(), TaskStatus::Succeeded);
    EXPECT_FALSE(forgetful.find(TaskRef("k")).has_value());
}

TEST(Find, BlockingSchedulerFindsToo) {
    auto sched = BlockingScheduler<int, int>::builder().pool(echo_pool()).build();
    auto h = sched.submit(Task<int>(5).key("b"));
    EXPECT_EQ(*h.get(), 50);
    auto found = sched.find(TaskRef("b"));
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->id(), h.id());
    EXPECT_EQ(*found->get(), 50);
    EXPECT_FALSE(sched.find(TaskRef("none")).has_value());
}
}  // namespace find_test
