// Fair sharing through the driver (docs/guide/fairness.md): Task::fair_key,
// Pool::fairness, set_fair_weight, the key in TaskContext, StatusEvent and
// the snapshot. One worker slot and a ManualClock: the order of dispatches
// is the engine's, with no timing in it.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace fairness_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

// Records the fair key of each attempt, in the order they start; a
// negative payload waits until the task is cancelled (it holds its slot).
struct Recorder {
    std::vector<std::string> keys;

    Pool<int, int> pool(std::size_t slots) {
        return Pool<int, int>("p").workers(1, slots, slots).executor_fn(
            [this](TaskContext ctx, std::shared_ptr<const int> n) -> asio::awaitable<Result<int>> {
                keys.push_back(ctx.fair_key());
                if (*n < 0) {
                    co_await ctx.cancelled();
                    co_return TaskError::cancelled();
                }
                co_return *n;
            });
    }
};

std::size_t count_of(const std::vector<std::string>& keys, std::size_t first, const std::string& key) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < first && i < keys.size(); ++i) n += keys[i] == key;
    return n;
}

}  // namespace

TEST(DriverFairness, ASmallKeyIsNotStarvedByAFloodSubmittedBeforeIt) {
    asio::io_context io;
    Recorder r;
    auto sched = Sched::builder().clock(std::make_shared<ManualClock>()).pool(r.pool(1)).build(io.get_executor());
    auto blocker = sched.try_submit(Task<int>(-1).fair_key("blocker")).value();
    for (int i = 0; i < 8; ++i) sched.try_submit(Task<int>(i).fair_key("flood")).value();
    for (int i = 0; i < 2; ++i) sched.try_submit(Task<int>(i).fair_key("small")).value();
    io.poll();
    ASSERT_TRUE(sched.cancel(blocker.id()));
    io.restart();
    io.poll();
    ASSERT_EQ(r.keys.size(), 11u);
    // FIFO would run "small" 10th and 11th; with equal weights it alternates.
    EXPECT_EQ(count_of(r.keys, 5, "small"), 2u) << ::testing::PrintToString(r.keys);
}

TEST(DriverFairness, TasksWithoutAKeyShareTheEmptyKey) {
    asio::io_context io;
    Recorder r;
    auto sched = Sched::builder().clock(std::make_shared<ManualClock>()).pool(r.pool(1)).build(io.get_executor());
    auto blocker = sched.try_submit(Task<int>(-1)).value();
    for (int i = 0; i < 4; ++i) sched.try_submit(Task<int>(i)).value();
    for (int i = 0; i < 4; ++i) sched.try_submit(Task<int>(i).fair_key("")).value();
    sched.try_submit(Task<int>(0).fair_key("other")).value();
    io.poll();
    ASSERT_TRUE(sched.cancel(blocker.id()));
    io.restart();
    io.poll();
    ASSERT_EQ(r.keys.size(), 10u);
    EXPECT_EQ(r.keys[0], "");
    // The eight tasks without a key are one key: "other" takes the second
    // turn after the blocker, not the last.
    EXPECT_EQ(r.keys[2], "other") << ::testing::PrintToString(r.keys);
}

