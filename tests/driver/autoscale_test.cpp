// Autoscaling through the driver on a ManualClock (SPEC §9): the pool's
// concurrency follows the engine's ScaleTo; a user Scaler.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

asio::awaitable<Result<int>> until_cancelled(TaskContext ctx, std::shared_ptr<const int>) {
    co_await ctx.cancelled();
    co_return TaskError::cancelled();
}

using Fixture = test::VirtualTime;

// Counts the attempts running now.
struct Gauge {
    int running = 0;
    int most = 0;
};

}  // namespace

TEST(Autoscale, ConcurrencyFollowsTheQueueUpAndBackDown) {
    Fixture f;
    Gauge g;
    auto sched = Sched::builder()
                     .clock(f.clock)
                     .pool(Pool<int, int>("p").workers(1, 1, 8).autoscale(AutoscaleConfig{}).executor_fn(
                         [&g](TaskContext ctx, std::shared_ptr<const int> n) -> asio::awaitable<Result<int>> {
                             g.most = std::max(g.most, ++g.running);
                             auto wait = until_cancelled(std::move(ctx), n);
                             auto r = co_await std::move(wait);
                             --g.running;
                             co_return r;
                         }))
                     .build(f.io.get_executor());
    std::vector<TaskHandle<int>> handles;
    for (int i = 0; i < 40; ++i) handles.push_back(sched.try_submit(Task<int>(i)).value());
    for (int s = 0; s < 10; ++s) f.advance(1s);
    EXPECT_EQ(sched.counters("p")->capacity, 8u);
    EXPECT_EQ(g.running, 8);
    EXPECT_EQ(g.most, 8) << "never more attempts than the maximum";
    for (auto& h : handles) h.cancel();
    f.io.poll();
    EXPECT_EQ(g.running, 0);
    for (int s = 0; s < 120; ++s) f.advance(1s);
    EXPECT_EQ(sched.counters("p")->capacity, 1u);
    test::run(f.io, sched.shutdown(0s));
    f.io.restart();
    f.io.run();  // nothing left pending
}

TEST(Autoscale, AUserScalerSetsTheCapacity) {
    struct Fixed {
        std::size_t desired(const ScalerInput& in) { return in.max - 1; }
    };
    Fixture f;
    auto sched = Sched::builder()
                     .clock(f.clock)
                     .pool(Pool<int, int>("p").workers(1, 1, 6).scaler(Fixed{}).executor_fn(until_cancelled))
                     .build(f.io.get_executor());
    for (int i = 0; i < 10; ++i) sched.try_submit(Task<int>(i)).value();
    f.advance(1s);
    EXPECT_EQ(sched.counters("p")->capacity, 5u);
    EXPECT_EQ(sched.counters("p")->running, 5u);
    test::run(f.io, sched.shutdown(0s));
}
