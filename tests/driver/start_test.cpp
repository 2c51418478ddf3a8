// How attempts start (docs/design.md, "Starting attempts" and "Lanes"): after
// the step that dispatched them, at once on a thread that runs the
// io_context, posted from any other thread or from inside another start;
// on an io_context made for one thread, without strands.
#include "driver_harness.hpp"

#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace start_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

// The two kinds of io_context a pool's lanes depend on.
enum class Threads { One, Any };

std::unique_ptr<asio::io_context> make_io(Threads t) {
    return t == Threads::One ? std::make_unique<asio::io_context>(1) : std::make_unique<asio::io_context>();
}

class Lanes : public ::testing::TestWithParam<Threads> {};

// A scheduler whose executor notes that it began, then echoes its payload.
Sched noting_start(asio::io_context& io, bool& began) {
    return Sched::builder()
        .pool(Pool<int, int>("p").executor_fn(
            [&began](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                began = true;
                co_return *x;
            }))
        .build(io.get_executor());
}

}  // namespace

// The abort sequence of docs/guide/executors.md reaches a running coroutine whether its
// lane is a strand or the one-thread io_context's executor itself.
TEST_P(Lanes, AbortReachesTheRunningCoroutineInOrder) {
    auto io = make_io(GetParam());
    auto log = std::make_shared<std::vector<std::string>>();
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [log](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
                             auto registration = ctx.cancellation_token().on_cancel([log] { log->push_back("token"); });
                             try {
                                 co_await timer.async_wait(asio::use_awaitable);
                                 log->push_back("timer fired");
                             } catch (const std::system_error& e) {
                                 log->push_back(e.code() == asio::error::operation_aborted ? "operation_aborted" : "other");
                             }
                             co_return TaskError::cancelled();
                         }))
                     .build(io->get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    io->poll();  // the attempt now waits on its timer
    ASSERT_EQ(h.status(), TaskStatus::Running);
    EXPECT_TRUE(h.cancel());
    io->run();
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
    EXPECT_EQ(*log, (std::vector<std::string>{"token", "operation_aborted"}));
}

// A timeout is an abort the engine decides on its own: the same path.
TEST_P(Lanes, TimeoutAbortsTheRunningCoroutine) {
    auto io = make_io(GetParam());
    auto clock = std::make_shared<ManualClock>();
    auto sched = Sched::builder()
                     .clock(clock)
                     .pool(Pool<int, int>("p").executor_fn(
                         [](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             co_await ctx.cancelled();
                             co_return TaskError::cancelled();
                         }))
                     .build(io->get_executor());
    auto h = sched.try_submit(Task<int>(0).timeout(1s).retry(RetryPolicy{1})).value();
    io->poll();
    ASSERT_EQ(h.status(), TaskStatus::Running);
    clock->advance(1s);
    io->run();
    EXPECT_TRUE(is_terminal(h.status()));
    EXPECT_NE(h.status(), TaskStatus::Succeeded);
    EXPECT_EQ(h.status(), sched.status(h.id()));
}

INSTANTIATE_TEST_SUITE_P(IoContexts, Lanes, ::testing::Values(Threads::One, Threads::Any),
                         [](const auto& info) { return info.param == Threads::One ? "OneThread" : "AnyThreads"; });

// From a coroutine on the io_context's thread, try_submit starts the
// executor before it returns, up to the executor's first suspension.
TEST(Starts, OnAThreadRunningTheIoContextTheExecutorBeginsBeforeTrySubmitReturns) {
    asio::io_context io;
    bool began = false;
    auto sched = noting_start(io, began);
    auto submit = [&]() -> asio::awaitable<bool> {
        auto h = sched.try_submit(Task<int>(7)).value();
        const bool began_inside = began;
        auto out = co_await h.result();
        co_return began_inside && *out == 7;
    };
    EXPECT_TRUE(test::run(io, submit()));
}

// From a thread that does not run the io_context the start is posted: the
// executor runs there, later, never on the submitting thread.
TEST(Starts, FromAnotherThreadTheStartIsPosted) {
    asio::io_context io;
    bool began = false;
    auto sched = noting_start(io, began);
    auto h = sched.try_submit(Task<int>(7)).value();
    EXPECT_FALSE(began);
    EXPECT_EQ(h.status(), TaskStatus::Running);
    io.run();
    EXPECT_TRUE(began);
    EXPECT_EQ(h.status(), TaskStatus::Succeeded);
}

// Each task submits the next before its first suspension. Were every start
// made at once, each would run inside the previous one's try_submit, and a
// long chain would overflow the stack; a start made inside another start is
// posted, so the stack stays as deep as one start.
TEST(Starts, TasksSubmittingEachOtherDoNotGrowTheStack) {
    constexpr int chain = 20000;
    asio::io_context io;
    std::uintptr_t shallowest = UINTPTR_MAX;
    std::uintptr_t deepest = 0;
    int ran = 0;
    std::optional<Sched> sched;
    sched.emplace(Sched::builder()
                      .pool(Pool<int, int>("p").workers(1, chain, chain).executor_fn(  // room: every dispatch is at once
                          [&](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                              // The machine stack, not the coroutine's frame (on the heap).
                              const auto at = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
                              shallowest = std::min(shallowest, at);
                              deepest = std::max(deepest, at);
                              ++ran;
                              if (*x + 1 < chain && !sched->try_submit(Task<int>(*x + 1)))
                                  co_return TaskError::permanent("the next task was refused");
                              co_return *x;
                          }))
                      .build(io.get_executor()));
    auto first = [&]() -> asio::awaitable<void> {
        auto h = sched->try_submit(Task<int>(0)).value();
        co_await h.result();
    };
    test::run(io, first());
    io.run();
    EXPECT_EQ(ran, chain);
    // One start is a few kilobytes of frames; the whole chain nested would
    // be tens of megabytes.
    EXPECT_LT(deepest - shallowest, 256u * 1024u);
}
}  // namespace start_test
