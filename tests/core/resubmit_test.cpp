// Engine::resubmit (docs/guide/durability.md Scheduler::retry): an ended task's spec comes
// back as a new task, and its key moves to the new task in the same call.
#include "engine_harness.hpp"

namespace cronoq::core::test::resubmit_test {
namespace {

using S = TaskStatus;

TaskSpec keyed(PoolId pool, std::string key) {
    TaskSpec spec{.pool = pool, .retry = RetryPolicy::none()};
    spec.key = std::move(key);
    return spec;
}

// A task keyed `key` that ended `how` (permanent failure, exhausted retries).
TaskId ended_task(Harness& h, PoolId pool, const std::string& key, const Outcome& how) {
    const TaskId task = h.submit(keyed(pool, key), t0);
    EXPECT_TRUE(h.complete(h.lease_of(task), how, t0 + 1s));
    return task;
}

TEST(ResubmitTest, NewTaskTakesTheKeyAndTheOldKeepsItsStatus) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId old = ended_task(h, pool, "k", Outcome::permanent("bad"));
    const auto fresh = h.resubmit(old, keyed(pool, "k"), t0 + 2s);
    ASSERT_TRUE(fresh.has_value()) << fresh.message();
    EXPECT_NE(fresh.value(), old);
    EXPECT_EQ(h.engine.find_key("k"), fresh.value());
    EXPECT_EQ(h.engine.status(old), S::Failed);
    const Dispatch d = h.only_dispatch();
    EXPECT_EQ(d.task, fresh.value());
    EXPECT_EQ(d.attempt, 1u);
    // Submitting the key now names the new task.
    EXPECT_EQ(h.submit(keyed(pool, "k"), t0 + 3s), fresh.value());
}

TEST(ResubmitTest, DeadLetteredAndCancelledMayBeResubmitted) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId dead = ended_task(h, pool, "dead", Outcome::retryable("again"));
    EXPECT_EQ(h.engine.status(dead), S::DeadLettered);
    EXPECT_TRUE(h.resubmit(dead, keyed(pool, "dead"), t0 + 2s).has_value());
    const TaskId cancelled = h.submit(keyed(pool, "cancelled"), t0 + 2s);
    ASSERT_TRUE(h.cancel(cancelled, t0 + 3s));
    EXPECT_TRUE(h.resubmit(cancelled, keyed(pool, "cancelled"), t0 + 4s).has_value());
}

TEST(ResubmitTest, RejectsUnknownLiveAndSucceededTasks) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId done = ended_task(h, pool, "done", Outcome::success());
    const TaskId running = h.submit(keyed(pool, "running"), t0 + 2s);
    for (TaskId old : {done, running, TaskId{Engine{}.next_ids().task + 1000}}) {
        const auto r = h.resubmit(old, keyed(pool, "other"), t0 + 3s);
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(r.error(), SubmitError::Invalid);
        EXPECT_FALSE(r.message().empty());
    }
    EXPECT_FALSE(h.engine.find_key("other").has_value());
    EXPECT_EQ(h.engine.find_key("done"), done);
}

TEST(ResubmitTest, ForgottenTaskIsUnknown) {
    Harness h(EngineConfig{.retention = 1min});
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId old = ended_task(h, pool, "k", Outcome::permanent("bad"));
    const auto r = h.resubmit(old, keyed(pool, "k"), t0 + 1s + 1min);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), SubmitError::Invalid);
}

TEST(ResubmitTest, ARejectedSpecLeavesTheKeyWithTheOldTask) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId old = ended_task(h, pool, "k", Outcome::permanent("bad"));
    TaskSpec invalid = keyed(pool, "k");
    invalid.timeout = Duration(-1);
    EXPECT_EQ(h.resubmit(old, invalid, t0 + 2s).error(), SubmitError::Invalid);
    TaskSpec orphan = keyed(pool, "k");
    orphan.depends_on = {Dep::on_success("nobody")};
    EXPECT_EQ(h.resubmit(old, orphan, t0 + 2s).error(), SubmitError::UnknownDependency);
    EXPECT_EQ(h.engine.find_key("k"), old);
    EXPECT_TRUE(h.last.empty());
    // Still movable afterwards.
    EXPECT_TRUE(h.resubmit(old, keyed(pool, "k"), t0 + 3s).has_value());
    EXPECT_NE(h.engine.find_key("k"), old);
}

TEST(ResubmitTest, AnotherKeyOrNoKeyLeavesTheOldKeyAlone) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2});
    const TaskId old = ended_task(h, pool, "k", Outcome::permanent("bad"));
    const auto unkeyed = h.resubmit(old, TaskSpec{.pool = pool}, t0 + 2s);
    ASSERT_TRUE(unkeyed.has_value());
    const auto other = h.resubmit(old, keyed(pool, "k2"), t0 + 2s);
    ASSERT_TRUE(other.has_value());
    EXPECT_EQ(h.engine.find_key("k"), old);
    EXPECT_EQ(h.engine.find_key("k2"), other.value());
    // A key held by a third task: its id, nothing admitted (as submit).
    const std::size_t live = h.engine.live_tasks();
    EXPECT_EQ(h.resubmit(old, keyed(pool, "k2"), t0 + 3s).value(), other.value());
    EXPECT_EQ(h.engine.live_tasks(), live);
}

TEST(ResubmitTest, DependentsOfTheOldTaskAreNotRevisited) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId old = h.submit(keyed(pool, "k"), t0);
    TaskSpec child{.pool = pool};
    child.depends_on = {Dep::on_success(old)};
    const TaskId dependent = h.submit(child, t0);
    ASSERT_TRUE(h.complete(h.lease_of(old), Outcome::permanent("bad"), t0 + 1s));
    EXPECT_EQ(h.engine.status(dependent), S::Skipped);
    ASSERT_TRUE(h.resubmit(old, keyed(pool, "k"), t0 + 2s).has_value());
    EXPECT_EQ(h.engine.status(dependent), S::Skipped);
    EXPECT_TRUE(h.last_statuses_of(dependent).empty());
}

}  // namespace
}  // namespace cronoq::core::test::resubmit_test
