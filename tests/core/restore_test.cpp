// Recovery after a restart (docs/guide/durability.md): Engine::restore brings back what a
// store kept, with ids, keys, attempts, dependencies and times; announces
// only what changes.
#include "engine_harness.hpp"

namespace cronoq::core::test::restore_test {
namespace {

using S = TaskStatus;

// Ids well above what this process issued, so that restored ids are free.
std::uint64_t fresh_base() { return Engine{}.next_ids().task + 1'000'000; }

RestoredTask restored(std::uint64_t id, TaskSpec spec, TaskStatus status, std::uint32_t attempts = 0,
                      std::optional<Time> until = std::nullopt) {
    return RestoredTask{TaskId{id}, std::move(spec), status, attempts, until, {}};
}

RetryPolicy fixed_backoff(std::uint32_t attempts, Duration delay) { return RetryPolicy{attempts, delay, 1.0, delay, false}; }

class RestoreTest : public ::testing::Test {
protected:
    std::uint64_t base = fresh_base();
    Time now = t0 + 1h;
};

TEST_F(RestoreTest, TasksKeepTheirIdsAndKeysAndNewIdsStartAbove) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    TaskSpec keyed{.pool = pool};
    keyed.key = "k";
    const auto results = h.restore({restored(base + 7, keyed, S::Ready), restored(base + 3, {.pool = pool}, S::Ready)}, now);
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].value(), TaskId{base + 7});
    EXPECT_EQ(results[1].value(), TaskId{base + 3});
    EXPECT_TRUE(h.last.empty()) << "unchanged statuses are not announced";
    EXPECT_EQ(h.engine.status(TaskId{base + 7}), S::Ready);
    EXPECT_EQ(h.engine.find_key("k"), TaskId{base + 7});
    EXPECT_GE(h.engine.next_ids().task, base + 8);
    EXPECT_GT(h.submit(TaskSpec{.pool = pool}, now).value, base + 7);
    // The key is held: submitting it again admits nothing.
    EXPECT_EQ(h.submit(keyed, now), TaskId{base + 7});
    EXPECT_EQ(h.engine.live_tasks(), 3u);
}

TEST_F(RestoreTest, ReadyTasksAreDispatchedWithTheirNextAttempt) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    h.restore({restored(base + 1, {.pool = pool}, S::Ready, 2)}, now);
    const Dispatch d = h.only_dispatch();
    EXPECT_EQ(d.task, TaskId{base + 1});
    EXPECT_EQ(d.attempt, 3u);
    EXPECT_EQ(h.last_statuses_of(TaskId{base + 1}), std::vector<S>{S::Running});
}

TEST_F(RestoreTest, RetryingKeepsItsRetryTime) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task{base + 1};
    h.restore({restored(task.value, {.pool = pool}, S::Retrying, 1, now + 30s)}, now);
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.status(task), S::Retrying);
    EXPECT_EQ(h.engine.counters(pool).retrying, 1u);
    EXPECT_EQ(h.engine.next_wakeup(), now + 30s);
    h.tick(now + 30s - 1ns);
    EXPECT_TRUE(h.last.empty());
    h.tick(now + 30s);
    EXPECT_EQ(h.last_statuses_of(task), (std::vector<S>{S::Ready, S::Running}));
    EXPECT_EQ(h.only_dispatch().attempt, 2u);
}

TEST_F(RestoreTest, RetryingWhoseTimePassedIsReadyAtOnce) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task{base + 1};
    h.restore({restored(task.value, {.pool = pool}, S::Retrying, 1, now - 5s)}, now);
    EXPECT_EQ(h.last_statuses_of(task), (std::vector<S>{S::Ready, S::Running}));
}

