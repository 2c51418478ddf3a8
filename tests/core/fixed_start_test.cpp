// Fixed starts (docs/guide/time-and-cron.md): Scheduled until the start, dispatch at it, holds
// that keep a slot free, reservations and miss policies.
#include "engine_harness.hpp"

namespace cronoq::core::test::fixed_start_test {
namespace {

using S = TaskStatus;

TaskSpec at(PoolId pool, Time start, Duration hint = 5s) {
    TaskSpec spec{.pool = pool};
    spec.start = start;
    spec.duration_hint = hint;
    return spec;
}

TaskSpec lasting(PoolId pool, Duration hint, Priority p = Priority::Normal) {
    TaskSpec spec{.pool = pool, .priority = p};
    spec.duration_hint = hint;
    return spec;
}

TEST(FixedStartTest, ScheduledUntilItsStartThenDispatchedAtIt) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(at(pool, t0 + 10s), t0);
    EXPECT_EQ(h.engine.status(task), S::Scheduled);
    EXPECT_EQ(h.last_statuses_of(task), std::vector<S>{S::Scheduled});
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 10s);
    EXPECT_EQ(h.engine.counters(pool).scheduled, 1u);
    h.tick(t0 + 10s - 1ns);
    EXPECT_TRUE(h.dispatches().empty());
    h.tick(t0 + 10s);
    EXPECT_EQ(h.only_dispatch().task, task);
    EXPECT_EQ(h.last_statuses_of(task), (std::vector<S>{S::Ready, S::Running}));
    EXPECT_EQ(h.engine.counters(pool).starts_on_time, 1u);
    EXPECT_EQ(h.engine.counters(pool).scheduled, 0u);
}

TEST(FixedStartTest, HeldSlotKeepsTheStartOnTimeInASaturatedPool) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2});
    const TaskId fixed = h.submit(at(pool, t0 + 20s), t0);
    std::vector<TaskId> long_work;
    for (int i = 0; i < 10; ++i) long_work.push_back(h.submit(lasting(pool, 60s), t0));
    // One long task takes the free slot; the other slot is held for the start.
    EXPECT_EQ(h.engine.counters(pool).running, 1u);
    h.tick(t0 + 19s);
    EXPECT_EQ(h.engine.counters(pool).running, 1u);
    h.tick(t0 + 20s);
    EXPECT_EQ(h.only_dispatch().task, fixed);
    EXPECT_EQ(h.engine.counters(pool).starts_on_time, 1u);
}

TEST(FixedStartTest, ShortWorkThatEndsBeforeTheStartUsesTheHeldSlot) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2});
    h.submit(at(pool, t0 + 20s), t0);
    for (int i = 0; i < 3; ++i) h.submit(lasting(pool, 60s), t0);  // one runs, two wait
    // A short task fits before the start: it is not kept off the held slot,
    // and the long heads it passes stay queued.
    const TaskId quick = h.submit(lasting(pool, 5s, Priority::Low), t0 + 1s);
    EXPECT_EQ(h.only_dispatch().task, quick);
    h.complete(h.lease_of(quick), Outcome::success(), t0 + 6s);
    EXPECT_TRUE(h.dispatches().empty()) << "the long task would overrun the start";
    EXPECT_EQ(h.engine.counters(pool).ready, 2u);
}

TEST(FixedStartTest, StartsBeyondMaxHoldHoldNothing) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .max_hold = 10s});
    h.submit(at(pool, t0 + 60s), t0);
    h.submit(lasting(pool, 300s), t0);
    EXPECT_EQ(h.dispatches().size(), 1u);
}

TEST(FixedStartTest, ReservationsBeyondTheReservableFractionConflict) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 4, .max_workers = 8, .reservable_fraction = 0.25});
    h.submit(at(pool, t0 + 10s, 10s), t0);  // [10, 20)
    h.submit(at(pool, t0 + 15s, 10s), t0);  // [15, 25): two overlap, the limit
    auto third = h.try_submit(at(pool, t0 + 18s, 1s), t0);
    ASSERT_FALSE(third.has_value());
    EXPECT_EQ(third.error(), SubmitError::ReservationConflict);
    EXPECT_NE(third.message().find("reservable_fraction"), std::string::npos);
    EXPECT_TRUE(h.last.empty()) << "a rejected task left a trace";
    // Half-open: one that starts as another ends does not overlap it.
    EXPECT_TRUE(h.try_submit(at(pool, t0 + 20s, 5s), t0).has_value());
    EXPECT_TRUE(h.try_submit(at(pool, t0 + 25s, 5s), t0).has_value());
    EXPECT_EQ(h.engine.counters(pool).scheduled, 4u);
}

TEST(FixedStartTest, AtLeastOneSlotIsReservable) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .reservable_fraction = 0.0});
    EXPECT_TRUE(h.try_submit(at(pool, t0 + 10s), t0).has_value());
    EXPECT_EQ(h.try_submit(at(pool, t0 + 12s), t0).error(), SubmitError::ReservationConflict);
}

TEST(FixedStartTest, AReservationEndsWithItsTask) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1});
    const TaskId first = h.submit(at(pool, t0 + 10s), t0);
    EXPECT_EQ(h.try_submit(at(pool, t0 + 12s), t0).error(), SubmitError::ReservationConflict);
    h.cancel(first, t0 + 1s);
    EXPECT_TRUE(h.try_submit(at(pool, t0 + 12s), t0 + 1s).has_value());
}

