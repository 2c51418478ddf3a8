// Fair sharing between the fair keys of a pool (docs/design.md#fair-sharing):
// shares by weight while backlogged, caps per key without head-of-line
// blocking, urgency and min_share kept, no state for an idle key.
#include "engine_harness.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

namespace cronoq::core::test::fairness_test {
namespace {

using P = Priority;

class FairnessTest : public ::testing::Test {
protected:
    void use(FairnessConfig fairness, std::size_t capacity = 0, EngineConfig config = {}) {
        h = std::make_unique<Harness>(std::move(config));
        PoolConfig pc{"p", capacity};
        pc.fairness = std::move(fairness);
        pool = h->add_pool(std::move(pc));
    }
    TaskId submit(const std::string& key, Time now, P priority = P::Normal) {
        TaskSpec spec{.pool = pool, .priority = priority};
        spec.fair_key = key;
        const TaskId id = h->submit(spec, now);
        key_of[id.value] = key;
        return id;
    }
    void submit_many(const std::string& key, int n, Time now, P priority = P::Normal) {
        for (int i = 0; i < n; ++i) submit(key, now, priority);
    }
    /// One slot: each dispatch completes at once; the keys served, in order.
    std::vector<std::string> serve(int n, Time now) {
        std::vector<std::string> order;
        if (!running) {
            h->set_capacity(pool, 1, now);
            running = h->only_dispatch();
            order.push_back(key_of[running->task.value]);
        }
        while (static_cast<int>(order.size()) < n) {
            EXPECT_TRUE(h->complete(running->lease, Outcome::success(), now));
            const auto d = h->dispatches();
            if (d.empty()) {
                running.reset();
                break;
            }
            running = d.front();
            order.push_back(key_of[running->task.value]);
        }
        return order;
    }
    static std::map<std::string, int> count(const std::vector<std::string>& keys) {
        std::map<std::string, int> out;
        for (const auto& k : keys) ++out[k];
        return out;
    }

