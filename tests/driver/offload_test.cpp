// cronoq::offload: blocking work on the scheduler's blocking pool (docs/guide/executors.md).
#include "driver_harness.hpp"

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

namespace offload_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

// Polls `token` until it fires, bounded at about 10 s; true if it fired.
bool wait_for_cancel(const CancellationToken& token) {
    for (int i = 0; i < 10000 && !token.is_cancelled(); ++i) std::this_thread::sleep_for(1ms);
    return token.is_cancelled();
}

}  // namespace

TEST(Offload, ReturnsTheValueAndRunsOffTheIoThread) {
    asio::io_context io;
    const auto io_thread = std::this_thread::get_id();
    std::thread::id fn_thread;
    std::thread::id resumed_on;
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                             const int in = *x;
                             auto job = offload(ctx, [in, &fn_thread] {
                                 fn_thread = std::this_thread::get_id();
                                 return in * 10;
                             });
                             const int r = co_await std::move(job);
                             resumed_on = std::this_thread::get_id();
                             co_return r + 1;
                         }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(4)).value();
    const int got = *cronoq::test::run(io, h.result());
    EXPECT_EQ(got, 41);
    EXPECT_NE(fn_thread, std::thread::id{});
    EXPECT_NE(fn_thread, io_thread);
    EXPECT_EQ(resumed_on, io_thread);  // the attempt resumes on its own executor
}

TEST(Offload, VoidFunctionAndMoveOnlyResult) {
    asio::io_context io;
    std::atomic<int> side_effect{0};
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                             auto side = offload(ctx, [&side_effect, v = *x] { side_effect = v; });
                             co_await std::move(side);
                             auto boxed = offload(ctx, [v = *x] { return std::make_unique<int>(v + 2); });
                             std::unique_ptr<int> p = co_await std::move(boxed);
                             co_return *p;
                         }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(5)).value();
    EXPECT_EQ(*cronoq::test::run(io, h.result()), 7);
    EXPECT_EQ(side_effect.load(), 5);
}

TEST(Offload, ExceptionThrownInsideRethrowsAtTheAwait) {
    asio::io_context io;
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").retry(RetryPolicy::none()).executor_fn(
                         [](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                             auto job = offload(ctx, []() -> int { throw std::runtime_error("boom in offload"); });
                             if (*x == 0) {
                                 // Left uncaught: the attempt fails as a panic.
                                 co_return co_await std::move(job);
                             }
                             try {
                                 co_await std::move(job);
                             } catch (const std::runtime_error& e) {
                                 co_return TaskError::permanent(std::string("caught: ") + e.what());
                             }
                             co_return TaskError::permanent("not thrown");
                         }))
                     .build(io.get_executor());
    auto caught = sched.try_submit(Task<int>(1)).value();
    auto uncaught = sched.try_submit(Task<int>(0)).value();
    io.run();
    try {
        cronoq::test::run(io, caught.result());
        FAIL() << "the task must have failed";
    } catch (const TaskFailure& f) {
        EXPECT_EQ(f.status(), TaskStatus::Failed);
        EXPECT_EQ(f.message(), "caught: boom in offload");
    }
    try {
        cronoq::test::run(io, uncaught.result());
        FAIL() << "the task must have failed";
    } catch (const TaskFailure& f) {
        EXPECT_EQ(f.status(), TaskStatus::Failed);
        EXPECT_EQ(f.message(), "panic: boom in offload");
    }
}

TEST(Offload, TokenSeesTheTaskCancelled) {
    asio::io_context io;
    std::promise<void> started;
    std::promise<bool> saw_cancel;
    std::atomic<bool> callback_ran{false};
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             auto job = offload(ctx, [&](CancellationToken token) {
                                 token.on_cancel([&callback_ran] { callback_ran = true; });
                                 const bool before = token.is_cancelled();
                                 started.set_value();
                                 saw_cancel.set_value(!before && wait_for_cancel(token));
                                 return 1;
                             });
                             co_return co_await std::move(job);
                         }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    io.poll();                       // the attempt starts and hands fn to the blocking pool
    started.get_future().wait();     // fn is running and has not seen a cancellation
    EXPECT_EQ(h.status(), TaskStatus::Running);
    EXPECT_TRUE(h.cancel());
    io.poll();                       // the abort runs on the attempt's strand and fires the token
    EXPECT_TRUE(saw_cancel.get_future().get());
    EXPECT_TRUE(callback_ran.load());
    io.restart();
    io.run();
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
}

