// Retries, backoff and dead letters (docs/guide/ordering.md).
//
// A delay is observed as the engine shows it: the failure's Status Retrying
// at time f, next_wakeup() at f + delay, nothing at one nanosecond before,
// and Status Ready plus a new Dispatch at exactly f + delay.
#include "engine_harness.hpp"

#include <algorithm>
#include <numeric>

namespace cronoq::core::test::retry_test {
namespace {

using S = TaskStatus;

std::vector<TaskStatus> status_kinds(const std::vector<Status>& statuses) {
    std::vector<TaskStatus> out;
    for (const Status& s : statuses) out.push_back(s.status);
    return out;
}

// One task of `policy` in a pool of one slot; every attempt fails (retryable,
// with `retry_after`) 100 ms after it starts. Returns the observed delay
// before each of the next `retries` attempts.
std::vector<Duration> observed_delays(EngineConfig config, RetryPolicy policy, int retries,
                                      std::optional<Duration> retry_after = std::nullopt) {
    Harness h(config);
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    Time now = t0;
    const TaskId task = h.submit(TaskSpec{.pool = pool, .retry = policy}, now);
    LeaseId lease = h.only_dispatch().lease;
    std::vector<Duration> delays;
    for (int i = 0; i < retries; ++i) {
        now += 100ms;
        const Time failed = now;
        EXPECT_TRUE(h.complete(lease, Outcome::retryable("boom", retry_after), now));
        const auto st = h.statuses();
        EXPECT_FALSE(st.empty());
        if (st.empty()) break;
        EXPECT_EQ(st.front().status, S::Retrying);
        EXPECT_EQ(st.front().at, failed);
        EXPECT_EQ(st.front().attempt, static_cast<std::uint32_t>(i + 1));
        if (h.dispatches().empty()) {
            const auto wake = h.engine.next_wakeup();
            EXPECT_TRUE(wake.has_value());
            if (!wake) break;
            EXPECT_GT(*wake, now);
            h.tick(*wake - 1ns);
            EXPECT_TRUE(h.last.empty()) << "retried before its backoff ended";
            EXPECT_EQ(h.engine.status(task), S::Retrying);
            now = *wake;
            h.tick(now);
        }
        // Zero delay: Retrying, Ready and the Dispatch came in one call.
        const auto d = h.dispatches();
        EXPECT_EQ(d.size(), 1u);
        if (d.size() != 1) break;
        EXPECT_EQ(d.front().task, task);
        EXPECT_EQ(d.front().attempt, static_cast<std::uint32_t>(i + 2));
        EXPECT_NE(d.front().lease, lease);
        lease = d.front().lease;
        delays.push_back(now - failed);
    }
    return delays;
}

RetryPolicy fixed(std::uint32_t attempts, Duration initial, double multiplier, Duration max) {
    return RetryPolicy{attempts, initial, multiplier, max, false};
}

// ---- policy values ---------------------------------------------------------------

TEST(RetryPolicyTest, DefaultPolicyIsThreeAttemptsOneSecondDoublingToSixtyWithJitter) {
    const RetryPolicy p{};
    EXPECT_EQ(p.max_attempts, 3u);
    EXPECT_EQ(p.initial_backoff, 1s);
    EXPECT_EQ(p.multiplier, 2.0);
    EXPECT_EQ(p.max_backoff, 60s);
    EXPECT_TRUE(p.jitter);
    EXPECT_EQ(PoolConfig{}.retry.max_attempts, 3u);
}

TEST(RetryPolicyTest, NoneIsOneAttempt) { EXPECT_EQ(RetryPolicy::none().max_attempts, 1u); }

// ---- backoff without jitter ------------------------------------------------------------

TEST(BackoffTest, DelaysWithoutJitterAre1s2s4s8sAndSoOn) {
    EXPECT_EQ(observed_delays({}, fixed(7, 1s, 2.0, 60s), 6),
              (std::vector<Duration>{1s, 2s, 4s, 8s, 16s, 32s}));
}

TEST(BackoffTest, DelaysAreCappedAtMaxBackoff) {
    EXPECT_EQ(observed_delays({}, fixed(8, 1s, 2.0, 5s), 7),
              (std::vector<Duration>{1s, 2s, 4s, 5s, 5s, 5s, 5s}));
}

TEST(BackoffTest, DefaultCapIsSixtySeconds) {
    RetryPolicy p{};
    p.max_attempts = 9;
    p.jitter = false;
    EXPECT_EQ(observed_delays({}, p, 8), (std::vector<Duration>{1s, 2s, 4s, 8s, 16s, 32s, 60s, 60s}));
}

TEST(BackoffTest, DelaysFollowInitialBackoffAndMultiplier) {
    EXPECT_EQ(observed_delays({}, fixed(4, 250ms, 3.0, 60s), 3), (std::vector<Duration>{250ms, 750ms, 2250ms}));
}

TEST(BackoffTest, ZeroBackoffRetriesInTheSameCall) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .retry = fixed(2, 0s, 2.0, 0s)}, t0);
    ASSERT_TRUE(h.complete(h.only_dispatch().lease, Outcome::retryable("x"), t0 + 1s));
    EXPECT_EQ(status_kinds(h.statuses()), (std::vector<S>{S::Retrying, S::Ready, S::Running}));
    EXPECT_EQ(h.only_dispatch().attempt, 2u);
    EXPECT_EQ(h.engine.status(task), S::Running);
}

