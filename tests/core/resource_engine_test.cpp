// Shared resources in the engine (docs/guide/resources-and-bounds.md): semaphores and token buckets,
// all-or-nothing, parked tasks that do not hold back others, set_rate.
#include "engine_harness.hpp"

namespace cronoq::core::test::resource_engine_test {
namespace {

using S = TaskStatus;

TEST(ResourceEngineTest, ASemaphoreOfTwoNeverHasThreeHolders) {
    Harness h(with_resources({Resource::semaphore("db", 2)}));
    const PoolId pool = h.add_pool(PoolConfig{"p", 10});
    std::vector<TaskId> tasks;
    for (int i = 0; i < 6; ++i) tasks.push_back(h.submit(needing(pool, {{"db", 1}}), t0));
    EXPECT_EQ(h.engine.counters(pool).running, 2u);
    Time now = t0;
    for (int round = 0; round < 4; ++round) {
        now += 1s;
        const auto running = h.engine.counters(pool).running;
        ASSERT_EQ(running, 2u);
        // End the oldest running attempt: exactly one parked task takes its unit.
        for (TaskId t : tasks)
            if (h.engine.status(t) == S::Running) {
                h.complete(h.lease_of(t), Outcome::success(), now);
                break;
            }
        EXPECT_EQ(h.dispatches().size(), 1u);
    }
    EXPECT_EQ(h.engine.counters(pool).ready, 0u);
}

TEST(ResourceEngineTest, ATokenBucketGivesItsBurstThenOneEveryHalfSecond) {
    Harness h(with_resources({Resource::token_bucket("api", 2.0, 3)}));
    const PoolId pool = h.add_pool(PoolConfig{"p", 100});
    for (int i = 0; i < 10; ++i) h.submit(needing(pool, {{"api", 1}}), t0);
    EXPECT_EQ(h.engine.counters(pool).running, 3u);
    for (int k = 1; k <= 7; ++k) {
        const Time due = t0 + k * 500ms;
        ASSERT_EQ(h.engine.next_wakeup(), due) << "token " << k;
        h.tick(due - 1ns);
        EXPECT_TRUE(h.dispatches().empty());
        h.tick(due);
        EXPECT_EQ(h.dispatches().size(), 1u) << "token " << k;
    }
    EXPECT_EQ(h.engine.counters(pool).running, 10u);
    EXPECT_EQ(h.engine.next_wakeup(), std::nullopt);
}

TEST(ResourceEngineTest, ATaskWaitingOnAnEmptyBucketDoesNotDelayOthers) {
    Harness h(with_resources({Resource::token_bucket("api", 1.0, 1)}));
    const PoolId pool = h.add_pool(PoolConfig{"p", 4});
    h.submit(needing(pool, {{"api", 1}}), t0);
    const TaskId parked = h.submit(needing(pool, {{"api", 1}}, Priority::Critical), t0);
    const TaskId free = h.submit(TaskSpec{.pool = pool, .priority = Priority::Low}, t0);
    EXPECT_EQ(h.engine.status(parked), S::Ready);
    EXPECT_EQ(h.engine.status(free), S::Running);
    h.tick(t0 + 1s);
    EXPECT_EQ(h.engine.status(parked), S::Running);
}

TEST(ResourceEngineTest, SeveralResourcesAreTakenAllOrNothing) {
    Harness h(with_resources({Resource::semaphore("a", 1), Resource::semaphore("b", 1)}));
    const PoolId pool = h.add_pool(PoolConfig{"p", 4});
    const TaskId holds_b = h.submit(needing(pool, {{"b", 1}}), t0);
    const TaskId both = h.submit(needing(pool, {{"a", 1}, {"b", 1}}), t0);
    EXPECT_EQ(h.engine.status(both), S::Ready);
    // `both` holds no unit of `a` while it waits for `b`.
    const TaskId only_a = h.submit(needing(pool, {{"a", 1}}), t0 + 1s);
    EXPECT_EQ(h.engine.status(only_a), S::Running);
    h.complete(h.lease_of(holds_b), Outcome::success(), t0 + 2s);
    EXPECT_EQ(h.engine.status(both), S::Ready) << "b is free but a is held";
    h.complete(h.lease_of(only_a), Outcome::success(), t0 + 3s);
    EXPECT_EQ(h.engine.status(both), S::Running);
}

TEST(ResourceEngineTest, ParkedTasksComeBackInOrder) {
    Harness h(with_resources({Resource::semaphore("s", 1)}));
    const PoolId pool = h.add_pool(PoolConfig{"p", 4});
    const TaskId first = h.submit(needing(pool, {{"s", 1}}), t0);
    const TaskId second = h.submit(needing(pool, {{"s", 1}}), t0 + 1s);
    const TaskId third = h.submit(needing(pool, {{"s", 1}}), t0 + 2s);
    h.complete(h.lease_of(first), Outcome::success(), t0 + 3s);
    EXPECT_EQ(h.only_dispatch().task, second);
    h.complete(h.lease_of(second), Outcome::success(), t0 + 4s);
    EXPECT_EQ(h.only_dispatch().task, third);
}

TEST(ResourceEngineTest, SetRateTakesEffectAtTheNextRefill) {
    Harness h(with_resources({Resource::token_bucket("api", 1.0, 1)}));
    const PoolId pool = h.add_pool(PoolConfig{"p", 4});
    h.submit(needing(pool, {{"api", 1}}), t0);
    const TaskId next = h.submit(needing(pool, {{"api", 1}}), t0);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 1s);
    // At 0.1 s, 0.1 token has accrued; at 10/s the rest takes 90 ms.
    EXPECT_EQ(h.engine.set_rate("api", 10.0, t0 + 100ms), std::nullopt);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 190ms);
    h.tick(t0 + 190ms);
    EXPECT_EQ(h.engine.status(next), S::Running);
    EXPECT_TRUE(h.engine.set_rate("nope", 1.0, t0 + 1s).has_value());
    EXPECT_TRUE(h.engine.set_rate("api", -1.0, t0 + 1s).has_value());
}

