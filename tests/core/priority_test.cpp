// Dispatch order (docs/guide/ordering.md): classes, FIFO, aging, deadline urgency.
//
// Every test queues tasks in a pool of capacity 0, then opens one slot at a
// chosen time and reads the order in which the engine dispatches them
// (Harness::dispatch_order completes each dispatched task at once).
//
// Scores with the defaults: base {10000, 1000, 100, 10}, +2 points per second
// waited up to +800, + urgency (0 until 5 s before the latest start, rising
// linearly to 5000 at it, then +100/s up to +2000 more).
#include "engine_harness.hpp"

#include <functional>

namespace cronoq::core::test::priority_test {
namespace {

using P = Priority;

class PriorityTest : public ::testing::Test {
protected:
    TaskId submit(P priority, Time now) { return h.submit(TaskSpec{.pool = pool, .priority = priority}, now); }
    TaskId submit_deadline(P priority, Time now, Time deadline, Duration hint) {
        return h.submit(TaskSpec{.pool = pool, .priority = priority, .deadline = deadline, .duration_hint = hint}, now);
    }
    std::vector<TaskId> order(Time now) { return h.dispatch_order(pool, now); }

    Harness h;
    PoolId pool = h.add_pool(PoolConfig{"p", 0});
};

using Ids = std::vector<TaskId>;

// ---- FIFO and classes ----------------------------------------------------------

TEST_F(PriorityTest, FifoWithinAClass) {
    const TaskId a = submit(P::Normal, t0);
    const TaskId b = submit(P::Normal, t0 + 1s);
    const TaskId c = submit(P::Normal, t0 + 2s);
    const TaskId d = submit(P::Normal, t0 + 2s);  // same instant as c: submission order
    EXPECT_TRUE(h.dispatches().empty());
    EXPECT_EQ(order(t0 + 3s), (Ids{a, b, c, d}));
}

TEST_F(PriorityTest, FifoWithinAClassWhenAgingIsCapped) {
    // All three have waited far beyond the 400 s that reach the age cap, so
    // their scores are equal (900): the earlier-ready task still goes first.
    const TaskId a = submit(P::Normal, t0);
    const TaskId b = submit(P::Normal, t0 + 100s);
    const TaskId c = submit(P::Normal, t0 + 200s);
    EXPECT_EQ(order(t0 + 10000s), (Ids{a, b, c}));
}

TEST_F(PriorityTest, ClassOrderIsCriticalHighNormalLow) {
    // Submitted worst class first, so FIFO alone would give the reverse.
    const TaskId l1 = submit(P::Low, t0);
    const TaskId n1 = submit(P::Normal, t0);
    const TaskId h1 = submit(P::High, t0);
    const TaskId c1 = submit(P::Critical, t0);
    const TaskId l2 = submit(P::Low, t0);
    const TaskId n2 = submit(P::Normal, t0);
    const TaskId h2 = submit(P::High, t0);
    const TaskId c2 = submit(P::Critical, t0);
    EXPECT_EQ(order(t0), (Ids{c1, c2, h1, h2, n1, n2, l1, l2}));
}

TEST_F(PriorityTest, DefaultPriorityIsNormal) {
    const TaskId low = submit(P::Low, t0);
    const TaskId dflt = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId high = submit(P::High, t0);
    EXPECT_EQ(order(t0), (Ids{high, dflt, low}));
}

// ---- aging ---------------------------------------------------------------------

TEST_F(PriorityTest, LowOvertakesFreshNormalAfter46s) {
    const TaskId low = submit(P::Low, t0);               // 10 + 2*46 = 102
    const TaskId normal = submit(P::Normal, t0 + 46s);   // 100
    EXPECT_EQ(order(t0 + 46s), (Ids{low, normal}));
}

TEST_F(PriorityTest, LowDoesNotOvertakeFreshNormalAt40s) {
    const TaskId low = submit(P::Low, t0);               // 10 + 2*40 = 90
    const TaskId normal = submit(P::Normal, t0 + 40s);   // 100
    EXPECT_EQ(order(t0 + 40s), (Ids{normal, low}));
}

TEST_F(PriorityTest, LowStillBehindFreshNormalAt44_5s) {
    const TaskId low = submit(P::Low, t0);                 // 99
    const TaskId normal = submit(P::Normal, t0 + 44500ms);
    EXPECT_EQ(order(t0 + 44500ms), (Ids{normal, low}));
}

TEST_F(PriorityTest, LowAheadOfFreshNormalAt45_5s) {
    const TaskId low = submit(P::Low, t0);                 // 101
    const TaskId normal = submit(P::Normal, t0 + 45500ms);
    EXPECT_EQ(order(t0 + 45500ms), (Ids{low, normal}));
}

TEST_F(PriorityTest, LowOvertakesNormalThatWaited46sLessEvenLater) {
    // What counts is the difference in waiting: at 200 s, Low has 410 and the
    // Normal task (ready 46 s later) has 100 + 2*154 = 408.
    const TaskId low = submit(P::Low, t0);
    const TaskId normal = submit(P::Normal, t0 + 46s);
    EXPECT_EQ(order(t0 + 200s), (Ids{low, normal}));
}

TEST_F(PriorityTest, LowStaysBehindNormalThatWaited40sLessEvenLater) {
    // 410 against 100 + 2*160 = 420.
    const TaskId low = submit(P::Low, t0);
    const TaskId normal = submit(P::Normal, t0 + 40s);
    EXPECT_EQ(order(t0 + 200s), (Ids{normal, low}));
}

TEST_F(PriorityTest, AgingNeverLiftsLowOrNormalAboveFreshHighAfter10000s) {
    const TaskId low = submit(P::Low, t0);        // capped: 810
    const TaskId normal = submit(P::Normal, t0);  // capped: 900
    const TaskId high = submit(P::High, t0 + 10000s);
    EXPECT_EQ(order(t0 + 10000s), (Ids{high, normal, low}));
}

TEST_F(PriorityTest, AgingNeverLiftsHighAboveFreshCritical) {
    const TaskId high = submit(P::High, t0);  // capped: 1800
    const TaskId critical = submit(P::Critical, t0 + 10000s);
    EXPECT_EQ(order(t0 + 10000s), (Ids{critical, high}));
}

TEST_F(PriorityTest, CappedNormalBeatsCappedLow) {
    // Low is older, but both are capped: 900 against 810.
    const TaskId low = submit(P::Low, t0);
    const TaskId normal = submit(P::Normal, t0 + 100s);
    EXPECT_EQ(order(t0 + 10000s), (Ids{normal, low}));
}

TEST_F(PriorityTest, EqualScoresGoToTheTaskReadyLongest) {
    // Both capped at 900, one in the deadline-free FIFO and one (far from
    // its deadline) in the deadline heap: the one ready longer goes first,
    // whichever queue it is in.
    const TaskId fifo = submit(P::Normal, t0);
    const TaskId dl = submit_deadline(P::Normal, t0 + 100s, t0 + 100000s, 1s);
    EXPECT_EQ(order(t0 + 1000s), (Ids{fifo, dl}));
}

TEST_F(PriorityTest, EqualScoresGoToTheTaskReadyLongestEvenIfSubmittedLater) {
    const TaskId dl = submit_deadline(P::Normal, t0, t0 + 100000s, 1s);
    const TaskId fifo = submit(P::Normal, t0 + 100s);
    EXPECT_EQ(order(t0 + 1000s), (Ids{dl, fifo}));
}

TEST_F(PriorityTest, LowTiesFreshNormalAtExactly45sAndGoesFirstAsTheOlder) {
    // 10 + 2*45 = 100 = a fresh Normal task: equal scores, the task ready
    // longer wins. (docs/guide/ordering.md promises overtaking only past 45 s.)
    const TaskId low = submit(P::Low, t0);
    const TaskId normal = submit(P::Normal, t0 + 45s);
    EXPECT_EQ(order(t0 + 45s), (Ids{low, normal}));
}

TEST_F(PriorityTest, CappedLowBeatsFreshNormal) {
    const TaskId low = submit(P::Low, t0);  // 810
    const TaskId normal = submit(P::Normal, t0 + 10000s);
    EXPECT_EQ(order(t0 + 10000s), (Ids{low, normal}));
}

TEST_F(PriorityTest, AgingCountsFromLeavingRetryBackoff) {
    // A task that failed and waited out its backoff is "fresh" again: its
    // wait counts from the end of the backoff, not from its submission.
    const RetryPolicy retry{2, 10s, 1.0, 10s, false};
    h.set_capacity(pool, 1, t0);
    const TaskId low = h.submit(TaskSpec{.pool = pool, .priority = P::Low, .retry = retry}, t0);
    const LeaseId lease = h.only_dispatch().lease;
    h.set_capacity(pool, 0, t0);
    ASSERT_TRUE(h.complete(lease, Outcome::retryable("again"), t0));
    h.tick(t0 + 10s);  // back to Ready at 10 s
    ASSERT_EQ(h.engine.status(low), TaskStatus::Ready);
    const TaskId normal = submit(P::Normal, t0 + 50s);
    // At 50 s the Low task has waited 40 s since it became ready again
    // (90 < 100), though 50 s since it was submitted.
    EXPECT_EQ(order(t0 + 50s), (Ids{normal, low}));
}

// ---- deadlines -----------------------------------------------------------------

TEST_F(PriorityTest, LowAtItsLatestStartOutranksFreshHigh) {
    // Latest start = 12 s - 2 s = 10 s: urgency 5000 there.
    const TaskId low = submit_deadline(P::Low, t0, t0 + 12s, 2s);
    const TaskId high = submit(P::High, t0 + 10s);
    EXPECT_EQ(order(t0 + 10s), (Ids{low, high}));
}

TEST_F(PriorityTest, LowAtItsLatestStartDoesNotOutrankCritical) {
    const TaskId low = submit_deadline(P::Low, t0 + 10s, t0 + 12s, 2s);  // 5010
    const TaskId high = submit(P::High, t0 + 10s);
    const TaskId critical = submit(P::Critical, t0 + 10s);
    EXPECT_EQ(order(t0 + 10s), (Ids{critical, low, high}));
}

TEST_F(PriorityTest, OverdueLowNeverOutranksCriticalButStillBeatsHigh) {
    // 10000 s past its latest start: 10 + 800 + 5000 + 2000 = 7810.
    const TaskId low = submit_deadline(P::Low, t0, t0 + 12s, 2s);
    const TaskId high = submit(P::High, t0 + 10000s);
    const TaskId critical = submit(P::Critical, t0 + 10000s);
    EXPECT_EQ(order(t0 + 10000s), (Ids{critical, low, high}));
}

TEST_F(PriorityTest, NoUrgencyBeforeTheWindow) {
    // Latest start at 100 s; at 10 s it is 90 s away, outside the 5 s window.
    const TaskId low = submit_deadline(P::Low, t0 + 10s, t0 + 101s, 1s);
    const TaskId high = submit(P::High, t0 + 10s);
    EXPECT_EQ(order(t0 + 10s), (Ids{high, low}));
}

TEST_F(PriorityTest, UrgencyRisesLinearlyInsideTheWindow_3_9sBeforeLatestStart) {
    // 10 + 5000 * (1 - 3.9/5) = 1110 > 1000.
    const TaskId low = submit_deadline(P::Low, t0 + 10s, t0 + 13900ms + 1s, 1s);
    const TaskId high = submit(P::High, t0 + 10s);
    EXPECT_EQ(order(t0 + 10s), (Ids{low, high}));
}

TEST_F(PriorityTest, UrgencyRisesLinearlyInsideTheWindow_4_1sBeforeLatestStart) {
    // 10 + 5000 * (1 - 4.1/5) = 910 < 1000.
    const TaskId low = submit_deadline(P::Low, t0 + 10s, t0 + 14100ms + 1s, 1s);
    const TaskId high = submit(P::High, t0 + 10s);
    EXPECT_EQ(order(t0 + 10s), (Ids{high, low}));
}

TEST_F(PriorityTest, DeadlineTaskFarFromItsDeadlineDoesNotOutrankOlderSameClassWork) {
    // No urgency yet: the deadline task scores like any Normal task, 110
    // against the older FIFO task's 120.
    const TaskId fifo = submit(P::Normal, t0);
    const TaskId dl = submit_deadline(P::Normal, t0 + 5s, t0 + 3600s, 1s);
    EXPECT_EQ(order(t0 + 10s), (Ids{fifo, dl}));
}

TEST_F(PriorityTest, DeadlineTaskAgesLikeFifoWork) {
    // The older task wins either way: here the deadline task is older.
    const TaskId dl = submit_deadline(P::Normal, t0, t0 + 3600s, 1s);
    const TaskId fifo = submit(P::Normal, t0 + 5s);
    EXPECT_EQ(order(t0 + 10s), (Ids{dl, fifo}));
}

TEST_F(PriorityTest, DeadlineTaskWithinItsWindowOvertakesOlderSameClassWork) {
    // Latest start 14 s; at 11 s: 100 + 12 + 5000*(1-3/5) = 2112 against 122.
    const TaskId fifo = submit(P::Normal, t0);
    const TaskId dl = submit_deadline(P::Normal, t0 + 5s, t0 + 15s, 1s);
    EXPECT_EQ(order(t0 + 11s), (Ids{dl, fifo}));
}

TEST_F(PriorityTest, EarlierLatestStartGoesFirstAmongUrgentTasks) {
    const TaskId later = submit_deadline(P::Normal, t0 + 10s, t0 + 13s, 1s);   // latest start 12 s: 3100
    const TaskId sooner = submit_deadline(P::Normal, t0 + 10s, t0 + 12s, 1s);  // latest start 11 s: 4100
    EXPECT_EQ(order(t0 + 10s), (Ids{sooner, later}));
}

// ---- expected duration: hint, learned mean, pool default ------------------------
//
// With urgency.window = 0 and no window_factor the urgency is a step at the
// latest start, so the latest start can be read to the nanosecond: one tick
// before it a fresh High task wins, at it the deadline task does.

EngineConfig step_urgency() {
    EngineConfig c;
    c.urgency.window = Duration{0};
    c.urgency.window_factor = 0;
    return c;
}

// Builds a fresh engine with `setup`, queues a fresh High task and reads
// the order at `open`. Returns {deadline task first?}.
bool deadline_task_first(const std::function<TaskId(Harness&, PoolId)>& setup, Time open) {
    Harness h(step_urgency());
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 0, .default_duration = 4s});
    const TaskId dl = setup(h, pool);
    const TaskId high = h.submit(TaskSpec{.pool = pool, .priority = P::High}, open);
    const auto order = h.dispatch_order(pool, open);
    EXPECT_EQ(order.size(), 2u);
    EXPECT_TRUE(order == (Ids{dl, high}) || order == (Ids{high, dl}));
    return !order.empty() && order.front() == dl;
}

