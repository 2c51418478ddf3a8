// Where a task's awaiter resumes: in the attempt's completion when that end
// leaves the scheduler idle, after a trip round the io_context otherwise
// (detail/wait_list.hpp, ResumeInPlace).
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <asio/detached.hpp>

#include <optional>

namespace resumption_test {

using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

asio::awaitable<Result<int>> echo(TaskContext, std::shared_ptr<const int> x) { co_return *x; }

Sched one_slot_scheduler(asio::io_context& io) {
    return Sched::builder().pool(Pool<int, int>("p").workers(1, 1, 1).executor_fn(echo)).build(io.get_executor());
}

// Awaits `h`'s result into `got`, then sets `resumed`.
void await_result(asio::io_context& io, TaskHandle<int> h, int& got, bool& resumed) {
    asio::co_spawn(
        io,
        [h, &got, &resumed]() -> asio::awaitable<void> {
            auto wait = h.result();
            got = *co_await std::move(wait);
            resumed = true;
        },
        asio::detached);
}

// Runs `io` one handler at a time until `h` is Succeeded; returns whether
// `resumed` was already set after that handler (the one that ended the
// attempt), or nullopt if `io` ran out of work first.
std::optional<bool> resumed_with_the_end(asio::io_context& io, const TaskHandle<int>& h, const bool& resumed) {
    while (io.run_one())
        if (h.status() == TaskStatus::Succeeded) return resumed;
    return std::nullopt;
}

}  // namespace

TEST(Resumption, AnEndThatLeavesTheSchedulerIdleResumesTheAwaiterInItsOwnHandler) {
    asio::io_context io;
    auto sched = one_slot_scheduler(io);
    auto h = sched.try_submit(Task<int>(5)).value();
    int got = 0;
    bool resumed = false;
    await_result(io, h, got, resumed);
    // The handler after which the task is Succeeded (the attempt's
    // completion) has resumed the awaiter too.
    EXPECT_EQ(resumed_with_the_end(io, h, resumed), std::optional<bool>(true));
    EXPECT_EQ(got, 5);
}

TEST(Resumption, AnEndThatStartsTheNextTaskPostsTheAwaiter) {
    asio::io_context io;
    auto sched = one_slot_scheduler(io);
    auto first = sched.try_submit(Task<int>(1)).value();
    auto second = sched.try_submit(Task<int>(2)).value();  // queued behind it: one slot
    int got = 0;
    bool resumed = false;
    await_result(io, first, got, resumed);
    // Busy (the second task starts): the awaiter goes round the queue,
    // behind work already there.
    EXPECT_EQ(resumed_with_the_end(io, first, resumed), std::optional<bool>(false));
    io.run();
    EXPECT_TRUE(resumed);
    EXPECT_EQ(got, 1);
    EXPECT_EQ(second.status(), TaskStatus::Succeeded);
}

// A coroutine resumed in place runs free of the driver's locks (it submits
// again at once) and on a stack that does not grow from one round trip to
// the next: each resumption returns before the next one starts.
TEST(Resumption, ChainedRoundTripsResumedInPlaceNeitherBlockNorNest) {
    asio::io_context io;
    auto sched = one_slot_scheduler(io);
    constexpr int rounds = 20000;
    const long long sum = test::run(io, [&]() -> asio::awaitable<long long> {
        long long total = 0;
        for (int i = 0; i < rounds; ++i) {
            auto h = sched.try_submit(Task<int>(i)).value();
            auto wait = h.result();
            total += *co_await std::move(wait);
        }
        co_return total;
    }());
    EXPECT_EQ(sum, static_cast<long long>(rounds) * (rounds - 1) / 2);
}

}  // namespace resumption_test
