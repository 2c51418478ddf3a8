// Scheduler::retry without a store (docs/guide/durability.md): an ended keyed task's
// payload and options submitted again as a new task that takes the key.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace retry_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

/// Fails an attempt permanently while `failing` is set; answers x * 10.
/// Records each attempt's timeout.
struct Flaky {
    std::shared_ptr<bool> failing = std::make_shared<bool>(true);
    std::shared_ptr<std::vector<std::chrono::nanoseconds>> timeouts = std::make_shared<std::vector<std::chrono::nanoseconds>>();
    Pool<int, int> pool() const {
        return Pool<int, int>("p").workers(1, 1, 1).executor_fn(
            [failing = failing, timeouts = timeouts](TaskContext ctx,
                                                         std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                timeouts->push_back(ctx.timeout().value_or(0s));
                if (*failing) co_return TaskError::permanent("not yet");
                co_return *x * 10;
            });
    }
};

}  // namespace

TEST(Retry, AFailedKeyedTaskRunsAgainAsANewTaskThatTakesItsKey) {
    asio::io_context io;
    Flaky exec;
    auto sched = Sched::builder().pool(exec.pool()).build(io.get_executor());
    auto first = sched.try_submit(Task<int>(4).key("job").timeout(7s)).value();
    EXPECT_THROW(test::run(io, first.result()), TaskFailure);
    *exec.failing = false;
    auto again = sched.retry("job");
    ASSERT_TRUE(again.has_value());
    EXPECT_GT(again->id().value, first.id().value);
    EXPECT_EQ(*test::run(io, again->result()), 40);  // the same payload
    EXPECT_EQ(*exec.timeouts, (std::vector<std::chrono::nanoseconds>{7s, 7s}));  // and options
    // The key names the new task; the old one keeps its one status.
    EXPECT_EQ(sched.find("job")->id(), again->id());
    EXPECT_EQ(sched.status(TaskRef(first.id())), TaskStatus::Failed);
    EXPECT_EQ(sched.try_submit(Task<int>(9).key("job")).value().id(), again->id());
}

TEST(Retry, OnlyTasksThatEndedWithoutSuccessAreRetried) {
    asio::io_context io;
    Flaky exec;
    *exec.failing = false;
    auto sched = Sched::builder().pool(exec.pool()).build(io.get_executor());
    auto done = sched.try_submit(Task<int>(1).key("done")).value();
    EXPECT_EQ(*test::run(io, done.result()), 10);
    EXPECT_FALSE(sched.retry("done").has_value());       // succeeded
    EXPECT_FALSE(sched.retry("nobody").has_value());     // unknown
    EXPECT_FALSE(sched.retry(TaskRef(TaskId{999})).has_value());
    auto later = sched.try_submit(Task<int>(2).key("later").start_in(1h)).value();
    EXPECT_FALSE(sched.retry("later").has_value());      // not terminal
    EXPECT_TRUE(later.cancel());
    auto cancelled = sched.retry("later");              // Cancelled is retried
    ASSERT_TRUE(cancelled.has_value());
    EXPECT_EQ(cancelled->status(), TaskStatus::Scheduled);  // its start, again an hour ahead
    // Without a store the driver keeps no payload of a task without a key.
    *exec.failing = true;
    auto unkeyed = sched.try_submit(Task<int>(3)).value();
    EXPECT_THROW(test::run(io, unkeyed.result()), TaskFailure);
    EXPECT_FALSE(sched.retry(TaskRef(unkeyed.id())).has_value());
    test::run(io, sched.shutdown(0s));
    EXPECT_THROW(sched.retry(TaskRef(TaskId{later.id()})), SubmitException);  // ShuttingDown
}
}  // namespace retry_test
