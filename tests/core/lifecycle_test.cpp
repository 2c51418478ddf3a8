// The attempt life cycle (docs/guide/ordering.md, docs/guide/executors.md rules the engine owns, docs/guide/operations.md): timeouts,
// leases and heartbeats, late reports, cancellation, capacity, shutdown,
// admission errors, configuration errors, timers and retention.
#include "engine_harness.hpp"

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

namespace cronoq::core::test::lifecycle_test {
namespace {

using S = TaskStatus;

RetryPolicy fixed(std::uint32_t attempts, Duration initial) { return RetryPolicy{attempts, initial, 2.0, 60s, false}; }

// Nothing is aborted a nanosecond before `at`, and one attempt is at it:
// that abort (none, and a failure, otherwise).
std::optional<Abort> only_abort_at(Harness& h, Time at) {
    h.tick(at - 1ns);
    EXPECT_TRUE(h.aborts().empty());
    h.tick(at);
    const std::vector<Abort> aborts = h.aborts();
    EXPECT_EQ(aborts.size(), 1u);
    if (aborts.size() != 1) return std::nullopt;
    return aborts[0];
}

// No timer is left: the engine asks for no wakeup, and a tick at `later` does nothing.
void expect_no_timer(Harness& h, Time later) {
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
    h.tick(later);
    EXPECT_TRUE(h.last.empty());
}

// ---- timeouts -------------------------------------------------------------------------------

TEST(TimeoutTest, AttemptIsAbortedAtExactlyItsTimeoutAndRetried) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1, fixed(3, 1s)});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .timeout = 10s}, t0 + 5s);
    const Dispatch first = h.only_dispatch();
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 15s);

    h.tick(t0 + 15s - 1ns);
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.status(task), S::Running);

    h.tick(t0 + 15s);
    ASSERT_EQ(h.last.size(), 2u);
    const auto* abort = std::get_if<Abort>(&h.last[0]);
    ASSERT_NE(abort, nullptr);
    EXPECT_EQ(abort->task, task);
    EXPECT_EQ(abort->lease, first.lease);
    EXPECT_EQ(abort->pool, pool);
    EXPECT_EQ(abort->reason, AbortReason::Timeout);
    const auto* st = std::get_if<Status>(&h.last[1]);
    ASSERT_NE(st, nullptr);
    EXPECT_EQ(st->status, S::Retrying);
    EXPECT_EQ(st->message, "timeout");
    EXPECT_EQ(st->attempt, 1u);
    EXPECT_EQ(st->at, t0 + 15s);

    const PoolCounters c = h.engine.counters(pool);
    EXPECT_EQ(c.timed_out, 1u);
    EXPECT_EQ(c.running, 0u);
    EXPECT_EQ(c.retrying, 1u);

    EXPECT_EQ(h.engine.next_wakeup(), t0 + 16s);
    h.tick(t0 + 16s);
    const Dispatch second = h.only_dispatch();
    EXPECT_EQ(second.task, task);
    EXPECT_EQ(second.attempt, 2u);
    EXPECT_NE(second.lease, first.lease);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 26s);  // the new attempt has its own timeout
}

TEST(TimeoutTest, TimeoutCountsFromDispatchNotSubmission) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .timeout = 10s}, t0);
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
    h.set_capacity(pool, 1, t0 + 20s);
    h.only_dispatch();
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 30s);
    h.tick(t0 + 30s - 1ns);
    EXPECT_EQ(h.engine.status(task), S::Running);
    h.tick(t0 + 30s);
    ASSERT_EQ(h.aborts().size(), 1u);
    EXPECT_EQ(h.aborts()[0].reason, AbortReason::Timeout);
}

TEST(TimeoutTest, PoolDefaultTimeoutAppliesAndTaskTimeoutOverridesIt) {
    Harness h;
    const PoolId pool =
        h.add_pool(PoolConfig{.name = "p", .capacity = 2, .retry = RetryPolicy::none(), .default_timeout = 20s});
    const TaskId by_pool = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId own = h.submit(TaskSpec{.pool = pool, .timeout = 7s}, t0);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 7s);
    h.tick(t0 + 7s);
    ASSERT_EQ(h.aborts().size(), 1u);
    EXPECT_EQ(h.aborts()[0].task, own);
    const auto abort = only_abort_at(h, t0 + 20s);
    ASSERT_TRUE(abort);
    EXPECT_EQ(abort->task, by_pool);
}

TEST(TimeoutTest, CompletionBeforeTheTimeoutLeavesNoTimer) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .timeout = 10s}, t0);
    ASSERT_TRUE(h.complete(h.lease_of(task), Outcome::success(), t0 + 10s - 1ns));
    EXPECT_EQ(h.engine.status(task), S::Succeeded);
    expect_no_timer(h, t0 + 10s);
}

TEST(TimeoutTest, TimeoutBeyondTheEndOfTimeMeansNoTimeout) {
    // Regression: now + Duration::max() overflowed into the past, and the
    // attempt was aborted for timeout at the next tick.
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .timeout = Duration::max()}, t0 + 10s);
    expect_no_timer(h, t0 + 1000000s);
    EXPECT_EQ(h.engine.status(task), S::Running);
}

// ---- leases and heartbeats ---------------------------------------------------------------------

TEST(LeaseTest, LeaseWithoutHeartbeatsExpiresAtItsTtl) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .retry = fixed(2, 1s), .lease_ttl = 5s});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    const LeaseId lease = h.only_dispatch().lease;
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 5s);
    h.tick(t0 + 5s - 1ns);
    EXPECT_TRUE(h.last.empty());
    h.tick(t0 + 5s);
    ASSERT_EQ(h.aborts().size(), 1u);
    EXPECT_EQ(h.aborts()[0].lease, lease);
    EXPECT_EQ(h.aborts()[0].reason, AbortReason::LeaseExpired);
    ASSERT_EQ(h.statuses().size(), 1u);
    EXPECT_EQ(h.statuses()[0].status, S::Retrying);
    EXPECT_EQ(h.statuses()[0].message, "lease expired");
    EXPECT_EQ(h.engine.status(task), S::Retrying);
    EXPECT_EQ(h.engine.counters(pool).lease_expired, 1u);
    EXPECT_EQ(h.engine.counters(pool).running, 0u);
}

