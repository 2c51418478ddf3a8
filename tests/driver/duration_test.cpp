// Durations at the public API (issue 13): every function that takes one
// accepts any std::chrono::duration and saturates it into nanoseconds
// (saturating_ns) instead of wrapping; the longest ones mean "never".
#include <cronoq/duration.hpp>  // first: the header compiles on its own

#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>

namespace duration_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using std::chrono::hours;
using std::chrono::nanoseconds;
using Seconds = std::chrono::duration<double>;
using Sched = Scheduler<int, int>;

constexpr double infinity = std::numeric_limits<double>::infinity();
constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();

asio::awaitable<Result<int>> wait_for_cancel(TaskContext ctx, std::shared_ptr<const int>) {
    co_await ctx.cancelled();
    co_return TaskError::cancelled();
}

}  // namespace

// ---- saturating_ns --------------------------------------------------------------

static_assert(saturating_ns(hours::max()) == nanoseconds::max());
static_assert(saturating_ns(hours::min()) == nanoseconds::min());
static_assert(saturating_ns(nanoseconds::max()) == nanoseconds::max());
static_assert(saturating_ns(1500ms) == 1'500'000'000ns);

TEST(SaturatingNs, IntegerDurationsConvertExactlyOrClamp) {
    EXPECT_EQ(saturating_ns(hours::max()), nanoseconds::max()) << "the implicit conversion wraps to about -1 h";
    EXPECT_EQ(saturating_ns(hours::min()), nanoseconds::min());
    EXPECT_EQ(saturating_ns(std::chrono::microseconds::max()), nanoseconds::max());
    EXPECT_EQ(saturating_ns(std::chrono::seconds(9'223'372'036)), nanoseconds(9'223'372'036'000'000'000));
    EXPECT_EQ(saturating_ns(std::chrono::seconds(9'223'372'037)), nanoseconds::max());
    EXPECT_EQ(saturating_ns(std::chrono::seconds(-9'223'372'037)), nanoseconds::min());
    EXPECT_EQ(saturating_ns(nanoseconds::min()), nanoseconds::min());
    EXPECT_EQ(saturating_ns(-5min), -300s);
    // Finer than nanoseconds: truncated toward zero, like duration_cast.
    EXPECT_EQ(saturating_ns(std::chrono::duration<std::int64_t, std::pico>(1999)), 1ns);
    EXPECT_EQ(saturating_ns(std::chrono::duration<std::int64_t, std::pico>(-1999)), -1ns);
    // A period that is not a whole number of nanoseconds.
    EXPECT_EQ(saturating_ns(std::chrono::duration<std::int64_t, std::ratio<1, 3>>(2)), 666'666'666ns);
    // Unsigned counts beyond the signed range.
    EXPECT_EQ(saturating_ns(std::chrono::duration<std::uint64_t, std::nano>(std::numeric_limits<std::uint64_t>::max())),
              nanoseconds::max());
    EXPECT_EQ(saturating_ns(std::chrono::duration<std::uint32_t, std::ratio<3600>>(7)), 7h);
}

TEST(SaturatingNs, FloatingPointDurationsTruncateAndClamp) {
    EXPECT_EQ(saturating_ns(Seconds(1.5)), 1500ms);
    EXPECT_EQ(saturating_ns(std::chrono::duration<double, std::milli>(-0.0000019)), -1ns);
    EXPECT_EQ(saturating_ns(Seconds(infinity)), nanoseconds::max());
    EXPECT_EQ(saturating_ns(Seconds(-infinity)), nanoseconds::min());
    EXPECT_EQ(saturating_ns(Seconds(1e300)), nanoseconds::max());
    EXPECT_EQ(saturating_ns(std::chrono::duration<float, std::ratio<3600>>(1e30f)), nanoseconds::max());
    EXPECT_EQ(saturating_ns(std::chrono::duration<long double>(9.3e9L)), nanoseconds::max());
    EXPECT_EQ(saturating_ns(Seconds(not_a_number)), nanoseconds::min()) << "NaN: rejected by every check of a negative value";
}

// ---- every setter -----------------------------------------------------------------

TEST(DurationSetters, TaskSettersSaturate) {
    const auto r = detail::Access::state(Task<int>(0)
                                             .deadline_in(hours::max())
                                             .start_tolerance(hours::max())
                                             .timeout(Seconds(infinity))
                                             .duration_hint(hours::max())
                                             .start_in(hours::max()));
    EXPECT_EQ(r.deadline_in, nanoseconds::max());
    EXPECT_EQ(r.start_in, nanoseconds::max());
    EXPECT_EQ(r.start_tolerance, nanoseconds::max());
    EXPECT_EQ(r.timeout, nanoseconds::max());
    EXPECT_EQ(r.duration_hint, nanoseconds::max());
    EXPECT_EQ(detail::Access::state(Task<int>(0).start_in(hours::min())).start_in, nanoseconds::min());
    EXPECT_EQ(detail::Access::state(Task<int>(0).timeout(Seconds(not_a_number))).timeout, nanoseconds::min());
}

TEST(DurationSetters, PoolRecurringAndTaskErrorSaturate) {
    const auto def = detail::Access::state(Pool<int, int>("p")
                                               .lease_ttl(hours::max())
                                               .default_timeout(hours::max())
                                               .default_duration(Seconds(infinity))
                                               .max_hold(hours::max()));
    EXPECT_EQ(def.engine.lease_ttl, nanoseconds::max());
    EXPECT_EQ(def.engine.default_timeout, nanoseconds::max());
    EXPECT_EQ(def.engine.default_duration, nanoseconds::max());
    EXPECT_EQ(def.engine.max_hold, nanoseconds::max());
    EXPECT_EQ(detail::Access::state(Recurring<int>("r", "* * * * *", Task<int>(0)).deadline_after(hours::max()))
                  .deadline_after,
              nanoseconds::max());
    EXPECT_EQ(TaskError::retry_after("slow down", hours::max()).retry_after(), nanoseconds::max());
}

TEST(DurationSetters, BuilderDurationsSaturateInsteadOfFailingAsNegative) {
    test::VirtualTime f;
    // Wrapped, each was negative: a ConfigError.
    auto sched = Sched::builder()
                     .clock(f.clock)
                     .retention(hours::max())
                     .metrics_window(hours::max())
                     .abandon_after(hours::max())
                     .pool(Pool<int, int>("p").executor_fn(wait_for_cancel))
                     .build(f.io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    f.advance(1s);
    EXPECT_EQ(sched.snapshot().pools.at(0).window, nanoseconds::max() / 6 * 6);
    h.cancel();
    f.advance(24h * 365);
    EXPECT_EQ(sched.status(h.id()), TaskStatus::Cancelled) << "retained for ever";
    // NaN is not a length of time: the checks of negative values reject it.
    EXPECT_THROW(Sched::builder().retention(Seconds(not_a_number)).pool(Pool<int, int>("p").executor_fn(wait_for_cancel)).build(f.io.get_executor()),
                 ConfigError);
}

// ---- the longest durations mean never ----------------------------------------------------

TEST(DurationSetters, StartInHoursMaxIsScheduledForeverNotMissed) {
    test::VirtualTime f;
    auto sched = Sched::builder().clock(f.clock).pool(Pool<int, int>("p").executor_fn(wait_for_cancel)).build(f.io.get_executor());
    auto never = sched.try_submit(Task<int>(0).start_in(hours::max()).on_miss(MissPolicy::Skip)).value();
    auto never_either = sched.try_submit(Task<int>(0).start_in(Seconds(infinity)).on_miss(MissPolicy::Fail)).value();
    f.advance(24h * 365 * 10);
    EXPECT_EQ(never.status(), TaskStatus::Scheduled);
    EXPECT_EQ(never_either.status(), TaskStatus::Scheduled);
    EXPECT_TRUE(never.cancel());
    EXPECT_TRUE(never_either.cancel());
    f.io.restart();
    f.io.run();  // nothing left pending
}

TEST(DurationSetters, StartToleranceMaxRunsWheneverASlotFrees) {
    test::VirtualTime f;
    auto sched = Sched::builder()
                     .clock(f.clock)
                     .pool(Pool<int, int>("p").workers(1, 1, 1).executor_fn(
                         [](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                             if (*x == 0) co_await ctx.cancelled();
                             co_return *x;
                         }))
                     .build(f.io.get_executor());
    auto busy = sched.try_submit(Task<int>(0)).value();
    auto fixed = sched.try_submit(Task<int>(7).start_in(1s).start_tolerance(hours::max()).on_miss(MissPolicy::Skip)).value();
    f.advance(1s);
    f.advance(24h * 365);
    EXPECT_EQ(fixed.status(), TaskStatus::Ready) << "it used to end Missed at its start";
    busy.cancel();
    f.advance(0s);
    EXPECT_EQ(*test::run(f.io, fixed.result()), 7);
}

TEST(DurationSetters, EveryDurationAtItsMaximumMeansNever) {
    test::VirtualTime f;
    int runs = 0;
    auto sched = Sched::builder()
                     .clock(f.clock)
                     .pool(Pool<int, int>("p")
                               .workers(1, 2, 2)
                               .lease_ttl(hours::max())
                               .default_timeout(hours::max())
                               .default_duration(hours::max())
                               .max_hold(hours::max())
                               .executor_fn([&runs](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                                   ++runs;
                                   if (*x == 0) co_return TaskError::retry_after("not before the end of time", hours::max());
                                   co_return *x;
                               }))
                     .build(f.io.get_executor());
    auto done = sched.try_submit(Task<int>(3).timeout(hours::max()).deadline_in(hours::max()).duration_hint(hours::max())).value();
    auto waiting = sched.try_submit(Task<int>(0)).value();
    f.advance(0s);
    EXPECT_EQ(*test::run(f.io, done.result()), 3);
    f.advance(24h * 365 * 100);
    EXPECT_EQ(waiting.status(), TaskStatus::Retrying);
    EXPECT_EQ(runs, 2);
    test::run(f.io, sched.shutdown(hours::max()));  // nothing runs: no grace to wait out
    EXPECT_EQ(waiting.status(), TaskStatus::Cancelled);
}

// ---- ManualClock -----------------------------------------------------------------------

TEST(ManualClockDurations, AdvanceSaturatesInsteadOfGoingBackwards) {
    ManualClock clock;
    const core::Time engine_before = clock.now();
    const auto wall_before = clock.system_now();
    clock.advance(Seconds(not_a_number));
    clock.advance(-1s);
    clock.advance(hours::min());
    EXPECT_EQ(clock.now(), engine_before);
    clock.advance(nanoseconds::max());
    EXPECT_EQ(clock.now(), core::Time::max()) << "it used to wrap into the past";
    EXPECT_GT(clock.system_now(), wall_before);
    clock.advance(hours::max());
    EXPECT_EQ(clock.now(), core::Time::max());
    EXPECT_GT(clock.system_now(), wall_before);

    ManualClock other;
    other.advance(hours::max());
    EXPECT_EQ(other.now(), core::Time::max());
}

TEST(ManualClockDurations, SetSystemTimeStepsWallTimeOnly) {
    ManualClock clock;
    const core::Time engine_before = clock.now();
    const auto earlier = ManualClock::default_start() - 1h;
    clock.set_system_time(earlier);
    EXPECT_EQ(clock.system_now(), earlier);
    EXPECT_EQ(clock.now(), engine_before);
    clock.advance(1s);
    EXPECT_EQ(clock.system_now(), earlier + 1s);
    EXPECT_EQ(clock.now(), engine_before + 1s);
}

// ---- BlockingHandle::get_for ------------------------------------------------------------

TEST(BlockingGetFor, TheLongestWaitsWaitForTheTask) {
    // Each task runs a few milliseconds of real time; get_for used to
    // return empty after about a microsecond (wait_for overflowed).
    auto sched = BlockingScheduler<int, int>::builder()
                     .pool(Pool<int, int>("p").workers(1, 1, 1).executor_fn(
                         [](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                             asio::steady_timer work(co_await asio::this_coro::executor, 30ms);
                             co_await work.async_wait(asio::use_awaitable);
                             co_return *x;
                         }))
                     .build();
    const auto check = [&sched](auto wait, int x) {
        auto h = sched.submit(Task<int>(x));
        const auto out = h.get_for(wait);
        ASSERT_TRUE(out.has_value()) << "returned before the task ended";
        EXPECT_EQ(**out, x);
    };
    check(nanoseconds::max(), 1);
    check(hours::max(), 2);
    check(Seconds(infinity), 3);
    check(std::chrono::steady_clock::duration::max() - 1ns, 4);
}

TEST(BlockingGetFor, NegativeAndNaNWaitsReturnAtOnce) {
    auto sched = BlockingScheduler<int, int>::builder().pool(Pool<int, int>("p").executor_fn(wait_for_cancel)).build();
    auto h = sched.submit(Task<int>(0));
    EXPECT_EQ(h.get_for(-1s), std::nullopt);
    EXPECT_EQ(h.get_for(hours::min()), std::nullopt);
    EXPECT_EQ(h.get_for(nanoseconds::min()), std::nullopt);
    EXPECT_EQ(h.get_for(Seconds(not_a_number)), std::nullopt);
    EXPECT_TRUE(h.cancel());
    EXPECT_THROW(h.get(), TaskFailure);
}
}  // namespace duration_test
