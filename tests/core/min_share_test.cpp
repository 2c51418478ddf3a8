// Guaranteed shares (PriorityConfig::min_share): while two or more classes
// have ready work, a class with a share gets at least that share of the
// pool's dispatches, whatever the scores, with its longest-waiting task.
//
// Most tests queue a Critical backlog beside the class with the share: by
// score alone Critical would take every slot, so each dispatch the other
// class gets is the share's.
#include "engine_harness.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <unordered_map>

namespace cronoq::core::test::min_share_test {
namespace {

using P = Priority;
using Ids = std::vector<TaskId>;

EngineConfig with_shares(std::array<double, priority_count> shares) {
    EngineConfig c;
    c.priority.min_share = shares;
    return c;
}

class MinShareTest : public ::testing::Test {
protected:
    void use(EngineConfig config) {
        h = std::make_unique<Harness>(std::move(config));
        pool = h->add_pool(PoolConfig{"p", 0});
    }
    std::vector<TaskId> submit_many(P priority, int n, Time now) {
        std::vector<TaskId> ids;
        for (int i = 0; i < n; ++i) ids.push_back(h->submit(TaskSpec{.pool = pool, .priority = priority}, now));
        return ids;
    }
    P priority_of(TaskId id) const { return classes.at(id.value); }
    void remember(const std::vector<TaskId>& ids, P p) {
        for (TaskId id : ids) classes[id.value] = p;
    }
    /// Opens one slot: the pool's first dispatch decision.
    TaskId open(Time now) {
        h->set_capacity(pool, 1, now);
        running = h->only_dispatch();
        return running.task;
    }
    /// Completes the running task: the pool's next dispatch decision.
    TaskId next(Time now) {
        EXPECT_TRUE(h->complete(running.lease, Outcome::success(), now));
        running = h->only_dispatch();
        return running.task;
    }

