// Pausing a pool (docs/guide/operations.md, "Pause and resume"): it admits
// and keeps tasks, dispatches none, lets running attempts end; fixed starts
// missed while paused follow their miss policy at resume; its autoscaler
// and remote workers hold still.
#include "engine_harness.hpp"

#include <stdexcept>

namespace cronoq::core::test::pause_test {
namespace {

using S = TaskStatus;

TEST(PauseTest, APausedPoolAdmitsAndKeepsTasksButDispatchesNone) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2});
    EXPECT_TRUE(h.pause(pool, t0));
    EXPECT_TRUE(h.engine.paused(pool));
    const TaskId a = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId b = h.submit(TaskSpec{.pool = pool, .priority = Priority::High}, t0 + 1s);
    const TaskId c = h.submit(TaskSpec{.pool = pool}, t0 + 2s);
    h.tick(t0 + 60s);
    for (const TaskId t : {a, b, c}) EXPECT_EQ(h.engine.status(t), S::Ready);
    EXPECT_EQ(h.engine.counters(pool).dispatched, 0u);
    EXPECT_TRUE(h.engine.stats(pool, t0 + 60s).paused);

    EXPECT_TRUE(h.resume(pool, t0 + 61s));
    EXPECT_FALSE(h.engine.paused(pool));
    EXPECT_FALSE(h.engine.stats(pool, t0 + 61s).paused);
    EXPECT_EQ(h.dispatched_tasks(), (std::vector<TaskId>{b, a})) << "resumed in the usual order";
}

TEST(PauseTest, RunningAttemptsEndAsUsualAndFreeSlotsStayFree) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId running = h.submit(TaskSpec{.pool = pool}, t0);
    const LeaseId lease = h.only_dispatch().lease;
    const TaskId queued = h.submit(TaskSpec{.pool = pool}, t0);
    h.pause(pool, t0 + 1s);
    EXPECT_TRUE(h.aborts().empty()) << "a pause aborts nothing";
    EXPECT_TRUE(h.complete(lease, Outcome::success(), t0 + 2s));
    EXPECT_EQ(h.engine.status(running), S::Succeeded);
    EXPECT_TRUE(h.dispatches().empty());
    EXPECT_EQ(h.engine.status(queued), S::Ready);
    h.resume(pool, t0 + 3s);
    EXPECT_EQ(h.only_dispatch().task, queued);
}

TEST(PauseTest, ABackoffThatEndsWhilePausedLeavesTheTaskReady) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    TaskSpec spec{.pool = pool};
    spec.retry = RetryPolicy{3, 1s, 2.0, 60s, false};
    const TaskId task = h.submit(spec, t0);
    h.complete(h.only_dispatch().lease, Outcome::retryable("flaky"), t0);
    EXPECT_EQ(h.engine.status(task), S::Retrying);
    h.pause(pool, t0);
    h.tick(t0 + 5s);
    EXPECT_EQ(h.engine.status(task), S::Ready);
    EXPECT_TRUE(h.dispatches().empty());
    h.resume(pool, t0 + 6s);
    EXPECT_EQ(h.only_dispatch().task, task);
    EXPECT_EQ(h.only_dispatch().attempt, 2u);
}

TEST(PauseTest, PauseAndResumeSayWhetherTheyChangedAnythingAndRejectAnUnknownPool) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    EXPECT_FALSE(h.resume(pool, t0)) << "it was running";
    EXPECT_TRUE(h.pause(pool, t0));
    EXPECT_FALSE(h.pause(pool, t0)) << "it was paused already";
    EXPECT_TRUE(h.resume(pool, t0));
    EXPECT_THROW(h.engine.pause(PoolId{7}, t0), std::out_of_range);
    EXPECT_THROW(h.engine.resume(PoolId{7}, t0), std::out_of_range);
}

TEST(PauseTest, OtherPoolsGoOn) {
    Harness h;
    const PoolId paused = h.add_pool(PoolConfig{"paused", 1});
    const PoolId other = h.add_pool(PoolConfig{"other", 1});
    h.pause(paused, t0);
    h.submit(TaskSpec{.pool = paused}, t0);
    const TaskId task = h.submit(TaskSpec{.pool = other}, t0);
    EXPECT_EQ(h.only_dispatch().task, task);
}

TaskSpec fixed_at(PoolId pool, Time start, MissPolicy policy) {
    TaskSpec spec{.pool = pool};
    spec.start = start;
    spec.start_tolerance = 2s;
    spec.on_miss = policy;
    return spec;
}