TEST_F(RestoreTest, RunningAttemptCountsAsARetryableFailure) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId again{base + 1}, last{base + 2};
    const TaskSpec spec{.pool = pool, .retry = fixed_backoff(3, 10s)};
    h.restore({restored(again.value, spec, S::Running, 1), restored(last.value, spec, S::Running, 3)}, now);
    const auto st = h.statuses();
    ASSERT_EQ(st.size(), 2u);
    EXPECT_EQ(st[0].task, again);
    EXPECT_EQ(st[0].status, S::Retrying);
    EXPECT_EQ(st[0].message, "lease lost: scheduler restarted");
    EXPECT_EQ(st[0].attempt, 1u);
    EXPECT_EQ(st[0].until, now + 10s);
    EXPECT_EQ(st[1].task, last);
    EXPECT_EQ(st[1].status, S::DeadLettered);
    EXPECT_EQ(st[1].message, "lease lost: scheduler restarted");
    EXPECT_EQ(h.engine.counters(pool).retrying, 1u);
    EXPECT_EQ(h.engine.live_tasks(), 1u);
}

TEST_F(RestoreTest, ScheduledKeepsItsStartOrFollowsItsMissPolicy) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    TaskSpec later{.pool = pool};
    later.start = now + 1min;
    TaskSpec missed{.pool = pool};
    missed.start = now - 10s;
    missed.on_miss = MissPolicy::Skip;
    TaskSpec late{.pool = pool};
    late.start = now - 10s;
    h.restore({restored(base + 1, later, S::Scheduled), restored(base + 2, missed, S::Scheduled),
               restored(base + 3, late, S::Scheduled)},
              now);
    EXPECT_TRUE(h.last_statuses_of(TaskId{base + 1}).empty());
    EXPECT_EQ(h.engine.status(TaskId{base + 1}), S::Scheduled);
    EXPECT_EQ(h.last_statuses_of(TaskId{base + 2}), std::vector<S>{S::Missed});
    EXPECT_EQ(h.last_statuses_of(TaskId{base + 3}), (std::vector<S>{S::Ready, S::Running}));
    ASSERT_TRUE(h.complete(h.lease_of(TaskId{base + 3}), Outcome::success(), now + 1s));
    h.tick(now + 1min);
    EXPECT_EQ(h.only_dispatch().task, TaskId{base + 1});
}

TEST_F(RestoreTest, ScheduledStartComesFromUntil) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    h.restore({restored(base + 1, {.pool = pool}, S::Scheduled, 0, now + 20s)}, now);
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.next_wakeup(), now + 20s);
    h.tick(now + 20s);
    EXPECT_EQ(h.only_dispatch().task, TaskId{base + 1});
}

TEST_F(RestoreTest, DependenciesResolveInAnyOrder) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    TaskSpec parent{.pool = pool, .retry = RetryPolicy::none()};
    parent.key = "parent";
    TaskSpec child{.pool = pool};
    child.depends_on = {Dep::on_success("parent")};
    TaskSpec grandchild{.pool = pool};
    grandchild.depends_on = {Dep::on_complete(TaskId{base + 2})};
    // Children first; the parent's lost attempt was its last.
    h.restore({restored(base + 3, grandchild, S::Blocked), restored(base + 2, child, S::Blocked),
               restored(base + 1, parent, S::Running, 1)},
              now);
    EXPECT_EQ(h.engine.status(TaskId{base + 1}), S::DeadLettered);
    EXPECT_EQ(h.engine.status(TaskId{base + 2}), S::Skipped);
    // on_complete of a skipped parent is met.
    EXPECT_EQ(h.engine.status(TaskId{base + 3}), S::Ready);
    EXPECT_EQ(h.last_statuses_of(TaskId{base + 3}), std::vector<S>{S::Ready});
}

TEST_F(RestoreTest, BlockedStaysBlockedOnLiveParentsAndIsReleasedLater) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    TaskSpec child{.pool = pool};
    child.depends_on = {Dep::on_success(TaskId{base + 1})};
    h.restore({restored(base + 2, child, S::Blocked), restored(base + 1, {.pool = pool}, S::Ready)}, now);
    EXPECT_TRUE(h.last_statuses_of(TaskId{base + 2}).empty());
    EXPECT_EQ(h.engine.status(TaskId{base + 2}), S::Blocked);
    ASSERT_TRUE(h.complete(h.lease_of(TaskId{base + 1}), Outcome::success(), now + 1s));
    EXPECT_EQ(h.only_dispatch().task, TaskId{base + 2});
}

