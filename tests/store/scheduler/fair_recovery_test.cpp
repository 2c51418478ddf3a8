// Fair keys and the weights `set_fair_weight` sets survive a restart on
// every backend (docs/store.md, "Fair weights"): the recovered tasks keep
// their keys (in the store, in TaskContext) and share one worker slot by
// the weights set before the restart.
#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

namespace fair_recovery_test {

using namespace std::chrono_literals;
using namespace cronoq;
using test::Backend;
using test::Durable;

namespace {

class FairRecovery : public ::testing::TestWithParam<Backend> {};

// The fair keys of the attempts, in the order they started.
struct Started {
    bool blocks = false;  // whether "block" holds its slot
    std::mutex mu;
    std::vector<std::string> keys;

    Pool<std::string, std::string> pool() {
        return Pool<std::string, std::string>("p").workers(1, 1, 1).executor_fn(
            [this](TaskContext ctx, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
                {
                    std::lock_guard lock(mu);
                    keys.push_back(ctx.fair_key());
                }
                if (*s == "block" && blocks) {  // holds the slot until the shutdown
                    co_await ctx.cancelled();
                    co_return TaskError::cancelled();
                }
                co_return *s + "!";
            });
    }
};

}  // namespace

TEST_P(FairRecovery, KeysAndRunTimeWeightsComeBackAfterARestart) {
    test::TestStore store(GetParam());
    std::vector<TaskId> a_ids;
    {
        Started first;
        first.blocks = true;
        auto sched = Durable::builder().threads(2).pool(first.pool()).store(store.open()).open();
        sched.submit(Task<std::string>("block").fair_key("x"));
        for (int i = 0; i < 12; ++i) a_ids.push_back(sched.submit(Task<std::string>("a").fair_key("a")).id());
        for (int i = 0; i < 12; ++i) sched.submit(Task<std::string>("b").fair_key("b"));
        sched.set_fair_weight("p", "a", 3.0);
        EXPECT_THROW(sched.set_fair_weight("q", "a", 3.0), ConfigError);
        sched.shutdown(0s);
    }
    Started second;
    auto opened = store.open();
    auto sched = Durable::builder().threads(2).pool(second.pool()).store(opened).open();
    EXPECT_EQ(opened->get_task(TaskRef(a_ids[0]))->fair_key, "a");
    auto found = sched.find(TaskRef(a_ids.back()));
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(*found->get(), "a!");
    std::vector<std::string> ab;
    {
        std::lock_guard lock(second.mu);
        for (const auto& k : second.keys)
            if (k != "x") ab.push_back(k);
    }
    ASSERT_GE(ab.size(), 8u) << ::testing::PrintToString(second.keys);
    // FIFO would start twelve "a" first; equal weights, four of each.
    const auto a_first = std::count(ab.begin(), ab.begin() + 8, "a");
    EXPECT_EQ(a_first, 6) << ::testing::PrintToString(second.keys);
    sched.shutdown(0s);
}

INSTANTIATE_TEST_SUITE_P(Stores, FairRecovery, ::testing::ValuesIn(test::tested_backends()), test::BackendName{});

}  // namespace fair_recovery_test