TEST(LeaseTest, HeartbeatsKeepTheLeaseAlive) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .lease_ttl = 5s});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    const LeaseId lease = h.only_dispatch().lease;
    for (int i = 1; i <= 3; ++i) {
        const Time beat = t0 + i * 4s;  // 4 s, 8 s, 12 s
        EXPECT_TRUE(h.heartbeat(lease, beat));
        EXPECT_TRUE(h.last.empty());
        // The expiry armed before this beat (1 s later) passes quietly.
        h.tick(beat + 1s);
        EXPECT_TRUE(h.last.empty()) << "aborted despite a heartbeat at " << i * 4 << " s";
        EXPECT_EQ(h.engine.status(task), S::Running);
        EXPECT_EQ(h.engine.next_wakeup(), beat + 5s);
    }
    EXPECT_TRUE(h.complete(lease, Outcome::success(), t0 + 16s));
    EXPECT_EQ(h.engine.status(task), S::Succeeded);
    EXPECT_EQ(h.engine.counters(pool).lease_expired, 0u);
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
}

TEST(LeaseTest, LeaseExpiresOneTtlAfterTheLastHeartbeat) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .lease_ttl = 5s});
    h.submit(TaskSpec{.pool = pool}, t0);
    const LeaseId lease = h.only_dispatch().lease;
    EXPECT_TRUE(h.heartbeat(lease, t0 + 4s));
    ASSERT_TRUE(h.engine.next_wakeup().has_value());
    EXPECT_LE(*h.engine.next_wakeup(), t0 + 9s);  // never later than the expiry
    h.tick(t0 + 5s);
    const auto abort = only_abort_at(h, t0 + 9s);
    ASSERT_TRUE(abort);
    EXPECT_EQ(abort->reason, AbortReason::LeaseExpired);
}

TEST(LeaseTest, HeartbeatsDoNotExtendTheTimeout) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .lease_ttl = 5s});
    h.submit(TaskSpec{.pool = pool, .timeout = 12s}, t0);
    const LeaseId lease = h.only_dispatch().lease;
    for (Time t = t0 + 4s; t < t0 + 12s; t += 4s) {
        EXPECT_TRUE(h.heartbeat(lease, t));
        h.tick(t);
    }
    const auto abort = only_abort_at(h, t0 + 12s);
    ASSERT_TRUE(abort);
    EXPECT_EQ(abort->reason, AbortReason::Timeout);
}

TEST(LeaseTest, TtlBeyondTheEndOfTimeNeverExpires) {
    // Regression: now + lease_ttl overflowed into the past (also on heartbeat).
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .lease_ttl = Duration::max()});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0 + 10s);
    EXPECT_TRUE(h.heartbeat(h.lease_of(task), t0 + 20s));
    expect_no_timer(h, t0 + 1000000s);
    EXPECT_EQ(h.engine.status(task), S::Running);
}

TEST(LeaseTest, HeartbeatWithoutTtlIsAnAcceptedNoOp) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    EXPECT_TRUE(h.heartbeat(h.lease_of(task), t0 + 1s));
    EXPECT_TRUE(h.last.empty());
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
    EXPECT_EQ(h.engine.late_reports(), 0u);
}

TEST(LeaseTest, HeartbeatForADeadLeaseIsRejectedAndCounted) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .lease_ttl = 5s});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    const LeaseId lease = h.lease_of(task);
    ASSERT_TRUE(h.complete(lease, Outcome::success(), t0 + 1s));
    EXPECT_FALSE(h.heartbeat(lease, t0 + 2s));
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.late_reports(), 1u);
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
}

// ---- late reports ------------------------------------------------------------------------------

TEST(LateReportTest, LateCompleteForAnAbortedLeaseIsIgnored) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1, fixed(3, 1s)});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .timeout = 10s}, t0);
    const LeaseId lease = h.lease_of(task);
    h.tick(t0 + 10s);
    ASSERT_EQ(h.engine.status(task), S::Retrying);
    EXPECT_FALSE(h.complete(lease, Outcome::success(), t0 + 10s + 1ms));
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.late_reports(), 1u);
    EXPECT_EQ(h.engine.status(task), S::Retrying);
    EXPECT_EQ(h.engine.counters(pool).succeeded, 0u);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 11s);  // the retry is still on
}

TEST(LateReportTest, LateCompleteOfAnEarlierAttemptLeavesTheCurrentOneAlone) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1, fixed(3, 1s)});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .timeout = 10s}, t0);
    const LeaseId old_lease = h.lease_of(task);
    h.tick(t0 + 10s);
    h.tick(t0 + 11s);
    const LeaseId new_lease = h.only_dispatch().lease;
    EXPECT_FALSE(h.complete(old_lease, Outcome::permanent("stale"), t0 + 12s));
    EXPECT_EQ(h.engine.status(task), S::Running);
    EXPECT_EQ(h.engine.counters(pool).running, 1u);
    EXPECT_TRUE(h.complete(new_lease, Outcome::success(), t0 + 13s));
    EXPECT_EQ(h.engine.status(task), S::Succeeded);
    EXPECT_EQ(h.engine.late_reports(), 1u);
}

TEST(LateReportTest, SecondCompleteOfTheSameLeaseIsIgnored) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    const LeaseId lease = h.lease_of(task);
    EXPECT_TRUE(h.complete(lease, Outcome::success(), t0 + 1s));
    EXPECT_FALSE(h.complete(lease, Outcome::permanent("again"), t0 + 2s));
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.status(task), S::Succeeded);
    EXPECT_EQ(h.engine.counters(pool).failed, 0u);
    EXPECT_EQ(h.engine.late_reports(), 1u);
}