    std::unique_ptr<Harness> h;
    PoolId pool = 0;
    std::unordered_map<std::uint64_t, P> classes;
    Dispatch running;
};

TEST_F(MinShareTest, WithoutSharesAContendedLowClassWaitsForTheWholeBacklog) {
    use(EngineConfig{});
    const Ids critical = submit_many(P::Critical, 100, t0);
    const Ids low = submit_many(P::Low, 5, t0);
    const Ids order = h->dispatch_order(pool, t0 + 1s);
    ASSERT_EQ(order.size(), 105u);
    EXPECT_EQ(Ids(order.begin(), order.begin() + 100), critical);
    EXPECT_EQ(Ids(order.begin() + 100, order.end()), low);
}

TEST_F(MinShareTest, LowShareOfATenthTakesEveryTenthDispatchWhileContended) {
    use(with_shares({0, 0, 0, 0.1}));
    remember(submit_many(P::Critical, 100, t0), P::Critical);
    const Ids low = submit_many(P::Low, 30, t0);
    remember(low, P::Low);
    const Ids order = h->dispatch_order(pool, t0 + 1s);
    ASSERT_EQ(order.size(), 130u);
    // 11 stretches of 9 Critical and 1 Low use 99 Critical; the 100th
    // Critical is next, then the Low class is alone.
    for (std::size_t i = 0; i < 110; ++i)
        EXPECT_EQ(priority_of(order[i]), i % 10 == 9 ? P::Low : P::Critical) << "dispatch " << i;
    EXPECT_EQ(priority_of(order[110]), P::Critical);
    // The Low class is served in its own FIFO order.
    Ids low_order;
    for (TaskId id : order)
        if (priority_of(id) == P::Low) low_order.push_back(id);
    EXPECT_EQ(low_order, low);
}

TEST_F(MinShareTest, TwoSharesAreEachHonouredOverALongStretch) {
    use(with_shares({0, 0, 0.05, 0.02}));
    remember(submit_many(P::Critical, 1000, t0), P::Critical);
    remember(submit_many(P::Normal, 200, t0), P::Normal);
    remember(submit_many(P::Low, 200, t0), P::Low);
    const Ids order = h->dispatch_order(pool, t0 + 1s);
    ASSERT_EQ(order.size(), 1400u);
    for (std::size_t n : {100u, 500u, 1000u}) {
        std::array<std::size_t, priority_count> got{};
        for (std::size_t i = 0; i < n; ++i) ++got[index_of(priority_of(order[i]))];
        // Short by at most one: when both are owed a dispatch at the same
        // decision, Normal (more credit, or the better class) goes first
        // and Low gets the next one.
        EXPECT_GE(got[2] + 1, n * 5 / 100) << "first " << n;
        EXPECT_LE(got[2], n * 5 / 100 + 1) << "first " << n;
        EXPECT_GE(got[3] + 1, n * 2 / 100) << "first " << n;
        EXPECT_LE(got[3], n * 2 / 100 + 1) << "first " << n;
        EXPECT_EQ(got[0] + got[2] + got[3], n);
    }
}

TEST_F(MinShareTest, TheShareGoesToTheClassLongestWaitingTask) {
    EngineConfig config = with_shares({0, 0, 0, 0.1});
    config.priority.aging_rate = 0;
    use(config);
    submit_many(P::Critical, 30, t0);
    // By score the urgent deadline task is the Low class's best; the share
    // takes the one that has waited longest.
    const TaskId old_plain = h->submit(TaskSpec{.pool = pool, .priority = P::Low}, t0);
    const TaskId urgent = h->submit(
        TaskSpec{.pool = pool, .priority = P::Low, .deadline = t0 + 12s, .duration_hint = 1s}, t0 + 5s);
    const Ids order = h->dispatch_order(pool, t0 + 11s);
    ASSERT_EQ(order.size(), 32u);
    EXPECT_EQ(order[9], old_plain);
    EXPECT_EQ(order[19], urgent);
}

TEST_F(MinShareTest, TheLongestWaitingTaskMayBeADeadlineTask) {
    // The heads compared for age include the deadline heap's.
    use(with_shares({0, 0, 0, 0.1}));
    submit_many(P::Critical, 30, t0);
    const TaskId old_deadline = h->submit(
        TaskSpec{.pool = pool, .priority = P::Low, .deadline = t0 + 3600s, .duration_hint = 1s}, t0);
    const TaskId young_plain = h->submit(TaskSpec{.pool = pool, .priority = P::Low}, t0 + 5s);
    const Ids order = h->dispatch_order(pool, t0 + 6s);
    ASSERT_EQ(order.size(), 32u);
    EXPECT_EQ(order[9], old_deadline);
    EXPECT_EQ(order[19], young_plain);
}

TEST_F(MinShareTest, AClassAloneEarnsNoCredit) {
    use(with_shares({0, 0, 0, 0.1}));
    remember(submit_many(P::Critical, 100, t0), P::Critical);
    Time now = t0 + 1s;
    open(now);
    for (int i = 0; i < 50; ++i) next(now += 1ms);  // Critical alone: no choice, no credit
    remember(submit_many(P::Low, 5, now), P::Low);
    std::vector<P> after;
    for (int i = 0; i < 10; ++i) after.push_back(priority_of(next(now += 1ms)));
    for (int i = 0; i < 9; ++i) EXPECT_EQ(after[i], P::Critical) << i;
    EXPECT_EQ(after[9], P::Low);
}

TEST_F(MinShareTest, CreditIsDroppedWhenTheClassRunsOutOfReadyTasks) {
    use(with_shares({0, 0, 0, 0.1}));
    remember(submit_many(P::Critical, 100, t0), P::Critical);
    const TaskId first_low = h->submit(TaskSpec{.pool = pool, .priority = P::Low}, t0);
    remember({first_low}, P::Low);
    Time now = t0 + 1s;
    open(now);  // decision 1
    for (int i = 0; i < 8; ++i) EXPECT_EQ(priority_of(next(now += 1ms)), P::Critical);  // decisions 2-9
    // Nine tenths of a dispatch earned; the class empties, and the credit
    // goes with it: a new Low task starts from nothing.
    ASSERT_TRUE(h->cancel(first_low, now));
    remember(submit_many(P::Low, 1, now), P::Low);
    std::vector<P> after;
    for (int i = 0; i < 10; ++i) after.push_back(priority_of(next(now += 1ms)));
    for (int i = 0; i < 9; ++i) EXPECT_EQ(after[i], P::Critical) << i;
    EXPECT_EQ(after[9], P::Low);
}

TEST_F(MinShareTest, DispatchesWonByScoreCountTowardTheShare) {
    // Normal and Low with the same base and no aging tie on score, so they
    // alternate by submission order: Low already has half the dispatches
    // and the share changes nothing.
    EngineConfig config = with_shares({0, 0, 0, 0.3});
    config.priority.base = {10000, 1000, 100, 100};
    config.priority.aging_rate = 0;
    use(config);
    Ids submitted;
    for (int i = 0; i < 20; ++i) {
        submitted.push_back(h->submit(TaskSpec{.pool = pool, .priority = P::Normal}, t0));
        submitted.push_back(h->submit(TaskSpec{.pool = pool, .priority = P::Low}, t0));
    }
    EXPECT_EQ(h->dispatch_order(pool, t0 + 1s), submitted);
}

TEST_F(MinShareTest, UrgentYoungerTasksWonByScoreDoNotUseUpTheShare) {
    // Three overdue Low deadline tasks outscore the High backlog and go
    // first, but none is the Low class's longest-waiting task: the share
    // still reaches the old deadline-free one at the tenth decision.
    use(with_shares({0, 0, 0, 0.1}));
    const TaskId old_plain = h->submit(TaskSpec{.pool = pool, .priority = P::Low}, t0);
    Ids urgent;
    for (int i = 0; i < 3; ++i)
        urgent.push_back(h->submit(
            TaskSpec{.pool = pool, .priority = P::Low, .deadline = t0 + 12s, .duration_hint = 1s}, t0 + 1s));
    submit_many(P::High, 30, t0 + 1s);
    const Ids order = h->dispatch_order(pool, t0 + 20s);
    ASSERT_EQ(order.size(), 34u);
    EXPECT_EQ(Ids(order.begin(), order.begin() + 3), urgent);
    EXPECT_EQ(order[9], old_plain);
}

TEST_F(MinShareTest, ShareDispatchesCountAgainstPriorityAdherence) {
    use(with_shares({0, 0, 0, 0.1}));
    submit_many(P::Critical, 20, t0);
    submit_many(P::Low, 1, t0);
    const Ids order = h->dispatch_order(pool, t0 + 1s);
    ASSERT_EQ(order.size(), 21u);
    const PoolStats stats = h->engine.stats(pool, t0 + 1s);
    ASSERT_TRUE(stats.priority_adherence.has_value());
    // One of the 21 dispatches (the tenth) did not take the best-scored task.
    EXPECT_DOUBLE_EQ(*stats.priority_adherence, 20.0 / 21.0);
}

TEST_F(MinShareTest, EverySharedPoolKeepsItsOwnCredit) {
    use(with_shares({0, 0, 0, 0.5}));
    const PoolId other = h->add_pool(PoolConfig{"q", 0});
    remember(submit_many(P::Critical, 10, t0), P::Critical);
    remember(submit_many(P::Low, 10, t0), P::Low);
    for (int i = 0; i < 10; ++i) h->submit(TaskSpec{.pool = other, .priority = P::Critical}, t0);
    // Dispatches in the other pool (Critical alone) earn nothing here.
    EXPECT_EQ(h->dispatch_order(other, t0 + 1s).size(), 10u);
    const Ids order = h->dispatch_order(pool, t0 + 2s);
    ASSERT_EQ(order.size(), 20u);
    for (std::size_t i = 0; i < 20; ++i)
        EXPECT_EQ(priority_of(order[i]), i % 2 == 1 ? P::Low : P::Critical) << "dispatch " << i;
}

// ---- validation -----------------------------------------------------------------

void expect_share_error(std::array<double, priority_count> shares, const std::string& mentions) {
    try {
        Engine e(with_shares(shares));
        ADD_FAILURE() << "no ConfigError";
    } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("priority.min_share"), std::string::npos) << what;
        EXPECT_NE(what.find(mentions), std::string::npos) << what;
    }
}

