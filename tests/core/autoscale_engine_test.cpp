// Autoscaling through the engine (docs/guide/resources-and-bounds.md): ScaleTo actions under a burst
// and when idle, a user scaler asked through its owner, and no timer for an
// idle pool at its floor.
#include "engine_harness.hpp"

#include <algorithm>

namespace cronoq::core::test::autoscale_engine_test {
namespace {

PoolConfig scaled(std::size_t min, std::size_t initial, std::size_t max) {
    PoolConfig c{.name = "p", .capacity = initial, .max_workers = max, .min_workers = min};
    c.autoscale = AutoscaleConfig{};
    return c;
}

std::vector<std::size_t> scale_steps(const Harness& h) {
    std::vector<std::size_t> out;
    for (const ScaleTo& s : h.last_of<ScaleTo>()) out.push_back(s.capacity);
    return out;
}

TEST(AutoscaleEngineTest, RisesUnderABurstByBoundedStepsNeverAboveMax) {
    Harness h;
    const PoolId pool = h.add_pool(scaled(1, 1, 20));
    for (int i = 0; i < 500; ++i) h.submit(TaskSpec{.pool = pool}, t0);
    for (int second = 0; second <= 20; ++second) h.tick(t0 + second * 1s);
    // Every ScaleTo so far, in order (the first arrival already triggers one).
    std::size_t capacity = 1;
    std::vector<std::size_t> seen;
    for (const Action& a : h.history)
        if (const auto* step = std::get_if<ScaleTo>(&a)) {
            EXPECT_GT(step->capacity, capacity) << "a burst only raises the capacity";
            EXPECT_LE(step->capacity - capacity, std::max<std::size_t>(capacity, 4)) << "step bound: max(100 %, 4)";
            EXPECT_LE(step->capacity, 20u);
            capacity = step->capacity;
            seen.push_back(capacity);
        }
    EXPECT_EQ(h.engine.counters(pool).running, capacity);
    EXPECT_EQ(capacity, 20u) << "500 queued tasks need the maximum";
    EXPECT_GE(seen.size(), 3u) << "reached by several bounded steps";
}

TEST(AutoscaleEngineTest, FallsToMinOnlyAfterTheStabilizationWindowOneStepPerCooldown) {
    Harness h;
    const PoolId pool = h.add_pool(scaled(1, 1, 8));
    for (int i = 0; i < 200; ++i) h.submit(TaskSpec{.pool = pool}, t0);
    Time now = t0;
    for (int second = 1; second <= 5; ++second) h.tick(now = t0 + second * 1s);
    ASSERT_EQ(h.engine.counters(pool).capacity, 8u);
    // Drain everything at 5 s: nothing is queued or running afterwards.
    for (int guard = 0; guard < 1000 && h.engine.live_tasks() > 0; ++guard) {
        std::vector<Dispatch> running;
        for (const Action& a : h.history)
            if (const auto* d = std::get_if<Dispatch>(&a); d && h.engine.status(d->task) == TaskStatus::Running)
                running.push_back(*d);
        for (const Dispatch& d : running) h.complete(d.lease, Outcome::success(), now);
    }
    ASSERT_EQ(h.engine.live_tasks(), 0u);
    const Time idle_since = now;
    std::vector<std::pair<Time, std::size_t>> downs;
    for (int tenth = 1; tenth <= 1200; ++tenth) {
        h.tick(now = idle_since + tenth * 100ms);
        for (std::size_t c : scale_steps(h)) downs.emplace_back(now, c);
    }
    ASSERT_FALSE(downs.empty());
    EXPECT_GE(downs.front().first - idle_since, 25s) << "no step down within the stabilization window";
    std::size_t expect = 8;
    for (std::size_t i = 0; i < downs.size(); ++i) {
        EXPECT_EQ(downs[i].second, --expect) << "one step at a time";
        if (i > 0) {
            EXPECT_GE(downs[i].first - downs[i - 1].first, 5s) << "one step per cooldown";
        }
    }
    EXPECT_EQ(h.engine.counters(pool).capacity, 1u);
    EXPECT_EQ(h.engine.next_wakeup(), std::nullopt) << "an idle pool at its floor keeps no timer";
}

// The engine never runs a user scaler (application code): it asks its owner
// with AskScaler, keeps the capacity until the answer, asks nothing more
// meanwhile, and applies the answer clamped to [min, max].
TEST(AutoscaleEngineTest, AUserScalerIsAskedAndItsAnswerApplied) {
    Harness h;
    PoolConfig c = scaled(0, 0, 10);
    c.user_scaler = true;
    const PoolId pool = h.add_pool(c);
    for (int i = 0; i < 3; ++i) h.submit(TaskSpec{.pool = pool, .priority = Priority::High}, t0);
    h.tick(t0 + 1s);
    ASSERT_EQ(h.last_of<AskScaler>().size(), 1u);
    EXPECT_EQ(h.last_of<AskScaler>().front().pool, pool);
    EXPECT_TRUE(h.last_of<ScaleTo>().empty()) << "scaled before the answer";
    const auto question = h.engine.scaler_question(pool);
    ASSERT_TRUE(question);
    EXPECT_EQ(question->pending[index_of(Priority::High)], 3u) << "the question shows the three queued High tasks";
    EXPECT_EQ(question->capacity, 0u);
    EXPECT_EQ(question->now, (t0 + 1s).time_since_epoch());

    // While the question is open: no wakeup for it, no second question.
    EXPECT_EQ(h.engine.next_wakeup(), std::nullopt);
    h.tick(t0 + 1500ms);
    EXPECT_TRUE(h.last_of<AskScaler>().empty());
    EXPECT_EQ(h.engine.counters(pool).capacity, 0u);

    EXPECT_TRUE(h.answer_scaler(pool, 7, t0 + 1500ms));
    ASSERT_EQ(scale_steps(h), std::vector<std::size_t>{7});
    EXPECT_EQ(h.engine.counters(pool).capacity, 7u);
    EXPECT_EQ(h.engine.counters(pool).desired, 7u);
    EXPECT_EQ(h.dispatches().size(), 3u) << "the new slots run the queue in the answer's call";
    EXPECT_TRUE(h.last_of<AskScaler>().empty());
    EXPECT_EQ(h.engine.scaler_question(pool), std::nullopt);
    EXPECT_FALSE(h.answer_scaler(pool, 9, t0 + 1500ms)) << "an answer without a question changes nothing";
    EXPECT_EQ(h.engine.counters(pool).capacity, 7u);

    // The next question comes an interval after the previous one; an
    // answer beyond max is clamped; no answer (it threw) keeps the capacity.
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 2s);
    h.tick(t0 + 2s);
    ASSERT_EQ(h.last_of<AskScaler>().size(), 1u);
    EXPECT_TRUE(h.answer_scaler(pool, 50, t0 + 2s));
    EXPECT_EQ(scale_steps(h), std::vector<std::size_t>{10});
    h.tick(t0 + 3s);
    ASSERT_EQ(h.last_of<AskScaler>().size(), 1u);
    EXPECT_TRUE(h.answer_scaler(pool, std::nullopt, t0 + 3s));
    EXPECT_TRUE(scale_steps(h).empty());
    EXPECT_EQ(h.engine.counters(pool).capacity, 10u);
}

TEST(AutoscaleEngineTest, AReservationScalesAnIdlePoolUpBeforeItsStart) {
    Harness h;
    PoolConfig c = scaled(0, 0, 4);
    c.reservable_fraction = 1.0;
    const PoolId pool = h.add_pool(c);
    for (int i = 0; i < 3; ++i) {
        TaskSpec spec{.pool = pool};
        spec.start = t0 + 10min;
        spec.duration_hint = 1min;
        h.submit(spec, t0);
    }
    // Idle until the reservations enter the 60 s horizon.
    for (Time now = t0; now < t0 + 10min; now += 1s) {
        h.tick(now);
        if (now < t0 + 9min) {
            EXPECT_EQ(h.engine.counters(pool).capacity, 0u);
        }
    }
    EXPECT_EQ(h.engine.counters(pool).capacity, 3u) << "three reserved slots in place before the start";
    h.tick(t0 + 10min);
    EXPECT_EQ(h.engine.counters(pool).running, 3u);
}

TEST(AutoscaleEngineTest, BadAutoscaleConfigIsAConfigError) {
    Harness h;
    PoolConfig c = scaled(1, 1, 4);
    c.autoscale->ewma_alpha = 0.0;
    EXPECT_THROW(h.add_pool(c), ConfigError);
    PoolConfig low = scaled(3, 2, 4);
    EXPECT_THROW(h.add_pool(low), ConfigError);
}

}  // namespace
}  // namespace cronoq::core::test::autoscale_engine_test