TEST(LateReportTest, UnknownLeaseIsIgnoredAndCounted) {
    Harness h;
    h.add_pool(PoolConfig{"p", 1});
    EXPECT_FALSE(h.complete(LeaseId{}, Outcome::success(), t0));
    EXPECT_FALSE(h.complete(LeaseId{std::numeric_limits<std::uint64_t>::max()}, Outcome::success(), t0));
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.late_reports(), 2u);
}

TEST(LateReportTest, ZeroLeaseNamesNoAttempt) {
    // Regression: the id maps use 0 to mark an empty bucket, and a lookup of
    // 0 used to match one, reaching whatever task held slot 0.
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .lease_ttl = 5s});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    EXPECT_FALSE(h.complete(LeaseId{}, Outcome::success(), t0 + 1s));
    EXPECT_FALSE(h.heartbeat(LeaseId{}, t0 + 1s));
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.status(task), S::Running);
    EXPECT_EQ(h.engine.counters(pool).running, 1u);
    EXPECT_EQ(h.engine.late_reports(), 2u);
    h.tick(t0 + 5s);  // the heartbeat at 1 s was not applied to the task
    ASSERT_EQ(h.aborts().size(), 1u);
    EXPECT_EQ(h.aborts()[0].reason, AbortReason::LeaseExpired);
}

// ---- ids -----------------------------------------------------------------------------------------

TEST(IdTest, TaskIdsIncreaseAndLeasesAreNeverReusedAcrossEngines) {
    Harness a;
    Harness b;
    const PoolId pa = a.add_pool(PoolConfig{"p", 1});
    const PoolId pb = b.add_pool(PoolConfig{"p", 1});
    const TaskId t1 = a.submit(TaskSpec{.pool = pa, .retry = fixed(3, 0s)}, t0);
    const TaskId t2 = b.submit(TaskSpec{.pool = pb}, t0);
    const LeaseId l1 = a.lease_of(t1);
    const LeaseId l2 = b.lease_of(t2);
    ASSERT_TRUE(a.complete(l1, Outcome::retryable("x"), t0));  // zero backoff: attempt 2 at once
    const LeaseId l3 = a.only_dispatch().lease;
    EXPECT_EQ(a.only_dispatch().task, t1);
    const TaskId t3 = a.submit(TaskSpec{.pool = pa}, t0);
    EXPECT_TRUE(t1);
    EXPECT_LT(t1, t2);
    EXPECT_LT(t2, t3);
    EXPECT_TRUE(l1);
    EXPECT_NE(l1, l2);
    EXPECT_NE(l1, l3);
    EXPECT_NE(l2, l3);
    // Engine b's lease means nothing to engine a.
    EXPECT_FALSE(a.complete(l2, Outcome::success(), t0));
}

// ---- cancellation --------------------------------------------------------------------------------

TEST(CancelTest, CancellingAReadyTaskMeansItNeverDispatches) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId a = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId b = h.submit(TaskSpec{.pool = pool}, t0);
    EXPECT_TRUE(h.cancel(a, t0 + 1s));
    ASSERT_EQ(h.statuses().size(), 1u);
    EXPECT_EQ(h.statuses()[0].task, a);
    EXPECT_EQ(h.statuses()[0].status, S::Cancelled);
    EXPECT_EQ(h.statuses()[0].attempt, 0u);
    EXPECT_EQ(h.engine.counters(pool).ready, 1u);
    EXPECT_EQ(h.dispatch_order(pool, t0 + 2s), (std::vector<TaskId>{b}));
    EXPECT_EQ(h.engine.status(a), S::Cancelled);
    EXPECT_FALSE(h.last_dispatch_of(a).has_value());
    EXPECT_EQ(h.engine.counters(pool).cancelled, 1u);
}

TEST(CancelTest, CancellingARunningTaskAbortsItAndFreesItsSlot) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId a = h.submit(TaskSpec{.pool = pool}, t0);
    const LeaseId la = h.lease_of(a);
    const TaskId b = h.submit(TaskSpec{.pool = pool}, t0);
    EXPECT_TRUE(h.cancel(a, t0 + 1s));
    ASSERT_EQ(h.last.size(), 4u);
    const auto* abort = std::get_if<Abort>(&h.last[0]);
    ASSERT_NE(abort, nullptr);
    EXPECT_EQ(abort->task, a);
    EXPECT_EQ(abort->lease, la);
    EXPECT_EQ(abort->reason, AbortReason::Cancelled);
    const auto* st = std::get_if<Status>(&h.last[1]);
    ASSERT_NE(st, nullptr);
    EXPECT_EQ(st->task, a);
    EXPECT_EQ(st->status, S::Cancelled);
    EXPECT_EQ(st->attempt, 1u);
    EXPECT_EQ(h.dispatched_tasks(), (std::vector<TaskId>{b}));
    EXPECT_EQ(h.engine.status(a), S::Cancelled);
    EXPECT_FALSE(h.complete(la, Outcome::success(), t0 + 2s));
    EXPECT_EQ(h.engine.status(a), S::Cancelled);
    EXPECT_EQ(h.engine.counters(pool).running, 1u);
}

TEST(CancelTest, CancellingARetryingTaskEndsItAndItsTimer) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1, fixed(3, 5s)});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    ASSERT_TRUE(h.complete(h.lease_of(task), Outcome::retryable("x"), t0));
    EXPECT_TRUE(h.cancel(task, t0 + 1s));
    EXPECT_EQ(h.engine.status(task), S::Cancelled);
    EXPECT_EQ(h.engine.counters(pool).retrying, 0u);
    expect_no_timer(h, t0 + 5s);
}