TEST(ExpectedDurationTest, LatestStartUsesDurationHint) {
    auto setup = [](Harness& h, PoolId pool) {
        return h.submit(TaskSpec{.pool = pool, .priority = P::Low, .deadline = t0 + 20s, .duration_hint = 7s}, t0);
    };
    EXPECT_FALSE(deadline_task_first(setup, t0 + 13s - 1ns));
    EXPECT_TRUE(deadline_task_first(setup, t0 + 13s));
}

TEST(ExpectedDurationTest, LatestStartUsesPoolDefaultDurationWithoutHintOrHistory) {
    auto setup = [](Harness& h, PoolId pool) {
        return h.submit(TaskSpec{.pool = pool, .priority = P::Low, .deadline = t0 + 20s}, t0);
    };
    EXPECT_FALSE(deadline_task_first(setup, t0 + 16s - 1ns));
    EXPECT_TRUE(deadline_task_first(setup, t0 + 16s));
}

TEST(ExpectedDurationTest, PoolDefaultDurationIsOneSecondByDefault) {
    Harness h(step_urgency());
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    EXPECT_EQ(h.engine.pool_config(pool).default_duration, 1s);
    const TaskId dl = h.submit(TaskSpec{.pool = pool, .priority = P::Low, .deadline = t0 + 20s}, t0);
    const TaskId high = h.submit(TaskSpec{.pool = pool, .priority = P::High}, t0 + 19s);
    EXPECT_EQ(h.dispatch_order(pool, t0 + 19s), (Ids{dl, high}));
}