TEST(BackoffTest, TaskIsRetryingDuringBackoffAndCounted) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .retry = fixed(3, 1s, 2.0, 60s)}, t0);
    ASSERT_TRUE(h.complete(h.only_dispatch().lease, Outcome::retryable("flaky"), t0));
    EXPECT_EQ(h.engine.status(task), S::Retrying);
    const auto st = h.statuses();
    ASSERT_EQ(st.size(), 1u);
    EXPECT_EQ(st[0].status, S::Retrying);
    EXPECT_EQ(st[0].message, "flaky");
    const PoolCounters c = h.engine.counters(pool);
    EXPECT_EQ(c.retrying, 1u);
    EXPECT_EQ(c.running, 0u);
    EXPECT_EQ(c.retried, 1u);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 1s);
}

TEST(BackoffTest, RetryWaitsForAFreeSlotAfterItsBackoff) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId a = h.submit(TaskSpec{.pool = pool, .retry = fixed(2, 1s, 2.0, 60s)}, t0);
    const LeaseId la = h.only_dispatch().lease;
    const TaskId b = h.submit(TaskSpec{.pool = pool}, t0);
    ASSERT_TRUE(h.complete(la, Outcome::retryable("x"), t0));
    EXPECT_EQ(h.dispatched_tasks(), (std::vector<TaskId>{b}));  // b takes the slot
    h.tick(t0 + 1s);
    EXPECT_EQ(h.engine.status(a), S::Ready);
    EXPECT_TRUE(h.dispatches().empty());
    ASSERT_TRUE(h.complete(h.lease_of(b), Outcome::success(), t0 + 3s));
    EXPECT_EQ(h.dispatched_tasks(), (std::vector<TaskId>{a}));
    EXPECT_EQ(h.only_dispatch().attempt, 2u);
}

// ---- jitter ---------------------------------------------------------------------------------

TEST(JitterTest, JitteredDelaysStayWithinZeroAndTheBackoff) {
    RetryPolicy p{};
    p.max_attempts = 12;
    const auto delays = observed_delays({}, p, 11);
    ASSERT_EQ(delays.size(), 11u);
    Duration ceiling = 1s;
    for (std::size_t i = 0; i < delays.size(); ++i) {
        EXPECT_GE(delays[i], 0s) << "retry " << i;
        EXPECT_LE(delays[i], ceiling) << "retry " << i;
        ceiling = std::min<Duration>(ceiling * 2, 60s);
    }
}