TEST(CancelTest, CancelOfTaskIdZeroLeavesEveryTaskAlone) {
    // Regression: cancel(TaskId{}) used to cancel the task in slot 0.
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId running = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId ready = h.submit(TaskSpec{.pool = pool}, t0);
    EXPECT_FALSE(h.cancel(TaskId{}, t0 + 1s));
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.status(running), S::Running);
    EXPECT_EQ(h.engine.status(ready), S::Ready);
    EXPECT_FALSE(h.engine.status(TaskId{}).has_value());
}

TEST(CancelTest, CancelOfUnknownOrTerminalTaskReturnsFalse) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    EXPECT_FALSE(h.cancel(TaskId{}, t0));
    EXPECT_FALSE(h.cancel(TaskId{std::numeric_limits<std::uint64_t>::max()}, t0));
    const TaskId done = h.submit(TaskSpec{.pool = pool}, t0);
    ASSERT_TRUE(h.complete(h.lease_of(done), Outcome::success(), t0));
    EXPECT_FALSE(h.cancel(done, t0 + 1s));
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.status(done), S::Succeeded);
    const TaskId twice = h.submit(TaskSpec{.pool = pool}, t0 + 1s);
    EXPECT_TRUE(h.cancel(twice, t0 + 1s));
    EXPECT_FALSE(h.cancel(twice, t0 + 2s));
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.statuses_of(twice).back().status, S::Cancelled);
    EXPECT_EQ(h.engine.counters(pool).cancelled, 1u);
}

// ---- capacity ------------------------------------------------------------------------------------

TEST(CapacityTest, RaisingCapacityDispatchesMoreAtOnceInOrder) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    std::vector<TaskId> t;
    for (int i = 0; i < 4; ++i) t.push_back(h.submit(TaskSpec{.pool = pool}, t0));
    h.set_capacity(pool, 3, t0 + 1s);
    EXPECT_EQ(h.dispatched_tasks(), (std::vector<TaskId>{t[1], t[2]}));
    const PoolCounters c = h.engine.counters(pool);
    EXPECT_EQ(c.capacity, 3u);
    EXPECT_EQ(c.running, 3u);
    EXPECT_EQ(c.ready, 1u);
}

TEST(CapacityTest, LoweringCapacityNeverAbortsRunningAttempts) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 3});
    std::vector<TaskId> t;
    for (int i = 0; i < 4; ++i) t.push_back(h.submit(TaskSpec{.pool = pool}, t0));
    h.set_capacity(pool, 1, t0 + 1s);
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.counters(pool).running, 3u);
    EXPECT_EQ(h.engine.counters(pool).capacity, 1u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(h.engine.status(t[i]), S::Running);
    // Surplus slots retire as attempts end: only the third end frees a slot.
    ASSERT_TRUE(h.complete(h.lease_of(t[0]), Outcome::success(), t0 + 2s));
    EXPECT_TRUE(h.dispatches().empty());
    ASSERT_TRUE(h.complete(h.lease_of(t[1]), Outcome::success(), t0 + 3s));
    EXPECT_TRUE(h.dispatches().empty());
    ASSERT_TRUE(h.complete(h.lease_of(t[2]), Outcome::success(), t0 + 4s));
    EXPECT_EQ(h.dispatched_tasks(), (std::vector<TaskId>{t[3]}));
}

TEST(CapacityTest, CapacityIsPerPool) {
    Harness h;
    const PoolId a = h.add_pool(PoolConfig{"a", 1});
    const PoolId b = h.add_pool(PoolConfig{"b", 0});
    const TaskId ta = h.submit(TaskSpec{.pool = a}, t0);
    EXPECT_EQ(h.dispatched_tasks(), (std::vector<TaskId>{ta}));
    const TaskId tb = h.submit(TaskSpec{.pool = b}, t0);
    EXPECT_TRUE(h.dispatches().empty());
    h.set_capacity(b, 1, t0);
    EXPECT_EQ(h.dispatched_tasks(), (std::vector<TaskId>{tb}));
    EXPECT_EQ(h.only_dispatch().pool, b);
    EXPECT_EQ(h.engine.counters(a).running, 1u);
    EXPECT_EQ(h.engine.counters(b).running, 1u);
}

// ---- shutdown ------------------------------------------------------------------------------------

TEST(ShutdownTest, CancelsQueuedAndRetryingTasksLetsRunningOnesFinishAndAbortsAtGraceEnd) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2, fixed(3, 10s)});
    const TaskId a = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId b = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId c = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId d = h.submit(TaskSpec{.pool = pool}, t0);
    ASSERT_TRUE(h.complete(h.lease_of(b), Outcome::retryable("flaky"), t0 + 1s));
    ASSERT_EQ(h.dispatched_tasks(), (std::vector<TaskId>{c}));  // a, c running; b retrying; d ready
    const LeaseId lc = h.lease_of(c);

    h.shutdown(t0 + 2s, t0 + 12s);
    EXPECT_TRUE(h.engine.is_shutting_down());
    EXPECT_TRUE(h.aborts().empty());
    EXPECT_TRUE(h.dispatches().empty());
    const auto st = h.statuses();
    ASSERT_EQ(st.size(), 2u);
    for (const Status& s : st) {
        EXPECT_TRUE(s.task == b || s.task == d);
        EXPECT_EQ(s.status, S::Cancelled);
        EXPECT_EQ(s.message, "shutdown");
        EXPECT_EQ(s.at, t0 + 2s);
    }
    EXPECT_EQ(h.engine.status(a), S::Running);
    EXPECT_EQ(h.engine.status(c), S::Running);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 12s);

    // a finishes within the grace.
    ASSERT_TRUE(h.complete(h.lease_of(a), Outcome::success(), t0 + 5s));
    EXPECT_EQ(h.engine.status(a), S::Succeeded);
    // c does not: aborted at exactly the grace end.
    h.tick(t0 + 12s - 1ns);
    EXPECT_TRUE(h.last.empty());
    h.tick(t0 + 12s);
    ASSERT_EQ(h.aborts().size(), 1u);
    EXPECT_EQ(h.aborts()[0].task, c);
    EXPECT_EQ(h.aborts()[0].lease, lc);
    EXPECT_EQ(h.aborts()[0].reason, AbortReason::Shutdown);
    ASSERT_EQ(h.statuses().size(), 1u);
    EXPECT_EQ(h.statuses()[0].status, S::Cancelled);
    EXPECT_EQ(h.statuses()[0].message, "shutdown");

    EXPECT_EQ(h.engine.live_tasks(), 0u);
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
    const PoolCounters cn = h.engine.counters(pool);
    EXPECT_EQ(cn.running + cn.ready + cn.retrying, 0u);
    EXPECT_EQ(cn.cancelled, 3u);
    EXPECT_EQ(cn.succeeded, 1u);
    EXPECT_FALSE(h.complete(lc, Outcome::success(), t0 + 13s));
}

