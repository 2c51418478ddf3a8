// Autoscaling through the driver on a ManualClock (docs/guide/resources-and-bounds.md): the pool's
// concurrency follows the engine's ScaleTo; a user Scaler, called outside
// the scheduler's locks.
#include "driver_harness.hpp"

#include <cronoq/diagnostics.hpp>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>
#include <stdexcept>
#include <vector>

namespace autoscale_test {

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
    EXPECT_EQ(cronoq::diagnostics::counters(sched, "p")->capacity, 8u);
    EXPECT_EQ(g.running, 8);
    EXPECT_EQ(g.most, 8) << "never more attempts than the maximum";
    for (auto& h : handles) h.cancel();
    f.io.poll();
    EXPECT_EQ(g.running, 0);
    for (int s = 0; s < 120; ++s) f.advance(1s);
    EXPECT_EQ(cronoq::diagnostics::counters(sched, "p")->capacity, 1u);
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
    EXPECT_EQ(cronoq::diagnostics::counters(sched, "p")->capacity, 5u);
    EXPECT_EQ(cronoq::diagnostics::counters(sched, "p")->running, 5u);
    test::run(f.io, sched.shutdown(0s));
}

namespace {

asio::awaitable<Result<int>> echo(TaskContext, std::shared_ptr<const int> n) { co_return *n; }

// What a scaler that calls back into its scheduler saw.
struct CallBacks {
    Sched* scheduler = nullptr;  // set once built; the scheduler owns the scaler, so no owning reference
    std::vector<std::size_t> snapshot_capacity;
    std::vector<TaskHandle<int>> submitted;
};

struct CallingBack {
    std::shared_ptr<CallBacks> seen;
    std::size_t desired(const ScalerInput& in) {
        Sched& s = *seen->scheduler;
        seen->snapshot_capacity.push_back(s.snapshot().pools.at(0).capacity);
        if (seen->submitted.empty()) seen->submitted.push_back(s.try_submit(Task<int>(7)).value());
        EXPECT_TRUE(s.status(seen->submitted.front().id()).has_value());
        return in.max - 1;
    }
};

}  // namespace

// docs/design.md: nothing runs under the engine's lock that can run outside it,
// user Scaler calls included. This scaler takes a snapshot and submits;
// when the engine called it under its lock, the first call deadlocked.
TEST(Autoscale, AScalerMayCallBackIntoTheScheduler) {
    Fixture f;
    auto seen = std::make_shared<CallBacks>();
    auto sched = Sched::builder()
                     .clock(f.clock)
                     .pool(Pool<int, int>("p").workers(1, 1, 4).scaler(CallingBack{seen}).executor_fn(echo))
                     .build(f.io.get_executor());
    seen->scheduler = &sched;
    auto first = sched.try_submit(Task<int>(1)).value();  // starts the engine's clock
    EXPECT_EQ(*test::run(f.io, first.result()), 1);
    f.advance(1s);
    ASSERT_EQ(seen->snapshot_capacity.size(), 1u) << "asked once, one interval after start";
    EXPECT_EQ(seen->snapshot_capacity.front(), 1u) << "the capacity stays until the answer";
    EXPECT_EQ(cronoq::diagnostics::counters(sched, "p")->capacity, 3u);
    ASSERT_EQ(seen->submitted.size(), 1u);
    EXPECT_EQ(*test::run(f.io, seen->submitted.front().result()), 7) << "a task submitted by the scaler runs";
    f.advance(1s);
    EXPECT_EQ(seen->snapshot_capacity.size(), 2u);
    EXPECT_EQ(seen->snapshot_capacity.back(), 3u) << "the next call sees the answer applied";
    test::run(f.io, sched.shutdown(0s));
}

// A scaler that throws keeps the capacity; one warning names the pool when
// it starts throwing, not one per evaluation.
TEST(Autoscale, AThrowingScalerKeepsTheCapacityAndIsReportedOnce) {
    struct Throwing {
        std::shared_ptr<int> calls;
        std::size_t desired(const ScalerInput&) {
            ++*calls;
            throw std::runtime_error("no metrics");
        }
    };
    auto calls = std::make_shared<int>(0);
    const auto saved = logger();
    std::ostringstream out;
    auto custom = std::make_shared<spdlog::logger>("cronoq", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
    custom->set_level(spdlog::level::warn);
    set_logger(custom);
    {
        Fixture f;
        auto sched = Sched::builder()
                         .clock(f.clock)
                         .pool(Pool<int, int>("p").workers(1, 2, 6).scaler(Throwing{calls}).executor_fn(until_cancelled))
                         .build(f.io.get_executor());
        for (int i = 0; i < 4; ++i) sched.try_submit(Task<int>(i)).value();
        for (int s = 0; s < 3; ++s) f.advance(1s);
        EXPECT_EQ(*calls, 3) << "asked once per interval";
        EXPECT_EQ(cronoq::diagnostics::counters(sched, "p")->capacity, 2u);
        EXPECT_EQ(cronoq::diagnostics::counters(sched, "p")->running, 2u);
        test::run(f.io, sched.shutdown(0s));
    }
    set_logger(saved);
    const std::string text = out.str();
    const std::string line = "pool \"p\": the scaler threw (no metrics)";
    const auto first = text.find(line);
    ASSERT_NE(first, std::string::npos) << text;
    EXPECT_EQ(text.find("the scaler threw", first + line.size()), std::string::npos) << "reported more than once:\n"
                                                                                      << text;
}
}  // namespace autoscale_test
