// The default autoscaling policy and user scalers (docs/guide/resources-and-bounds.md), under virtual
// time: the test plays the engine, feeding load and evaluating when due.
#include <cronoq/autoscale.hpp>  // first: the public header compiles on its own

#include "core/autoscaler.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

namespace cronoq::core::detail::autoscaler_test {
namespace {

using namespace std::chrono_literals;

constexpr Time t0{};
constexpr std::size_t normal = index_of(Priority::Normal);

// A user policy as its owner calls it: empty when it threw.
using ScalerFn = std::function<std::optional<std::size_t>(const ScalerInput&)>;

template <Scaler S>
ScalerFn call_scaler(S scaler) {
    auto s = std::make_shared<S>(std::move(scaler));
    return [s](const ScalerInput& in) -> std::optional<std::size_t> {
        try {
            return s->desired(in);
        } catch (...) {
            return std::nullopt;
        }
    };
}

// The engine's side of the conversation: a pool's load, applied capacity
// changes, and the clock; with a user policy, also its owner, who answers
// the autoscaler's questions.
struct Pool {
    Autoscaler scaler;
    PoolLoad load;
    Time now = t0;
    std::vector<std::pair<Duration, std::size_t>> changes;  // (time since t0, new capacity)
    ScalerFn user;

    Pool(AutoscaleConfig config, std::size_t min, std::size_t initial, std::size_t max, ScalerFn custom = {})
        : scaler(config, min, initial, max, 1s, t0, custom != nullptr), user(std::move(custom)) {
        load.capacity = initial;
    }

