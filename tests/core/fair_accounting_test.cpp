// What fair sharing charges and what it shows others (docs/design.md,
// "Fair sharing"): a dispatch is charged to its key once, even when its task
// waited on a resource in between; the autoscaler's oldest wait is the
// longest-waiting ready task, not the next one the fair order takes.
#include "engine_harness.hpp"

#include <string>
#include <unordered_map>

namespace cronoq::core::test::fair_accounting_test {
namespace {

TaskSpec of_key(PoolId pool, const std::string& key, std::vector<ResourceUse> uses = {}) {
    TaskSpec spec = needing(pool, std::move(uses));
    spec.fair_key = key;
    return spec;
}

}  // namespace

// "a1" is taken in the fair order (its key pays), parked on the semaphore,
// and started when it frees: its key must not pay again. "a2" took the
// second slot meanwhile (and keeps it). Keys "a" and "b" then owe the
// same, and the tie goes to "a", whose tag came first.
TEST(FairAccounting, ATaskParkedOnAResourceIsChargedOnce) {
    Harness h(with_resources({Resource::semaphore("db", 1)}));
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 2});
    std::unordered_map<std::uint64_t, std::string> name;
    std::vector<Dispatch> running;  // what the submissions dispatched
    const auto submit = [&](const std::string& n, const std::string& key, std::vector<ResourceUse> uses = {}) {
        name[h.submit(of_key(pool, key, std::move(uses)), t0).value] = n;
        for (const Dispatch& d : h.dispatches()) running.push_back(d);
    };
    submit("hold", "h", {{"db", 1}});
    ASSERT_EQ(running.size(), 1u);
    const Dispatch hold = running[0];
    running.clear();
    submit("a1", "a", {{"db", 1}});  // taken, parked: "db" is held
    for (int i = 2; i <= 6; ++i) submit("a" + std::to_string(i), "a");
    for (int i = 1; i <= 6; ++i) submit("b" + std::to_string(i), "b");
    // The second slot went to a task submitted while "a1" waited.
    ASSERT_EQ(running.size(), 1u);
    ASSERT_TRUE(h.complete(hold.lease, Outcome::success(), t0 + 1s));
    running = h.dispatches();
    ASSERT_EQ(running.size(), 1u);
    EXPECT_EQ(name[running[0].task.value], "a1");
    // One slot at a time from here: "a3" first (a charged twice would let
    // "b1" go first), then in turns.
    std::vector<std::string> order;
    Time now = t0 + 2s;
    for (int i = 0; i < 9; ++i) {
        ASSERT_TRUE(h.complete(running[0].lease, Outcome::success(), now));
        running = h.dispatches();
        ASSERT_EQ(running.size(), 1u);
        order.push_back(name[running[0].task.value]);
        now += 1s;
    }
    EXPECT_EQ(order, (std::vector<std::string>{"a3", "b1", "a4", "b2", "a5", "b3", "a6", "b4", "b5"}));
}

// "b" weighs more, so its task submitted later is the fair order's next;
// the oldest ready task is still one of "a", waiting since t0.
TEST(FairAccounting, TheAutoscalersOldestWaitIsTheLongestWaitingReadyTask) {
    Harness h;
    PoolConfig c{.name = "p", .capacity = 1, .max_workers = 4, .min_workers = 1};
    AutoscaleConfig autoscale;
    autoscale.interval = 20s;
    c.autoscale = autoscale;
    c.user_scaler = true;
    c.fairness.weights = {{"b", 2.0}};
    const PoolId pool = h.add_pool(c);
    h.submit(of_key(pool, "a"), t0);
    const Dispatch first = h.only_dispatch();
    for (int i = 0; i < 3; ++i) h.submit(of_key(pool, "a"), t0);
    ASSERT_TRUE(h.complete(first.lease, Outcome::success(), t0 + 5s));
    ASSERT_EQ(h.dispatches().size(), 1u);
    h.submit(of_key(pool, "b"), t0 + 10s);
    h.tick(t0 + 20s);
    ASSERT_EQ(h.last_of<AskScaler>().size(), 1u);
    const auto question = h.engine.scaler_question(pool);
    ASSERT_TRUE(question);
    EXPECT_EQ(question->pending[index_of(Priority::Normal)], 3u);
    EXPECT_EQ(question->oldest_wait[index_of(Priority::Normal)], 20s);
}

}  // namespace cronoq::core::test::fair_accounting_test