TEST(DriverFairness, ConfiguredAndRunTimeWeightsShareDispatches) {
    asio::io_context io;
    Recorder r;
    auto sched = Sched::builder()
                     .clock(std::make_shared<ManualClock>())
                     .pool(r.pool(1).fairness(FairnessConfig{{{"a", 3.0}}, std::nullopt}))
                     .build(io.get_executor());
    auto blocker = sched.try_submit(Task<int>(-1).fair_key("blocker")).value();
    for (int i = 0; i < 12; ++i) sched.try_submit(Task<int>(i).fair_key("a")).value();
    for (int i = 0; i < 12; ++i) sched.try_submit(Task<int>(i).fair_key("b")).value();
    for (int i = 0; i < 12; ++i) sched.try_submit(Task<int>(i).fair_key("c")).value();
    // From another thread, as an operator would: "c" now weighs as "a".
    std::thread other([&] { sched.set_fair_weight("p", "c", 3.0); });
    other.join();
    io.poll();
    ASSERT_TRUE(sched.cancel(blocker.id()));
    io.restart();
    io.poll();
    ASSERT_EQ(r.keys.size(), 37u);
    // Of the first 14 after the blocker: 3 : 1 : 3, each within one
    // dispatch ("c" took its first step at weight 1, before the change).
    const std::vector<std::string> first(r.keys.begin() + 1, r.keys.begin() + 15);
    EXPECT_NEAR(static_cast<double>(count_of(first, 14, "a")), 6, 1) << ::testing::PrintToString(first);
    EXPECT_EQ(count_of(first, 14, "b"), 2u) << ::testing::PrintToString(first);
    EXPECT_NEAR(static_cast<double>(count_of(first, 14, "c")), 6, 1) << ::testing::PrintToString(first);
    // Without the change, "c" would weigh as "b".
    EXPECT_GE(count_of(first, 14, "c"), 5u) << ::testing::PrintToString(first);
}

TEST(DriverFairness, APerKeyCapHoldsTheKeyBackAndNotTheOthers) {
    asio::io_context io;
    Recorder r;
    auto sched = Sched::builder()
                     .clock(std::make_shared<ManualClock>())
                     .pool(r.pool(4).fairness(FairnessConfig{{}, 2u}))
                     .build(io.get_executor());
    std::vector<TaskId> ids;
    for (int i = 0; i < 5; ++i) ids.push_back(sched.try_submit(Task<int>(-1).fair_key("big")).value().id());
    ids.push_back(sched.try_submit(Task<int>(-1).fair_key("small")).value().id());
    io.poll();
    EXPECT_EQ(count_of(r.keys, r.keys.size(), "big"), 2u);
    EXPECT_EQ(count_of(r.keys, r.keys.size(), "small"), 1u);

    const Snapshot snap = sched.snapshot();
    const PoolSnapshot& p = snap.pools.at(0);
    EXPECT_EQ(p.busy, 3u);
    EXPECT_EQ(p.active_keys, 2u);
    ASSERT_EQ(p.top_keys.size(), 2u);
    EXPECT_EQ(p.top_keys[0].key, "big");
    EXPECT_EQ(p.top_keys[0].ready, 3u);
    EXPECT_EQ(p.top_keys[0].running, 2u);
    EXPECT_EQ(p.top_keys[1].key, "small");
    EXPECT_EQ(p.top_keys[1].ready, 0u);
    EXPECT_EQ(p.top_keys[1].running, 1u);

    const nlohmann::json j = snap.to_json()["pools"][0];
    EXPECT_EQ(j["active_keys"], 2);
    ASSERT_EQ(j["top_keys"].size(), 2u);
    EXPECT_EQ(j["top_keys"][0], (nlohmann::json{{"key", "big"}, {"ready", 3}, {"running", 2}}));
    EXPECT_EQ(j["top_keys"][1], (nlohmann::json{{"key", "small"}, {"ready", 0}, {"running", 1}}));

    // The attempts wait for their cancel: without it their coroutines, and
    // the scheduler they hold, would outlive the test.
    for (const TaskId id : ids) EXPECT_TRUE(sched.cancel(id));
    io.restart();
    io.poll();
    EXPECT_EQ(sched.snapshot().pools.at(0).busy, 0u);
}