TEST_F(RestoreTest, EdgesToTasksNoLongerKnownAreBroken) {
    Harness h;
    const PoolId reject = h.add_pool(PoolConfig{"reject", 1});
    PoolConfig awaiting_config{"await", 1};
    awaiting_config.unknown_dependency = UnknownDependency::Await{30s};
    const PoolId awaits = h.add_pool(awaiting_config);
    TaskSpec by_id{.pool = reject};
    by_id.depends_on = {Dep::on_success(TaskId{base + 99})};
    TaskSpec by_key{.pool = reject};
    by_key.depends_on = {Dep::on_success("gone")};
    TaskSpec awaiting{.pool = awaits};
    awaiting.depends_on = {Dep::on_success("gone")};
    h.restore({restored(base + 1, by_id, S::Blocked), restored(base + 2, by_key, S::Blocked),
               restored(base + 3, awaiting, S::Blocked)},
              now);
    EXPECT_EQ(h.engine.status(TaskId{base + 1}), S::Skipped);
    EXPECT_EQ(h.statuses_of(TaskId{base + 1}).at(0).message,
              "dependency task " + std::to_string(base + 99) + " is unknown after restart");
    EXPECT_EQ(h.engine.status(TaskId{base + 2}), S::Skipped);
    EXPECT_EQ(h.engine.status(TaskId{base + 3}), S::Blocked);
    h.tick(now + 30s);
    EXPECT_EQ(h.engine.status(TaskId{base + 3}), S::Skipped);
}

TEST_F(RestoreTest, TerminalTasksAreRetainedForKeysDependenciesAndLookups) {
    Harness h(EngineConfig{.retention = 1min});
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    TaskSpec done{.pool = pool, .user = 42};
    done.key = "done";
    TaskSpec child{.pool = pool};
    child.depends_on = {Dep::on_success("done")};
    h.restore({restored(base + 1, done, S::Succeeded, 1), restored(base + 2, child, S::Blocked)}, now);
    EXPECT_TRUE(h.last_statuses_of(TaskId{base + 1}).empty());
    EXPECT_EQ(h.engine.status(TaskId{base + 1}), S::Succeeded);
    EXPECT_EQ(h.engine.user(TaskId{base + 1}), 42u);
    EXPECT_EQ(h.engine.retained_tasks(), 1u);
    EXPECT_EQ(h.engine.counters(pool).succeeded, 0u) << "counters count what this engine saw end";
    EXPECT_EQ(h.only_dispatch().task, TaskId{base + 2});
    EXPECT_EQ(h.submit(done, now), TaskId{base + 1});
    // Retention counts from the restore.
    h.tick(now + 1min - 1ns);
    EXPECT_EQ(h.engine.status(TaskId{base + 1}), S::Succeeded);
    h.tick(now + 1min);
    EXPECT_FALSE(h.engine.status(TaskId{base + 1}).has_value());
    EXPECT_FALSE(h.engine.find_key("done").has_value());
}

TEST_F(RestoreTest, AdmittedPastBoundsAndReservationLimits) {
    Harness h;
    PoolConfig config{"p", 0};
    config.bounds.max_pending = 1;
    config.overflow = OverflowPolicy::Reject;
    config.max_workers = 1;
    const PoolId pool = h.add_pool(config);
    TaskSpec fixed{.pool = pool, .duration_hint = 1h};
    fixed.start = now + 1min;
    std::vector<RestoredTask> tasks;
    for (std::uint64_t i = 1; i <= 3; ++i) tasks.push_back(restored(base + i, {.pool = pool}, S::Ready));
    for (std::uint64_t i = 4; i <= 5; ++i) tasks.push_back(restored(base + i, fixed, S::Scheduled));
    for (const auto& r : h.restore(tasks, now)) EXPECT_TRUE(r.has_value()) << r.message();
    EXPECT_EQ(h.engine.counters(pool).ready, 3u);
    EXPECT_EQ(h.engine.counters(pool).scheduled, 2u);
    EXPECT_EQ(h.try_submit(TaskSpec{.pool = pool}, now).error(), SubmitError::Overloaded);
}