// Runs one task of `kind` for each duration in `runs` to completion.
void learn(Harness& h, PoolId pool, KindId kind, std::vector<Duration> runs) {
    Time now = t0;
    h.set_capacity(pool, 1, now);
    for (Duration d : runs) {
        h.submit(TaskSpec{.pool = pool, .kind = kind}, now);
        const LeaseId lease = h.only_dispatch().lease;
        now += d;
        ASSERT_TRUE(h.complete(lease, Outcome::success(), now));
    }
    h.set_capacity(pool, 0, now);
}

TEST(ExpectedDurationTest, LatestStartUsesLearnedMeanOfPoolAndKind) {
    // One 3 s run of kind "k": latest start = 30 s - 3 s.
    auto setup = [](Harness& h, PoolId pool) {
        const KindId k = h.engine.intern_kind("k");
        learn(h, pool, k, {3s});
        return h.submit(TaskSpec{.pool = pool, .priority = P::Low, .kind = k, .deadline = t0 + 30s}, t0 + 3s);
    };
    EXPECT_FALSE(deadline_task_first(setup, t0 + 27s - 1ns));
    EXPECT_TRUE(deadline_task_first(setup, t0 + 27s));
}

TEST(ExpectedDurationTest, LearnedMeanIsAnExponentialMovingAverage) {
    // Runs of 3 s then 8 s: 3 + 0.2 * (8 - 3) = 4 s.
    auto setup = [](Harness& h, PoolId pool) {
        const KindId k = h.engine.intern_kind("k");
        learn(h, pool, k, {3s, 8s});
        return h.submit(TaskSpec{.pool = pool, .priority = P::Low, .kind = k, .deadline = t0 + 30s}, t0 + 11s);
    };
    EXPECT_FALSE(deadline_task_first(setup, t0 + 26s - 1ns));
    EXPECT_TRUE(deadline_task_first(setup, t0 + 26s));
}

