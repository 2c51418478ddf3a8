// TaskSpec::user: the owner's value comes back in every action about the
// task, and from Engine::user while the task is live or retained (docs/design.md).
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

// release_users_at_end: a task without a key ends with its value in its
// terminal Status and gives 0 from then on; a keyed one keeps it until it
// is forgotten.
TEST(UserValueTest, ReleasedAtTheEndOnlyWithoutAKey) {
    Harness h(short_retention());
    h.engine.release_users_at_end(true);
    const PoolId pool = h.add_pool(PoolConfig{"p", 2});
    TaskSpec plain{.pool = pool};
    plain.user = 7;
    TaskSpec keyed{.pool = pool};
    keyed.user = 8;
    keyed.key = "k";
    const TaskId a = h.submit(plain, t0);
    const TaskId b = h.submit(keyed, t0);
    EXPECT_EQ(h.engine.user(a), 7u) << "a live task keeps it";
    h.complete(h.lease_of(a), Outcome::success(), t0 + 1s);
    h.complete(h.lease_of(b), Outcome::success(), t0 + 1s);
    ASSERT_FALSE(h.statuses_of(a).empty());
    EXPECT_EQ(h.statuses_of(a).back().status, TaskStatus::Succeeded);
    EXPECT_EQ(h.statuses_of(a).back().user, 7u) << "its terminal Status still carries it";
    EXPECT_EQ(h.engine.user(a), 0u);
    EXPECT_EQ(h.engine.user(b), 8u);
    h.tick(t0 + 20s);
    std::vector<Forget> forgets = h.last_of<Forget>();
    ASSERT_EQ(forgets.size(), 2u);
    for (const Forget& f : forgets) EXPECT_EQ(f.user, f.task == a ? 0u : 8u);
}

}  // namespace
}  // namespace cronoq::core::test::user_value_test
