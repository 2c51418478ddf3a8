// Scheduler::pause and resume (docs/guide/operations.md, "Pause and
// resume"): a paused pool keeps what it admits and starts none of it,
// running attempts finish, the snapshot and its JSON show it.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <cronoq/prometheus.hpp>

#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include <nlohmann/json.hpp>

namespace pause_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

// Attempts of input 0 wait until `release` is cancelled; others return
// their input. `runs` counts attempts started.
struct Work {
    std::shared_ptr<int> runs = std::make_shared<int>(0);
    std::shared_ptr<asio::steady_timer> release;

    explicit Work(asio::io_context& io) : release(std::make_shared<asio::steady_timer>(io)) {
        release->expires_at(asio::steady_timer::time_point::max());
    }
    Pool<int, int> pool(std::string name) const {
        return Pool<int, int>(std::move(name)).workers(1, 2, 2).executor_fn(
            [runs = runs, release = release](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                ++*runs;
                if (*x == 0) {
                    asio::error_code ignored;
                    co_await release->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
                }
                co_return *x;
            });
    }
};

const PoolSnapshot* pool_of(const Snapshot& s, std::string_view name) {
    for (const PoolSnapshot& p : s.pools)
        if (p.name == name) return &p;
    return nullptr;
}

}  // namespace

TEST(Pause, APausedPoolKeepsItsTasksAndRunsThemWhenResumed) {
    test::VirtualTime vt;
    Work work(vt.io);
    auto sched = Scheduler<int, int>::builder().clock(vt.clock).pool(work.pool("p")).pool(work.pool("other")).build(vt.io.get_executor());
    EXPECT_TRUE(sched.pause("p"));
    EXPECT_TRUE(sched.pause("p")) << "already paused is still true";
    std::vector<TaskHandle<int>> handles;
    for (int i = 1; i <= 3; ++i) handles.push_back(sched.try_submit(Task<int>(i).pool("p")).value());
    auto elsewhere = sched.try_submit(Task<int>(7).pool("other")).value();
    vt.advance(10s);
    EXPECT_EQ(*work.runs, 1) << "only the other pool's task ran";
    EXPECT_EQ(elsewhere.status(), TaskStatus::Succeeded);
    for (auto& h : handles) EXPECT_EQ(h.status(), TaskStatus::Ready);

    const Snapshot snap = sched.snapshot();
    ASSERT_TRUE(pool_of(snap, "p"));
    EXPECT_TRUE(pool_of(snap, "p")->paused);
    EXPECT_FALSE(pool_of(snap, "other")->paused);
    const nlohmann::json j = snap.to_json();
    EXPECT_EQ(j["pools"][0]["paused"], true);
    EXPECT_EQ(j["pools"][1]["paused"], false);
    EXPECT_NE(prometheus_text(snap).find("cronoq_pool_paused{pool=\"p\"} 1\n"), std::string::npos);

    EXPECT_TRUE(sched.resume("p"));
    vt.advance(0s);
    for (auto& h : handles) EXPECT_EQ(h.status(), TaskStatus::Succeeded);
    EXPECT_EQ(*work.runs, 4);
    EXPECT_FALSE(sched.snapshot().pools[0].paused);
    test::run(vt.io, sched.shutdown(0s));
}

TEST(Pause, RunningAttemptsFinishWhilePaused) {
    test::VirtualTime vt;
    Work work(vt.io);
    auto sched = Scheduler<int, int>::builder().clock(vt.clock).pool(work.pool("p")).build(vt.io.get_executor());
    auto running = sched.try_submit(Task<int>(0).pool("p")).value();
    vt.advance(0s);
    EXPECT_EQ(running.status(), TaskStatus::Running);
    EXPECT_TRUE(sched.pause("p"));
    auto queued = sched.try_submit(Task<int>(5).pool("p")).value();
    work.release->cancel();
    vt.advance(1s);
    EXPECT_EQ(running.status(), TaskStatus::Succeeded) << "a pause aborts nothing";
    EXPECT_EQ(queued.status(), TaskStatus::Ready);
    EXPECT_EQ(*work.runs, 1);
    sched.resume("p");
    vt.advance(0s);
    EXPECT_EQ(queued.status(), TaskStatus::Succeeded);
    test::run(vt.io, sched.shutdown(0s));
}

TEST(Pause, AnUnknownPoolIsFalse) {
    test::VirtualTime vt;
    Work work(vt.io);
    auto sched = Scheduler<int, int>::builder().clock(vt.clock).pool(work.pool("p")).build(vt.io.get_executor());
    EXPECT_FALSE(sched.pause("nope"));
    EXPECT_FALSE(sched.resume("nope"));
    EXPECT_TRUE(sched.resume("p")) << "resuming a running pool is true";
    test::run(vt.io, sched.shutdown(0s));
}

TEST(Pause, TheBlockingSchedulerPausesAndResumes) {
    auto sched = BlockingScheduler<int, int>::builder()
                     .threads(2)
                     .pool(Pool<int, int>("p").executor_fn(
                         [](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> { co_return *x * 2; }))
                     .build();
    EXPECT_TRUE(sched.pause("p"));
    auto h = sched.submit(Task<int>(21));
    EXPECT_EQ(h.status(), TaskStatus::Ready) << "a paused pool starts nothing";
    EXPECT_TRUE(sched.snapshot().pools[0].paused);
    EXPECT_TRUE(sched.resume("p"));
    EXPECT_EQ(*h.get(), 42);
    EXPECT_FALSE(sched.pause("nope"));
}

}  // namespace pause_test
