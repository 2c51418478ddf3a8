// The driver on an io_context run by several threads.
#include "driver_harness.hpp"

#include <cronoq/diagnostics.hpp>

#include <gtest/gtest.h>

#include <asio/executor_work_guard.hpp>
#include <asio/use_future.hpp>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

namespace threads_test {

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
    auto c = cronoq::diagnostics::counters(sched, "p");
    ASSERT_TRUE(c);
    EXPECT_EQ(c->succeeded, static_cast<std::uint64_t>(count));
    EXPECT_EQ(c->dispatched, static_cast<std::uint64_t>(count + count / 10));
}

// Several submitting threads and several io_context threads at once: the
// engine steps combine submissions, ends of attempts and cancels from all
// of them, and every task still reaches exactly one terminal status.
TEST(Threads, ConcurrentSubmittersCancellersAndRunnersLoseNothing) {
    constexpr int submitters = 3;
    constexpr int per_submitter = 6000;
    constexpr int count = submitters * per_submitter;
    asio::io_context io;
    auto guard = asio::make_work_guard(io);
    std::vector<std::atomic<int>> runs(count);
    auto sched = Scheduler<int, int>::builder()
                     .pool(Pool<int, int>("p").workers(1, 16, 16).retry(RetryPolicy{2, 0ms, 1.0, 0ms, false}).executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                             runs[*x].fetch_add(1);
                             if (*x % 7 == 0 && ctx.attempt() == 1) co_return TaskError::retryable("transient");
                             if (*x % 11 == 0) co_return TaskError::permanent("bad input");
                             co_return *x;
                         }))
                     .build(io.get_executor());
    std::vector<std::thread> runners;
    for (int i = 0; i < 3; ++i) runners.emplace_back([&] { io.run(); });

    std::vector<std::vector<TaskHandle<int>>> handles(submitters);
    std::vector<std::thread> producers;
    for (int s = 0; s < submitters; ++s)
        producers.emplace_back([&, s] {
            auto& mine = handles[static_cast<std::size_t>(s)];
            // Half one by one, half in groups through try_submit_many.
            for (int i = 0; i < per_submitter / 2; ++i)
                mine.push_back(sched.try_submit(Task<int>(s * per_submitter + i)).value());
            for (int i = per_submitter / 2; i < per_submitter; i += 100) {
                std::vector<Task<int>> group;
                for (int j = i; j < i + 100 && j < per_submitter; ++j) group.emplace_back(s * per_submitter + j);
                for (auto& r : sched.try_submit_many(std::move(group))) mine.push_back(std::move(r).value());
            }
        });
    std::atomic<bool> producing{true};
    std::thread canceller([&] {
        // Cancels whatever it finds by id, from outside every io_context thread.
        std::uint64_t tried = 0;
        while (producing.load() || tried < 200) sched.cancel(TaskId{1 + (tried++ * 37) % count});
    });
    for (auto& p : producers) p.join();
    producing.store(false);
    canceller.join();

    std::map<TaskStatus, int> outcomes;
    for (auto& mine : handles)
        for (auto& h : mine) {
            auto r = asio::co_spawn(
                io,
                [h]() -> asio::awaitable<bool> {
                    try {
                        co_await h.result();
                        co_return true;
                    } catch (const TaskFailure&) {
                        co_return false;
                    }
                },
                asio::use_future);
            r.get();
            ASSERT_TRUE(is_terminal(h.status()));
            ++outcomes[h.status()];
        }
    asio::co_spawn(io, sched.shutdown(0s), asio::use_future).get();
    guard.reset();
    for (auto& t : runners) t.join();

    int total = 0;
    for (const auto& [status, n] : outcomes) total += n;
    EXPECT_EQ(total, count);
    auto c = cronoq::diagnostics::counters(sched, "p");
    ASSERT_TRUE(c);
    EXPECT_EQ(c->succeeded, static_cast<std::uint64_t>(outcomes[TaskStatus::Succeeded]));
    EXPECT_EQ(c->failed, static_cast<std::uint64_t>(outcomes[TaskStatus::Failed]));
    EXPECT_EQ(c->cancelled, static_cast<std::uint64_t>(outcomes[TaskStatus::Cancelled]));
    EXPECT_EQ(c->succeeded + c->failed + c->cancelled + c->dead_lettered, static_cast<std::uint64_t>(count));
    for (int i = 0; i < count; ++i) ASSERT_LE(runs[i].load(), 2) << "task " << i;
}
}  // namespace threads_test