    std::unique_ptr<Harness> h;
    PoolId pool = 0;
    std::unordered_map<std::uint64_t, std::string> key_of;
    std::optional<Dispatch> running;
};

TEST_F(FairnessTest, SharesFollowWeightsWhileBacklogged) {
    use(FairnessConfig{.weights = {{"a", 3.0}, {"c", 0.5}}});
    submit_many("a", 200, t0);
    submit_many("b", 200, t0);
    submit_many("c", 200, t0);
    submit_many("", 200, t0);
    // Weights 3 : 1 : 0.5 : 1 over 110 dispatches: 60, 20, 10, 20.
    auto n = count(serve(110, t0 + 1s));
    EXPECT_NEAR(n["a"], 60, 1);
    EXPECT_NEAR(n["b"], 20, 1);
    EXPECT_NEAR(n["c"], 10, 1);
    EXPECT_NEAR(n[""], 20, 1);
}

TEST_F(FairnessTest, FloodDoesNotHoldBackSmallKeys) {
    use({});
    submit_many("flood", 900, t0);
    for (int k = 0; k < 9; ++k) submit_many("small" + std::to_string(k), 10, t0 + 1s);
    // Ten keys backlogged: the small ones' 90 tasks go in the first 100
    // dispatches, beside ten of the flood's (FIFO would serve 900 floods first).
    auto n = count(serve(100, t0 + 2s));
    EXPECT_NEAR(n["flood"], 10, 1);
    for (int k = 0; k < 9; ++k) EXPECT_NEAR(n["small" + std::to_string(k)], 10, 1) << k;
}

TEST_F(FairnessTest, InsideAKeyFirstInFirstOut) {
    use({});
    const TaskId a1 = submit("a", t0);
    const TaskId b1 = submit("b", t0);
    const TaskId a2 = submit("a", t0);
    h->set_capacity(pool, 1, t0);
    std::vector<TaskId> order{h->only_dispatch().task};
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(h->complete(h->lease_of(order.back()), Outcome::success(), t0));
        order.push_back(h->only_dispatch().task);
    }
    EXPECT_EQ(order, (std::vector<TaskId>{a1, b1, a2}));
}

TEST_F(FairnessTest, CapParksAKeyWithoutHoldingBackOthers) {
    use(FairnessConfig{.per_key_concurrency = 2});
    submit_many("a", 10, t0);
    submit_many("b", 10, t0);
    h->set_capacity(pool, 6, t0 + 1s);
    auto n = count([&] {
        std::vector<std::string> keys;
        for (const Dispatch& d : h->dispatches()) keys.push_back(key_of[d.task.value]);
        return keys;
    }());
    // Two each: the other two slots stay free rather than break the cap.
    EXPECT_EQ(n["a"], 2);
    EXPECT_EQ(n["b"], 2);
    const PoolStats s = h->engine.stats(pool, t0 + 1s);
    EXPECT_EQ(s.busy, 4u);
    EXPECT_EQ(s.active_keys, 2u);
    // A third key is not held back by the capped ones.
    submit("c", t0 + 2s);
    EXPECT_EQ(h->dispatches().size(), 1u);
}

TEST_F(FairnessTest, CappedDeadlineTaskWaitsAndComesBackBelowTheCap) {
    use(FairnessConfig{.per_key_concurrency = 1});
    h->set_capacity(pool, 2, t0);
    const TaskId a1 = submit("a", t0);
    TaskSpec urgent{.pool = pool};
    urgent.fair_key = "a";
    urgent.deadline = t0 + 1s;  // at its latest start: the most urgent ready task
    const TaskId a2 = h->submit(urgent, t0);
    key_of[a2.value] = "a";
    EXPECT_TRUE(h->dispatches().empty());  // a is at its cap: a2 waits, the free slot stays free
    const TaskId b1 = submit("b", t0);
    EXPECT_EQ(h->only_dispatch().task, b1);  // not held back by a2
    ASSERT_TRUE(h->complete(h->lease_of(a1), Outcome::success(), t0 + 1s));
    EXPECT_EQ(h->only_dispatch().task, a2);
}

TEST_F(FairnessTest, CapCountsEveryClassOfThePool) {
    use(FairnessConfig{.per_key_concurrency = 1}, 3);
    submit("a", t0, P::Low);
    EXPECT_EQ(h->dispatches().size(), 1u);
    submit("a", t0, P::Critical);
    EXPECT_TRUE(h->dispatches().empty());
    EXPECT_EQ(h->engine.counters(pool).running, 1u);
}

TEST_F(FairnessTest, UrgentTaskOfAKeyOverItsShareStillGoesFirst) {
    use({});
    submit_many("a", 20, t0);
    submit_many("b", 20, t0);
    serve(5, t0 + 1s);  // b has had its turns too
    TaskSpec urgent{.pool = pool};
    urgent.fair_key = "b";
    urgent.deadline = t0 + 2s;
    const TaskId u = h->submit(urgent, t0 + 1s);
    key_of[u.value] = "b";
    ASSERT_TRUE(h->complete(running->lease, Outcome::success(), t0 + 1s));
    EXPECT_EQ(h->only_dispatch().task, u);
    running = h->only_dispatch();
    // b paid for it: of the next three, a gets two (without the charge, b would).
    EXPECT_EQ(count(serve(3, t0 + 1s))["a"], 2);
}

TEST_F(FairnessTest, MinSharePicksTheClassFairnessTheKey) {
    EngineConfig c;
    c.priority.min_share = {0, 0, 0, 0.25};
    use({}, 0, c);
    submit_many("x", 200, t0, P::Critical);
    submit_many("y", 100, t0, P::Low);
    submit_many("z", 100, t0, P::Low);
    auto n = count(serve(100, t0 + 1s));
    EXPECT_NEAR(n["x"], 75, 1);
    EXPECT_NEAR(n["y"], 12.5, 1);
    EXPECT_NEAR(n["z"], 12.5, 1);
}

TEST_F(FairnessTest, SetFairWeightAppliesFromTheNextDecision) {
    use({});
    submit_many("a", 200, t0);
    submit_many("b", 200, t0);
    EXPECT_NEAR(count(serve(20, t0 + 1s))["a"], 10, 1);
    h->engine.set_fair_weight(pool, "a", 4.0, t0 + 1s);
    auto n = count(serve(50, t0 + 1s));
    EXPECT_NEAR(n["a"], 40, 2);
    EXPECT_NEAR(n["b"], 10, 2);
}

// Weights are kept per key id once a pool has any (fair_share.hpp): a key
// interned after many others (its id past the array's first size) gets its
// configured weight, and keys active when the pool's first weight is set
// keep theirs (1) while the new one weighs what was set.
TEST_F(FairnessTest, WeightsHoldForKeysInternedLateAndForKeysActiveWhenTheFirstIsSet) {
    use(FairnessConfig{.weights = {{"late", 3.0}}});
    for (int i = 0; i < 100; ++i) submit("filler-" + std::to_string(i), t0, P::High);
    submit_many("late", 200, t0);
    submit_many("b", 200, t0);
    serve(100, t0 + 1s);  // the fillers, by class
    auto n = count(serve(80, t0 + 1s));
    EXPECT_NEAR(n["late"], 60, 1);
    EXPECT_NEAR(n["b"], 20, 1);

    use({});
    running.reset();  // the first engine's
    submit_many("a", 200, t0);
    submit_many("b", 200, t0);
    h->engine.set_fair_weight(pool, "c", 2.0, t0);  // the pool's first weight
    n = count(serve(40, t0 + 1s));
    EXPECT_NEAR(n["a"], 20, 1);
    EXPECT_NEAR(n["b"], 20, 1);
    submit_many("c", 200, t0 + 1s);
    n = count(serve(80, t0 + 1s));
    EXPECT_NEAR(n["c"], 40, 2);
    EXPECT_NEAR(n["a"], 20, 2);
    EXPECT_NEAR(n["b"], 20, 2);
}

TEST_F(FairnessTest, SetFairWeightChecksPoolAndWeight) {
    use({});
    EXPECT_THROW(h->engine.set_fair_weight(pool + 1, "a", 1.0, t0), ConfigError);
    for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
        try {
            h->engine.set_fair_weight(pool, "tenant-7", bad, t0);
            ADD_FAILURE() << "accepted weight " << bad;
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find("fairness.weights[\"tenant-7\"]"), std::string::npos) << e.what();
        }
    }
}

