// Engine::stats (docs/guide/operations.md): figures over the metrics window agree with the
// events the engine emitted, percentiles with the exact waits, and the
// window forgets.
#include "engine_harness.hpp"

#include <cmath>

namespace cronoq::core::test::stats_test {
namespace {

using S = TaskStatus;

// Runs `n` tasks of 1 s each through one slot, submitted together at t0:
// task k waits k seconds.
Time run_queue(Harness& h, PoolId pool, int n) {
    const TaskId first = h.submit(TaskSpec{.pool = pool}, t0);
    for (int i = 1; i < n; ++i) h.submit(TaskSpec{.pool = pool}, t0);
    LeaseId running = h.lease_of(first);
    Time now = t0;
    for (int i = 0; i < n; ++i) {
        now += 1s;
        h.complete(running, Outcome::success(), now);
        if (!h.dispatches().empty()) running = h.dispatches().front().lease;
    }
    return now;
}

TEST(StatsTest, WaitPercentilesMatchTheExactWaits) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const Time now = run_queue(h, pool, 40);  // waits 0, 1, ..., 39 s
    const PoolStats s = h.engine.stats(pool, now);
    EXPECT_EQ(s.dispatched, 40u);
    EXPECT_EQ(s.succeeded, 40u);
    EXPECT_EQ(s.waits, 40u);
    // Nearest rank: p50 of 0..39 s is 19 s, p90 35 s; within the histogram's 0.4 %.
    EXPECT_NEAR(to_seconds(s.wait_p50), 19.0, 19.0 * 0.01);
    EXPECT_NEAR(to_seconds(s.wait_p90), 35.0, 35.0 * 0.01);
    EXPECT_NEAR(to_seconds(s.run_p50), 1.0, 0.01);
    EXPECT_NEAR(s.utilization, 1.0, 1e-9);
    EXPECT_NEAR(s.worker_seconds, 40.0, 1e-6);
    ASSERT_TRUE(s.priority_adherence.has_value());
    EXPECT_DOUBLE_EQ(*s.priority_adherence, 1.0);
    EXPECT_FALSE(s.fixed_start_hit_rate.has_value());
}

TEST(StatsTest, CountsEqualTheEventsSeenInTheWindow) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 3, .retry = RetryPolicy{2, 0s, 1.0, 0s, false}});
    // A deterministic mix: every outcome kind, within 30 s.
    Time now = t0;
    for (int i = 0; i < 60; ++i) {
        now += 500ms;
        h.submit(TaskSpec{.pool = pool}, now);
        const auto ds = h.engine.counters(pool).running > 0 ? h.last_of<Dispatch>() : std::vector<Dispatch>{};
        for (const Dispatch& d : ds) {
            switch (i % 4) {
                case 0: h.complete(d.lease, Outcome::success(), now); break;
                case 1: h.complete(d.lease, Outcome::retryable("again"), now); break;
                case 2: h.complete(d.lease, Outcome::permanent("no"), now); break;
                default: break;  // left running
            }
        }
    }
    std::uint64_t dispatched = 0, succeeded = 0, failed = 0, dead = 0, retried = 0;
    for (const Action& a : h.history) {
        if (std::holds_alternative<Dispatch>(a)) ++dispatched;
        if (const auto* st = std::get_if<Status>(&a)) {
            succeeded += st->status == S::Succeeded;
            failed += st->status == S::Failed;
            dead += st->status == S::DeadLettered;
            retried += st->status == S::Retrying;
        }
    }
    const PoolStats s = h.engine.stats(pool, now);
    EXPECT_EQ(s.dispatched, dispatched);
    EXPECT_EQ(s.succeeded, succeeded);
    EXPECT_EQ(s.failed, failed);
    EXPECT_EQ(s.dead_lettered, dead);
    EXPECT_EQ(s.retried, retried);
    EXPECT_EQ(s.busy, h.engine.counters(pool).running);
    EXPECT_GT(dispatched, 0u);
}

TEST(StatsTest, TheWindowForgets) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const Time now = run_queue(h, pool, 5);
    EXPECT_EQ(h.engine.stats(pool, now).dispatched, 5u);
    const PoolStats later_stats = h.engine.stats(pool, now + 2min);
    EXPECT_EQ(later_stats.dispatched, 0u);
    EXPECT_EQ(later_stats.waits, 0u);
    EXPECT_DOUBLE_EQ(later_stats.worker_seconds, 0.0);
}

TEST(StatsTest, HeldSlotsAndFixedStartHitRate) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2});
    TaskSpec fixed{.pool = pool};
    fixed.start = t0 + 10s;
    fixed.duration_hint = 1s;
    h.submit(fixed, t0);
    TaskSpec long_task{.pool = pool};
    long_task.duration_hint = 60s;
    h.submit(long_task, t0);
    h.submit(long_task, t0);  // held back by the start
    PoolStats s = h.engine.stats(pool, t0 + 1s);
    EXPECT_EQ(s.held, 1u);
    EXPECT_EQ(s.busy, 1u);
    EXPECT_EQ(s.scheduled, 1u);
    EXPECT_EQ(s.pending[index_of(Priority::Normal)], 1u);
    // A short Low task fits before the start and passes the long Normal one.
    TaskSpec quick{.pool = pool, .priority = Priority::Low};
    quick.duration_hint = 2s;
    h.complete(h.lease_of(h.submit(quick, t0 + 2s)), Outcome::success(), t0 + 4s);
    h.tick(t0 + 10s);
    s = h.engine.stats(pool, t0 + 10s);
    ASSERT_TRUE(s.fixed_start_hit_rate.has_value());
    EXPECT_DOUBLE_EQ(*s.fixed_start_hit_rate, 1.0);
    ASSERT_TRUE(s.priority_adherence.has_value());
    EXPECT_LT(*s.priority_adherence, 1.0) << "the held-back task was passed over";
}

}  // namespace
}  // namespace cronoq::core::test::stats_test