TEST(ShutdownTest, RetryableFailureDuringTheGraceIsCancelledNotRetried) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2, fixed(3, 1s)});
    const TaskId a = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId b = h.submit(TaskSpec{.pool = pool, .timeout = 5s}, t0);
    h.shutdown(t0 + 1s, t0 + 60s);
    ASSERT_TRUE(h.complete(h.lease_of(a), Outcome::retryable("flaky"), t0 + 2s));
    EXPECT_EQ(h.engine.status(a), S::Cancelled);
    EXPECT_EQ(h.statuses().back().message, "shutdown: flaky");
    h.tick(t0 + 5s);  // b's timeout, a retryable failure too
    ASSERT_EQ(h.aborts().size(), 1u);
    EXPECT_EQ(h.aborts()[0].reason, AbortReason::Timeout);
    EXPECT_EQ(h.engine.status(b), S::Cancelled);
    EXPECT_EQ(h.statuses().back().message, "shutdown: timeout");
    EXPECT_EQ(h.engine.counters(pool).retried, 0u);
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
}

TEST(ShutdownTest, ZeroGraceAbortsRunningAttemptsAtOnce) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId a = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId b = h.submit(TaskSpec{.pool = pool}, t0);
    h.shutdown(t0 + 1s, t0 + 1s);
    ASSERT_EQ(h.aborts().size(), 1u);
    EXPECT_EQ(h.aborts()[0].task, a);
    EXPECT_EQ(h.aborts()[0].reason, AbortReason::Shutdown);
    EXPECT_TRUE(h.dispatches().empty());  // b is not started in the freed slot
    EXPECT_EQ(h.engine.status(a), S::Cancelled);
    EXPECT_EQ(h.engine.status(b), S::Cancelled);
    EXPECT_EQ(h.engine.live_tasks(), 0u);
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
}

TEST(ShutdownTest, SubmitAfterShutdownIsShuttingDownAndLeavesNoTrace) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    h.shutdown(t0, t0 + 10s);
    const auto r = h.try_submit(TaskSpec{.pool = pool}, t0 + 1s);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), SubmitError::ShuttingDown);
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.live_tasks(), 0u);
    EXPECT_EQ(h.engine.counters(pool).submitted, 0u);
    EXPECT_THROW((void)r.value(), SubmitException);
}

TEST(ShutdownTest, ShutdownAgainCannotExtendTheGrace) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId a = h.submit(TaskSpec{.pool = pool}, t0);
    h.shutdown(t0, t0 + 20s);
    h.shutdown(t0 + 1s, t0 + 30s);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 20s);
    h.tick(t0 + 20s);
    ASSERT_EQ(h.aborts().size(), 1u);
    EXPECT_EQ(h.engine.status(a), S::Cancelled);
}

TEST(ShutdownTest, ShutdownAgainCanShortenTheGrace) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId a = h.submit(TaskSpec{.pool = pool}, t0);
    h.shutdown(t0, t0 + 20s);
    h.shutdown(t0 + 1s, t0 + 10s);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 10s);
    h.tick(t0 + 10s - 1ns);
    EXPECT_TRUE(h.last.empty());
    h.tick(t0 + 10s);
    ASSERT_EQ(h.aborts().size(), 1u);
    EXPECT_EQ(h.engine.status(a), S::Cancelled);
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
}

TEST(ShutdownTest, ShutdownOfAnIdleEngineLeavesNoTimer) {
    Harness h;
    h.add_pool(PoolConfig{"p", 1});
    h.shutdown(t0, t0 + 10s);
    EXPECT_TRUE(h.last.empty());
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
}

// ---- admission errors ----------------------------------------------------------------------------

class SubmitErrorTest : public ::testing::Test {
protected:
    // Expects `spec` to be rejected with `error`, leaving no trace.
    void expect_rejected(const TaskSpec& spec, SubmitError error) {
        const std::size_t live = h.engine.live_tasks();
        const auto r = h.try_submit(spec, t0);
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(r.error(), error);
        EXPECT_FALSE(r.message().empty());
        EXPECT_TRUE(h.last.empty());
        EXPECT_EQ(h.engine.live_tasks(), live);
        EXPECT_EQ(h.engine.counters(pool).submitted, 0u);
        EXPECT_EQ(h.engine.counters(pool).ready, 0u);
    }

    Harness h;
    PoolId pool = h.add_pool(PoolConfig{"p", 0});
};

TEST_F(SubmitErrorTest, UnknownPoolIsRejected) {
    expect_rejected(TaskSpec{.pool = 1}, SubmitError::UnknownPool);
    expect_rejected(TaskSpec{.pool = std::numeric_limits<PoolId>::max()}, SubmitError::UnknownPool);
}

TEST_F(SubmitErrorTest, BadTimeoutIsInvalid) {
    expect_rejected(TaskSpec{.pool = pool, .timeout = 0s}, SubmitError::Invalid);
    expect_rejected(TaskSpec{.pool = pool, .timeout = -1s}, SubmitError::Invalid);
}