TEST(ExpectedDurationTest, LearnedMeanIsPerKind) {
    // Kind "k" learned 3 s; kind "other" has no history: pool default 4 s.
    auto setup = [](Harness& h, PoolId pool) {
        learn(h, pool, h.engine.intern_kind("k"), {3s});
        const KindId other = h.engine.intern_kind("other");
        return h.submit(TaskSpec{.pool = pool, .priority = P::Low, .kind = other, .deadline = t0 + 30s}, t0 + 3s);
    };
    EXPECT_FALSE(deadline_task_first(setup, t0 + 26s - 1ns));
    EXPECT_TRUE(deadline_task_first(setup, t0 + 26s));
}

TEST(ExpectedDurationTest, DurationHintOverridesLearnedMean) {
    auto setup = [](Harness& h, PoolId pool) {
        const KindId k = h.engine.intern_kind("k");
        learn(h, pool, k, {3s});
        return h.submit(
            TaskSpec{.pool = pool, .priority = P::Low, .kind = k, .deadline = t0 + 30s, .duration_hint = 10s},
            t0 + 3s);
    };
    EXPECT_FALSE(deadline_task_first(setup, t0 + 20s - 1ns));
    EXPECT_TRUE(deadline_task_first(setup, t0 + 20s));
}

// ---- configurable constants ------------------------------------------------------