TEST_F(FairnessTest, BadFairnessConfigIsAConfigErrorNamingTheField) {
    const auto error_of = [](FairnessConfig f) -> std::string {
        Engine e;
        PoolConfig pc{"p", 1};
        pc.fairness = std::move(f);
        try {
            e.add_pool(std::move(pc));
        } catch (const ConfigError& err) {
            return err.what();
        }
        return "";
    };
    for (double bad : {0.0, -2.0, std::nan(""), std::numeric_limits<double>::infinity()})
        EXPECT_NE(error_of(FairnessConfig{.weights = {{"k", bad}}}).find("fairness.weights[\"k\"]"), std::string::npos);
    EXPECT_NE(error_of(FairnessConfig{.per_key_concurrency = 0}).find("fairness.per_key_concurrency"),
              std::string::npos);
    EXPECT_EQ(error_of(FairnessConfig{.weights = {{"k", 0.25}}, .per_key_concurrency = 1}), "");
}

// A batch looks each key up by a hash taken one placement ahead
// (Admission::place): the keys are the ones single submissions get.
TEST_F(FairnessTest, ABatchInternsItsKeysAsSingleSubmissionsDo) {
    use({});
    std::vector<TaskSpec> batch;
    for (int i = 0; i < 30; ++i) {
        TaskSpec spec{.pool = pool};
        spec.fair_key = "tenant-with-a-long-name-" + std::to_string(i % 3);
        batch.push_back(spec);
    }
    batch[7].fair_key.clear();
    ASSERT_TRUE(h->submit_batch(batch, t0));
    submit("tenant-with-a-long-name-1", t0);
    EXPECT_EQ(h->engine.known_fair_keys(), 3u);
    const auto top = h->engine.stats(pool, t0).top_keys;
    std::map<std::string, std::size_t> ready;
    for (const FairKeyLoad& k : top) ready[k.key] = k.ready;
    EXPECT_EQ(ready, (std::map<std::string, std::size_t>{{"", 1},
                                                         {"tenant-with-a-long-name-0", 10},
                                                         {"tenant-with-a-long-name-1", 10},
                                                         {"tenant-with-a-long-name-2", 10}}));
}

