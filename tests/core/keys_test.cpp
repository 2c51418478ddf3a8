// Idempotency keys in the engine (docs/guide/dependencies-and-keys.md) and the Forget action.
#include "engine_harness.hpp"

namespace cronoq::core::test::keys_test {
namespace {

using S = TaskStatus;

TaskSpec keyed(PoolId pool, std::string key) {
    TaskSpec spec{.pool = pool};
    spec.key = std::move(key);
    return spec;
}

TEST(KeyTest, SameKeyWhileLiveReturnsTheSameTaskAndAdmitsNothing) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId first = h.submit(keyed(pool, "order-7"), t0);
    const TaskId again = h.submit(keyed(pool, "order-7"), t0 + 1s);
    EXPECT_EQ(again, first);
    EXPECT_TRUE(h.last.empty()) << "a duplicate key emitted actions";
    EXPECT_EQ(h.engine.live_tasks(), 1u);
    EXPECT_EQ(h.engine.counters(pool).submitted, 1u);
    EXPECT_EQ(h.engine.find_key("order-7"), first);
    EXPECT_EQ(h.engine.find_key("order-8"), std::nullopt);
}

TEST(KeyTest, RetainedTaskStillHoldsItsKey) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId first = h.submit(keyed(pool, "k"), t0);
    h.complete(h.only_dispatch().lease, Outcome::success(), t0 + 1s);
    EXPECT_EQ(h.engine.status(first), S::Succeeded);
    EXPECT_EQ(h.submit(keyed(pool, "k"), t0 + 2s), first);  // nothing new runs
    EXPECT_TRUE(h.dispatches().empty());
}

TEST(KeyTest, ForgottenTaskFreesItsKeyAndEmitsForget) {
    EngineConfig config;
    config.retention = 10s;
    Harness h(config);
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId first = h.submit(keyed(pool, "k"), t0);
    h.complete(h.only_dispatch().lease, Outcome::success(), t0);
    h.tick(t0 + 10s);  // retention over: forgotten at the next call
    std::vector<Forget> forgets;
    for (const Action& a : h.last)
        if (const auto* f = std::get_if<Forget>(&a)) forgets.push_back(*f);
    ASSERT_EQ(forgets.size(), 1u);
    EXPECT_EQ(forgets[0].task, first);
    EXPECT_EQ(h.engine.status(first), std::nullopt);
    EXPECT_EQ(h.engine.find_key("k"), std::nullopt);
    const TaskId second = h.submit(keyed(pool, "k"), t0 + 11s);
    EXPECT_NE(second, first);
    EXPECT_EQ(h.engine.find_key("k"), second);
}

TEST(KeyTest, RetentionMaxForgetsTheOldestFirst) {
    EngineConfig config;
    config.retention_max = 2;
    Harness h(config);
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    std::vector<TaskId> ids;
    for (int i = 0; i < 3; ++i) {
        ids.push_back(h.submit(keyed(pool, "k" + std::to_string(i)), t0));
        h.complete(h.only_dispatch().lease, Outcome::success(), t0);
    }
    EXPECT_EQ(h.engine.find_key("k0"), std::nullopt);
    EXPECT_EQ(h.engine.find_key("k1"), ids[1]);
    EXPECT_EQ(h.engine.find_key("k2"), ids[2]);
}

TEST(KeyTest, RejectedSubmissionTakesNoKey) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    TaskSpec bad = keyed(pool, "k");
    bad.timeout = Duration(-1);
    EXPECT_FALSE(h.try_submit(bad, t0).has_value());
    EXPECT_EQ(h.engine.find_key("k"), std::nullopt);
    EXPECT_FALSE(h.try_submit(keyed(pool, ""), t0).has_value());  // an empty key is invalid
}

TEST(KeyTest, CancelledTaskKeepsItsKeyWhileRetained) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId first = h.submit(keyed(pool, "k"), t0);
    EXPECT_TRUE(h.cancel(first, t0));
    EXPECT_EQ(h.submit(keyed(pool, "k"), t0), first);
}

}  // namespace
}  // namespace cronoq::core::test::keys_test