TEST(ConfigurablePriorityTest, UrgencyMaxIsConfigurable) {
    EngineConfig config;
    config.urgency.max = 500;  // Low at its latest start: 10 + 500 < 1000
    Harness h(config);
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId low = h.submit(TaskSpec{.pool = pool, .priority = P::Low, .deadline = t0 + 11s, .duration_hint = 1s}, t0 + 10s);
    const TaskId high = h.submit(TaskSpec{.pool = pool, .priority = P::High}, t0 + 10s);
    EXPECT_EQ(h.dispatch_order(pool, t0 + 10s), (Ids{high, low}));
}

TEST(ConfigurablePriorityTest, UrgencyWindowIsConfigurable) {
    // Latest start 30 s ahead: outside the default 5 s window, halfway into
    // a 60 s one (urgency 2500).
    auto first = [](EngineConfig config) {
        Harness h(config);
        const PoolId pool = h.add_pool(PoolConfig{"p", 0});
        const TaskId low =
            h.submit(TaskSpec{.pool = pool, .priority = P::Low, .deadline = t0 + 41s, .duration_hint = 1s}, t0 + 10s);
        h.submit(TaskSpec{.pool = pool, .priority = P::High}, t0 + 10s);
        return h.dispatch_order(pool, t0 + 10s).front() == low;
    };
    EngineConfig wide;
    wide.urgency.window = 60s;
    EXPECT_FALSE(first(EngineConfig{}));
    EXPECT_TRUE(first(wide));
}

