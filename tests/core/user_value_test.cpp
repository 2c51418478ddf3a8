// TaskSpec::user: the owner's value comes back in every action about the
// task, and from Engine::user while the task is live or retained (SPEC §13).
#include "engine_harness.hpp"

namespace cronoq::core::test::user_value_test {
namespace {

// Retention short enough that a test sees its task forgotten.
EngineConfig short_retention() {
    EngineConfig config;
    config.retention = 10s;
    return config;
}

TEST(UserValueTest, EveryActionAboutATaskCarriesItsUserValue) {
    Harness h(short_retention());
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    TaskSpec spec{.pool = pool};
    spec.user = 0xfeedfacecafebeefull;
    spec.retry = RetryPolicy{2, 0s, 1.0, 0s, false};
    spec.timeout = 5s;
    const TaskId id = h.submit(spec, t0);
    EXPECT_EQ(h.engine.user(id), spec.user);
    EXPECT_EQ(h.only_dispatch().user, spec.user);
    h.tick(t0 + 5s);  // the first attempt times out: Abort, then a retry
    ASSERT_EQ(h.aborts().size(), 1u);
    EXPECT_EQ(h.aborts().front().user, spec.user);
    h.tick(t0 + 5s);  // the retry leaves its (zero) backoff
    const std::optional<Dispatch> retry = h.last_dispatch_of(id);
    ASSERT_TRUE(retry);
    EXPECT_EQ(retry->attempt, 2u);
    EXPECT_EQ(retry->user, spec.user);
    h.complete(retry->lease, Outcome::success(), t0 + 6s);
    EXPECT_EQ(h.engine.user(id), spec.user) << "retained tasks keep it";
    for (const Status& s : h.statuses_of(id)) EXPECT_EQ(s.user, spec.user) << to_string(s.status);
    h.tick(t0 + 20s);  // retention ends
    std::vector<Forget> forgets = h.last_of<Forget>();
    ASSERT_EQ(forgets.size(), 1u);
    EXPECT_EQ(forgets.front().user, spec.user);
    EXPECT_EQ(h.engine.user(id), std::nullopt);
}

TEST(UserValueTest, TasksKeepTheirOwnValues) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2});
    std::vector<TaskId> ids;
    for (std::uint64_t u = 1; u <= 3; ++u) {
        TaskSpec spec{.pool = pool};
        spec.user = u * 100;
        ids.push_back(h.submit(spec, t0));
    }
    for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(h.engine.user(ids[i]), (i + 1) * 100);
    EXPECT_EQ(h.engine.user(TaskId{987654}), std::nullopt);
}

TEST(UserValueTest, ReleasedValueIsZeroFromThenOnAndOnlyTerminalTasksRelease) {
    Harness h(short_retention());
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    TaskSpec spec{.pool = pool};
    spec.user = 7;
    const TaskId id = h.submit(spec, t0);
    h.engine.release_user(id);  // live: ignored
    EXPECT_EQ(h.engine.user(id), 7u);
    h.complete(h.only_dispatch().lease, Outcome::success(), t0 + 1s);
    h.engine.release_user(id);
    EXPECT_EQ(h.engine.user(id), 0u);
    h.tick(t0 + 20s);
    const std::vector<Forget> forgets = h.last_of<Forget>();
    ASSERT_EQ(forgets.size(), 1u);
    EXPECT_EQ(forgets.front().user, 0u);
}

}  // namespace
}  // namespace cronoq::core::test::user_value_test
