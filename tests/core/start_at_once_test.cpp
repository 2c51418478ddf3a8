// A submission into a pool with a free slot and nothing else ready starts in
// the submission's own call, without a round through the ready queue: the
// actions, counters and order are those the queue would give.
#include "engine_harness.hpp"

namespace cronoq::core::test::start_at_once_test {
namespace {

using S = TaskStatus;

TEST(StartAtOnceTest, AnIdlePoolStartsASubmissionWithTheActionsOfADispatch) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    ASSERT_EQ(h.last.size(), 3u);
    const auto* ready = std::get_if<Status>(&h.last[0]);
    const auto* dispatch = std::get_if<Dispatch>(&h.last[1]);
    const auto* running = std::get_if<Status>(&h.last[2]);
    ASSERT_TRUE(ready && dispatch && running);
    EXPECT_EQ(ready->task, task);
    EXPECT_EQ(ready->status, S::Ready);
    EXPECT_EQ(dispatch->task, task);
    EXPECT_EQ(dispatch->attempt, 1u);
    EXPECT_EQ(running->status, S::Running);
    EXPECT_EQ(h.engine.status(task), S::Running);
    EXPECT_EQ(h.engine.counters(pool).ready, 0u);
    EXPECT_EQ(h.engine.counters(pool).running, 1u);
    EXPECT_EQ(h.engine.counters(pool).dispatched, 1u);
    // The second slot: the same again.
    const TaskId second = h.submit(TaskSpec{.pool = pool}, t0 + 1s);
    EXPECT_EQ(h.only_dispatch().task, second);
    EXPECT_EQ(h.last_statuses_of(second), (std::vector<S>{S::Ready, S::Running}));
    EXPECT_EQ(h.engine.counters(pool).running, 2u);
}

TEST(StartAtOnceTest, AFullPoolQueuesInSubmissionOrderAndAnIdleOneStartsAgainAtOnce) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId a = h.submit(TaskSpec{.pool = pool}, t0);
    EXPECT_EQ(h.only_dispatch().task, a);
    const TaskId b = h.submit(TaskSpec{.pool = pool}, t0);
    EXPECT_TRUE(h.dispatches().empty());
    const TaskId c = h.submit(TaskSpec{.pool = pool}, t0);
    EXPECT_EQ(h.engine.counters(pool).ready, 2u);
    h.complete(h.lease_of(a), Outcome::success(), t0 + 1s);
    EXPECT_EQ(h.only_dispatch().task, b);
    h.complete(h.lease_of(b), Outcome::success(), t0 + 2s);
    EXPECT_EQ(h.only_dispatch().task, c);
    h.complete(h.lease_of(c), Outcome::success(), t0 + 3s);
    EXPECT_TRUE(h.dispatches().empty());
    const TaskId d = h.submit(TaskSpec{.pool = pool}, t0 + 4s);
    EXPECT_EQ(h.only_dispatch().task, d);
    EXPECT_EQ(h.engine.counters(pool).dispatched, 4u);
}

// A pool with no slot to give (capacity 0) leaves the task Ready, and the
// slot it gets later goes to it through the queue.
TEST(StartAtOnceTest, NoFreeSlotLeavesTheTaskReady) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    EXPECT_EQ(h.last_statuses_of(task), std::vector<S>{S::Ready});
    EXPECT_TRUE(h.dispatches().empty());
    h.set_capacity(pool, 1, t0 + 1s);
    EXPECT_EQ(h.only_dispatch().task, task);
}

}  // namespace
}  // namespace cronoq::core::test::start_at_once_test
