// What a durable store needs from the engine's ordinary answers (docs/guide/durability.md):
// ids that start above a previous leader's, the time a Retrying or Scheduled
// status waits for, and an attempt's terms in its Dispatch.
#include "engine_harness.hpp"

namespace cronoq::core::test::durable_terms_test {
namespace {

using S = TaskStatus;

// Ids come from counters shared by the engines of this process: a base
// well above what earlier tests used keeps these tests independent of
// their order.
std::uint64_t fresh_base() { return Engine{}.next_ids().task + Engine{}.next_ids().lease + 1'000'000; }

TEST(NextIdsTest, EngineHandsOutIdsFromTheConfiguredFirstIds) {
    const std::uint64_t base = fresh_base();
    Harness h(EngineConfig{.first_task_id = base, .first_lease_id = base + 500});
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    EXPECT_EQ(h.engine.next_ids().task, base);
    EXPECT_EQ(h.engine.next_ids().lease, base + 500);
    const TaskId first = h.submit(TaskSpec{.pool = pool}, t0);
    EXPECT_EQ(first.value, base);
    EXPECT_EQ(h.only_dispatch().lease.value, base + 500);
    const TaskId second = h.submit(TaskSpec{.pool = pool}, t0);
    EXPECT_EQ(second.value, base + 1);
    EXPECT_EQ(h.engine.next_ids().task, base + 2);
    EXPECT_EQ(h.engine.next_ids().lease, base + 501);
}

TEST(NextIdsTest, FirstIdsBelowWhatWasIssuedNeverReissueAnId) {
    Harness earlier;
    const PoolId p = earlier.add_pool(PoolConfig{"p", 1});
    const TaskId issued = earlier.submit(TaskSpec{.pool = p}, t0);
    // 0 means 1; either is below what the process issued already.
    for (std::uint64_t first : {std::uint64_t{0}, std::uint64_t{1}}) {
        Harness h(EngineConfig{.first_task_id = first, .first_lease_id = first});
        const PoolId pool = h.add_pool(PoolConfig{"p", 1});
        EXPECT_GT(h.submit(TaskSpec{.pool = pool}, t0).value, issued.value);
        EXPECT_GT(h.only_dispatch().lease, earlier.only_dispatch().lease);
    }
}

TEST(NextIdsTest, NextIdsAreAboveEveryIdIssued) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2});
    const TaskId a = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId b = h.submit(TaskSpec{.pool = pool}, t0);
    const NextIds next = h.engine.next_ids();
    EXPECT_GT(next.task, std::max(a.value, b.value));
    EXPECT_GT(next.lease, h.lease_of(b).value);
    EXPECT_GT(next.lease, h.lease_of(a).value);
}

TEST(StatusUntilTest, RetryingCarriesTheEndOfItsBackoff) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskSpec spec{.pool = pool, .retry = RetryPolicy{3, 2s, 2.0, 60s, false}};
    const TaskId task = h.submit(spec, t0);
    ASSERT_TRUE(h.complete(h.lease_of(task), Outcome::retryable("boom"), t0 + 1s));
    const auto st = h.statuses();
    ASSERT_EQ(st.size(), 1u);
    EXPECT_EQ(st[0].status, S::Retrying);
    EXPECT_EQ(st[0].message, "boom");
    EXPECT_EQ(st[0].until, t0 + 3s);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 3s);
    // A retry_after floor moves it.
    h.tick(t0 + 3s);
    ASSERT_TRUE(h.complete(h.lease_of(task), Outcome::retryable("again", 10s), t0 + 4s));
    EXPECT_EQ(h.statuses().at(0).until, t0 + 14s);
}

TEST(StatusUntilTest, ScheduledCarriesItsStartAndOthersNothing) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    TaskSpec spec{.pool = pool};
    spec.start = t0 + 10s;
    const TaskId task = h.submit(spec, t0);
    ASSERT_EQ(h.statuses().size(), 1u);
    EXPECT_EQ(h.statuses()[0].status, S::Scheduled);
    EXPECT_EQ(h.statuses()[0].until, t0 + 10s);
    h.tick(t0 + 10s);
    ASSERT_TRUE(h.complete(h.lease_of(task), Outcome::success(), t0 + 11s));
    for (const Status& st : h.statuses_of(task)) {
        if (st.status == S::Scheduled) continue;
        EXPECT_FALSE(st.until.has_value()) << to_string(st.status);
    }
}

TEST(DispatchTermsTest, TimeoutIsTheTasksOwnElseThePoolsDefault) {
    Harness h;
    const PoolId with_default = h.add_pool(PoolConfig{.name = "d", .capacity = 4, .default_timeout = 30s});
    const PoolId without = h.add_pool(PoolConfig{.name = "n", .capacity = 4});
    h.submit(TaskSpec{.pool = with_default}, t0);
    EXPECT_EQ(h.only_dispatch().timeout, Duration(30s));
    h.submit(TaskSpec{.pool = with_default, .timeout = 5s}, t0);
    EXPECT_EQ(h.only_dispatch().timeout, Duration(5s));
    h.submit(TaskSpec{.pool = without}, t0);
    EXPECT_FALSE(h.only_dispatch().timeout.has_value());
    h.submit(TaskSpec{.pool = without, .timeout = 7s}, t0);
    EXPECT_EQ(h.only_dispatch().timeout, Duration(7s));
}

TEST(DispatchTermsTest, DeadlineIsTheTasksSoftDeadline) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2});
    h.submit(TaskSpec{.pool = pool, .deadline = t0 + 1h}, t0);
    EXPECT_EQ(h.only_dispatch().deadline, t0 + 1h);
    h.submit(TaskSpec{.pool = pool}, t0);
    EXPECT_FALSE(h.only_dispatch().deadline.has_value());
}

}  // namespace
}  // namespace cronoq::core::test::durable_terms_test
