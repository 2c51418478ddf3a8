// Engine::hand_over (docs/guide/durability.md "Shutdown with a store"): nothing new starts,
// waiting tasks keep their status for the next leader, running attempts
// finish within the grace, and those still running at its end are aborted
// without a status change.
#include "engine_harness.hpp"

namespace cronoq::core::test::handover_test {
namespace {

using S = TaskStatus;

// A pool of one slot with a task of every waiting kind behind a running one.
struct Backlog {
    Harness h;
    PoolId pool = h.add_pool(PoolConfig{"p", 1});
    TaskId running = h.submit(TaskSpec{.pool = pool, .retry = RetryPolicy{3, 5s, 1.0, 5s, false}}, t0);
    TaskId ready = h.submit(TaskSpec{.pool = pool}, t0);
    TaskId scheduled = submit_at(t0 + 10s);
    TaskId blocked = submit_after(running);

    TaskId submit_at(Time start) {
        TaskSpec spec{.pool = pool};
        spec.start = start;
        return h.submit(spec, t0);
    }
    TaskId submit_after(TaskId parent) {
        TaskSpec spec{.pool = pool};
        spec.depends_on = {Dep::on_success(parent)};
        return h.submit(spec, t0);
    }
};

TEST(HandOverTest, WaitingTasksKeepTheirStatusAndNothingStarts) {
    Backlog b;
    b.h.hand_over(t0 + 1s, t0 + 60s);
    EXPECT_TRUE(b.h.last.empty());
    EXPECT_TRUE(b.h.engine.is_shutting_down());
    EXPECT_FALSE(b.h.engine.is_handed_over());
    EXPECT_EQ(b.h.try_submit(TaskSpec{.pool = b.pool}, t0 + 2s).error(), SubmitError::ShuttingDown);
    // The start comes and goes; the running task succeeds: nothing moves.
    b.h.tick(t0 + 20s);
    EXPECT_TRUE(b.h.last.empty());
    ASSERT_TRUE(b.h.complete(b.h.lease_of(b.running), Outcome::success(), t0 + 21s));
    EXPECT_EQ(b.h.last_statuses_of(b.running), std::vector<S>{S::Succeeded});
    EXPECT_TRUE(b.h.dispatches().empty());
    EXPECT_EQ(b.h.statuses().size(), 1u) << "the dependent is left for the next leader";
    EXPECT_EQ(b.h.engine.status(b.ready), S::Ready);
    EXPECT_EQ(b.h.engine.status(b.scheduled), S::Scheduled);
    EXPECT_EQ(b.h.engine.status(b.blocked), S::Blocked);
    EXPECT_TRUE(b.h.engine.is_handed_over());
    EXPECT_FALSE(b.h.engine.next_wakeup().has_value()) << "nothing left to wake up for";
}

TEST(HandOverTest, RetryableFailureStaysRetrying) {
    Backlog b;
    b.h.hand_over(t0 + 1s, t0 + 60s);
    ASSERT_TRUE(b.h.complete(b.h.lease_of(b.running), Outcome::retryable("flaky"), t0 + 2s));
    const auto st = b.h.statuses();
    ASSERT_EQ(st.size(), 1u);
    EXPECT_EQ(st[0].status, S::Retrying);
    EXPECT_EQ(st[0].until, t0 + 7s);
    b.h.tick(t0 + 30s);
    EXPECT_TRUE(b.h.last.empty());
    EXPECT_EQ(b.h.engine.status(b.running), S::Retrying);
    EXPECT_TRUE(b.h.engine.is_handed_over());
}

TEST(HandOverTest, PermanentFailureAndCancellationEndAsUsual) {
    Backlog b;
    b.h.hand_over(t0 + 1s, t0 + 60s);
    ASSERT_TRUE(b.h.complete(b.h.lease_of(b.running), Outcome::permanent("bad"), t0 + 2s));
    EXPECT_EQ(b.h.engine.status(b.running), S::Failed);
    // cancel still works on a waiting task.
    ASSERT_TRUE(b.h.cancel(b.ready, t0 + 3s));
    EXPECT_EQ(b.h.last_statuses_of(b.ready), std::vector<S>{S::Cancelled});
}

TEST(HandOverTest, CancelOfARunningTaskAbortsIt) {
    Backlog b;
    b.h.hand_over(t0 + 1s, t0 + 60s);
    ASSERT_TRUE(b.h.cancel(b.running, t0 + 2s));
    ASSERT_EQ(b.h.aborts().size(), 1u);
    EXPECT_EQ(b.h.aborts()[0].reason, AbortReason::Cancelled);
    EXPECT_EQ(b.h.engine.status(b.running), S::Cancelled);
    EXPECT_TRUE(b.h.engine.is_handed_over());
}

TEST(HandOverTest, AttemptsStillRunningAtTheGraceEndAreAbortedAndStayRunning) {
    Backlog b;
    const LeaseId lease = b.h.lease_of(b.running);
    b.h.hand_over(t0 + 1s, t0 + 60s);
    EXPECT_EQ(b.h.engine.next_wakeup(), t0 + 60s);
    b.h.tick(t0 + 60s);
    ASSERT_EQ(b.h.aborts().size(), 1u);
    EXPECT_EQ(b.h.aborts()[0].reason, AbortReason::Shutdown);
    EXPECT_EQ(b.h.aborts()[0].lease, lease);
    EXPECT_TRUE(b.h.statuses().empty());
    EXPECT_EQ(b.h.engine.status(b.running), S::Running);
    EXPECT_TRUE(b.h.engine.is_handed_over());
    EXPECT_FALSE(b.h.complete(lease, Outcome::success(), t0 + 61s)) << "its lease is no longer live";
    // A later cancel or shutdown still ends it, without an attempt to abort.
    ASSERT_TRUE(b.h.cancel(b.running, t0 + 62s));
    EXPECT_TRUE(b.h.aborts().empty());
    EXPECT_EQ(b.h.last_statuses_of(b.running), std::vector<S>{S::Cancelled});
}

TEST(HandOverTest, TimeoutDuringTheGraceIsARetryableFailure) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .default_timeout = 5s});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    h.hand_over(t0 + 1s, t0 + 60s);
    h.tick(t0 + 5s);
    ASSERT_EQ(h.aborts().size(), 1u);
    EXPECT_EQ(h.aborts()[0].reason, AbortReason::Timeout);
    EXPECT_EQ(h.last_statuses_of(task), std::vector<S>{S::Retrying});
    EXPECT_TRUE(h.dispatches().empty());
}

TEST(HandOverTest, ZeroGraceAbortsAtOnce) {
    Backlog b;
    b.h.hand_over(t0 + 1s, t0 + 1s);
    ASSERT_EQ(b.h.aborts().size(), 1u);
    EXPECT_TRUE(b.h.statuses().empty());
    EXPECT_TRUE(b.h.engine.is_handed_over());
}

TEST(HandOverTest, ShutdownAfterAHandOverCancelsWhatIsLeft) {
    Backlog b;
    b.h.hand_over(t0 + 1s, t0 + 1s);
    b.h.shutdown(t0 + 2s, t0 + 2s);
    for (TaskId task : {b.running, b.ready, b.scheduled, b.blocked}) EXPECT_EQ(b.h.engine.status(task), S::Cancelled);
    EXPECT_EQ(b.h.engine.live_tasks(), 0u);
}

}  // namespace
}  // namespace cronoq::core::test::handover_test
