// Invalid configuration is a ConfigError naming the field; nothing is
// half-built (docs/guide/README.md).
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace config_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

asio::awaitable<Result<int>> echo(TaskContext, std::shared_ptr<const int> x) { co_return *x; }

Pool<int, int> good_pool(std::string name = "p") { return Pool<int, int>(std::move(name)).executor_fn(echo); }

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Builds on a fresh io_context and returns ConfigError::what(), or fails the
// test if build() did not throw. Also checks that the failed build left
// nothing behind on the io_context.
std::string build_error(const Sched::Builder& builder) {
    asio::io_context io;
    try {
        auto sched = builder.build(io.get_executor());
        ADD_FAILURE() << "build() did not throw";
        return {};
    } catch (const ConfigError& e) {
        EXPECT_EQ(io.run(), 0u) << "a failed build must leave no work on the io_context";
        return e.what();
    }
}

#define EXPECT_CONTAINS(haystack, needle)                                                             \
    do {                                                                                              \
        const std::string h_ = (haystack);                                                            \
        EXPECT_NE(h_.find(needle), std::string::npos) << "\"" << h_ << "\" does not contain \"" << (needle) << "\""; \
    } while (0)

}  // namespace

// ---- pools ---------------------------------------------------------------------

TEST(Config, NoPoolsNamesPools) {
    EXPECT_CONTAINS(build_error(Sched::builder()), "pools");
}

TEST(Config, DuplicatePoolNameIsRejectedAndNamed) {
    const auto msg = build_error(Sched::builder().pool(good_pool("dup")).pool(good_pool("dup")));
    EXPECT_CONTAINS(msg, "dup");
    EXPECT_CONTAINS(msg, "duplicate");
}

TEST(Config, WorkersMinAboveMaxNamesMinAndPool) {
    const auto msg = build_error(Sched::builder().pool(good_pool("io").workers(4, 4, 2)));
    EXPECT_CONTAINS(msg, "io");
    EXPECT_CONTAINS(msg, "min");
    EXPECT_CONTAINS(msg, "max");
}

TEST(Config, WorkersZeroMaxNamesMax) {
    const auto msg = build_error(Sched::builder().pool(good_pool("zero").workers(0, 0, 0)));
    EXPECT_CONTAINS(msg, "zero");
    EXPECT_CONTAINS(msg, "max");
}

TEST(Config, WorkersInitialZeroWithoutAutoscalerIsRejectedAndNamed) {
    // Its tasks would stay Ready forever: nothing can raise the capacity.
    const auto msg = build_error(Sched::builder().pool(good_pool("idle").workers(0, 0, 4)));
    EXPECT_CONTAINS(msg, "idle");
    EXPECT_CONTAINS(msg, "initial");
    EXPECT_CONTAINS(msg, "autoscale");
    asio::io_context io;
    EXPECT_NO_THROW(Sched::builder().pool(good_pool("scaled").workers(0, 0, 4).autoscale(AutoscaleConfig{})).build(io.get_executor()));
}

TEST(Config, ThreadCountsAreBounded) {
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool()).blocking_threads(100000)), "blocking_threads");
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool()).abandon_after(-1s)), "abandon_after");
}

TEST(Config, WorkersInitialOutsideRangeNamesInitial) {
    const auto above = build_error(Sched::builder().pool(good_pool("above").workers(1, 5, 3)));
    EXPECT_CONTAINS(above, "above");
    EXPECT_CONTAINS(above, "initial");
    const auto below = build_error(Sched::builder().pool(good_pool("below").workers(2, 1, 3)));
    EXPECT_CONTAINS(below, "below");
    EXPECT_CONTAINS(below, "initial");
}

TEST(Config, PoolWithoutExecutorIsRejectedAndNamed) {
    const auto msg = build_error(Sched::builder().pool(Pool<int, int>("bare")));
    EXPECT_CONTAINS(msg, "bare");
    EXPECT_CONTAINS(msg, "executor");
}

TEST(Config, NonPositiveLeaseTtlNamesLeaseTtl) {
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool("a").lease_ttl(0s))), "lease_ttl");
    const auto msg = build_error(Sched::builder().pool(good_pool("b").lease_ttl(-1s)));
    EXPECT_CONTAINS(msg, "lease_ttl");
    EXPECT_CONTAINS(msg, "\"b\"");
}

TEST(Config, NonPositiveDefaultTimeoutNamesDefaultTimeout) {
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool().default_timeout(0s))), "default_timeout");
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool().default_timeout(-5ms))), "default_timeout");
}

TEST(Config, NonPositiveDefaultDurationNamesDefaultDuration) {
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool().default_duration(0s))), "default_duration");
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool().default_duration(-1ns))), "default_duration");
}

// ---- retry policy -----------------------------------------------------------------

TEST(Config, RetryWithZeroMaxAttemptsNamesMaxAttempts) {
    const RetryPolicy policy{0, 1s, 2.0, 10s, false};
    const auto msg = build_error(Sched::builder().pool(good_pool("r").retry(policy)));
    EXPECT_CONTAINS(msg, "max_attempts");
    EXPECT_CONTAINS(msg, "\"r\"");
}

