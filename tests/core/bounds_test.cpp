// Bounds on pending tasks and the overflow policies in the engine (docs/guide/resources-and-bounds.md).
#include "engine_harness.hpp"

namespace cronoq::core::test::bounds_test {
namespace {

using S = TaskStatus;

PoolConfig bounded(std::string name, std::size_t max_pending, OverflowPolicy policy) {
    // No slot: every task stays pending.
    return PoolConfig{.name = std::move(name), .capacity = 0, .bounds = Bounds{max_pending}, .overflow = policy};
}

TaskSpec of(PoolId pool, Priority p = Priority::Normal) { return TaskSpec{.pool = pool, .priority = p}; }

std::vector<SpaceAvailable> spaces(const Harness& h) { return h.last_of<SpaceAvailable>(); }

TEST(BoundsTest, WaitAnswersFullThenAnnouncesSpace) {
    Harness h;
    const PoolId pool = h.add_pool(bounded("p", 2, OverflowPolicy::Wait));
    const TaskId a = h.submit(of(pool), t0);
    h.submit(of(pool), t0);
    const auto full = h.try_submit(of(pool), t0);
    ASSERT_FALSE(full.has_value());
    EXPECT_EQ(full.error(), SubmitError::Full);
    EXPECT_NE(full.message().find("max_pending 2"), std::string::npos);
    EXPECT_TRUE(h.last.empty());
    h.cancel(a, t0 + 1s);
    ASSERT_EQ(spaces(h).size(), 1u);
    EXPECT_EQ(spaces(h)[0].pool, pool);
    EXPECT_TRUE(h.try_submit(of(pool), t0 + 1s).has_value());
    h.set_capacity(pool, 1, t0 + 2s);
    EXPECT_TRUE(spaces(h).empty()) << "SpaceAvailable only after a Full";
}

TEST(BoundsTest, RunningTasksDoNotCountButWaitingOnesDo) {
    Harness h;
    PoolConfig c = bounded("p", 2, OverflowPolicy::Reject);
    c.capacity = 1;
    const PoolId pool = h.add_pool(c);
    h.submit(of(pool), t0);  // runs
    TaskSpec scheduled = of(pool);
    scheduled.start = t0 + 60s;
    h.submit(scheduled, t0);
    h.submit(of(pool), t0);  // ready
    const auto r = h.try_submit(of(pool), t0);
    EXPECT_EQ(r.error(), SubmitError::Overloaded);
    EXPECT_EQ(h.engine.counters(pool).submitted, 3u);
}

TEST(BoundsTest, ShedLowestEvictsTheNewestOfTheLowestClassBelow) {
    Harness h;
    const PoolId pool = h.add_pool(bounded("p", 3, OverflowPolicy::ShedLowest));
    const TaskId low1 = h.submit(of(pool, Priority::Low), t0);
    const TaskId low2 = h.submit(of(pool, Priority::Low), t0 + 1s);
    const TaskId normal = h.submit(of(pool, Priority::Normal), t0 + 2s);
    const TaskId high = h.submit(of(pool, Priority::High), t0 + 3s);
    EXPECT_EQ(h.engine.status(low2), S::Shed);
    EXPECT_EQ(h.engine.status(low1), S::Ready);
    EXPECT_NE(h.statuses_of(low2).back().message.find("shed"), std::string::npos);
    EXPECT_EQ(h.engine.counters(pool).shed, 1u);
    h.submit(of(pool, Priority::High), t0 + 4s);
    EXPECT_EQ(h.engine.status(low1), S::Shed);
    h.submit(of(pool, Priority::Critical), t0 + 5s);
    EXPECT_EQ(h.engine.status(normal), S::Shed);
    // Nothing strictly below High is left: no victim.
    EXPECT_EQ(h.try_submit(of(pool, Priority::High), t0 + 6s).error(), SubmitError::Overloaded);
    EXPECT_EQ(h.engine.status(high), S::Ready);
}

TEST(BoundsTest, ShedOldestEvictsTheOldestLowTask) {
    Harness h;
    const PoolId pool = h.add_pool(bounded("p", 2, OverflowPolicy::ShedOldest));
    const TaskId low1 = h.submit(of(pool, Priority::Low), t0);
    const TaskId low2 = h.submit(of(pool, Priority::Low), t0 + 1s);
    h.submit(of(pool, Priority::Normal), t0 + 2s);
    EXPECT_EQ(h.engine.status(low1), S::Shed);
    h.submit(of(pool, Priority::Low), t0 + 3s);
    EXPECT_EQ(h.engine.status(low2), S::Shed);
    // Pending now: the Normal task and the newest Low; another Low sheds that one.
    h.submit(of(pool, Priority::Low), t0 + 4s);
    EXPECT_EQ(h.engine.counters(pool).shed, 3u);
}

TEST(BoundsTest, ShedOldestWithoutLowTasksIsOverloaded) {
    Harness h;
    const PoolId pool = h.add_pool(bounded("p", 1, OverflowPolicy::ShedOldest));
    h.submit(of(pool, Priority::Normal), t0);
    EXPECT_EQ(h.try_submit(of(pool, Priority::Critical), t0).error(), SubmitError::Overloaded);
}

TEST(BoundsTest, ADispatchedTaskIsNoLongerAVictim) {
    Harness h;
    PoolConfig c = bounded("p", 1, OverflowPolicy::ShedLowest);
    const PoolId pool = h.add_pool(c);
    const TaskId low = h.submit(of(pool, Priority::Low), t0);
    h.set_capacity(pool, 1, t0);  // low runs
    EXPECT_EQ(h.engine.status(low), S::Running);
    h.submit(of(pool, Priority::Low), t0);  // pending: 1, the bound
    const TaskId high = h.submit(of(pool, Priority::High), t0);
    EXPECT_EQ(h.engine.status(low), S::Running);
    EXPECT_EQ(h.engine.status(high), S::Ready);
}

TEST(BoundsTest, GlobalBoundsSpanPoolsAndUseTheIncomingPoolsPolicy) {
    EngineConfig config;
    config.global_bounds = Bounds{2};
    Harness h(config);
    const PoolId wait = h.add_pool(PoolConfig{.name = "wait", .capacity = 0});
    const PoolId shed = h.add_pool(PoolConfig{.name = "shed", .capacity = 0, .overflow = OverflowPolicy::ShedLowest});
    const TaskId low = h.submit(of(wait, Priority::Low), t0);
    h.submit(of(shed, Priority::Normal), t0);
    EXPECT_EQ(h.try_submit(of(wait), t0).error(), SubmitError::Full);
    // Only the global bound is full: a victim may come from any pool.
    h.submit(of(shed, Priority::High), t0 + 1s);
    EXPECT_EQ(h.engine.status(low), S::Shed);
    h.set_capacity(shed, 1, t0 + 2s);  // one starts: room again
    ASSERT_EQ(spaces(h).size(), 1u);
    EXPECT_EQ(spaces(h)[0].pool, wait);
}

TEST(BoundsTest, ABatchThatDoesNotFitAdmitsNothingAndShedsNothing) {
    Harness h;
    const PoolId pool = h.add_pool(bounded("p", 3, OverflowPolicy::ShedLowest));
    const TaskId low = h.submit(of(pool, Priority::Low), t0);
    const auto r = h.submit_batch({of(pool, Priority::High), of(pool, Priority::High), of(pool, Priority::High)}, t0);
    EXPECT_EQ(r.error(), SubmitError::Overloaded);
    EXPECT_EQ(h.engine.status(low), S::Ready);
    EXPECT_EQ(h.engine.live_tasks(), 1u);
    const PoolId waiting = h.add_pool(bounded("w", 1, OverflowPolicy::Wait));
    EXPECT_EQ(h.submit_batch({of(waiting), of(waiting)}, t0).error(), SubmitError::Full);
}

TEST(BoundsTest, BadBoundsAreConfigErrors) {
    Harness h;
    EXPECT_THROW(h.add_pool(bounded("p", 0, OverflowPolicy::Wait)), ConfigError);
    EngineConfig config;
    config.global_bounds = Bounds{0};
    EXPECT_THROW(Engine{config}, ConfigError);
}

}  // namespace
}  // namespace cronoq::core::test::bounds_test