TEST(ConfigurablePriorityTest, OverdueRateAndCapAreConfigurable) {
    // At 110 s the Low task (latest start 10 s) is 100 s overdue and has
    // aged 220 points. Defaults: 10 + 220 + 5000 + 2000 = 7230 < 10000.
    // overdue_cap 10000: 10 + 220 + 5000 + 10000 > 10000.
    // overdue_rate 10 as well: 10 + 220 + 5000 + 1000 < 10000.
    auto first = [](EngineConfig config) {
        Harness h(config);
        const PoolId pool = h.add_pool(PoolConfig{"p", 0});
        const TaskId low =
            h.submit(TaskSpec{.pool = pool, .priority = P::Low, .deadline = t0 + 11s, .duration_hint = 1s}, t0);
        h.submit(TaskSpec{.pool = pool, .priority = P::Critical}, t0 + 110s);
        return h.dispatch_order(pool, t0 + 110s).front() == low;
    };
    EngineConfig big_cap;
    big_cap.urgency.overdue_cap = 10000;
    EngineConfig slow_rate = big_cap;
    slow_rate.urgency.overdue_rate = 10;  // 100 s overdue: +1000 only
    EXPECT_FALSE(first(EngineConfig{}));
    EXPECT_TRUE(first(big_cap));
    EXPECT_FALSE(first(slow_rate));
}

TEST(ConfigurablePriorityTest, AgingRateIsConfigurable) {
    EngineConfig config;
    config.priority.aging_rate = 0;
    Harness h(config);
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId low = h.submit(TaskSpec{.pool = pool, .priority = P::Low}, t0);
    const TaskId normal = h.submit(TaskSpec{.pool = pool, .priority = P::Normal}, t0 + 1000s);
    EXPECT_EQ(h.dispatch_order(pool, t0 + 1000s), (Ids{normal, low}));
}

TEST(ConfigurablePriorityTest, AgeCapIsConfigurable) {
    EngineConfig config;
    config.priority.age_cap = 50;  // a Low task never passes 60
    Harness h(config);
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId low = h.submit(TaskSpec{.pool = pool, .priority = P::Low}, t0);
    const TaskId normal = h.submit(TaskSpec{.pool = pool, .priority = P::Normal}, t0 + 10000s);
    EXPECT_EQ(h.dispatch_order(pool, t0 + 10000s), (Ids{normal, low}));
}

TEST(ConfigurablePriorityTest, ClassBasesAreConfigurable) {
    EngineConfig config;
    config.priority.base = {10, 100, 1000, 10000};  // upside down
    Harness h(config);
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId critical = h.submit(TaskSpec{.pool = pool, .priority = P::Critical}, t0);
    const TaskId low = h.submit(TaskSpec{.pool = pool, .priority = P::Low}, t0);
    EXPECT_EQ(h.dispatch_order(pool, t0), (Ids{low, critical}));
}

}  // namespace
}  // namespace cronoq::core::test::priority_test
