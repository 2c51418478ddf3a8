// Idempotency keys through the driver (docs/guide/dependencies-and-keys.md) and TaskRef by key.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

namespace keys_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

struct Counting {
    std::shared_ptr<int> runs = std::make_shared<int>(0);
    Pool<int, int> pool() const {
        return Pool<int, int>("p").workers(1, 1, 1).executor_fn(
            [runs = runs](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                ++*runs;
                if (*x < 0) {
                    co_await ctx.cancelled();
                    co_return TaskError::cancelled();
                }
                co_return *x * 10;
            });
    }
};

}  // namespace

TEST(Keys, ResubmittingALiveKeyReturnsTheSameTask) {
    asio::io_context io;
    Counting exec;
    auto sched = Sched::builder().pool(exec.pool()).build(io.get_executor());
    auto first = sched.try_submit(Task<int>(1).key("invoice-42")).value();
    auto again = sched.try_submit(Task<int>(2).key("invoice-42")).value();
    EXPECT_EQ(again.id(), first.id());
    io.run();
    EXPECT_EQ(*exec.runs, 1);
    EXPECT_EQ(*test::run(io, again.result()), 10);  // the first payload's output
}

TEST(Keys, RetainedKeyReturnsAHandleToTheFinishedTask) {
    asio::io_context io;
    Counting exec;
    auto sched = Sched::builder().pool(exec.pool()).build(io.get_executor());
    auto first = sched.try_submit(Task<int>(3).key("k")).value();
    io.run();
    ASSERT_EQ(first.status(), TaskStatus::Succeeded);
    auto again = sched.try_submit(Task<int>(4).key("k")).value();
    EXPECT_EQ(again.id(), first.id());
    EXPECT_EQ(again.status(), TaskStatus::Succeeded);
    EXPECT_EQ(*test::run(io, again.result()), 30);
    EXPECT_EQ(*exec.runs, 1);
}

TEST(Keys, ForgottenKeyRunsAgain) {
    asio::io_context io;
    Counting exec;
    auto sched = Sched::builder().retention_max(0).pool(exec.pool()).build(io.get_executor());
    auto first = sched.try_submit(Task<int>(1).key("k")).value();
    io.run();
    auto second = sched.try_submit(Task<int>(2).key("k")).value();
    EXPECT_NE(second.id(), first.id());
    io.restart();
    io.run();
    EXPECT_EQ(*exec.runs, 2);
    EXPECT_EQ(*test::run(io, second.result()), 20);
}

TEST(Keys, StatusAndCancelByKey) {
    asio::io_context io;
    Counting exec;
    auto sched = Sched::builder().pool(exec.pool()).build(io.get_executor());
    auto h = sched.try_submit(Task<int>(-1).key("long")).value();
    io.poll();
    EXPECT_EQ(sched.status("long"), TaskStatus::Running);
    EXPECT_EQ(sched.status(std::string("missing")), std::nullopt);
    EXPECT_FALSE(sched.cancel("missing"));
    EXPECT_TRUE(sched.cancel("long"));
    io.run();
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
    EXPECT_EQ(sched.status("long"), TaskStatus::Cancelled);  // retained
    EXPECT_FALSE(sched.cancel("long"));
}

TEST(Keys, KeyedRecordsDoNotHoldUpShutdown) {
    asio::io_context io;
    Counting exec;
    auto sched = Sched::builder().pool(exec.pool()).build(io.get_executor());
    sched.try_submit(Task<int>(1).key("a")).value();
    io.run();
    test::run(io, sched.shutdown(0s));
    io.run();
    EXPECT_EQ(sched.status("a"), TaskStatus::Succeeded);
}
}  // namespace keys_test
