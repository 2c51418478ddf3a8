// Recurring schedules through the driver on a ManualClock (docs/guide/time-and-cron.md):
// occurrences as virtual time passes, their keys and tag, overlap policies,
// bad schedules.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace recurring_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

// The ManualClock's wall time starts at 2026-01-01T00:00:00Z.
struct Fixture : test::VirtualTime {
    std::vector<std::string> ran;  // keys of the attempts, in order
    int fail_first = 0;            // attempts that fail permanently first
    bool hang = false;             // attempts wait for cancellation

    Sched build(Pool<int, int> pool = Pool<int, int>("p")) {
        pool.workers(1, 4, 4).executor_fn([this](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
            ran.push_back(ctx.key().value_or("?") + " " + ctx.tag("cronoq.recurring").value_or("?"));
            if (fail_first > 0) {
                --fail_first;
                co_return TaskError::permanent("boom");
            }
            if (hang) {
                co_await ctx.cancelled();
                co_return TaskError::cancelled();
            }
            co_return 1;
        });
        return Sched::builder().clock(clock).pool(std::move(pool)).build(io.get_executor());
    }
};

}  // namespace

TEST(Recurring, FiresAsVirtualTimePasses) {
    Fixture f;
    auto sched = f.build();
    sched.add_recurring(Recurring<int>("tick", "* * * * *", Task<int>(0)));
    f.advance(59s);
    EXPECT_TRUE(f.ran.empty());
    f.advance(1s);
    f.advance(60s);
    EXPECT_EQ(f.ran, (std::vector<std::string>{"tick@2026-01-01T00:01:00Z tick", "tick@2026-01-01T00:02:00Z tick"}));
    EXPECT_EQ(sched.status("tick@2026-01-01T00:02:00Z"), TaskStatus::Succeeded);
    EXPECT_TRUE(sched.remove_recurring("tick"));
    EXPECT_FALSE(sched.remove_recurring("tick"));
    f.advance(10min);
    EXPECT_EQ(f.ran.size(), 2u);
    f.io.restart();
    f.io.run();  // no schedule left: nothing pending
}

TEST(Recurring, TheTemplateKeyNamesOccurrencesInItsZone) {
    Fixture f;
    auto sched = f.build();
    // 00:30 in New York is 05:30 UTC in January.
    sched.add_recurring(Recurring<int>("nightly", "30 0 * * *", Task<int>(0).key("report")).tz("America/New_York"));
    f.advance(5h + 30min);
    EXPECT_EQ(f.ran, std::vector<std::string>{"report@2026-01-01T05:30:00Z nightly"});
}

TEST(Recurring, SkipCreatesNoOccurrenceWhileThePreviousRuns) {
    Fixture f;
    f.hang = true;
    auto sched = f.build();
    sched.add_recurring(Recurring<int>("job", "* * * * *", Task<int>(0)));
    f.advance(1min);
    f.advance(1min);
    f.advance(1min);
    EXPECT_EQ(f.ran.size(), 1u);
    EXPECT_FALSE(sched.status("job@2026-01-01T00:02:00Z").has_value());
    EXPECT_TRUE(sched.cancel("job@2026-01-01T00:01:00Z"));
    f.advance(1min);
    EXPECT_EQ(f.ran.size(), 2u);
    test::run(f.io, sched.shutdown(0s));
}

TEST(Recurring, QueueRunsAfterThePreviousEnds) {
    Fixture f;
    f.hang = true;
    auto sched = f.build();
    sched.add_recurring(Recurring<int>("job", "* * * * *", Task<int>(0)).overlap(OverlapPolicy::Queue));
    f.advance(1min);
    f.advance(1min);
    EXPECT_EQ(sched.status("job@2026-01-01T00:02:00Z"), TaskStatus::Blocked);
    sched.cancel("job@2026-01-01T00:01:00Z");
    f.io.restart();
    f.io.poll();
    EXPECT_EQ(sched.status("job@2026-01-01T00:02:00Z"), TaskStatus::Running);
    test::run(f.io, sched.shutdown(0s));
}

TEST(Recurring, QueueOnSuccessSkipsEverythingAfterAFailure) {
    Fixture f;
    f.fail_first = 1;
    auto sched = f.build();
    sched.add_recurring(Recurring<int>("job", "* * * * *", Task<int>(0).retry(RetryPolicy::none()))
                            .overlap(OverlapPolicy::QueueOnSuccess));
    f.advance(1min);
    EXPECT_EQ(sched.status("job@2026-01-01T00:01:00Z"), TaskStatus::Failed);
    f.advance(1min);
    f.advance(1min);
    EXPECT_EQ(sched.status("job@2026-01-01T00:02:00Z"), TaskStatus::Skipped);
    EXPECT_EQ(sched.status("job@2026-01-01T00:03:00Z"), TaskStatus::Skipped);
    EXPECT_EQ(f.ran.size(), 1u);
    // Adding it again restarts the chain.
    sched.add_recurring(Recurring<int>("job", "* * * * *", Task<int>(0)).overlap(OverlapPolicy::QueueOnSuccess));
    f.advance(1min);
    EXPECT_EQ(sched.status("job@2026-01-01T00:04:00Z"), TaskStatus::Succeeded);
}