TEST(ResourceEngineTest, ARateOfZeroWaitsForSetRate) {
    Harness h(with_resources({Resource::token_bucket("api", 0.0, 1)}));
    const PoolId pool = h.add_pool(PoolConfig{"p", 4});
    h.submit(needing(pool, {{"api", 1}}), t0);
    const TaskId waiting = h.submit(needing(pool, {{"api", 1}}), t0);
    EXPECT_EQ(h.engine.next_wakeup(), std::nullopt);
    h.engine.set_rate("api", 1.0, t0 + 10s);
    h.tick(t0 + 11s);
    EXPECT_EQ(h.engine.status(waiting), S::Running);
}

TEST(ResourceEngineTest, UnknownAndImpossibleRequestsAreRejectedAtSubmit) {
    Harness h(with_resources({Resource::semaphore("db", 2), Resource::token_bucket("api", 1.0, 5)}));
    const PoolId pool = h.add_pool(PoolConfig{"p", 4});
    EXPECT_EQ(h.try_submit(needing(pool, {{"nope", 1}}), t0).error(), SubmitError::UnknownResource);
    const auto big = h.try_submit(needing(pool, {{"db", 3}}), t0);
    EXPECT_EQ(big.error(), SubmitError::ResourceExceedsCapacity);
    EXPECT_EQ(h.try_submit(needing(pool, {{"api", 6}}), t0).error(), SubmitError::ResourceExceedsCapacity);
    EXPECT_TRUE(h.try_submit(needing(pool, {{"api", 5}}), t0).has_value());
    EXPECT_EQ(h.engine.live_tasks(), 1u);
}

TEST(ResourceEngineTest, AbortedAttemptsGiveTheirUnitsBack) {
    Harness h(with_resources({Resource::semaphore("db", 1)}));
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 4, .retry = RetryPolicy::none()});
    TaskSpec timed = needing(pool, {{"db", 1}});
    timed.timeout = 5s;
    h.submit(timed, t0);
    const TaskId next = h.submit(needing(pool, {{"db", 1}}), t0);
    h.tick(t0 + 5s);
    EXPECT_EQ(h.engine.status(next), S::Running);
}

TEST(ResourceEngineTest, BadDeclarationsAreConfigErrors) {
    EXPECT_THROW(Engine(with_resources({Resource::semaphore("x", 0)})), ConfigError);
    EXPECT_THROW(Engine(with_resources({Resource::semaphore("x", 1), Resource::semaphore("x", 2)})), ConfigError);
    EXPECT_THROW(Engine(with_resources({Resource::token_bucket("x", -1.0, 1)})), ConfigError);
}

}  // namespace
}  // namespace cronoq::core::test::resource_engine_test