TEST(JitterTest, JitterIsSpreadOverTheWholeRange) {
    // 200 draws in [0, 10 s]: full jitter, not a fixed fraction.
    EngineConfig config;
    config.seed = 12345;
    const auto delays = observed_delays(config, RetryPolicy{201, 10s, 1.0, 10s, true}, 200);
    ASSERT_EQ(delays.size(), 200u);
    const auto [lo, hi] = std::minmax_element(delays.begin(), delays.end());
    EXPECT_LT(*lo, 1s);
    EXPECT_GT(*hi, 9s);
    EXPECT_LE(*hi, 10s);
    const double mean = to_seconds(std::accumulate(delays.begin(), delays.end(), Duration{0})) / 200.0;
    EXPECT_GT(mean, 4.0);
    EXPECT_LT(mean, 6.0);
    // Distinct draws, not one value repeated.
    std::vector<Duration> sorted = delays;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_GT(std::unique(sorted.begin(), sorted.end()) - sorted.begin(), 190);
}

TEST(JitterTest, SameSeedGivesTheSameDelays) {
    EngineConfig config;
    config.seed = 7;
    const RetryPolicy p{21, 1s, 2.0, 60s, true};
    const auto first = observed_delays(config, p, 20);
    const auto second = observed_delays(config, p, 20);
    ASSERT_EQ(first.size(), 20u);
    EXPECT_EQ(first, second);
}

TEST(JitterTest, DifferentSeedGivesDifferentDelays) {
    const RetryPolicy p{21, 1s, 2.0, 60s, true};
    EngineConfig a;
    a.seed = 7;
    EngineConfig b;
    b.seed = 8;
    const auto da = observed_delays(a, p, 20);
    const auto db = observed_delays(b, p, 20);
    ASSERT_EQ(da.size(), 20u);
    ASSERT_EQ(db.size(), 20u);
    EXPECT_NE(da, db);
}

TEST(JitterTest, SameSeedSameDelaysAcrossInterleavedTasks) {
    // The generator belongs to the engine: two engines fed the same calls
    // draw the same delays for every task.
    auto run = [](std::uint64_t seed) {
        EngineConfig config;
        config.seed = seed;
        Harness h(config);
        const PoolId pool = h.add_pool(PoolConfig{"p", 4});
        std::vector<TaskId> tasks;
        for (int i = 0; i < 4; ++i) tasks.push_back(h.submit(TaskSpec{.pool = pool}, t0));
        for (const TaskId t : tasks) EXPECT_TRUE(h.complete(h.lease_of(t), Outcome::retryable("x"), t0 + 1s));
        std::vector<Time> wakes;
        while (auto w = h.engine.next_wakeup()) {
            wakes.push_back(*w);
            h.tick(*w);
        }
        return wakes;
    };
    const auto a = run(99);
    EXPECT_EQ(a.size(), 4u);
    EXPECT_EQ(a, run(99));
}

// ---- retry_after ----------------------------------------------------------------------------

TEST(RetryAfterTest, RetryAfterIsAFloorAboveTheBackoff) {
    EXPECT_EQ(observed_delays({}, fixed(3, 1s, 2.0, 60s), 2, 30s), (std::vector<Duration>{30s, 30s}));
}

TEST(RetryAfterTest, RetryAfterBelowTheBackoffDoesNotShortenIt) {
    EXPECT_EQ(observed_delays({}, fixed(4, 1s, 2.0, 60s), 3, 1500ms), (std::vector<Duration>{1500ms, 2s, 4s}));
}

TEST(RetryAfterTest, RetryAfterIsAFloorUnderJitter) {
    // Jitter draws in [0, 10 s]; every delay is at least 5 s, and some
    // draws above the floor show through.
    EngineConfig config;
    config.seed = 3;
    const auto delays = observed_delays(config, RetryPolicy{41, 10s, 1.0, 10s, true}, 40, 5s);
    ASSERT_EQ(delays.size(), 40u);
    for (Duration d : delays) {
        EXPECT_GE(d, 5s);
        EXPECT_LE(d, 10s);
    }
    EXPECT_GT(std::count_if(delays.begin(), delays.end(), [](Duration d) { return d > 5s; }), 5);
    EXPECT_GT(std::count(delays.begin(), delays.end(), Duration{5s}), 5);
}

