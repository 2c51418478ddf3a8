// The driver on an io_context run by several threads.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <asio/executor_work_guard.hpp>
#include <asio/use_future.hpp>

#include <atomic>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace cronoq;

TEST(Threads, HundredThousandTasksOnFourThreadsNoneLostNoneRunTwice) {
    constexpr int count = 100000;
    asio::io_context io;
    auto guard = asio::make_work_guard(io);
    std::vector<std::atomic<int>> runs(count);
    std::atomic<int> retried{0};
    auto sched = Scheduler<int, int>::builder()
                     .pool(Pool<int, int>("p").workers(1, 64, 64).retry(RetryPolicy{3, 0ms, 1.0, 0ms, false}).executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                             runs[*x].fetch_add(1);
                             // Every tenth task fails once and is retried.
                             if (*x % 10 == 0 && ctx.attempt() == 1) {
                                 retried.fetch_add(1);
                                 co_return TaskError::retryable("transient");
                             }
                             co_return *x;
                         }))
                     .build(io.get_executor());
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) threads.emplace_back([&] { io.run(); });

    std::vector<TaskHandle<int>> handles;
    handles.reserve(count);
    for (int i = 0; i < count; ++i) {
        auto priority = static_cast<Priority>(i % 4);
        handles.push_back(sched.try_submit(Task<int>(i).priority(priority)).value());
    }
    auto sum = asio::co_spawn(
        io,
        [&]() -> asio::awaitable<long long> {
            long long total = 0;
            for (auto& h : handles) total += *co_await h.result();
            co_await sched.shutdown(0s);
            co_return total;
        },
        asio::use_future);
    const long long total = sum.get();
    guard.reset();
    for (auto& t : threads) t.join();

    EXPECT_EQ(total, static_cast<long long>(count) * (count - 1) / 2);
    EXPECT_EQ(retried.load(), count / 10);
    for (int i = 0; i < count; ++i) ASSERT_EQ(runs[i].load(), i % 10 == 0 ? 2 : 1) << "task " << i;
    auto c = sched.counters("p");
    ASSERT_TRUE(c);
    EXPECT_EQ(c->succeeded, static_cast<std::uint64_t>(count));
    EXPECT_EQ(c->dispatched, static_cast<std::uint64_t>(count + count / 10));
}