TEST(Config, RetryWithNegativeBackoffNamesTheField) {
    const RetryPolicy initial{3, -1s, 2.0, 10s, false};
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool().retry(initial))), "initial_backoff");
    const RetryPolicy max{3, 1s, 2.0, -10s, false};
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool().retry(max))), "max_backoff");
}

TEST(Config, RetryWithNanOrNegativeMultiplierNamesMultiplier) {
    const RetryPolicy not_a_number{3, 1s, kNaN, 10s, false};
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool().retry(not_a_number))), "multiplier");
    const RetryPolicy negative{3, 1s, -2.0, 10s, false};
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool().retry(negative))), "multiplier");
    const RetryPolicy infinite{3, 1s, std::numeric_limits<double>::infinity(), 10s, false};
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool().retry(infinite))), "multiplier");
}

// ---- scheduler-wide constants -------------------------------------------------------

TEST(Config, NanOrNegativeAgingRateNamesAgingRate) {
    PriorityConfig c;
    c.aging_rate = kNaN;
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool()).priority(c)), "aging_rate");
    c.aging_rate = -0.5;
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool()).priority(c)), "aging_rate");
}

TEST(Config, NanOrNegativeBaseNamesBase) {
    PriorityConfig c;
    c.base[2] = kNaN;
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool()).priority(c)), "base");
    c.base[2] = 100.0;
    c.base[3] = -1.0;
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool()).priority(c)), "base");
}

TEST(Config, NanOrNegativeAgeCapNamesAgeCap) {
    PriorityConfig c;
    c.age_cap = kNaN;
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool()).priority(c)), "age_cap");
    c.age_cap = -800.0;
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool()).priority(c)), "age_cap");
}

TEST(Config, NegativeUrgencyWindowNamesWindow) {
    UrgencyConfig u;
    u.window = -1s;
    const auto msg = build_error(Sched::builder().pool(good_pool()).urgency(u));
    EXPECT_CONTAINS(msg, "urgency");
    EXPECT_CONTAINS(msg, "window");
}

TEST(Config, NanOrNegativeUrgencyNumbersNameTheField) {
    UrgencyConfig u;
    u.max = kNaN;
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool()).urgency(u)), "max");
    u = UrgencyConfig{};
    u.overdue_rate = -1.0;
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool()).urgency(u)), "overdue_rate");
    u = UrgencyConfig{};
    u.overdue_cap = kNaN;
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool()).urgency(u)), "overdue_cap");
}

TEST(Config, NegativeRetentionNamesRetention) {
    EXPECT_CONTAINS(build_error(Sched::builder().pool(good_pool()).retention(-1s)), "retention");
}

// ---- valid configurations and failed builds -----------------------------------------

TEST(Config, ValidConfigurationBuildsAndRuns) {
    asio::io_context io;
    PriorityConfig priority;
    priority.aging_rate = 0.0;  // zero is allowed: ">= 0"
    UrgencyConfig urgency;
    urgency.window = 0s;
    auto sched = Sched::builder()
                     .pool(good_pool("a").workers(0, 1, 4).lease_ttl(1s).default_timeout(1s).default_duration(1ms).retry(
                         RetryPolicy{1, 0s, 0.0, 0s, false}))
                     .pool(good_pool("b").workers(2, 2, 2).retry(RetryPolicy::none()))
                     .priority(priority)
                     .urgency(urgency)
                     .retention(0s)
                     .build(io.get_executor());
    auto ha = sched.try_submit(Task<int>(7).pool("a")).value();
    auto hb = sched.try_submit(Task<int>(8).pool("b")).value();
    io.run();
    EXPECT_EQ(ha.status(), TaskStatus::Succeeded);
    EXPECT_EQ(hb.status(), TaskStatus::Succeeded);
    EXPECT_EQ(*cronoq::test::run(io, ha.result()), 7);
}

TEST(Config, FailedBuildLeavesNothingRunning) {
    asio::io_context io;
    auto clock = std::make_shared<ManualClock>();
    // The first pool is valid and gets registered before the second fails.
    auto builder = Sched::builder().clock(clock).pool(good_pool("ok")).pool(good_pool("bad").workers(3, 3, 1));
    EXPECT_THROW(builder.build(io.get_executor()), ConfigError);
    EXPECT_EQ(io.run(), 0u);                // returns at once: nothing pending
    EXPECT_FALSE(clock->advance_to_next()); // no timer was armed on the clock
}

TEST(Config, BlockingSchedulerBuildThrowsConfigErrorToo) {
    try {
        auto sched = BlockingScheduler<int, int>::builder().threads(2).pool(Pool<int, int>("naked")).build();
        FAIL() << "build() did not throw";
    } catch (const ConfigError& e) {
        EXPECT_CONTAINS(std::string(e.what()), "naked");
    }
}
}  // namespace config_test
#undef EXPECT_CONTAINS
