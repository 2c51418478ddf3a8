// Shutdown (docs/guide/operations.md): stop admitting, drain within the grace, then cancel.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <asio/experimental/as_tuple.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include <optional>

namespace shutdown_test {

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

namespace {

// An executor that ignores cancellation: it waits on `gate` again whenever
// the wait is aborted, and returns only once the test opens it.
struct Deaf {
    std::shared_ptr<detail::WaitList> gate = detail::WaitList::create();
    std::shared_ptr<int> aborted_waits = std::make_shared<int>(0);
    std::shared_ptr<bool> returned = std::make_shared<bool>(false);

    static asio::awaitable<Result<int>> run(Deaf d) {
        co_await asio::this_coro::throw_if_cancelled(false);
        for (;;) {
            auto wait = d.gate->async_wait(asio::experimental::as_tuple(asio::use_awaitable));
            auto [ec] = co_await std::move(wait);
            if (!ec) break;
            ++*d.aborted_waits;
        }
        *d.returned = true;
        co_return 42;
    }

    Pool<int, int> pool() const {
        return Pool<int, int>("p").executor_fn([d = *this](TaskContext, std::shared_ptr<const int>) { return run(d); });
    }
};

}  // namespace

TEST(Shutdown, DeafExecutorIsAbandonedShortlyAfterTheAbort) {
    asio::io_context io;
    auto clock = std::make_shared<ManualClock>();
    Deaf deaf;
    auto sched = Sched::builder().clock(clock).abandon_after(2s).pool(deaf.pool()).build(io.get_executor());
    auto h = sched.try_submit(Task<int>(1)).value();
    io.poll();
    ASSERT_EQ(h.status(), TaskStatus::Running);

    bool done = false;
    asio::co_spawn(io, sched.shutdown(5s), [&](std::exception_ptr) { done = true; });
    io.poll();
    clock->advance(5s);  // the grace ends: the attempt is aborted, and ignores it
    io.poll();
    EXPECT_EQ(*deaf.aborted_waits, 1);
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
    EXPECT_FALSE(done) << "shutdown waits abandon_after for the aborted coroutine";
    clock->advance(2s);
    io.poll();
    EXPECT_TRUE(done) << "shutdown must complete once the deaf attempt is abandoned";
    EXPECT_FALSE(*deaf.returned);

    // The abandoned coroutine is the application's: run() returns when it
    // ends, and its late result changes nothing.
    deaf.gate->set();
    io.restart();
    io.run();
    EXPECT_TRUE(*deaf.returned);
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
    EXPECT_EQ(sched.status(h.id()), TaskStatus::Cancelled);
}

TEST(Shutdown, LastHandleDroppedWithDeafExecutorDoesNotHang) {
    asio::io_context io;
    auto clock = std::make_shared<ManualClock>();
    Deaf deaf;
    std::optional<TaskHandle<int>> h;
    {
        auto sched = Sched::builder().clock(clock).pool(deaf.pool()).build(io.get_executor());
        h = sched.try_submit(Task<int>(1)).value();
        io.poll();
    }  // zero grace: aborted at once
    io.poll();
    EXPECT_EQ(*deaf.aborted_waits, 1);
    EXPECT_EQ(h->status(), TaskStatus::Cancelled);
    clock->advance(1s);  // the default abandon_after
    io.poll();
    deaf.gate->set();
    io.restart();
    io.run();  // returns: nothing of the scheduler is left pending
    EXPECT_TRUE(*deaf.returned);
}
}  // namespace shutdown_test