TEST(PauseTest, AFixedStartMissedWhilePausedFollowsItsMissPolicyAtResume) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 6});  // room to reserve three starts
    const TaskId skip = h.submit(fixed_at(pool, t0 + 5s, MissPolicy::Skip), t0);
    const TaskId fail = h.submit(fixed_at(pool, t0 + 5s, MissPolicy::Fail), t0);
    const TaskId late = h.submit(fixed_at(pool, t0 + 5s, MissPolicy::RunLate), t0);
    h.pause(pool, t0 + 1s);
    h.tick(t0 + 5s);
    h.tick(t0 + 30s);  // far past the tolerance, but still paused
    for (const TaskId t : {skip, fail, late}) EXPECT_EQ(h.engine.status(t), S::Ready);
    h.resume(pool, t0 + 40s);
    EXPECT_EQ(h.engine.status(skip), S::Missed);
    EXPECT_EQ(h.engine.status(fail), S::Failed);
    EXPECT_EQ(h.only_dispatch().task, late) << "RunLate runs late";
}

TEST(PauseTest, AFixedStartStillWithinItsToleranceAtResumeRunsOrIsMissedLater) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId busy = h.submit(TaskSpec{.pool = pool}, t0);
    const LeaseId busy_lease = h.only_dispatch().lease;
    const TaskId fixed = h.submit(fixed_at(pool, t0 + 5s, MissPolicy::Skip), t0);
    h.pause(pool, t0 + 1s);
    h.tick(t0 + 5s);
    h.resume(pool, t0 + 6s);  // 1 s late, tolerance 2 s; the slot is still taken
    EXPECT_EQ(h.engine.status(fixed), S::Ready);
    h.tick(t0 + 7s + 1ns);
    EXPECT_EQ(h.engine.status(fixed), S::Missed) << "its miss check is armed again at resume";
    h.complete(busy_lease, Outcome::success(), t0 + 8s);
    EXPECT_EQ(h.engine.status(busy), S::Succeeded);
}

TEST(PauseTest, ALateStartNoticedWhilePausedWaitsForResume) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    h.pause(pool, t0);
    // Admitted only after its start: unpaused, Skip would end it at once.
    const TaskId task = h.submit(fixed_at(pool, t0 + 5s, MissPolicy::Skip), t0 + 60s);
    EXPECT_EQ(h.engine.status(task), S::Ready);
    h.resume(pool, t0 + 61s);
    EXPECT_EQ(h.engine.status(task), S::Missed);
}

TEST(PauseTest, TheAutoscalerHoldsStillWhilePaused) {
    Harness h;
    PoolConfig config{.name = "p", .capacity = 1, .max_workers = 20, .min_workers = 1};
    config.autoscale = AutoscaleConfig{};
    const PoolId pool = h.add_pool(config);
    h.pause(pool, t0);
    for (int i = 0; i < 200; ++i) h.submit(TaskSpec{.pool = pool}, t0);
    for (int second = 0; second <= 20; ++second) h.tick(t0 + second * 1s);
    for (const Action& a : h.history) EXPECT_FALSE(std::holds_alternative<ScaleTo>(a));
    EXPECT_EQ(h.engine.counters(pool).capacity, 1u);
    EXPECT_EQ(h.engine.next_wakeup(), std::nullopt) << "a paused pool keeps no autoscaler timer";
    h.resume(pool, t0 + 21s);
    EXPECT_FALSE(h.last_of<ScaleTo>().empty()) << "evaluated at once when resumed";
    EXPECT_GT(h.engine.counters(pool).capacity, 1u);
}

TEST(PauseTest, APausedRemotePoolOffersNoLeases) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "r", .remote = true});
    h.pause(pool, t0);
    const WorkerId worker = h.connect_worker(pool, 2, t0);
    ASSERT_TRUE(worker);
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    h.tick(t0 + 10s);
    EXPECT_EQ(h.engine.status(task), S::Ready);
    EXPECT_EQ(h.engine.worker_leases(worker), 0u);
    h.resume(pool, t0 + 11s);
    EXPECT_EQ(h.only_dispatch().task, task);
    EXPECT_EQ(h.only_dispatch().worker, worker);
}

TEST(PauseTest, RestoredReadyTasksOfAPausedPoolWait) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    h.pause(pool, t0);
    RestoredTask r;
    r.id = TaskId{1000};
    r.spec.pool = pool;
    r.status = S::Ready;
    const auto results = h.restore({r}, t0);
    ASSERT_TRUE(results.at(0).has_value());
    EXPECT_EQ(h.engine.status(TaskId{1000}), S::Ready);
    EXPECT_TRUE(h.dispatches().empty());
}

}  // namespace
}  // namespace cronoq::core::test::pause_test
