#include "driver_harness.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using cronoq::Pool;
using cronoq::Result;
using cronoq::Scheduler;
using cronoq::Task;
using cronoq::TaskContext;
using cronoq::TaskError;

namespace {

using Sched = Scheduler<int, int>;

Pool<int, int> doubling_pool(std::size_t workers = 2) {
    return Pool<int, int>("default").workers(1, workers, workers).executor_fn(
        [](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> { co_return *x * 2; });
}

}  // namespace

TEST(ExecutorFn, RoundTripReturnsOutput) {
    asio::io_context io;
    auto sched = Sched::builder().pool(doubling_pool()).build(io.get_executor());
    const int got = cronoq::test::run(io, [&]() -> asio::awaitable<int> {
        auto h = co_await sched.submit(Task<int>(21));
        co_return *co_await h.result();
    }());
    EXPECT_EQ(got, 42);
}

TEST(ExecutorFn, IdleSchedulerLetsRunReturn) {
    asio::io_context io;
    auto sched = Sched::builder().pool(doubling_pool()).build(io.get_executor());
    auto h = sched.try_submit(Task<int>(1)).value();
    io.run();  // returns: nothing pending once the task is done
    EXPECT_EQ(h.status(), cronoq::TaskStatus::Succeeded);
}