// A pool of one slot, busy with a running task that will not end in time.
struct Missed : ::testing::Test {
    Harness h;
    PoolId pool = h.add_pool(PoolConfig{"p", 1});
    TaskId busy = h.submit(TaskSpec{.pool = pool}, t0);
    LeaseId busy_lease = h.only_dispatch().lease;

    TaskId fixed(MissPolicy policy) {
        TaskSpec spec = at(pool, t0 + 5s);
        spec.on_miss = policy;
        return h.submit(spec, t0);
    }
};

TEST_F(Missed, SkipEndsMissedOnceTheToleranceIsOver) {
    const TaskId task = fixed(MissPolicy::Skip);
    h.tick(t0 + 6s);  // 1 s late: within the tolerance
    EXPECT_EQ(h.engine.status(task), S::Ready);
    h.tick(t0 + 6s + 1ns);
    EXPECT_EQ(h.engine.status(task), S::Missed);
    const auto st = h.statuses_of(task);
    EXPECT_NE(st.back().message.find("missed its start"), std::string::npos);
    EXPECT_EQ(h.engine.counters(pool).missed, 1u);
    EXPECT_EQ(h.engine.counters(pool).starts_late, 1u);
}

TEST_F(Missed, FailEndsFailed) {
    const TaskId task = fixed(MissPolicy::Fail);
    h.tick(t0 + 7s);
    EXPECT_EQ(h.engine.status(task), S::Failed);
    EXPECT_EQ(h.engine.counters(pool).failed, 1u);
}

TEST_F(Missed, RunLateRunsFirstWhenASlotFrees) {
    const TaskId task = fixed(MissPolicy::RunLate);
    const TaskId urgent = h.submit(TaskSpec{.pool = pool, .priority = Priority::Critical}, t0 + 1s);
    h.tick(t0 + 30s);
    EXPECT_EQ(h.engine.status(task), S::Ready);
    h.complete(busy_lease, Outcome::success(), t0 + 40s);
    EXPECT_EQ(h.only_dispatch().task, task) << "a due start goes ahead of ready work";
    EXPECT_EQ(h.engine.status(urgent), S::Ready);
    EXPECT_EQ(h.engine.counters(pool).starts_late, 1u);
    EXPECT_EQ(h.engine.counters(pool).starts_on_time, 0u);
}

TEST_F(Missed, ANoticedLateStartFollowsThePolicyAtOnce) {
    // The owner calls in only long after the start (e.g. a suspended process).
    TaskSpec spec = at(pool, t0 + 5s);
    spec.on_miss = MissPolicy::Skip;
    const TaskId task = h.submit(spec, t0 + 60s);
    EXPECT_EQ(h.engine.status(task), S::Missed);
    EXPECT_EQ(h.last_statuses_of(task), std::vector<S>{S::Missed});
    (void)busy;
}

TEST_F(Missed, ToleranceOfDurationMaxNeverEndsMissed) {
    // Issue 13: the end of the tolerance + 1 ns overflowed into the past, so
    // the miss check fired at once and the task ended Missed.
    TaskSpec spec = at(pool, t0 + 5s);
    spec.on_miss = MissPolicy::Skip;
    spec.start_tolerance = Duration::max();
    const TaskId task = h.submit(spec, t0);
    h.tick(t0 + 5s);
    EXPECT_EQ(h.engine.status(task), S::Ready);
    EXPECT_EQ(h.engine.next_wakeup(), std::nullopt) << "a tolerance that never ends arms no miss check";
    h.tick(t0 + 24h * 365 * 100);
    EXPECT_EQ(h.engine.status(task), S::Ready);
    h.complete(busy_lease, Outcome::success(), t0 + 24h * 365 * 100);
    EXPECT_EQ(h.only_dispatch().task, task);
    EXPECT_EQ(h.engine.counters(pool).missed, 0u);
    EXPECT_EQ(h.engine.counters(pool).starts_on_time, 1u) << "any lateness is within a tolerance of Duration::max()";
    // Noticed late, at submit, by a century: still within the tolerance.
    spec.start = t0 + 20s;  // clear of the reservation of the task still running
    const TaskId late = h.submit(spec, t0 + 24h * 365 * 100);
    EXPECT_EQ(h.engine.status(late), S::Ready);
    (void)busy;
}

TEST(FixedStartTest, ShutdownCancelsScheduledTasks) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(at(pool, t0 + 10s), t0);
    h.shutdown(t0 + 1s, t0 + 1s);
    EXPECT_EQ(h.engine.status(task), S::Cancelled);
    EXPECT_EQ(h.engine.live_tasks(), 0u);
    EXPECT_EQ(h.engine.next_wakeup(), std::nullopt);
}

TEST(FixedStartTest, BadToleranceIsInvalid) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    TaskSpec spec = at(pool, t0 + 1s);
    spec.start_tolerance = -1s;
    EXPECT_EQ(h.try_submit(spec, t0).error(), SubmitError::Invalid);
}

TEST(FixedStartTest, BadPoolSettingsAreConfigErrors) {
    Harness h;
    EXPECT_THROW(h.add_pool(PoolConfig{.name = "a", .capacity = 1, .reservable_fraction = 1.5}), ConfigError);
    EXPECT_THROW(h.add_pool(PoolConfig{.name = "b", .capacity = 1, .max_hold = -1s}), ConfigError);
    EXPECT_THROW(h.add_pool(PoolConfig{.name = "c", .capacity = 4, .max_workers = 2}), ConfigError);
}

}  // namespace
}  // namespace cronoq::core::test::fixed_start_test
