// The urgency window that scales with the task (UrgencyConfig::window_factor):
// window = max(window, window_factor x expected duration), with the expected
// duration that set the latest start.
//
// Each test races a Low deadline task against a fresh High task under
// aging_rate 0, so the Low task's score is 10 + urgency and it goes first
// once its urgency passes 990: at 19.8 % of the window into it.
#include "engine_harness.hpp"

#include <cmath>
#include <functional>
#include <limits>

namespace cronoq::core::test::urgency_window_test {
namespace {

using P = Priority;
using Ids = std::vector<TaskId>;

EngineConfig factor(double f) {
    EngineConfig c;
    c.priority.aging_rate = 0;
    c.urgency.window_factor = f;
    return c;
}

// Builds a fresh engine, queues the deadline task with `setup`, then a fresh
// High task, and opens a slot at `open`. True if the deadline task went first.
bool low_first(const EngineConfig& config, const std::function<TaskId(Harness&, PoolId)>& setup, Time open,
               Duration default_duration = 1s) {
    Harness h(config);
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 0, .default_duration = default_duration});
    const TaskId low = setup(h, pool);
    h.submit(TaskSpec{.pool = pool, .priority = P::High}, open);
    const Ids order = h.dispatch_order(pool, open);
    EXPECT_EQ(order.size(), 2u);
    return !order.empty() && order.front() == low;
}

// Latest start at 100 s; a 10 s hint.
TaskId ten_second_task(Harness& h, PoolId pool) {
    return h.submit(TaskSpec{.pool = pool, .priority = P::Low, .deadline = t0 + 110s, .duration_hint = 10s}, t0);
}

TEST(UrgencyWindowTest, WindowIsTheFactorTimesTheExpectedDuration) {
    // Factor 2, hint 10 s: a 20 s window, so urgency 990 at 3.96 s into it,
    // 83.96 s.
    EXPECT_FALSE(low_first(factor(2), ten_second_task, t0 + 83900ms));
    EXPECT_TRUE(low_first(factor(2), ten_second_task, t0 + 84s));
}

TEST(UrgencyWindowTest, WithoutAFactorTheWindowIsFixed) {
    // The 5 s window: urgency 990 at 95.99 s.
    EXPECT_FALSE(low_first(factor(0), ten_second_task, t0 + 84s));
    EXPECT_FALSE(low_first(factor(0), ten_second_task, t0 + 95900ms));
    EXPECT_TRUE(low_first(factor(0), ten_second_task, t0 + 96s));
}

TEST(UrgencyWindowTest, ShortTasksKeepTheFixedWindow) {
    // Factor 2 and a 2 s hint: 4 s < 5 s, so the window stays 5 s.
    auto two_second_task = [](Harness& h, PoolId pool) {
        return h.submit(TaskSpec{.pool = pool, .priority = P::Low, .deadline = t0 + 102s, .duration_hint = 2s}, t0);
    };
    EXPECT_FALSE(low_first(factor(2), two_second_task, t0 + 95900ms));
    EXPECT_TRUE(low_first(factor(2), two_second_task, t0 + 96s));
}

TEST(UrgencyWindowTest, DefaultFactorIsOne) {
    EXPECT_EQ(UrgencyConfig{}.window_factor, 1.0);
    EngineConfig config;
    config.priority.aging_rate = 0;
    // A 10 s window: urgency 990 at 91.98 s.
    EXPECT_FALSE(low_first(config, ten_second_task, t0 + 91900ms));
    EXPECT_TRUE(low_first(config, ten_second_task, t0 + 92s));
}

