// A paused pool with a store (docs/store.md, "Paused pools"), on each
// backend: the pause is committed and a new leader recovers the pool
// paused, its tasks kept and not started; a resume is committed too.
#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <string>

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

class DurablePause : public ::testing::TestWithParam<test::Backend> {};

std::atomic<int> runs{0};

Pool<std::string, std::string> counting_pool(std::string name) {
    return Pool<std::string, std::string>(std::move(name))
        .workers(1, 1, 1)
        .executor_fn([](TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            ++runs;
            co_return *s + "!";
        });
}

test::Durable open(const test::TestStore& store) {
    return test::Durable::builder().threads(1).pool(counting_pool("p")).pool(counting_pool("q")).store(store.open()).open();
}

}  // namespace

TEST_P(DurablePause, APausedPoolStaysPausedAcrossARestartWithItsTasks) {
    test::TestStore store(GetParam());
    runs = 0;
    TaskId kept{};
    {
        auto sched = open(store);
        EXPECT_TRUE(sched.pause("p"));
        EXPECT_TRUE(sched.pause("q"));
        EXPECT_TRUE(sched.resume("q"));  // a resume is written too
        kept = sched.submit(Task<std::string>("a").pool("p")).id();
        sched.flush();
        EXPECT_EQ(sched.status(TaskRef(kept)), TaskStatus::Ready);
        sched.shutdown(0s);
    }
    auto sched = open(store);
    EXPECT_EQ(sched.status(TaskRef(kept)), TaskStatus::Ready) << "recovered, and not started";
    const Snapshot snap = sched.snapshot();
    ASSERT_EQ(snap.pools.size(), 2u);
    EXPECT_TRUE(snap.pools[0].paused);
    EXPECT_FALSE(snap.pools[1].paused);
    EXPECT_EQ(runs.load(), 0);
    EXPECT_TRUE(sched.resume("p"));
    auto h = sched.find(TaskRef(kept));
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(*h->get(), "a!");
    sched.shutdown(0s);

    auto again = open(store);
    EXPECT_FALSE(again.snapshot().pools[0].paused) << "the resume was committed";
    again.shutdown(0s);
}

INSTANTIATE_TEST_SUITE_P(Stores, DurablePause, ::testing::ValuesIn(test::tested_backends()), test::BackendName{});