TEST(Recurring, ALongPauseRunsOnceNotOncePerMissedOccurrence) {
    Fixture f;
    auto sched = f.build();
    sched.add_recurring(Recurring<int>("job", "* * * * *", Task<int>(0)));
    f.clock->advance(10min + 30s);  // nothing polled meanwhile
    f.io.restart();
    f.io.poll();
    EXPECT_EQ(f.ran, std::vector<std::string>{"job@2026-01-01T00:10:00Z job"});
}

TEST(Recurring, BadSchedulesAreConfigErrorsAndRegisterNothing) {
    Fixture f;
    auto sched = f.build();
    const auto message = [&](Recurring<int> r) -> std::string {
        try {
            sched.add_recurring(std::move(r));
        } catch (const ConfigError& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_NE(message(Recurring<int>("a", "*/0 * * * *", Task<int>(0))).find("minute"), std::string::npos);
    EXPECT_NE(message(Recurring<int>("b", "* * * * *", Task<int>(0)).tz("Mars/Olympus")).find("Mars/Olympus"),
              std::string::npos);
    EXPECT_NE(message(Recurring<int>("c", "* * * * *", Task<int>(0).pool("nope"))).find("nope"), std::string::npos);
    EXPECT_NE(message(Recurring<int>("", "* * * * *", Task<int>(0))).find("name"), std::string::npos);
    for (const char* name : {"a", "b", "c"}) EXPECT_FALSE(sched.remove_recurring(name));
    f.advance(5min);
    EXPECT_TRUE(f.ran.empty());
}

// ---- the wall clock stepped (NTP, an operator) -------------------------------------
// Engine time goes on; only ManualClock::set_system_time moves wall time.

TEST(Recurring, AWildcardScheduleFollowsAWallClockSteppedBack) {
    // Issue 13: an every-second schedule used to wait out the hour it was
    // stepped back, firing next about an hour later.
    Fixture f;
    auto sched = f.build();
    sched.add_recurring(Recurring<int>("tick", "* * * * * *", Task<int>(0)));
    f.advance(1s);
    f.advance(1s);
    f.clock->set_system_time(ManualClock::default_start() - 1h + 2s);
    f.advance(1s);
    f.advance(1s);
    EXPECT_EQ(f.ran, (std::vector<std::string>{"tick@2026-01-01T00:00:01Z tick", "tick@2026-01-01T00:00:02Z tick",
                                               "tick@2025-12-31T23:00:03Z tick", "tick@2025-12-31T23:00:04Z tick"}));
}

TEST(Recurring, AFixedTimeScheduleDoesNotRunAgainAfterAShortStepBack) {
    // Vixie cron's rule: a fixed-time job that ran is not repeated when
    // the clock goes back less than three hours.
    Fixture f;
    auto sched = f.build();
    sched.add_recurring(Recurring<int>("daily", "0 0 1 * * *", Task<int>(0)));
    f.advance(1h + 30min);
    f.clock->set_system_time(ManualClock::default_start() + 45min);
    f.advance(1h);  // 01:00 again, on the new wall clock
    EXPECT_EQ(f.ran, std::vector<std::string>{"daily@2026-01-01T01:00:00Z daily"});
    f.advance(23h);
    f.advance(15min);
    EXPECT_EQ(f.ran, (std::vector<std::string>{"daily@2026-01-01T01:00:00Z daily", "daily@2026-01-02T01:00:00Z daily"}));
}

TEST(Recurring, AFixedTimeScheduleFollowsAStepBackOfThreeHoursOrMoreOnTime) {
    // A step that long is a correction of the clock: the schedule follows
    // the new time, noticed within a minute rather than at its next
    // occurrence a day away.
    Fixture f;
    auto sched = f.build();
    sched.add_recurring(Recurring<int>("daily", "0 0 1 * * *", Task<int>(0)));
    f.advance(1h);
    f.clock->set_system_time(ManualClock::default_start() - 48h);  // 2025-12-30T00:00:00Z
    f.advance(1min);
    EXPECT_EQ(f.ran.size(), 1u);
    f.advance(58min);
    EXPECT_EQ(f.ran.size(), 1u) << "not before 01:00 on the new clock";
    f.advance(1min);
    EXPECT_EQ(f.ran, (std::vector<std::string>{"daily@2026-01-01T01:00:00Z daily", "daily@2025-12-30T01:00:00Z daily"}));
}

TEST(Recurring, AForwardStepRunsOneCatchUpWithinAMinute) {
    Fixture f;
    auto sched = f.build();
    sched.add_recurring(Recurring<int>("daily", "0 0 1 * * *", Task<int>(0)));
    f.clock->set_system_time(ManualClock::default_start() + 26h);  // 2026-01-02T02:00:00Z: 01:00 twice skipped
    f.advance(1min);
    EXPECT_EQ(f.ran, std::vector<std::string>{"daily@2026-01-02T01:00:00Z daily"});
}
}  // namespace recurring_test