TEST_F(SubmitErrorTest, BadDurationHintIsInvalid) {
    expect_rejected(TaskSpec{.pool = pool, .duration_hint = 0s}, SubmitError::Invalid);
    expect_rejected(TaskSpec{.pool = pool, .duration_hint = -5s}, SubmitError::Invalid);
}

TEST_F(SubmitErrorTest, BadRetryPolicyIsInvalid) {
    auto with = [this](RetryPolicy r) { return TaskSpec{.pool = pool, .retry = r}; };
    expect_rejected(with(RetryPolicy{0, 1s, 2.0, 60s, true}), SubmitError::Invalid);
    expect_rejected(with(RetryPolicy{3, -1s, 2.0, 60s, true}), SubmitError::Invalid);
    expect_rejected(with(RetryPolicy{3, 1s, 2.0, -1s, true}), SubmitError::Invalid);
    expect_rejected(with(RetryPolicy{3, 1s, -2.0, 60s, true}), SubmitError::Invalid);
    expect_rejected(with(RetryPolicy{3, 1s, std::nan(""), 60s, true}), SubmitError::Invalid);
    expect_rejected(with(RetryPolicy{3, 1s, std::numeric_limits<double>::infinity(), 60s, true}),
                    SubmitError::Invalid);
}

TEST_F(SubmitErrorTest, UninternedKindAndUnknownPriorityAreInvalid) {
    expect_rejected(TaskSpec{.pool = pool, .kind = 7}, SubmitError::Invalid);
    expect_rejected(TaskSpec{.pool = pool, .priority = static_cast<Priority>(9)}, SubmitError::Invalid);
}

TEST_F(SubmitErrorTest, ValidSpecAfterRejectionsIsAccepted) {
    expect_rejected(TaskSpec{.pool = pool, .timeout = 0s}, SubmitError::Invalid);
    const KindId k = h.engine.intern_kind("k");
    const auto r = h.try_submit(TaskSpec{.pool = pool, .kind = k, .timeout = 1ns, .retry = RetryPolicy::none()}, t0);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(h.engine.counters(pool).submitted, 1u);
    EXPECT_EQ(h.engine.status(r.value()), S::Ready);
}

// ---- configuration errors ------------------------------------------------------------------------

// Expects `make` to throw ConfigError whose message mentions `field`.
void expect_config_error(const std::function<void()>& make, const std::string& field) {
    try {
        make();
        ADD_FAILURE() << "no ConfigError for " << field;
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
}

TEST(ConfigErrorTest, EngineRejectsBadConstants) {
    const double nan = std::nan("");
    const double inf = std::numeric_limits<double>::infinity();
    auto engine_with = [](std::function<void(EngineConfig&)> edit) {
        return [edit] {
            EngineConfig c;
            edit(c);
            Engine e(c);
        };
    };
    expect_config_error(engine_with([&](EngineConfig& c) { c.priority.aging_rate = nan; }), "aging_rate");
    expect_config_error(engine_with([](EngineConfig& c) { c.priority.aging_rate = -1; }), "aging_rate");
    expect_config_error(engine_with([&](EngineConfig& c) { c.priority.age_cap = inf; }), "age_cap");
    expect_config_error(engine_with([](EngineConfig& c) { c.priority.base[2] = -100; }), "base");
    expect_config_error(engine_with([&](EngineConfig& c) { c.priority.base[0] = nan; }), "base");
    expect_config_error(engine_with([](EngineConfig& c) { c.urgency.window = -1s; }), "window");
    expect_config_error(engine_with([&](EngineConfig& c) { c.urgency.max = nan; }), "max");
    expect_config_error(engine_with([](EngineConfig& c) { c.urgency.overdue_rate = -1; }), "overdue_rate");
    expect_config_error(engine_with([&](EngineConfig& c) { c.urgency.overdue_cap = inf; }), "overdue_cap");
    expect_config_error(engine_with([](EngineConfig& c) { c.retention = -1s; }), "retention");
}

TEST(ConfigErrorTest, EngineAcceptsZeroConstants) {
    EngineConfig c;
    c.priority.aging_rate = 0;
    c.priority.age_cap = 0;
    c.urgency.window = 0s;
    c.retention = 0s;
    EXPECT_NO_THROW(Engine{c});
}

TEST(ConfigErrorTest, AddPoolRejectsBadConfigAndAddsNothing) {
    Engine e;
    e.add_pool(PoolConfig{"io", 1});
    auto add = [&e](PoolConfig c) { return [&e, c] { e.add_pool(c); }; };
    expect_config_error(add(PoolConfig{"", 1}), "name");
    expect_config_error(add(PoolConfig{"io", 4}), "duplicate");
    expect_config_error(add(PoolConfig{"cpu", 1, RetryPolicy{0, 1s, 2.0, 60s, true}}), "max_attempts");
    expect_config_error(add(PoolConfig{"cpu", 1, RetryPolicy{3, 1s, std::nan(""), 60s, true}}), "multiplier");
    expect_config_error(add(PoolConfig{.name = "cpu", .default_timeout = 0s}), "default_timeout");
    expect_config_error(add(PoolConfig{.name = "cpu", .lease_ttl = -1s}), "lease_ttl");
    expect_config_error(add(PoolConfig{.name = "cpu", .default_duration = 0s}), "default_duration");
    // The pool's name is in the message.
    expect_config_error(add(PoolConfig{.name = "cpu", .lease_ttl = 0s}), "\"cpu\"");
    EXPECT_EQ(e.pool_count(), 1u);
    EXPECT_FALSE(e.find_pool("cpu").has_value());
    EXPECT_EQ(e.add_pool(PoolConfig{"cpu", 1}), 1u);
}

TEST(ConfigErrorTest, PoolsAndKindsAreLookedUpByName) {
    Engine e;
    EXPECT_EQ(e.add_pool(PoolConfig{"a", 1}), 0u);
    EXPECT_EQ(e.add_pool(PoolConfig{"b", 2}), 1u);
    EXPECT_EQ(e.find_pool("b"), PoolId{1});
    EXPECT_FALSE(e.find_pool("c").has_value());
    EXPECT_EQ(e.pool_config(1).capacity, 2u);
    EXPECT_EQ(e.intern_kind(""), 0u);
    const KindId k = e.intern_kind("email");
    EXPECT_EQ(e.intern_kind("email"), k);
    EXPECT_NE(e.intern_kind("sms"), k);
    EXPECT_EQ(e.kind_name(k), "email");
}

// ---- timers -----------------------------------------------------------------------------------------

TEST(WakeupTest, NextWakeupIsEmptyWhenIdleAndAfterEverythingCompletes) {
    Harness h;
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 3, .retry = fixed(3, 2s), .lease_ttl = 5s});
    const TaskId a = h.submit(TaskSpec{.pool = pool, .timeout = 10s}, t0);  // completes early
    const TaskId b = h.submit(TaskSpec{.pool = pool}, t0);                  // heartbeats, completes
    const TaskId c = h.submit(TaskSpec{.pool = pool, .timeout = 3s}, t0);   // times out, then succeeds
    const TaskId d = h.submit(TaskSpec{.pool = pool}, t0);                  // queued, later retrying, cancelled
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 3s);
    ASSERT_TRUE(h.complete(h.lease_of(a), Outcome::success(), t0 + 1s));
    EXPECT_EQ(h.lease_of(d), h.only_dispatch().lease);
    ASSERT_TRUE(h.heartbeat(h.lease_of(b), t0 + 2s));
    h.tick(t0 + 3s);  // c times out, retry at 5 s
    ASSERT_EQ(h.aborts().size(), 1u);
    ASSERT_TRUE(h.complete(h.lease_of(d), Outcome::retryable("x"), t0 + 4s));
    ASSERT_TRUE(h.complete(h.lease_of(b), Outcome::success(), t0 + 4s));
    h.tick(t0 + 5s);
    EXPECT_EQ(h.dispatched_tasks(), (std::vector<TaskId>{c}));
    ASSERT_TRUE(h.cancel(d, t0 + 5s));
    ASSERT_TRUE(h.complete(h.lease_of(c), Outcome::success(), t0 + 6s));
    EXPECT_EQ(h.engine.live_tasks(), 0u);
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
    const PoolCounters cn = h.engine.counters(pool);
    EXPECT_EQ(cn.running + cn.ready + cn.retrying, 0u);
    EXPECT_EQ(cn.succeeded, 3u);
    EXPECT_EQ(cn.cancelled, 1u);
}