TEST_F(RestoreTest, UnknownResourceEndsFailed) {
    Harness h(EngineConfig{.resources = {Resource::semaphore("db", 2)}});
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    TaskSpec gone{.pool = pool};
    gone.resources = {{"db", 1}, {"gpu", 1}};
    TaskSpec too_much{.pool = pool};
    too_much.resources = {{"db", 3}};
    TaskSpec ended = gone;  // a terminal task needs nothing any more
    const auto results = h.restore({restored(base + 1, gone, S::Running, 1), restored(base + 2, too_much, S::Ready),
                                    restored(base + 3, ended, S::Succeeded, 1)},
                                   now);
    for (const auto& r : results) EXPECT_TRUE(r.has_value()) << r.message();
    const auto st = h.statuses_of(TaskId{base + 1});
    ASSERT_EQ(st.size(), 1u);
    EXPECT_EQ(st[0].status, S::Failed);
    EXPECT_EQ(st[0].message, "unknown resource after restart: gpu");
    EXPECT_EQ(h.engine.status(TaskId{base + 2}), S::Failed);
    EXPECT_EQ(h.engine.status(TaskId{base + 3}), S::Succeeded);
    EXPECT_EQ(h.engine.live_tasks(), 0u);
}

TEST_F(RestoreTest, ErrorResultsLeaveTheOthersRestored) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId known = h.submit(TaskSpec{.pool = pool}, now);
    const auto results = h.restore({restored(0, {.pool = pool}, S::Ready), restored(known.value, {.pool = pool}, S::Ready),
                                    restored(base + 1, {.pool = 7}, S::Ready), restored(base + 2, {.pool = pool}, S::Ready),
                                    restored(base + 2, {.pool = pool}, S::Ready)},
                                   now);
    ASSERT_EQ(results.size(), 5u);
    EXPECT_EQ(results[0].error(), SubmitError::Invalid);
    EXPECT_EQ(results[1].error(), SubmitError::Invalid);
    EXPECT_EQ(results[2].error(), SubmitError::UnknownPool);
    EXPECT_EQ(results[3].value(), TaskId{base + 2});
    EXPECT_EQ(results[4].error(), SubmitError::Invalid);
    EXPECT_EQ(h.engine.live_tasks(), 2u);
    // A rejected task's id is not issued again either.
    EXPECT_GT(h.engine.next_ids().task, base + 2);
}

TEST_F(RestoreTest, AKeyTwoRestoredTasksNameGoesToTheNewerOne) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    TaskSpec keyed{.pool = pool};
    keyed.key = "k";
    const auto results = h.restore({restored(base + 5, keyed, S::Ready), restored(base + 1, keyed, S::Failed, 1)}, now);
    for (const auto& r : results) EXPECT_TRUE(r.has_value()) << r.message();
    EXPECT_EQ(h.engine.find_key("k"), TaskId{base + 5});
    // A key a known task holds is an error for the restored one.
    const auto again = h.restore({restored(base + 9, keyed, S::Ready)}, now);
    EXPECT_EQ(again.at(0).error(), SubmitError::Invalid);
}

TEST_F(RestoreTest, ShuttingDownRestoresNothing) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    h.shutdown(now, now);
    EXPECT_EQ(h.restore({restored(base + 1, {.pool = pool}, S::Ready)}, now).at(0).error(), SubmitError::ShuttingDown);
    EXPECT_GT(h.engine.next_ids().task, base + 1);
}

}  // namespace
}  // namespace cronoq::core::test::restore_test
