// Clock::steady()'s timer: armed later than its wait runs, it leaves the wait
// alone (no handler reaches the io_context), and still fires at the latest
// time it was armed for; armed earlier, it fires earlier. Real time, in
// milliseconds: the waits below are awaited, never slept.
#include <cronoq/clock.hpp>

#include <gtest/gtest.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace steady_timer_test {

using namespace std::chrono_literals;

namespace {

cronoq::core::Time after(std::chrono::nanoseconds d) {
    return cronoq::core::Time(std::chrono::steady_clock::now().time_since_epoch() + d);
}

}  // namespace

// A busy remote pool moves the engine's next wakeup later at nearly every
// step (the oldest lease's TTL); each move used to cancel the Asio wait,
// whose cancelled handler woke the io_context's thread.
TEST(SteadyTimer, ArmingLaterRunsNoHandlerOnTheIoContext) {
    asio::io_context io;
    auto timer = cronoq::Clock::steady()->make_timer(io.get_executor());
    std::atomic<int> fired{0};
    timer->arm(after(1h), [&] { ++fired; });
    EXPECT_EQ(io.poll(), 0u);
    for (int i = 1; i <= 100; ++i) timer->arm(after(1h + i * 1s), [&] { ++fired; });
    EXPECT_EQ(io.poll(), 0u) << "a later arming cancelled the pending wait";
    EXPECT_EQ(fired.load(), 0);
    timer->disarm();
    io.run();  // returns: a disarmed timer leaves no outstanding work
    EXPECT_EQ(fired.load(), 0);
}

TEST(SteadyTimer, FiresOnceAtTheLatestTimeArmedAfterAnEarlierWait) {
    asio::io_context io;
    auto timer = cronoq::Clock::steady()->make_timer(io.get_executor());
    int first = 0, second = 0;
    const auto start = std::chrono::steady_clock::now();
    timer->arm(after(5ms), [&] { ++first; });
    timer->arm(after(30ms), [&] { ++second; });
    io.run();  // the 5 ms wait ends, waits again, and the second callback fires
    EXPECT_EQ(first, 0);
    EXPECT_EQ(second, 1);
    EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
}

TEST(SteadyTimer, ArmingEarlierMovesTheWait) {
    asio::io_context io;
    auto timer = cronoq::Clock::steady()->make_timer(io.get_executor());
    int late = 0, early = 0;
    timer->arm(after(1h), [&] { ++late; });
    timer->arm(after(1ms), [&] { ++early; });
    io.run();  // the cancelled 1 h wait ends as stale, then the 1 ms one fires: nothing is left
    EXPECT_EQ(early, 1);
    EXPECT_EQ(late, 0);
}

// As the scheduler uses it: armed from other threads (gRPC's, a store's)
// while the io_context's thread runs the waits that end.
TEST(SteadyTimer, ArmedFromAnotherThreadWhileItsWaitsEndFiresTheLastArming) {
    asio::io_context io;
    auto guard = asio::make_work_guard(io);
    std::thread runner([&] { io.run(); });
    auto timer = cronoq::Clock::steady()->make_timer(io.get_executor());
    std::atomic<int> stale{0};
    for (int i = 0; i < 2000; ++i) {
        // Earlier and later by turns, some already due: both paths, and
        // waits ending while the next arming comes.
        const auto at = (i % 3 == 0) ? after(std::chrono::microseconds(i % 50)) : after(1h + i * 1ms);
        timer->arm(at, [&] { ++stale; });
    }
    std::promise<void> fired;
    std::atomic<int> last{0};
    timer->arm(after(1ms), [&] {
        if (++last == 1) fired.set_value();
    });
    fired.get_future().wait();
    timer->disarm();
    guard.reset();
    runner.join();
    // Stale callbacks may run (Clock::Timer allows it); the last arming's
    // ran, once.
    EXPECT_EQ(last.load(), 1);
    EXPECT_LE(stale.load(), 2000);
}

}  // namespace steady_timer_test
