// Shared resources through the driver (docs/guide/resources-and-bounds.md): semaphores bound
// concurrency across pools; set_rate from another thread.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace resource_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

}  // namespace

TEST(Resources, ASemaphoreBoundsConcurrencyAcrossPools) {
    asio::io_context io;
    int running = 0, most = 0;
    auto work = [&](TaskContext, std::shared_ptr<const int> n) -> asio::awaitable<Result<int>> {
        most = std::max(most, ++running);
        asio::steady_timer t(co_await asio::this_coro::executor, 1ms);
        co_await t.async_wait(asio::use_awaitable);
        --running;
        co_return *n;
    };
    auto sched = Sched::builder()
                     .resource(Resource::semaphore("db", 2))
                     .pool(Pool<int, int>("a").workers(1, 4, 4).executor_fn(work))
                     .pool(Pool<int, int>("b").workers(1, 4, 4).executor_fn(work))
                     .build(io.get_executor());
    std::vector<TaskHandle<int>> handles;
    for (int i = 0; i < 12; ++i)
        handles.push_back(sched.try_submit(Task<int>(i).pool(i % 2 ? "a" : "b").resource("db", 1)).value());
    for (auto& h : handles) test::run(io, h.result());
    EXPECT_EQ(most, 2);
    EXPECT_EQ(sched.try_submit(Task<int>(0).resource("nope", 1)).error(), SubmitError::UnknownResource);
    EXPECT_EQ(sched.try_submit(Task<int>(0).resource("db", 3)).error(), SubmitError::ResourceExceedsCapacity);
}

TEST(Resources, SetRateFromAnotherThread) {
    asio::io_context io;
    auto clock = std::make_shared<ManualClock>();
    std::vector<int> ran;
    auto sched = Sched::builder()
                     .clock(clock)
                     .resource(Resource::token_bucket("api", 0.0, 1))  // paused after the first call
                     .pool(Pool<int, int>("p").workers(1, 4, 4).executor_fn(
                         [&](TaskContext, std::shared_ptr<const int> n) -> asio::awaitable<Result<int>> {
                             ran.push_back(*n);
                             co_return *n;
                         }))
                     .build(io.get_executor());
    sched.try_submit(Task<int>(1).resource("api", 1)).value();
    auto second = sched.try_submit(Task<int>(2).resource("api", 1)).value();
    io.poll();
    clock->advance(10s);
    io.poll();
    EXPECT_EQ(ran, std::vector<int>{1});
    std::thread other([&] { sched.set_rate("api", 2.0); });
    other.join();
    clock->advance(500ms);
    io.restart();
    io.poll();
    EXPECT_EQ(ran, (std::vector<int>{1, 2}));
    EXPECT_EQ(second.status(), TaskStatus::Succeeded);
    EXPECT_THROW(sched.set_rate("nope", 1.0), ConfigError);
    EXPECT_THROW(sched.set_rate("api", -1.0), ConfigError);
}
}  // namespace resource_test
