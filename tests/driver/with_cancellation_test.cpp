// with_cancellation: an executor's work raced against its attempt's
// cancellation ends with the work's value or error at once, or with
// TaskError::cancelled() once the attempt is cancelled. Virtual time: the
// attempts' timeouts move only when the test advances the clock.
#include "driver_harness.hpp"

#include <cronoq/with_cancellation.hpp>

#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace with_cancellation_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

asio::awaitable<int> refuse_at_once() {
    throw std::runtime_error("connection refused");
    co_return 0;
}

// Waits for an hour of real time unless Asio cancels it; says which.
asio::awaitable<int> wait_an_hour(std::shared_ptr<std::string> outcome) {
    asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
    try {
        co_await timer.async_wait(asio::use_awaitable);
        *outcome = "fired";
    } catch (const std::system_error& e) {
        *outcome = e.code() == asio::error::operation_aborted ? "operation_aborted" : "other error";
        throw;
    }
    co_return 1;
}

std::string failure_of(asio::io_context& io, TaskHandle<int>& handle) {
    try {
        test::run(io, handle.result());
    } catch (const TaskFailure& failure) {
        return failure.what();
    }
    return "succeeded";
}

}  // namespace

TEST(WithCancellation, WorkThatThrowsEndsTheAttemptAtOnceNotAtItsTimeout) {
    test::VirtualTime vt;
    auto sched = Sched::builder()
                     .clock(vt.clock)
                     .pool(Pool<int, int>("p").default_timeout(10s).retry(RetryPolicy::none()).executor_fn(
                         [](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             auto r = co_await with_cancellation(ctx, refuse_at_once());
                             co_return r;
                         }))
                     .build(vt.io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    vt.io.poll();  // no virtual time passes: the timeout cannot be what ends it
    ASSERT_EQ(h.status(), TaskStatus::Failed);
    EXPECT_EQ(failure_of(vt.io, h), "failed: panic: connection refused");
}

TEST(WithCancellation, WorkThatEndsFirstGivesItsValue) {
    asio::io_context io;
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                             auto doubled = [](int v) -> asio::awaitable<int> { co_return 2 * v; };
                             auto work = doubled(*x);
                             auto r = co_await with_cancellation(ctx, std::move(work));
                             co_return r;
                         }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(21)).value();
    EXPECT_EQ(*test::run(io, h.result()), 42);
}

TEST(WithCancellation, CancellingTheTaskStopsTheWorkAndReturnsCancelled) {
    asio::io_context io;
    auto work_outcome = std::make_shared<std::string>("not started");
    auto helper_outcome = std::make_shared<std::string>("not returned");
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [=](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             auto r = co_await with_cancellation(ctx, wait_an_hour(work_outcome));
                             *helper_outcome = r ? "value" : r.error().message();
                             co_return r;
                         }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    io.poll();
    ASSERT_EQ(h.status(), TaskStatus::Running);
    EXPECT_TRUE(h.cancel());
    io.run();  // returns only once the hour's timer is gone
    EXPECT_EQ(*work_outcome, "operation_aborted");
    EXPECT_EQ(*helper_outcome, "cancelled");
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
}

TEST(WithCancellation, TimeoutStopsTheWork) {
    test::VirtualTime vt;
    auto work_outcome = std::make_shared<std::string>("not started");
    auto sched = Sched::builder()
                     .clock(vt.clock)
                     .pool(Pool<int, int>("p").default_timeout(5s).retry(RetryPolicy::none()).executor_fn(
                         [=](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             auto r = co_await with_cancellation(ctx, wait_an_hour(work_outcome));
                             co_return r;
                         }))
                     .build(vt.io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    vt.io.poll();
    vt.advance(5s);
    EXPECT_EQ(*work_outcome, "operation_aborted");
    EXPECT_EQ(h.status(), TaskStatus::DeadLettered);
    EXPECT_EQ(failure_of(vt.io, h), "dead_lettered: timeout");
}

TEST(WithCancellation, WorkWithoutAValue) {
    asio::io_context io;
    auto ran = std::make_shared<bool>(false);
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [=](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             auto step = [](std::shared_ptr<bool> flag) -> asio::awaitable<void> {
                                 *flag = true;
                                 co_return;
                             };
                             auto work = step(ran);
                             Result<void> r = co_await with_cancellation(ctx, std::move(work));
                             if (!r) co_return r.error();
                             co_return 3;
                         }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    EXPECT_EQ(*test::run(io, h.result()), 3);
    EXPECT_TRUE(*ran);
}

// Once the attempt is cancelled, the driver has also cancelled its coroutine
// (Asio's terminal cancellation): a later call throws operation_aborted
// instead of starting the work.
TEST(WithCancellation, AfterTheAttemptWasCancelledItThrowsOperationAborted) {
    asio::io_context io;
    auto work_outcome = std::make_shared<std::string>("not started");
    auto helper_outcome = std::make_shared<std::string>("not returned");
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [=](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             co_await ctx.cancelled();  // the test cancels the task first
                             try {
                                 auto r = co_await with_cancellation(ctx, wait_an_hour(work_outcome));
                                 *helper_outcome = r ? "value" : r.error().message();
                             } catch (const std::system_error& e) {
                                 *helper_outcome = e.code() == asio::error::operation_aborted ? "operation_aborted" : "other";
                             }
                             co_return TaskError::cancelled();
                         }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    io.poll();
    EXPECT_TRUE(h.cancel());
    io.run();
    EXPECT_EQ(*helper_outcome, "operation_aborted");
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
}

}  // namespace with_cancellation_test