TEST(DriverFairness, TopKeysAreTheTenWithTheMostReady) {
    asio::io_context io;
    Recorder r;
    auto sched = Sched::builder().clock(std::make_shared<ManualClock>()).pool(r.pool(1)).build(io.get_executor());
    auto blocker = sched.try_submit(Task<int>(-1).fair_key("blocker")).value();
    for (int k = 0; k < 12; ++k)
        for (int i = 0; i <= k; ++i) sched.try_submit(Task<int>(i).fair_key("k" + std::to_string(k))).value();
    io.poll();
    const PoolSnapshot p = sched.snapshot().pools.at(0);
    EXPECT_EQ(p.active_keys, 13u);
    ASSERT_EQ(p.top_keys.size(), 10u);
    for (std::size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(p.top_keys[i].key, "k" + std::to_string(11 - i));
        EXPECT_EQ(p.top_keys[i].ready, 12 - i);
        EXPECT_EQ(p.top_keys[i].running, 0u);
    }
    ASSERT_TRUE(sched.cancel(blocker.id()));
    io.restart();
    io.poll();
    EXPECT_EQ(sched.snapshot().pools.at(0).active_keys, 0u);
}

TEST(DriverFairness, StatusEventsCarryTheFairKey) {
    asio::io_context io;
    Recorder r;
    auto sched = Sched::builder().clock(std::make_shared<ManualClock>()).pool(r.pool(1)).build(io.get_executor());
    auto stream = sched.subscribe();
    auto h = sched.try_submit(Task<int>(3).fair_key("tenant-7")).value();
    auto plain = sched.try_submit(Task<int>(4)).value();
    io.poll();
    ASSERT_EQ(h.status(), TaskStatus::Succeeded);
    ASSERT_EQ(plain.status(), TaskStatus::Succeeded);
    std::size_t seen = 0;
    while (auto e = stream.try_next()) {
        EXPECT_EQ(e->fair_key, e->id == h.id() ? "tenant-7" : "");
        ++seen;
    }
    EXPECT_EQ(seen, 6u);
    EXPECT_EQ(r.keys, (std::vector<std::string>{"tenant-7", ""}));
}

TEST(DriverFairness, BadWeightsCapsAndPoolsAreConfigErrorsNamingTheField) {
    asio::io_context io;
    Recorder r;
    const auto build_with = [&](FairnessConfig config) {
        return Sched::builder().pool(r.pool(1).fairness(std::move(config))).build(io.get_executor());
    };
    const auto message_of = [&](FairnessConfig config) -> std::string {
        try {
            build_with(std::move(config));
        } catch (const ConfigError& e) {
            return e.what();
        }
        return "no error";
    };
    EXPECT_NE(message_of({{{"acme", 0.0}}, std::nullopt}).find("weights[\"acme\"]"), std::string::npos);
    EXPECT_NE(message_of({{{"acme", -1.0}}, std::nullopt}).find("acme"), std::string::npos);
    EXPECT_NE(message_of({{{"nan", std::nan("")}}, std::nullopt}).find("nan"), std::string::npos);
    EXPECT_NE(message_of({{{"inf", std::numeric_limits<double>::infinity()}}, std::nullopt}).find("inf"),
              std::string::npos);
    EXPECT_NE(message_of({{}, 0u}).find("per_key_concurrency"), std::string::npos);

    auto sched = build_with({});
    EXPECT_THROW(sched.set_fair_weight("nope", "a", 1.0), ConfigError);
    EXPECT_THROW(sched.set_fair_weight("p", "a", 0.0), ConfigError);
    EXPECT_THROW(sched.set_fair_weight("p", "a", std::numeric_limits<double>::infinity()), ConfigError);
    EXPECT_NO_THROW(sched.set_fair_weight("p", "a", 2.5));
}

TEST(DriverFairness, TheBlockingSchedulerSetsWeightsToo) {
    Recorder r;
    auto sched = BlockingScheduler<int, int>::builder().threads(1).pool(r.pool(1)).build();
    EXPECT_THROW(sched.set_fair_weight("nope", "a", 1.0), ConfigError);
    EXPECT_THROW(sched.set_fair_weight("p", "a", -2.0), ConfigError);
    EXPECT_NO_THROW(sched.set_fair_weight("p", "a", 2.0));
    EXPECT_EQ(*sched.submit(Task<int>(5).fair_key("a")).get(), 5);
    EXPECT_EQ(r.keys, std::vector<std::string>{"a"});
}

}  // namespace fairness_test