TEST(RetryAfterTest, RetryAfterBeyondTheEndOfTimeNeverRetries) {
    // Regression: now + retry_after overflowed into the past and the task
    // was retried at the next tick.
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0 + 10s);
    ASSERT_TRUE(h.complete(h.lease_of(task), Outcome::retryable("later", Duration::max()), t0 + 10s));
    EXPECT_EQ(h.engine.status(task), S::Retrying);
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
    h.tick(t0 + 1000000s);
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.status(task), S::Retrying);
    EXPECT_TRUE(h.cancel(task, t0 + 1000000s));  // still cancellable
    EXPECT_EQ(h.engine.live_tasks(), 0u);
}

TEST(RetryAfterTest, RetryAfterDoesNotGrantExtraAttempts) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .retry = fixed(1, 1s, 2.0, 60s)}, t0);
    ASSERT_TRUE(h.complete(h.only_dispatch().lease, Outcome::retryable("429", 10s), t0));
    EXPECT_EQ(h.engine.status(task), S::DeadLettered);
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
}

// ---- dead letters and permanent failures -------------------------------------------------------

TEST(DeadLetterTest, RetryableFailuresExhaustIntoDeadLetteredWithTheLastMessage) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1, fixed(3, 1s, 2.0, 60s)});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    Time now = t0;
    for (const char* message : {"e1", "e2", "e3"}) {
        ASSERT_TRUE(h.complete(h.lease_of(task), Outcome::retryable(message), now));
        if (auto w = h.engine.next_wakeup()) {
            now = *w;
            h.tick(now);
        }
    }
    EXPECT_EQ(h.engine.status(task), S::DeadLettered);
    const auto st = h.statuses_of(task);
    EXPECT_EQ(status_kinds(st), (std::vector<S>{S::Ready, S::Running, S::Retrying, S::Ready, S::Running, S::Retrying,
                                                S::Ready, S::Running, S::DeadLettered}));
    ASSERT_FALSE(st.empty());
    EXPECT_EQ(st.back().message, "e3");
    EXPECT_EQ(st.back().attempt, 3u);
    EXPECT_EQ(st.back().at, t0 + 3s);  // failures at 0 s, 1 s, 3 s
    EXPECT_EQ(st[2].message, "e1");
    EXPECT_EQ(st[5].message, "e2");
    const PoolCounters c = h.engine.counters(pool);
    EXPECT_EQ(c.dead_lettered, 1u);
    EXPECT_EQ(c.retried, 2u);
    EXPECT_EQ(c.dispatched, 3u);
    EXPECT_EQ(c.failed, 0u);
    EXPECT_EQ(c.retrying, 0u);
    EXPECT_EQ(h.engine.live_tasks(), 0u);
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
}

TEST(DeadLetterTest, PermanentFailureIsFailedAtOnce) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .retry = fixed(5, 1s, 2.0, 60s)}, t0);
    ASSERT_TRUE(h.complete(h.only_dispatch().lease, Outcome::permanent("bad input"), t0 + 2s));
    const auto st = h.statuses();
    ASSERT_EQ(st.size(), 1u);
    EXPECT_EQ(st[0].task, task);
    EXPECT_EQ(st[0].status, S::Failed);
    EXPECT_EQ(st[0].message, "bad input");
    EXPECT_EQ(st[0].attempt, 1u);
    EXPECT_EQ(st[0].at, t0 + 2s);
    EXPECT_EQ(h.engine.status(task), S::Failed);
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
    const PoolCounters c = h.engine.counters(pool);
    EXPECT_EQ(c.failed, 1u);
    EXPECT_EQ(c.retried, 0u);
}

