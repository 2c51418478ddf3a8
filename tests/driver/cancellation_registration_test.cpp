// CancellationToken::on_cancel returns a registration that takes the
// callback back (docs/guide/executors.md).
#include "driver_harness.hpp"

#include <asio/use_awaitable.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cancellation_registration_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

struct Log {
    std::mutex mu;
    std::vector<std::string> lines;
    void add(std::string s) {
        std::lock_guard lock(mu);
        lines.push_back(std::move(s));
    }
    std::vector<std::string> get() {
        std::lock_guard lock(mu);
        return lines;
    }
};

// Runs one task of `fn` until it is running, cancels it, and runs the
// io_context to its end: the task must end Cancelled.
template <class F>
void run_and_cancel(F fn) {
    asio::io_context io;
    auto sched = Sched::builder().pool(Pool<int, int>("p").executor_fn(std::move(fn))).build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    io.poll();
    ASSERT_EQ(h.status(), TaskStatus::Running);
    EXPECT_TRUE(h.cancel());
    io.run();
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
}

}  // namespace

TEST(CancellationRegistration, ARemovedCallbackNeverRunsAndTheOthersDo) {
    auto log = std::make_shared<Log>();
    auto removed = std::make_shared<std::vector<bool>>();
    auto after = std::make_shared<std::optional<CancellationRegistration>>();
    run_and_cancel([log, removed, after](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
        auto token = ctx.cancellation_token();
        token.on_cancel([log] { log->add("first"); });
        auto second = token.on_cancel([log] { log->add("second"); });
        *after = token.on_cancel([log] { log->add("third"); });
        removed->push_back(second.remove());
        removed->push_back(second.remove());  // once only
        co_await ctx.cancelled();
        co_return TaskError::cancelled();
    });
    EXPECT_EQ(*removed, (std::vector<bool>{true, false}));
    EXPECT_EQ(log->get(), (std::vector<std::string>{"first", "third"}));
    // The third ran: too late to take back.
    ASSERT_TRUE(after->has_value());
    EXPECT_FALSE((*after)->remove());
}

TEST(CancellationRegistration, RegisteringOnAFiredTokenRunsAtOnceAndRemovesNothing) {
    auto ran = std::make_shared<int>(0);
    auto removed = std::make_shared<std::optional<bool>>();
    run_and_cancel([ran, removed](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
        co_await ctx.cancelled();
        auto reg = ctx.cancellation_token().on_cancel([ran] { ++*ran; });
        *removed = reg.remove();
        co_return TaskError::cancelled();
    });
    EXPECT_EQ(*ran, 1);
    ASSERT_TRUE(removed->has_value());
    EXPECT_FALSE(**removed);
    EXPECT_FALSE(CancellationRegistration{}.remove());
}

// `remove` on one thread while the callback runs on another waits for it to
// return: what the callback uses may be destroyed right after.
TEST(CancellationRegistration, RemoveWaitsForACallbackRunningOnAnotherThread) {
    asio::io_context io;
    std::atomic<bool> entered{false}, removing{false}, returned{false};
    std::promise<CancellationRegistration> registered;
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             registered.set_value(ctx.cancellation_token().on_cancel([&] {
                                 entered = true;
                                 while (!removing) std::this_thread::yield();
                                 // Give a `remove` that would not wait the time to return first.
                                 std::this_thread::sleep_for(20ms);
                                 returned = true;
                             }));
                             co_await ctx.cancelled();
                             co_return TaskError::cancelled();
                         }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    auto reg = registered.get_future();
    io.poll();
    ASSERT_EQ(h.status(), TaskStatus::Running);
    CancellationRegistration registration = reg.get();
    std::thread canceller([&] {
        h.cancel();
        io.run();
    });
    while (!entered) std::this_thread::yield();
    removing = true;
    EXPECT_FALSE(registration.remove());
    EXPECT_TRUE(returned) << "remove returned while the callback still ran";
    canceller.join();
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
}

// A callback may take itself back: that returns false at once instead of
// waiting for itself.
TEST(CancellationRegistration, RemovingItselfFromInsideTheCallbackDoesNotWait) {
    auto inner = std::make_shared<std::optional<bool>>();
    auto reg = std::make_shared<CancellationRegistration>();
    run_and_cancel([inner, reg](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
        *reg = ctx.cancellation_token().on_cancel([inner, reg] { *inner = reg->remove(); });
        co_await ctx.cancelled();
        co_return TaskError::cancelled();
    });
    ASSERT_TRUE(inner->has_value());
    EXPECT_FALSE(**inner);
}
}  // namespace cancellation_registration_test
