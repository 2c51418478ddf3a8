// Shutdown (SPEC §12): stop admitting, drain within the grace, then cancel.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

// Payload n: works n seconds of virtual time (it waits on a gate the test
// opens), 0 waits for cancellation.
Pool<int, int> gated_pool(std::shared_ptr<bool> open) {
    return Pool<int, int>("p").workers(1, 2, 2).executor_fn(
        [open](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
            if (*x == 0) {
                co_await ctx.cancelled();
                co_return TaskError::cancelled();
            }
            asio::steady_timer poll(co_await asio::this_coro::executor);
            while (!*open) {
                poll.expires_after(1ms);
                co_await poll.async_wait(asio::use_awaitable);
            }
            co_return *x;
        });
}

}  // namespace

TEST(Shutdown, DrainsWithinGraceThenCancels) {
    asio::io_context io;
    auto clock = std::make_shared<ManualClock>();
    auto open = std::make_shared<bool>(false);
    auto sched = Sched::builder().clock(clock).pool(gated_pool(open)).build(io.get_executor());
    auto finishes = sched.try_submit(Task<int>(1)).value();
    auto stubborn = sched.try_submit(Task<int>(0)).value();
    auto queued = sched.try_submit(Task<int>(2)).value();
    io.poll();
    ASSERT_EQ(finishes.status(), TaskStatus::Running);
    ASSERT_EQ(stubborn.status(), TaskStatus::Running);
    ASSERT_EQ(queued.status(), TaskStatus::Ready);

    bool done = false;
    asio::co_spawn(io, sched.shutdown(10s), [&](std::exception_ptr) { done = true; });
    io.poll();
    EXPECT_EQ(queued.status(), TaskStatus::Cancelled);  // queued work ends at once
    EXPECT_EQ(sched.try_submit(Task<int>(3)).error(), SubmitError::ShuttingDown);
    *open = true;
    while (finishes.status() == TaskStatus::Running) io.run_one();
    EXPECT_EQ(finishes.status(), TaskStatus::Succeeded);  // finished within the grace
    EXPECT_FALSE(done);
    clock->advance(10s);  // the grace ends
    io.run();             // returns: after shutdown nothing is pending
    EXPECT_TRUE(done);
    EXPECT_EQ(stubborn.status(), TaskStatus::Cancelled);
}

TEST(Shutdown, CompletesAtOnceWhenIdle) {
    asio::io_context io;
    auto sched = Sched::builder().pool(gated_pool(std::make_shared<bool>(true))).build(io.get_executor());
    test::run(io, sched.shutdown(1h));
    io.run();
    SUCCEED();
}

TEST(Shutdown, DestroyingTheLastHandleCancelsEverything) {
    asio::io_context io;
    std::optional<TaskHandle<int>> running, queued;
    {
        auto sched = Sched::builder().pool(gated_pool(std::make_shared<bool>(false))).build(io.get_executor());
        running = sched.try_submit(Task<int>(0)).value();
        sched.try_submit(Task<int>(0)).value();
        queued = sched.try_submit(Task<int>(5)).value();
        io.poll();
    }
    io.run();  // returns: zero grace, the attempts were cancelled
    EXPECT_EQ(running->status(), TaskStatus::Cancelled);
    EXPECT_EQ(queued->status(), TaskStatus::Cancelled);
    EXPECT_FALSE(running->cancel());  // the scheduler is gone: nothing to cancel
}

TEST(Shutdown, CopiesShareOneScheduler) {
    asio::io_context io;
    auto open = std::make_shared<bool>(true);
    std::optional<Sched> copy;
    TaskHandle<int> h;
    {
        auto sched = Sched::builder().pool(gated_pool(open)).build(io.get_executor());
        copy = sched;
        h = sched.try_submit(Task<int>(3)).value();
    }
    io.run();  // the copy keeps the scheduler: the task runs to its end
    EXPECT_EQ(h.status(), TaskStatus::Succeeded);
    test::run(io, copy->shutdown(0s));
}