TEST(DeadLetterTest, PermanentFailureOnALaterAttemptEndsTheRetries) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .retry = fixed(5, 1s, 2.0, 60s)}, t0);
    ASSERT_TRUE(h.complete(h.lease_of(task), Outcome::retryable("transient"), t0));
    h.tick(t0 + 1s);
    ASSERT_TRUE(h.complete(h.lease_of(task), Outcome::permanent("gone"), t0 + 2s));
    EXPECT_EQ(h.engine.status(task), S::Failed);
    EXPECT_EQ(h.statuses().back().message, "gone");
    EXPECT_EQ(h.statuses().back().attempt, 2u);
}

TEST(DeadLetterTest, RetryPolicyNoneGivesOneAttempt) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .retry = RetryPolicy::none()}, t0);
    ASSERT_TRUE(h.complete(h.only_dispatch().lease, Outcome::retryable("once"), t0));
    EXPECT_EQ(h.engine.status(task), S::DeadLettered);
    EXPECT_EQ(h.statuses().back().message, "once");
    EXPECT_EQ(h.engine.counters(pool).dispatched, 1u);
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
}

TEST(DeadLetterTest, TimeoutUnderRetryPolicyNoneDeadLetters) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .timeout = 5s, .retry = RetryPolicy::none()}, t0);
    h.tick(t0 + 5s);
    EXPECT_EQ(h.engine.status(task), S::DeadLettered);
    EXPECT_EQ(h.statuses().back().message, "timeout");
}

TEST(DeadLetterTest, PoolPolicyIsTheDefaultAndTaskPolicyOverridesIt) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2, fixed(2, 4s, 2.0, 60s)});
    const TaskId by_pool = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId own = h.submit(TaskSpec{.pool = pool, .retry = fixed(2, 7s, 2.0, 60s)}, t0);
    ASSERT_TRUE(h.complete(h.lease_of(by_pool), Outcome::retryable("x"), t0));
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 4s);
    ASSERT_TRUE(h.complete(h.lease_of(own), Outcome::retryable("x"), t0));
    h.tick(t0 + 4s);
    EXPECT_EQ(h.dispatched_tasks(), (std::vector<TaskId>{by_pool}));
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 7s);
    h.tick(t0 + 7s);
    EXPECT_EQ(h.dispatched_tasks(), (std::vector<TaskId>{own}));
    // Both policies allow two attempts: the next failure dead-letters.
    ASSERT_TRUE(h.complete(h.lease_of(by_pool), Outcome::retryable("y"), t0 + 8s));
    ASSERT_TRUE(h.complete(h.lease_of(own), Outcome::retryable("y"), t0 + 8s));
    EXPECT_EQ(h.engine.status(by_pool), S::DeadLettered);
    EXPECT_EQ(h.engine.status(own), S::DeadLettered);
}

TEST(DeadLetterTest, ExecutorCancelledOutcomeIsCancelledNotRetried) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .retry = fixed(5, 1s, 2.0, 60s)}, t0);
    ASSERT_TRUE(h.complete(h.only_dispatch().lease, Outcome::cancelled("stopped"), t0));
    EXPECT_EQ(h.engine.status(task), S::Cancelled);
    EXPECT_EQ(h.statuses().back().message, "stopped");
    EXPECT_FALSE(h.engine.next_wakeup().has_value());
}

TEST(DeadLetterTest, SuccessAfterRetriesSucceedsWithNoMessage) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool, .retry = fixed(3, 1s, 2.0, 60s)}, t0);
    ASSERT_TRUE(h.complete(h.lease_of(task), Outcome::retryable("x"), t0));
    h.tick(t0 + 1s);
    ASSERT_TRUE(h.complete(h.lease_of(task), Outcome::success(), t0 + 2s));
    const auto st = h.statuses();
    ASSERT_EQ(st.size(), 1u);
    EXPECT_EQ(st[0].status, S::Succeeded);
    EXPECT_EQ(st[0].attempt, 2u);
    EXPECT_EQ(st[0].message, "");
    EXPECT_EQ(h.engine.counters(pool).succeeded, 1u);
}

}  // namespace
}  // namespace cronoq::core::test::retry_test
