// A call that only reads the engine (snapshot, status, find, counters)
// holds its mutex like a step does. An attempt that ends meanwhile finds the
// mutex taken and leaves its end to the holder (docs/design.md): the reader must
// serve it on its way out, or the end waits for a next step that may never
// come, and the task's handle never completes.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

namespace engine_reader_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

// Virtual time whose first reading on one chosen thread waits for the test:
// `snapshot()` reads the clock while it holds the engine's mutex, so that
// thread holds it, deterministically, for as long as the test wants.
class GatedClock : public Clock {
public:
    core::Time now() const override {
        if (gated_.load() == std::this_thread::get_id() && !tripped_.exchange(true)) {
            entered_.set_value();
            release_.get_future().wait();
        }
        return inner_->now();
    }
    std::chrono::system_clock::time_point system_now() const override { return inner_->system_now(); }
    std::unique_ptr<Timer> make_timer(asio::any_io_executor executor) override { return inner_->make_timer(executor); }

    void gate_this_thread() { gated_.store(std::this_thread::get_id()); }
    std::future<void> entered() { return entered_.get_future(); }
    void release() { release_.set_value(); }

private:
    std::shared_ptr<ManualClock> inner_ = std::make_shared<ManualClock>();
    std::atomic<std::thread::id> gated_{};
    mutable std::atomic<bool> tripped_{false};
    mutable std::promise<void> entered_;
    mutable std::promise<void> release_;
};

}  // namespace

TEST(EngineReader, AnAttemptThatEndsWhileAReaderHoldsTheEngineIsServedByThatReader) {
    asio::io_context io;
    auto clock = std::make_shared<GatedClock>();
    auto sched = Scheduler<int, int>::builder()
                     .clock(clock)
                     .pool(Pool<int, int>("p").workers(1, 1, 1).retry(RetryPolicy::none()).executor_fn(
                         [](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> { co_return *x * 10; }))
                     .build(io.get_executor());
    auto handle = sched.try_submit(Task<int>(4)).value();  // dispatched: its launch is posted to `io`

    auto entered = clock->entered();
    std::thread reader([&] {
        clock->gate_this_thread();
        (void)sched.snapshot();  // holds the engine's mutex while the clock waits
    });
    entered.wait();
    // The attempt runs and ends on this thread; its end finds the engine's
    // mutex taken by the reader and is left to it.
    io.restart();
    io.poll();
    EXPECT_EQ(handle.status(), TaskStatus::Running);  // its end is not served yet
    clock->release();
    reader.join();

    // The reader served the end before snapshot() returned: no other step
    // ran since (nothing was submitted, no timer is due).
    EXPECT_EQ(sched.status(TaskRef(handle.id())), TaskStatus::Succeeded);
    EXPECT_EQ(handle.status(), TaskStatus::Succeeded);
    EXPECT_EQ(*test::run(io, handle.result()), 40);
    test::run(io, sched.shutdown(0s));
}
}  // namespace engine_reader_test