TEST(WakeupTest, NextWakeupIsTheEarliestTimedEvent) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 3, RetryPolicy::none()});
    const TaskId a = h.submit(TaskSpec{.pool = pool, .timeout = 30s}, t0);
    h.submit(TaskSpec{.pool = pool, .timeout = 20s}, t0);  // dead-letters at 20 s
    const TaskId c = h.submit(TaskSpec{.pool = pool, .retry = fixed(2, 1s)}, t0);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 20s);
    ASSERT_TRUE(h.complete(h.lease_of(c), Outcome::retryable("x"), t0 + 2s));
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 3s);
    h.tick(t0 + 3s);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 20s);
    h.tick(t0 + 20s);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 30s);
    ASSERT_TRUE(h.complete(h.lease_of(a), Outcome::success(), t0 + 25s));
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
}

TEST(WakeupTest, LateTickProcessesEverythingDue) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2, fixed(2, 1s)});
    const TaskId a = h.submit(TaskSpec{.pool = pool, .timeout = 5s}, t0);
    const TaskId b = h.submit(TaskSpec{.pool = pool, .timeout = 7s}, t0);
    // One tick long after both timeouts: both attempts are aborted in that
    // tick, and their backoffs run from it.
    h.tick(t0 + 100s);
    EXPECT_EQ(h.aborts().size(), 2u);
    EXPECT_EQ(h.engine.status(a), S::Retrying);
    EXPECT_EQ(h.engine.status(b), S::Retrying);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 101s);
    h.tick(t0 + 101s);
    EXPECT_EQ(h.dispatches().size(), 2u);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 106s);
}

// ---- retention --------------------------------------------------------------------------------------

TEST(RetentionTest, DefaultsAreFiveMinutesAndOneHundredThousand) {
    EXPECT_EQ(EngineConfig{}.retention, std::chrono::minutes(5));
    EXPECT_EQ(EngineConfig{}.retention_max, 100000u);
}

TEST(RetentionTest, TerminalTaskIsForgottenAfterRetention) {
    Harness h;  // default retention: 5 min
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    ASSERT_TRUE(h.complete(h.lease_of(task), Outcome::success(), t0 + 10s));
    EXPECT_EQ(h.engine.retained_tasks(), 1u);
    h.tick(t0 + 10s + std::chrono::minutes(5) - 1ns);
    EXPECT_EQ(h.engine.status(task), S::Succeeded);
    EXPECT_EQ(h.engine.retained_tasks(), 1u);
    h.tick(t0 + 10s + std::chrono::minutes(5));
    EXPECT_FALSE(h.engine.status(task).has_value());
    EXPECT_EQ(h.engine.retained_tasks(), 0u);
    EXPECT_FALSE(h.cancel(task, t0 + 400s));
    EXPECT_TRUE(h.last.empty());
}

TEST(RetentionTest, RetentionIsConfigurable) {
    EngineConfig config;
    config.retention = 60s;
    Harness h(config);
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    ASSERT_TRUE(h.cancel(task, t0 + 10s));
    h.tick(t0 + 70s - 1ns);
    EXPECT_EQ(h.engine.status(task), S::Cancelled);
    h.tick(t0 + 70s);
    EXPECT_FALSE(h.engine.status(task).has_value());
}