TEST(UrgencyWindowTest, WindowUsesThePoolDefaultDurationWithoutHintOrHistory) {
    // No hint, nothing learned: the pool's 10 s default sets both the
    // latest start (100 s) and, with factor 2, a 20 s window.
    auto no_hint = [](Harness& h, PoolId pool) {
        return h.submit(TaskSpec{.pool = pool, .priority = P::Low, .deadline = t0 + 110s}, t0);
    };
    EXPECT_FALSE(low_first(factor(2), no_hint, t0 + 83900ms, 10s));
    EXPECT_TRUE(low_first(factor(2), no_hint, t0 + 84s, 10s));
}

TEST(UrgencyWindowTest, WindowUsesTheLearnedMeanOfTheKind) {
    // One 20 s run of the kind: latest start 130 s - 20 s = 110 s, and with
    // factor 1 a 20 s window: urgency 990 at 93.96 s.
    auto learned = [](Harness& h, PoolId pool) {
        const KindId k = h.engine.intern_kind("k");
        h.set_capacity(pool, 1, t0);
        h.submit(TaskSpec{.pool = pool, .kind = k}, t0);
        EXPECT_TRUE(h.complete(h.only_dispatch().lease, Outcome::success(), t0 + 20s));
        h.set_capacity(pool, 0, t0 + 20s);
        const TaskId id = h.submit(TaskSpec{.pool = pool, .priority = P::Low, .kind = k, .deadline = t0 + 130s}, t0 + 20s);
        return id;
    };
    EXPECT_FALSE(low_first(factor(1), learned, t0 + 93900ms));
    EXPECT_TRUE(low_first(factor(1), learned, t0 + 94s));
}

TEST(UrgencyWindowTest, OverdueUrgencyIsUnchangedByTheFactor) {
    // Past the latest start the window no longer matters: 5000 + 100/s.
    // High's 1000 is passed at once; compare with a Critical task instead.
    for (double f : {0.0, 1.0, 5.0}) {
        Harness h(factor(f));
        const PoolId pool = h.add_pool(PoolConfig{"p", 0});
        const TaskId low = ten_second_task(h, pool);
        const TaskId critical = h.submit(TaskSpec{.pool = pool, .priority = P::Critical}, t0 + 120s);
        // 20 s overdue: 10 + 5000 + 2000 = 7010 < 10000.
        EXPECT_EQ(h.dispatch_order(pool, t0 + 120s), (Ids{critical, low})) << "factor " << f;
    }
}

TEST(UrgencyWindowTest, ARetriedTaskTakesItsWindowFromTheExpectedDurationAgain) {
    // The window comes with the latest start, computed again each time the
    // task becomes ready; with a hint both stay the same.
    Harness h(factor(2));
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1});
    const TaskId low = h.submit(TaskSpec{.pool = pool,
                                         .priority = P::Low,
                                         .deadline = t0 + 110s,
                                         .duration_hint = 10s,
                                         .retry = RetryPolicy{2, 1s, 1.0, 1s, false}},
                                t0);
    ASSERT_TRUE(h.complete(h.only_dispatch().lease, Outcome::retryable("again"), t0 + 1s));
    h.set_capacity(pool, 0, t0 + 1s);
    h.tick(t0 + 2s);  // back to Ready
    ASSERT_EQ(h.engine.status(low), TaskStatus::Ready);
    const TaskId high = h.submit(TaskSpec{.pool = pool, .priority = P::High}, t0 + 84s);
    EXPECT_EQ(h.dispatch_order(pool, t0 + 84s), (Ids{low, high}));
}

// ---- validation -----------------------------------------------------------------

TEST(UrgencyWindowConfigTest, FactorMustBeFiniteAndNotNegative) {
    for (double bad : {-0.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
        EngineConfig c;
        c.urgency.window_factor = bad;
        try {
            Engine e(c);
            ADD_FAILURE() << "no ConfigError for " << bad;
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find("urgency.window_factor"), std::string::npos) << e.what();
        }
    }
    EngineConfig zero;
    zero.urgency.window_factor = 0;
    EXPECT_NO_THROW(Engine{zero});
}

}  // namespace
}  // namespace cronoq::core::test::urgency_window_test