TEST(Offload, CancellingTheAttemptEndsTheTaskWhileFnStillRuns) {
    asio::io_context io;
    std::promise<void> started;
    std::promise<void> gate;
    std::shared_future<void> opened = gate.get_future().share();
    std::promise<void> fn_done;
    std::atomic<bool> fn_finished{false};
    std::atomic<bool> resumed_after_offload{false};
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             auto job = offload(ctx, [&, opened] {
                                 started.set_value();
                                 opened.wait();  // ignores cancellation: cannot be interrupted
                                 fn_finished = true;
                                 fn_done.set_value();
                                 return 1;
                             });
                             const int r = co_await std::move(job);
                             resumed_after_offload = true;
                             co_return r;
                         }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    io.poll();
    started.get_future().wait();
    EXPECT_TRUE(h.cancel());
    // The task ends while fn is still blocked on the gate.
    try {
        cronoq::test::run(io, h.result());
        FAIL() << "result() of a cancelled task must throw";
    } catch (const TaskFailure& f) {
        EXPECT_EQ(f.status(), TaskStatus::Cancelled);
    }
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
    EXPECT_FALSE(fn_finished.load());
    // The attempt's coroutine has left the offload wait too: the io_context
    // runs out of work although fn has not returned.
    io.restart();
    io.run();
    EXPECT_FALSE(fn_finished.load());
    EXPECT_FALSE(resumed_after_offload.load());  // the wait ended with operation_aborted
    gate.set_value();
    fn_done.get_future().wait();
    EXPECT_TRUE(fn_finished.load());
    io.restart();
    io.run();
    EXPECT_FALSE(resumed_after_offload.load());  // fn's late result is dropped
}

TEST(Offload, ShutdownWhileFnRunsCompletesAndDropsTheResult) {
    asio::io_context io;
    std::promise<void> started;
    std::promise<void> gate;
    std::shared_future<void> opened = gate.get_future().share();
    std::promise<void> fn_done;
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             auto job = offload(ctx, [&, opened] {
                                 started.set_value();
                                 opened.wait();
                                 fn_done.set_value();
                                 return 1;
                             });
                             co_return co_await std::move(job);
                         }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    io.poll();
    started.get_future().wait();
    cronoq::test::run(io, sched.shutdown(0s));  // does not wait for fn
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
    gate.set_value();
    fn_done.get_future().wait();
}

// fn runs to its end whatever happens to the wait, so the wait honours
// `terminal` and `partial` cancellation but not `total` (which promises the
// operation had no effect).
TEST(Offload, HonoursPartialCancellationButNotTotal) {
    asio::io_context io;
    std::optional<TaskContext> context;
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             context = ctx;
                             co_await ctx.cancelled();
                             co_return TaskError::cancelled();
                         }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    io.poll();
    ASSERT_TRUE(context.has_value());

    std::promise<void> gate;
    std::shared_future<void> opened = gate.get_future().share();
    std::promise<void> started;
    auto waiter = [](TaskContext ctx, std::shared_future<void> opened, std::promise<void>* started) -> asio::awaitable<int> {
        // Let every type through to the offload wait: it filters itself.
        co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
        auto job = offload(ctx, [opened, started] {
            started->set_value();
            opened.wait();
            return 7;
        });
        co_return co_await std::move(job);
    };
    asio::cancellation_signal signal;
    std::optional<std::string> ended;
    asio::co_spawn(io, waiter(*context, opened, &started),
                   asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e, int v) {
                       try {
                           if (e) std::rethrow_exception(e);
                           ended = "value " + std::to_string(v);
                       } catch (const std::system_error& err) {
                           ended = err.code() == asio::error::operation_aborted ? "operation_aborted" : err.what();
                       }
                   }));
    io.poll();
    started.get_future().wait();  // fn runs on the blocking pool

    signal.emit(asio::cancellation_type::total);
    io.poll();
    EXPECT_FALSE(ended.has_value()) << "a total cancellation ended the wait: " << *ended;

    signal.emit(asio::cancellation_type::partial);
    io.poll();
    EXPECT_EQ(ended, std::optional<std::string>("operation_aborted"));

    gate.set_value();
    EXPECT_TRUE(h.cancel());
    io.restart();
    io.run();
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
}
}  // namespace offload_test