TEST(RetentionTest, OldestTerminalTasksAreForgottenBeyondRetentionMax) {
    EngineConfig config;
    config.retention_max = 2;
    Harness h(config);
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    std::vector<TaskId> t;
    for (int i = 0; i < 3; ++i) {
        t.push_back(h.submit(TaskSpec{.pool = pool}, t0 + i * 1s));
        ASSERT_TRUE(h.complete(h.lease_of(t.back()), Outcome::success(), t0 + i * 1s));
    }
    EXPECT_EQ(h.engine.retained_tasks(), 2u);
    EXPECT_FALSE(h.engine.status(t[0]).has_value());
    EXPECT_EQ(h.engine.status(t[1]), S::Succeeded);
    EXPECT_EQ(h.engine.status(t[2]), S::Succeeded);
    EXPECT_EQ(h.engine.live_tasks(), 0u);
}

TEST(RetentionTest, LiveTasksAreNeverForgotten) {
    EngineConfig config;
    config.retention = 0s;
    config.retention_max = 0;
    Harness h(config);
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId waiting = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId done = h.submit(TaskSpec{.pool = pool}, t0);
    ASSERT_TRUE(h.cancel(done, t0));
    h.tick(t0 + 10000s);
    EXPECT_FALSE(h.engine.status(done).has_value());
    EXPECT_EQ(h.engine.status(waiting), S::Ready);
    EXPECT_EQ(h.dispatch_order(pool, t0 + 10000s), (std::vector<TaskId>{waiting}));
}

// Every call first processes what was due by its `now`, so whether the
// owner ticked in between does not change the outcome.
TEST(LateReportTest, CompletionAtTheTimeoutWithoutATickIsLate) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1, fixed(2, 1s)});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .timeout = 10s}, t0);
    const Dispatch first = h.only_dispatch();
    EXPECT_FALSE(h.complete(first.lease, Outcome::success(), t0 + 10s));
    EXPECT_EQ(h.engine.late_reports(), 1u);
    EXPECT_EQ(h.engine.status(task), S::Retrying);
    ASSERT_FALSE(h.last.empty());
    const auto* abort = std::get_if<Abort>(&h.last[0]);
    ASSERT_NE(abort, nullptr);
    EXPECT_EQ(abort->reason, AbortReason::Timeout);
}

TEST(LeaseTest, HeartbeatAtTheExpiryWithoutATickIsLate) {
    Harness h;
    PoolConfig config{"p", 1, fixed(1, 1s)};
    config.lease_ttl = 5s;
    const PoolId pool = h.add_pool(config);
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    const Dispatch first = h.only_dispatch();
    EXPECT_TRUE(h.heartbeat(first.lease, t0 + 5s - 1ns));
    EXPECT_FALSE(h.heartbeat(first.lease, t0 + 10s - 1ns + 1ns));
    EXPECT_EQ(h.engine.status(task), S::DeadLettered);
}

// ---- implied transitions ---------------------------------------------------------------------------

// A pool of one slot whose engine leaves out the implied transitions, and
// a first task running in it.
class ImpliedTransitionsTest : public ::testing::Test {
protected:
    ImpliedTransitionsTest() {
        h.engine.report_implied_transitions(false);
        first = h.submit(TaskSpec{.pool = pool}, t0);
        running = h.only_dispatch();
    }
    std::vector<S> statuses(TaskId task) const {
        std::vector<S> out;
        for (const Status& s : h.statuses_of(task)) out.push_back(s.status);
        return out;
    }

    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1, fixed(2, 1s)});
    TaskId first;
    Dispatch running;
};

// Off, the Ready of a task admitted ready and the Running of each attempt
// are not Status actions (the submission's result and the Dispatch imply
// them); every other transition is, with its message, and the engine's own
// view and the Dispatches are unchanged.
TEST_F(ImpliedTransitionsTest, OffLeavesOutOnlyTheAdmittedReadyAndEachRunning) {
    EXPECT_TRUE(h.statuses_of(first).empty());
    EXPECT_EQ(h.engine.status(first), S::Running);
    const TaskId queued = h.submit(TaskSpec{.pool = pool}, t0);  // the slot is taken
    EXPECT_TRUE(h.statuses().empty());
    EXPECT_EQ(h.engine.status(queued), S::Ready);
    h.complete(running.lease, Outcome::retryable("busy"), t0 + 1s);  // `queued` runs
    h.tick(t0 + 2s);  // the backoff ends: Ready again, behind `queued`
    ASSERT_EQ(statuses(first), (std::vector<S>{S::Retrying, S::Ready}));
    EXPECT_EQ(h.statuses_of(first).front().message, "busy");
    EXPECT_EQ(statuses(queued), std::vector<S>{});
}

// A task that waits first (on a dependency) reports its Ready when
// released: only the Ready of admission is implied.
TEST_F(ImpliedTransitionsTest, OffStillReportsTheReadyOfABlockedTaskReleased) {
    TaskSpec child_spec{.pool = pool};
    child_spec.depends_on.push_back(Dep::on_success(first));
    const TaskId child = h.submit(child_spec, t0);
    h.complete(running.lease, Outcome::success(), t0 + 1s);
    EXPECT_EQ(statuses(first), std::vector<S>{S::Succeeded});
    EXPECT_EQ(statuses(child), (std::vector<S>{S::Blocked, S::Ready}));
    EXPECT_EQ(h.engine.status(child), S::Running);
}

TEST_F(ImpliedTransitionsTest, OnAgainReportsThemFromTheNextCall) {
    h.engine.report_implied_transitions(true);
    const TaskId waiting = h.submit(TaskSpec{.pool = pool}, t0 + 1s);  // the slot is taken: Ready
    h.complete(running.lease, Outcome::success(), t0 + 2s);           // then it runs
    EXPECT_EQ(statuses(first), std::vector<S>{S::Succeeded});
    EXPECT_EQ(statuses(waiting), (std::vector<S>{S::Ready, S::Running}));
}

}  // namespace
}  // namespace cronoq::core::test::lifecycle_test