TEST(MinShareConfigTest, EachShareMustBeInZeroToOne) {
    const double nan = std::nan("");
    const double inf = std::numeric_limits<double>::infinity();
    expect_share_error({-0.1, 0, 0, 0}, "min_share[0] (critical) must be in [0, 1)");
    expect_share_error({0, 1.0, 0, 0}, "min_share[1] (high) must be in [0, 1)");
    expect_share_error({0, 0, nan, 0}, "min_share[2] (normal)");
    expect_share_error({0, 0, 0, inf}, "min_share[3] (low)");
}

TEST(MinShareConfigTest, SharesMustSumToLessThanOne) {
    expect_share_error({0.25, 0.25, 0.25, 0.25}, "sum to less than 1");
    expect_share_error({0, 0, 0.6, 0.5}, "sum to less than 1");
}

TEST(MinShareConfigTest, SharesBelowOneInAllAreAccepted) {
    EXPECT_NO_THROW(Engine{with_shares({0, 0, 0.05, 0.02})});
    EXPECT_NO_THROW(Engine{with_shares({0.2, 0.2, 0.2, 0.39})});
    EXPECT_NO_THROW(Engine{with_shares({0, 0, 0, 0})});
}

TEST(MinShareConfigTest, DefaultIsNoShares) {
    const PriorityConfig p{};
    for (double s : p.min_share) EXPECT_EQ(s, 0.0);
}

}  // namespace
}  // namespace cronoq::core::test::min_share_test
