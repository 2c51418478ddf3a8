// Regressions found by graph_invariant_test.cpp (fixed starts, dependencies,
// keys and batches).
#include "engine_harness.hpp"

namespace cronoq::core::test::graph_regression_test {
namespace {

// ---- regressions --------------------------------------------------------------------------------
// Minimal forms of three engine bugs found while graph_invariant_test.cpp
// was written: each failed on the engine of that day and passes on the
// fixed one. With the first or the third put back, that random test fails
// on its default seeds (the idle-slot check; the Cycle prediction).

// A pool of two slots: one busy, one held for a fixed start 10 s ahead, and
// a 60 s task waiting because it would overrun that start.
struct GraphInvariantRegressionHeldSlot : ::testing::Test {
    Harness h;
    PoolId pool = h.add_pool(PoolConfig{"p", 2});
    TaskId busy = h.submit(TaskSpec{.pool = pool}, t0);

    TaskSpec fixed_start() const {
        TaskSpec spec{.pool = pool};
        spec.start = t0 + 10s;
        spec.duration_hint = 1s;
        return spec;
    }
    TaskId long_task() {
        TaskSpec spec{.pool = pool};
        spec.duration_hint = 60s;
        return h.submit(spec, t0);
    }
};

// Was: cancelling the start released its hold, but nothing made the engine
// look at the pool again, so the free slot stayed idle (with no wakeup)
// until the busy task ended. The same for a start that ended Missed/Failed
// or Skipped while it held a slot.
TEST_F(GraphInvariantRegressionHeldSlot, CancellingAStartFreesItsHeldSlot) {
    const TaskId start = h.submit(fixed_start(), t0);
    const TaskId waiting = long_task();
    ASSERT_EQ(h.engine.status(waiting), TaskStatus::Ready) << "the free slot is held for the start";
    h.cancel(start, t0 + 1s);
    EXPECT_EQ(h.engine.status(waiting), TaskStatus::Running);
}

// Was: a fixed start still Blocked on a dependency held a slot while its
// start was ahead; once the start had passed the hold no longer applied,
// but no timer or change woke the pool, so the slot stayed idle until the
// parent ended.
TEST_F(GraphInvariantRegressionHeldSlot, AStartPassedWhileBlockedHoldsNoSlot) {
    TaskSpec spec = fixed_start();
    spec.depends_on.push_back(Dep::on_success(busy));
    h.submit(spec, t0);
    const TaskId waiting = long_task();
    h.tick(t0 + 11s);
    EXPECT_EQ(h.engine.status(waiting), TaskStatus::Running);
}

// Was: a batch whose members take keys that two Blocked tasks await, each
// member depending on the other's awaiter, was admitted: the cycle
// a -> "k1" -> b -> "k2" -> a runs through two awaited keys, and the engine
// looked for each key's awaiters only among that member's own ancestors.
// All four tasks then stayed Blocked for good.
TEST(GraphInvariantRegression, ACycleThroughTwoAwaitedKeysOfABatchIsRejected) {
    Harness h;
    const PoolId pool =
        h.add_pool(PoolConfig{.name = "p", .capacity = 1, .unknown_dependency = UnknownDependency::Await{60s}});
    auto awaiting = [&](std::string key) {
        TaskSpec spec{.pool = pool};
        spec.depends_on.push_back(Dep::on_success(std::move(key)));
        return h.submit(spec, t0);
    };
    const TaskId a = awaiting("k1");
    const TaskId b = awaiting("k2");
    TaskSpec k1{.pool = pool}, k2{.pool = pool};
    k1.key = "k1";
    k1.depends_on.push_back(Dep::on_success(b));
    k2.key = "k2";
    k2.depends_on.push_back(Dep::on_success(a));
    const auto r = h.submit_batch({k1, k2}, t0);
    ASSERT_FALSE(r.has_value()) << "the cycle a -> k1 -> b -> k2 -> a was admitted";
    EXPECT_EQ(r.error(), SubmitError::Cycle);
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.find_key("k1"), std::nullopt);
    EXPECT_EQ(h.engine.status(a), TaskStatus::Blocked);
}

}  // namespace
}  // namespace cronoq::core::test::graph_regression_test