    // Moves time on by `by` and evaluates if due, as the engine would at
    // its wakeup; a question to the user policy is answered at once.
    std::optional<std::size_t> advance(Duration by = 1s) {
        now += by;
        auto changed = scaler.evaluate(now, load);
        if (scaler.asking()) {
            EXPECT_FALSE(changed) << "a question changed the capacity before its answer";
            changed = scaler.answer(now, user(scaler.last_input()), load);
        }
        if (changed) {
            load.capacity = *changed;
            changes.emplace_back(now - t0, *changed);
        }
        return changed;
    }
};

TEST(Autoscaler, RisesUnderBurstByBoundedStepsNeverAboveMax) {
    // Defaults: a step adds at most max(1.0 x capacity, 4) slots.
    Pool pool(AutoscaleConfig{}, 1, 1, 20);
    pool.load.pending[normal] = 1000;
    pool.scaler.record_arrival(t0, 1000);
    ASSERT_EQ(pool.scaler.next_evaluation(), t0);  // scale-up does not wait for the interval

    EXPECT_EQ(pool.advance(0s), 5u);   // 1 + max(1, 4)
    EXPECT_EQ(pool.advance(1s), 10u);  // 5 + max(5, 4)
    EXPECT_EQ(pool.advance(1s), 20u);  // 10 + 10, wanted 100+ but clamped to max
    for (int i = 0; i < 20; ++i) {
        EXPECT_EQ(pool.advance(1s), std::nullopt);
        EXPECT_EQ(pool.load.capacity, 20u);
    }
    EXPECT_EQ(pool.scaler.desired(), 20u);
}

TEST(Autoscaler, RatioStepWinsOverAbsoluteStepForLargePools) {
    AutoscaleConfig config;
    config.max_step_up_ratio = 0.5;
    config.max_step_up_abs = 2;
    Pool pool(config, 10, 10, 100);
    pool.load.pending[normal] = 10'000;
    pool.scaler.wake(t0);
    EXPECT_EQ(pool.advance(0s), 15u);  // floor(0.5 x 10) = 5 > 2
    EXPECT_EQ(pool.advance(1s), 22u);  // floor(7.5) = 7
    EXPECT_EQ(pool.advance(1s), 33u);
}

TEST(Autoscaler, FallsToMinOnlyAfterStabilizationWindowOneStepPerCooldown) {
    Pool pool(AutoscaleConfig{}, 2, 2, 10);  // window 30 s, cooldown 5 s, step down 1
    pool.load.pending[normal] = 100;  // 100 x 1 s / 10 s drain = 10 slots
    pool.scaler.wake(t0);
    pool.advance(0s);
    for (int i = 0; i < 10; ++i) pool.advance(1s);  // last evaluation wanting 10 at t0 + 10 s
    ASSERT_EQ(pool.load.capacity, 10u);
    pool.changes.clear();

    pool.load.pending[normal] = 0;  // idle from now on
    while (pool.scaler.next_evaluation()) pool.advance(1s);

    // The 10 seen at 10 s leaves the window at 40 s; then one slot per 5 s.
    std::vector<std::pair<Duration, std::size_t>> expected;
    for (std::size_t k = 0; k < 8; ++k) expected.emplace_back(40s + k * 5s, 9 - k);
    EXPECT_EQ(pool.changes, expected);
    EXPECT_EQ(pool.load.capacity, 2u);
    // Settled at its minimum with nothing to do: no wakeup is asked for.
    EXPECT_EQ(pool.scaler.next_evaluation(), std::nullopt);
}

TEST(Autoscaler, ABriefDipDoesNotScaleDown) {
    Pool pool(AutoscaleConfig{}, 1, 1, 10);
    pool.load.pending[normal] = 80;  // 8 slots
    pool.scaler.wake(t0);
    pool.advance(0s);
    pool.advance(1s);
    ASSERT_EQ(pool.load.capacity, 8u);
    // Demand drops for 20 s, then comes back: within the 30 s window the
    // earlier 8 still counts, so the capacity holds.
    pool.load.pending[normal] = 10;
    for (int i = 0; i < 20; ++i) EXPECT_EQ(pool.advance(1s), std::nullopt);
    pool.load.pending[normal] = 80;
    for (int i = 0; i < 20; ++i) EXPECT_EQ(pool.advance(1s), std::nullopt);
    EXPECT_EQ(pool.load.capacity, 8u);
}

TEST(Autoscaler, EwmaSmoothsArrivalRateAndServiceTime) {
    Pool pool(AutoscaleConfig{}, 1, 1, 100);  // alpha 0.3
    // 10 arrivals in each 1 s period: the smoothed rate after k periods is
    // 10 x (1 - 0.7^k), starting from the 0 of a pool that saw nothing.
    for (int k = 1; k <= 5; ++k) {
        pool.scaler.record_arrival(pool.now, 10);
        pool.advance(1s);
        EXPECT_NEAR(pool.scaler.arrival_rate(), 10.0 * (1.0 - std::pow(0.7, k)), 1e-9) << "period " << k;
    }
    EXPECT_NEAR(pool.scaler.last_input().arrival_rate, pool.scaler.arrival_rate(), 0.0);

    // Service time: one sample per period (the period's mean); the first
    // replaces the default, later ones are smoothed.
    EXPECT_EQ(pool.scaler.mean_service_time(), 1s);  // the default until an attempt ends
    pool.scaler.record_service(1s);
    pool.scaler.record_service(3s);
    pool.advance(1s);
    EXPECT_EQ(pool.scaler.mean_service_time(), 2s);
    pool.scaler.record_service(1s);
    pool.advance(1s);
    EXPECT_EQ(pool.scaler.mean_service_time(), 1700ms);  // 2 + 0.3 x (1 - 2)
    pool.advance(1s);
    EXPECT_EQ(pool.scaler.mean_service_time(), 1700ms);  // no attempt ended: unchanged
}

TEST(Autoscaler, SteadyArrivalsNeedRateTimesServiceOverUtilization) {
    AutoscaleConfig config;
    config.ewma_alpha = 1.0;  // no smoothing: the figure is exact at once
    Pool pool(config, 1, 1, 100);
    for (int k = 0; k < 3; ++k) {
        pool.scaler.record_arrival(pool.now, 20);
        pool.scaler.record_service(400ms);
        pool.advance(1s);
    }
    // 20/s x 0.4 s / 0.8 = 10 slots.
    EXPECT_EQ(pool.scaler.desired(), 10u);
}

TEST(Autoscaler, DefaultDemandTakesTheLargestTerm) {
    AutoscaleConfig config;
    config.slo[index_of(Priority::Critical)] = 1s;
    config.slo[index_of(Priority::High)] = 2s;
    ScalerInput in;
    in.mean_service_time = 1s;
    in.pending = {3, 5, 0, 0};
    // Backlog: 8 x 1 s / 10 s = 0.8. Critical: 3 x 1 s / 1 s = 3. High waits
    // for Critical too: (3 + 5) x 1 s / 2 s = 4.
    EXPECT_DOUBLE_EQ(default_demand(config, in), 4.0);
    in.reserved = 7;
    EXPECT_DOUBLE_EQ(default_demand(config, in), 7.0);
    in.arrival_rate = 8;  // 8 x 1 / 0.8 = 10
    EXPECT_DOUBLE_EQ(default_demand(config, in), 10.0);
}

TEST(Autoscaler, ZeroDemandThreshold) {
    EXPECT_EQ(slots_for(0.0), 0u);
    EXPECT_EQ(slots_for(0.0099), 0u);
    EXPECT_EQ(slots_for(0.01), 1u);
    EXPECT_EQ(slots_for(1.0), 1u);
    EXPECT_EQ(slots_for(7 * 0.1 / 0.7), 1u);  // 1.0000000000000002: not 2
    EXPECT_EQ(slots_for(2.5), 3u);
    EXPECT_EQ(slots_for(std::nan("")), 0u);

    // 0.0072 arrivals/s x 1 s / 0.8 = 0.009 slot: nothing.
    ScalerInput in;
    in.mean_service_time = 1s;
    in.arrival_rate = 0.0072;
    EXPECT_EQ(slots_for(default_demand(AutoscaleConfig{}, in)), 0u);
    in.arrival_rate = 0.0088;  // 0.011 slot
    EXPECT_EQ(slots_for(default_demand(AutoscaleConfig{}, in)), 1u);
}

TEST(Autoscaler, SmoothedRateDecaysToZeroSlotsAndThePoolSleeps) {
    // Without the threshold, an exponentially decaying rate would keep one
    // slot (and a wakeup) forever.
    AutoscaleConfig config;
    config.stabilization_window = 0s;
    config.cooldown = 0s;
    Pool pool(config, 0, 0, 10);
    EXPECT_EQ(pool.scaler.next_evaluation(), std::nullopt);  // idle at min: no timer
    pool.scaler.record_arrival(t0, 10);
    pool.advance(1s);
    EXPECT_GE(pool.load.capacity, 1u);
    int evaluations = 1;
    while (pool.scaler.next_evaluation() && evaluations < 1000) {
        pool.advance(1s);
        ++evaluations;
    }
    EXPECT_EQ(pool.load.capacity, 0u);
    EXPECT_EQ(pool.scaler.next_evaluation(), std::nullopt);
    EXPECT_LT(evaluations, 30);  // 3 x 1 / 0.8 x 0.7^k < 0.01 after 17 periods
}

TEST(Autoscaler, ArrivalWakesAPoolAtZeroAtOnce) {
    Pool pool(AutoscaleConfig{}, 0, 0, 4);
    EXPECT_EQ(pool.scaler.next_evaluation(), std::nullopt);
    const Time later = t0 + 1h;
    pool.now = later;
    pool.load.pending[normal] = 1;
    pool.scaler.record_arrival(later);
    EXPECT_EQ(pool.scaler.next_evaluation(), later);
    EXPECT_EQ(pool.advance(0s), 1u);  // 1 x 1 s / 10 s = 0.1 slot, rounded up
    // The measurement period began at the wake-up, not at the last
    // evaluation an hour ago: the next evaluation is one interval later.
    EXPECT_EQ(pool.scaler.next_evaluation(), later + 1s);
}

TEST(Autoscaler, ExpectedWaitCountsTheClassesAbove) {
    Pool pool(AutoscaleConfig{}, 2, 2, 2);
    pool.load.pending = {2, 0, 2, 0};
    pool.scaler.wake(t0);
    pool.advance(0s);
    const ScalerInput& in = pool.scaler.last_input();
    EXPECT_EQ(in.expected_wait[0], 1s);  // 2 x 1 s / 2 slots
    EXPECT_EQ(in.expected_wait[1], 1s);
    EXPECT_EQ(in.expected_wait[2], 2s);  // (2 + 2) x 1 s / 2
    EXPECT_EQ(in.expected_wait[3], 2s);

    Pool empty(AutoscaleConfig{}, 0, 0, 2);
    empty.load.pending = {0, 0, 0, 1};
    empty.scaler.wake(t0);
    empty.advance(0s);
    EXPECT_EQ(empty.scaler.last_input().expected_wait[0], 0s);
    EXPECT_EQ(empty.scaler.last_input().expected_wait[3], Duration::max());
}

TEST(Autoscaler, RandomLoadRespectsEveryBound) {
    // Random bursts and lulls. Whatever the load: capacity within [min,
    // max]; a step up adds at most max(floor(ratio x capacity), abs); a
    // step down removes at most max_step_down, at least a cooldown after
    // the previous change.
    AutoscaleConfig config;
    config.max_step_up_ratio = 0.5;
    config.max_step_up_abs = 3;
    config.max_step_down = 2;
    config.cooldown = 4s;
    config.stabilization_window = 10s;
    Pool pool(config, 2, 5, 40);
    std::uint64_t state = 12345;
    auto random = [&state](std::uint64_t n) {  // a small LCG: the same on every platform
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return (state >> 33) % n;
    };
    Time last_change = t0;
    int ups = 0, downs = 0;
    for (int i = 0; i < 5'000; ++i) {
        if (random(10) == 0) pool.load.pending[random(4)] = random(2) == 0 ? 0 : random(500);
        pool.scaler.record_arrival(pool.now, random(3) == 0 ? random(50) : 0);
        pool.scaler.record_service(Duration(static_cast<Duration::rep>(100'000'000 + random(2'000'000'000))));
        const std::size_t before = pool.load.capacity;
        const auto changed = pool.advance(1s);
        if (!changed) continue;
        ASSERT_GE(*changed, 2u);
        ASSERT_LE(*changed, 40u);
        if (*changed > before) {
            ++ups;
            ASSERT_LE(*changed - before, std::max<std::size_t>(before / 2, 3)) << "at " << i;
        } else {
            ++downs;
            ASSERT_LE(before - *changed, 2u) << "at " << i;
            ASSERT_GE(pool.now - last_change, 4s) << "at " << i;
        }
        last_change = pool.now;
    }
    EXPECT_GT(ups, 10);  // the load did move the pool both ways
    EXPECT_GT(downs, 10);
}

// A user policy that answers from a script and records what it was shown.
struct ScriptedScaler {
    std::vector<std::size_t> answers;
    std::shared_ptr<std::vector<ScalerInput>> seen = std::make_shared<std::vector<ScalerInput>>();
    std::size_t next = 0;
    std::size_t desired(const ScalerInput& in) {
        seen->push_back(in);
        return answers[std::min(next++, answers.size() - 1)];
    }
};
static_assert(Scaler<ScriptedScaler>);

struct MoveOnlyScaler {
    std::unique_ptr<int> state = std::make_unique<int>(3);
    std::size_t desired(const ScalerInput&) { return static_cast<std::size_t>(*state); }
};
static_assert(Scaler<MoveOnlyScaler>);

struct NotAScaler {
    std::size_t desired() { return 1; }
};
static_assert(!Scaler<NotAScaler>);

TEST(Autoscaler, CustomScalerIsUsedAsIsWithinMinAndMax) {
    ScriptedScaler script{{15, 3, 50, 0, 0}};
    auto seen = script.seen;
    Pool pool(AutoscaleConfig{}, 1, 1, 20, call_scaler(std::move(script)));
    pool.load.pending[normal] = 7;
    pool.load.busy = 1;
    // A user scaler is asked once after start even when idle.
    EXPECT_EQ(pool.scaler.next_evaluation(), t0 + 1s);
    EXPECT_EQ(pool.advance(1s), 15u);  // no step bound
    EXPECT_EQ(pool.advance(1s), 3u);   // no stabilization window, no cooldown
    EXPECT_EQ(pool.advance(1s), 20u);  // clamped to max
    EXPECT_EQ(pool.advance(1s), 1u);   // clamped to min
    ASSERT_EQ(seen->size(), 4u);
    EXPECT_EQ(seen->at(0).now, 1s);
    EXPECT_EQ(seen->at(0).capacity, 1u);
    EXPECT_EQ(seen->at(1).capacity, 15u);
    EXPECT_EQ(seen->at(0).min, 1u);
    EXPECT_EQ(seen->at(0).max, 20u);
    EXPECT_EQ(seen->at(0).busy, 1u);
    EXPECT_EQ(seen->at(0).pending[normal], 7u);
    EXPECT_EQ(seen->at(0).mean_service_time, 1s);

    Pool move_only(AutoscaleConfig{}, 1, 1, 20, call_scaler(MoveOnlyScaler{}));
    EXPECT_EQ(move_only.advance(1s), 3u);
}

TEST(Autoscaler, ThrowingCustomScalerKeepsTheCapacity) {
    struct Throwing {
        std::size_t desired(const ScalerInput&) { throw std::runtime_error("boom"); }
    };
    Pool pool(AutoscaleConfig{}, 1, 4, 8, call_scaler(Throwing{}));
    pool.load.pending[normal] = 1;
    EXPECT_EQ(pool.advance(1s), std::nullopt);
    EXPECT_EQ(pool.load.capacity, 4u);
    EXPECT_EQ(pool.scaler.desired(), 4u);
}

// A user policy is the owner's code: the autoscaler asks and waits for the
// answer instead of calling it (the engine's AskScaler).
TEST(Autoscaler, AnOpenQuestionHoldsTheCapacityAndFurtherEvaluations) {
    Pool pool(AutoscaleConfig{}, 1, 2, 8, [](const ScalerInput&) { return std::optional<std::size_t>(6); });
    pool.load.pending[normal] = 3;
    pool.now += 1s;
    EXPECT_EQ(pool.scaler.evaluate(pool.now, pool.load), std::nullopt);
    ASSERT_TRUE(pool.scaler.asking());
    EXPECT_EQ(pool.scaler.last_input().now, 1s);
    EXPECT_EQ(pool.scaler.last_input().pending[normal], 3u);
    // Long past its interval, an evaluation asks nothing more.
    pool.load.pending[normal] = 9;
    EXPECT_EQ(pool.scaler.evaluate(pool.now + 5s, pool.load), std::nullopt);
    EXPECT_TRUE(pool.scaler.asking());
    EXPECT_EQ(pool.scaler.last_input().now, 1s) << "a second question replaced the open one";
    EXPECT_EQ(pool.scaler.answer(pool.now + 5s, 6, pool.load), 6u);
    EXPECT_FALSE(pool.scaler.asking());
    EXPECT_EQ(pool.scaler.desired(), 6u);
    EXPECT_EQ(pool.scaler.answer(pool.now + 5s, 3, pool.load), std::nullopt) << "an answer without a question";
    EXPECT_EQ(pool.scaler.desired(), 6u);
}

TEST(Autoscaler, AnsweredIdlePoolSleepsUnlessWorkCameMeanwhile) {
    const auto keep = [](const ScalerInput& in) { return std::optional<std::size_t>(in.capacity); };
    Pool idle(AutoscaleConfig{}, 1, 2, 8, keep);
    idle.now += 1s;
    idle.scaler.evaluate(idle.now, idle.load);
    ASSERT_TRUE(idle.scaler.asking());
    EXPECT_EQ(idle.scaler.answer(idle.now, 2, idle.load), std::nullopt);
    EXPECT_EQ(idle.scaler.next_evaluation(), std::nullopt) << "idle at the capacity it wants: asleep";

    Pool busy(AutoscaleConfig{}, 1, 2, 8, keep);
    busy.now += 1s;
    busy.scaler.evaluate(busy.now, busy.load);
    ASSERT_TRUE(busy.scaler.asking());
    busy.scaler.record_arrival(busy.now + 10ms);  // while the question is open
    EXPECT_EQ(busy.scaler.answer(busy.now + 20ms, 2, busy.load), std::nullopt);
    EXPECT_EQ(busy.scaler.next_evaluation(), t0 + 2s) << "an arrival during the question keeps it awake";
}

TEST(Autoscaler, AWakeDuringTheQuestionAsksAgainAfterTheAnswer) {
    Pool pool(AutoscaleConfig{}, 1, 2, 8, [](const ScalerInput&) { return std::optional<std::size_t>(4); });
    pool.load.pending[normal] = 1;
    pool.now += 1s;
    pool.scaler.evaluate(pool.now, pool.load);
    ASSERT_TRUE(pool.scaler.asking());
    pool.scaler.wake(pool.now + 100ms);  // e.g. a reservation entered the horizon
    EXPECT_EQ(pool.scaler.answer(pool.now + 200ms, 4, pool.load), 4u);
    EXPECT_EQ(pool.scaler.next_evaluation(), pool.now + 100ms) << "the wake-up is not lost to the answer";
}

TEST(Autoscaler, InitialCapacityIsKeptForAStabilizationWindow) {
    Pool pool(AutoscaleConfig{}, 1, 5, 10);
    ASSERT_TRUE(pool.scaler.next_evaluation());  // above min: it has work to do
    while (pool.changes.empty()) pool.advance(1s);
    EXPECT_EQ(pool.changes.front(), std::make_pair(Duration(30s), std::size_t{4}));
}

}  // namespace
}  // namespace cronoq::core::detail::autoscaler_test
