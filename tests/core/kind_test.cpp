// Kinds: interned names and the run times learned per (pool, kind), in
// bounded memory (issue 13: a unique kind per task used to be remembered
// forever). Kinds with live tasks are kept; of the others, the
// `kind_capacity` most recently used.
#include "engine_harness.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace cronoq::core::test::kind_test {
namespace {

EngineConfig with_kind_capacity(std::size_t n) {
    EngineConfig c;
    c.kind_capacity = n;
    return c;
}

// A pool of one slot whose tasks are expected to take 10 s until a kind
// has run.
PoolConfig pool_of_one(std::string name) {
    return PoolConfig{.name = std::move(name), .capacity = 1, .default_duration = 10s};
}

// Runs one task of `kind` for `run` from `now`; returns when it ended.
Time run_one(Harness& h, PoolId pool, KindId kind, Duration run, Time now) {
    h.submit(TaskSpec{.pool = pool, .kind = kind}, now);
    const LeaseId lease = h.only_dispatch().lease;
    EXPECT_TRUE(h.complete(lease, Outcome::success(), now + run));
    return now + run;
}

// Whether a task of `kind` is expected to run longer than 5 s: its
// reservation then overlaps a fixed start 5 s after its own (the pool
// reserves one slot at a time). Leaves no task behind.
bool expected_over_5s(Harness& h, PoolId pool, KindId kind, Time now) {
    TaskSpec probe{.pool = pool, .kind = kind};
    probe.start = now + 100s;
    const TaskId first = h.submit(probe, now);
    TaskSpec after{.pool = pool};
    after.start = now + 105s;
    after.duration_hint = 1s;
    const auto second = h.try_submit(after, now);
    h.cancel(first, now);
    if (second) h.cancel(second.value(), now);
    EXPECT_TRUE(second || second.error() == SubmitError::ReservationConflict);
    return !second;
}

TEST(KindTest, UniqueKindsPerTaskStayWithinTheCapacity) {
    Harness h(with_kind_capacity(8));
    const PoolId pool = h.add_pool(pool_of_one("p"));
    Time now = t0;
    for (int i = 0; i < 2000; ++i) {
        const KindId k = h.engine.intern_kind("job-" + std::to_string(i));
        EXPECT_LE(k, 9u) << "ids of forgotten kinds are reused, so per-pool tables stay small too";
        now = run_one(h, pool, k, 1ms, now);
        ASSERT_LE(h.engine.known_kinds(), 8u + 1u) << "at most 8 idle kinds, and \"\"";
    }
    EXPECT_EQ(h.engine.known_kinds(), 9u);
    EXPECT_EQ(h.engine.live_tasks(), 0u);
}

TEST(KindTest, AKindWithALiveTaskIsNeverForgotten) {
    Harness h(with_kind_capacity(1));
    const PoolId pool = h.add_pool(pool_of_one("p"));
    const PoolId churn = h.add_pool(pool_of_one("churn"));
    const KindId slow = h.engine.intern_kind("slow");
    h.submit(TaskSpec{.pool = pool, .kind = slow}, t0);
    const LeaseId lease = h.only_dispatch().lease;
    Time now = t0;
    for (int i = 0; i < 50; ++i) now = run_one(h, churn, h.engine.intern_kind("other-" + std::to_string(i)), 1ms, now);
    EXPECT_EQ(h.engine.intern_kind("slow"), slow);
    EXPECT_EQ(h.engine.kind_name(slow), "slow");
    ASSERT_TRUE(h.complete(lease, Outcome::success(), t0 + 3s));
    EXPECT_FALSE(expected_over_5s(h, pool, slow, t0 + 3s)) << "it learned its 3 s run";
}

TEST(KindTest, TheLeastRecentlyUsedIdleKindIsForgottenAndItsIdReusedWithoutItsHistory) {
    Harness h(with_kind_capacity(2));
    const PoolId pool = h.add_pool(pool_of_one("p"));
    const KindId a = h.engine.intern_kind("a");
    const KindId b = h.engine.intern_kind("b");
    Time now = run_one(h, pool, a, 3s, t0);
    now = run_one(h, pool, b, 3s, now);
    EXPECT_EQ(h.engine.intern_kind("a"), a);  // used again: now b is the least recently used
    const KindId c = h.engine.intern_kind("c");
    EXPECT_EQ(c, b) << "b was forgotten and its id reused";
    EXPECT_EQ(h.engine.kind_name(c), "c");
    EXPECT_TRUE(expected_over_5s(h, pool, c, now)) << "c does not inherit b's learned 3 s";
    EXPECT_FALSE(expected_over_5s(h, pool, h.engine.intern_kind("a"), now)) << "a keeps its learned 3 s";
    EXPECT_TRUE(expected_over_5s(h, pool, h.engine.intern_kind("b"), now)) << "b comes back without history";
    EXPECT_LE(h.engine.known_kinds(), 2u + 1u);
}

TEST(KindTest, KindsInternedForABatchAreKeptUntilItIsSubmitted) {
    Harness h(with_kind_capacity(1));
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 8});
    std::vector<KindId> ids;
    std::vector<TaskSpec> batch;
    for (int i = 0; i < 5; ++i) {
        ids.push_back(h.engine.intern_kind("batch-" + std::to_string(i)));
        batch.push_back(TaskSpec{.pool = pool, .kind = ids.back()});
    }
    for (int i = 0; i < 5; ++i) EXPECT_EQ(h.engine.kind_name(ids[static_cast<std::size_t>(i)]), "batch-" + std::to_string(i));
    ASSERT_TRUE(h.submit_batch(batch, t0).has_value());
    EXPECT_EQ(h.engine.known_kinds(), 6u);
    for (const Dispatch& d : h.dispatches()) h.complete(d.lease, Outcome::success(), t0 + 1s);
    EXPECT_EQ(h.engine.live_tasks(), 0u);

    // Five idle kinds, one allowed: a new name forgets the four oldest and
    // reuses an id; the other ids name nothing until reused.
    const KindId fresh = h.engine.intern_kind("fresh");
    EXPECT_EQ(h.engine.known_kinds(), 2u);
    EXPECT_EQ(h.engine.kind_name(fresh), "fresh");
    const KindId stale = ids.front() == fresh ? ids.back() : ids.front();
    EXPECT_THROW((void)h.engine.kind_name(stale), std::out_of_range);
    EXPECT_EQ(h.try_submit(TaskSpec{.pool = pool, .kind = stale}, t0 + 1s).error(), SubmitError::Invalid);
}

}  // namespace
}  // namespace cronoq::core::test::kind_test
