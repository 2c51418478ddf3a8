// Timeouts, leases, backoff and aging through the driver, on a ManualClock:
// virtual time, no sleeping.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <asio/post.hpp>
#include <asio/use_awaitable.hpp>

#include <vector>

namespace timing_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

using Fixture = test::VirtualTime;

// Waits until cancelled; reports whether it saw the cancellation.
asio::awaitable<Result<int>> wait_for_cancel(TaskContext ctx, std::shared_ptr<const int>) {
    co_await ctx.cancelled();
    co_return TaskError::cancelled();
}

}  // namespace

TEST(Timing, AttemptIsAbortedAtItsTimeoutNotBefore) {
    Fixture f;
    auto sched = Sched::builder().clock(f.clock).pool(Pool<int, int>("p").executor_fn(wait_for_cancel)).build(f.io.get_executor());
    auto h = sched.try_submit(Task<int>(0).timeout(5s).retry(RetryPolicy::none())).value();
    f.io.poll();
    ASSERT_EQ(h.status(), TaskStatus::Running);
    f.advance(5s - 1ns);
    EXPECT_EQ(h.status(), TaskStatus::Running);
    f.advance(1ns);
    EXPECT_EQ(h.status(), TaskStatus::DeadLettered);
    try {
        test::run(f.io, h.result());
        FAIL();
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.message(), "timeout");
    }
    f.io.restart();
    f.io.run();  // the aborted coroutine has returned: nothing is left
}

TEST(Timing, TimedOutAttemptIsRetriedAfterBackoff) {
    Fixture f;
    std::vector<std::uint32_t> attempts;
    auto sched = Sched::builder()
                     .clock(f.clock)
                     .pool(Pool<int, int>("p").executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             attempts.push_back(ctx.attempt());
                             if (ctx.attempt() == 1) co_await ctx.cancelled();  // times out
                             co_return 7;
                         }))
                     .build(f.io.get_executor());
    auto h = sched.try_submit(Task<int>(0).timeout(2s).retry(RetryPolicy{3, 1s, 2.0, 10s, false})).value();
    f.io.poll();
    f.advance(2s);
    EXPECT_EQ(h.status(), TaskStatus::Retrying);
    f.advance(1s - 1ns);
    EXPECT_EQ(attempts.size(), 1u);
    f.advance(1ns);
    EXPECT_EQ(attempts, (std::vector<std::uint32_t>{1, 2}));
    EXPECT_EQ(h.status(), TaskStatus::Succeeded);
    EXPECT_EQ(*test::run(f.io, h.result()), 7);
}

TEST(Timing, HeartbeatsKeepAnAttemptAlivePastTheTtl) {
    Fixture f;
    auto clock = f.clock;
    auto sched = Sched::builder()
                     .clock(clock)
                     .pool(Pool<int, int>("p").lease_ttl(10s).retry(RetryPolicy::none()).executor_fn(
                         [clock](TaskContext ctx, std::shared_ptr<const int> beats) -> asio::awaitable<Result<int>> {
                             // Work for 30 s of virtual time, a heartbeat every 6 s.
                             for (int i = 0; i < 5; ++i) {
                                 clock->advance(6s);
                                 if (*beats) ctx.heartbeat();
                                 co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
                             }
                             co_return 1;
                         }))
                     .build(f.io.get_executor());
    auto alive = sched.try_submit(Task<int>(1)).value();
    f.io.run();
    EXPECT_EQ(alive.status(), TaskStatus::Succeeded);

    auto silent = sched.try_submit(Task<int>(0)).value();
    f.io.restart();
    f.io.run();
    EXPECT_EQ(silent.status(), TaskStatus::DeadLettered);
    EXPECT_THROW(test::run(f.io, silent.result()), TaskFailure);
}

// One worker held by a blocker; a Low task is queued, time passes, a fresh
// Normal task is queued, then the blocker is cancelled: returns the order in
// which the two ran.
static std::vector<int> low_then_normal_order(std::chrono::nanoseconds low_waits_longer) {
    Fixture f;
    std::vector<int> order;
    auto sched = Sched::builder()
                     .clock(f.clock)
                     .pool(Pool<int, int>("p").workers(1, 1, 1).executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                             if (*x == 0) {
                                 co_await ctx.cancelled();
                                 co_return TaskError::cancelled();
                             }
                             order.push_back(*x);
                             co_return *x;
                         }))
                     .build(f.io.get_executor());
    auto blocker = sched.try_submit(Task<int>(0)).value();
    f.io.poll();
    sched.try_submit(Task<int>(1).priority(Priority::Low)).value();
    f.advance(low_waits_longer);
    sched.try_submit(Task<int>(2).priority(Priority::Normal)).value();
    f.advance(40s);  // waiting longer changes nothing now: both age alike
    blocker.cancel();
    f.io.restart();
    f.io.run();
    return order;
}

TEST(Timing, LowOvertakesFreshNormalAfterWaiting46s) { EXPECT_EQ(low_then_normal_order(46s), (std::vector<int>{1, 2})); }

TEST(Timing, LowDoesNotOvertakeFreshNormalAfter40s) { EXPECT_EQ(low_then_normal_order(40s), (std::vector<int>{2, 1})); }

TEST(Timing, IdleSchedulerArmsNoTimer) {
    Fixture f;
    auto sched = Sched::builder().clock(f.clock).pool(Pool<int, int>("p").executor_fn(wait_for_cancel)).build(f.io.get_executor());
    auto h = sched.try_submit(Task<int>(0).timeout(1h)).value();
    f.io.poll();
    EXPECT_FALSE(f.io.stopped());
    h.cancel();
    f.io.restart();
    f.io.run();  // returns: the timeout's wakeup was disarmed with the attempt
    EXPECT_FALSE(f.clock->advance_to_next());
}
}  // namespace timing_test