TEST_F(FairnessTest, IdleKeyHoldsNoState) {
    EngineConfig c;
    c.retention = 0s;
    use({}, 0, c);
    for (int k = 0; k < 50; ++k) submit_many("k" + std::to_string(k), 2, t0);
    EXPECT_EQ(h->engine.stats(pool, t0).active_keys, 50u);
    EXPECT_EQ(h->engine.known_fair_keys(), 50u);
    serve(100, t0 + 1s);
    ASSERT_TRUE(h->complete(running->lease, Outcome::success(), t0 + 1s));
    h->set_capacity(pool, 0, t0 + 1s);
    running.reset();
    h->tick(t0 + 2s);
    EXPECT_EQ(h->engine.stats(pool, t0 + 2s).active_keys, 0u);
    EXPECT_EQ(h->engine.known_fair_keys(), 0u);
    // A key back later starts afresh, with no credit banked while idle.
    submit_many("k1", 5, t0 + 3s);
    submit_many("k2", 5, t0 + 3s);
    EXPECT_NEAR(count(serve(4, t0 + 4s))["k1"], 2, 1);
}

TEST_F(FairnessTest, CancelledTasksReleaseTheirKey) {
    use({});
    const TaskId a = submit("a", t0);
    EXPECT_EQ(h->engine.stats(pool, t0).active_keys, 1u);
    ASSERT_TRUE(h->cancel(a, t0));
    EXPECT_EQ(h->engine.stats(pool, t0).active_keys, 0u);
}

TEST_F(FairnessTest, RestoredTasksKeepTheirKeys) {
    use(FairnessConfig{.per_key_concurrency = 1});
    std::vector<RestoredTask> restored;
    for (std::uint64_t id : {900001, 900002, 900003}) {
        RestoredTask r{.id = TaskId{id}, .spec = TaskSpec{.pool = pool}, .status = TaskStatus::Ready};
        r.spec.fair_key = id == 900003 ? "b" : "a";
        restored.push_back(std::move(r));
    }
    for (const auto& r : h->restore(restored, t0)) ASSERT_TRUE(r.has_value()) << r.message();
    EXPECT_EQ(h->engine.known_fair_keys(), 2u);
    h->set_capacity(pool, 3, t0);
    EXPECT_EQ(h->dispatches().size(), 2u);  // one of a (its cap), one of b
    const PoolStats s = h->engine.stats(pool, t0);
    ASSERT_EQ(s.top_keys.size(), 2u);
    EXPECT_EQ(s.top_keys[0].key, "a");
    EXPECT_EQ(s.top_keys[0].ready, 1u);
    EXPECT_EQ(s.top_keys[0].running, 1u);
}

TEST_F(FairnessTest, StatsShowTopKeysByBacklog) {
    use({}, 1);
    for (int k = 0; k < 12; ++k) submit_many("k" + std::to_string(k), k + 1, t0);
    const PoolStats s = h->engine.stats(pool, t0);
    EXPECT_EQ(s.active_keys, 12u);
    ASSERT_EQ(s.top_keys.size(), 10u);
    EXPECT_EQ(s.top_keys[0].key, "k11");
    EXPECT_EQ(s.top_keys[0].ready, 12u);
    EXPECT_EQ(s.top_keys[9].key, "k2");
    // The first task (k0) runs: its key is active with one running.
    bool seen = false;
    for (const auto& k : s.top_keys) seen = seen || k.key == "k0";
    EXPECT_FALSE(seen);
    EXPECT_EQ(h->engine.counters(pool).running, 1u);
}

}  // namespace
}  // namespace cronoq::core::test::fairness_test
