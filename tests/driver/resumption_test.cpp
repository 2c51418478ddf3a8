// Where an attempt ends and a task's awaiter resumes. An attempt whose
// coroutine never suspends ends inside its start (detail/immediate_executor.hpp),
// no waiter resumes there, and the ends of one run of starts are served in
// one step. One that suspended ends in the handler that
// resumed it, and its awaiter resumes in that handler when the end leaves
// the scheduler idle, after a trip round the io_context otherwise
// (detail/wait_list.hpp, ResumeInPlace).
#include "driver_harness.hpp"

#include <cronoq/detail/runtime/resume_in_place.hpp>
#include <cronoq/diagnostics.hpp>

#include <gtest/gtest.h>

#include <asio/detached.hpp>
#include <asio/post.hpp>
#include <asio/strand.hpp>
#include <asio/thread_pool.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace resumption_test {

using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

using namespace std::chrono_literals;

// Returns its payload without suspending; fails on a negative one.
asio::awaitable<Result<int>> echo(TaskContext, std::shared_ptr<const int> x) {
    if (*x < 0) co_return TaskError::permanent("negative");
    co_return *x;
}

// Returns its payload after one trip round the io_context: it ends in a
// handler of its own, not inside its start.
asio::awaitable<Result<int>> echo_after_a_yield(TaskContext, std::shared_ptr<const int> x) {
    auto ex = co_await asio::this_coro::executor;
    auto yield = asio::post(ex, asio::use_awaitable);
    co_await std::move(yield);
    co_return *x;
}

Sched one_slot_scheduler(asio::io_context& io) {
    return Sched::builder()
        .pool(Pool<int, int>("p").workers(1, 1, 1).executor_fn(echo_after_a_yield))
        .build(io.get_executor());
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

// A task submitted from a coroutine on the pool's thread, whose executor
// returns without suspending, has ended when try_submit returns: its
// result is there without a wait.
TEST(Resumption, AnExecutorThatNeverSuspendsEndsItsTaskInsideTheSubmit) {
    asio::io_context io;
    auto sched = Sched::builder().pool(Pool<int, int>("p").executor_fn(echo)).build(io.get_executor());
    std::optional<TaskStatus> after_submit;
    const int got = test::run(io, [&]() -> asio::awaitable<int> {
        auto h = sched.try_submit(Task<int>(7)).value();
        after_submit = h.status();
        auto wait = h.result();
        co_return *co_await std::move(wait);
    }());
    EXPECT_EQ(after_submit, std::optional<TaskStatus>(TaskStatus::Succeeded));
    EXPECT_EQ(got, 7);
}

// That end happens inside a call of the application's: what it completes
// is posted, never resumed there, even when it leaves the scheduler idle.
// Here the end of "parent" (it fails at once) skips its dependent, whose
// awaiter must not run inside the try_submit of the parent.
TEST(Resumption, NoAwaiterResumesInsideTheSubmitWhoseTaskEndsAtOnce) {
    asio::io_context io;
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").unknown_dependency(UnknownDependency::Await{1h}).executor_fn(echo))
                     .build(io.get_executor());
    auto dependent = sched.try_submit(Task<int>(1).depends_on(Dep::on_success("parent"))).value();
    bool resumed = false;
    asio::co_spawn(
        io,
        [dependent, &resumed]() -> asio::awaitable<void> {
            auto wait = dependent.result();
            try {
                co_await std::move(wait);
            } catch (const TaskFailure&) {
            }
            resumed = true;
        },
        asio::detached);
    std::optional<bool> resumed_inside;
    std::optional<TaskStatus> dependent_after;
    test::run(io, [&]() -> asio::awaitable<void> {
        auto parent = sched.try_submit(Task<int>(-1).key("parent")).value();
        resumed_inside = resumed;
        dependent_after = dependent.status();
        EXPECT_EQ(parent.status(), TaskStatus::Failed);
        co_return;
    }());
    EXPECT_EQ(dependent_after, std::optional<TaskStatus>(TaskStatus::Skipped));
    EXPECT_EQ(resumed_inside, std::optional<bool>(false));
    io.restart();
    io.run();  // the posted resumption
    EXPECT_TRUE(resumed);
}

// Attempts that end inside their start are served together: 80 tasks whose
// executor never suspends, submitted at once from the pool's thread to 8
// slots, start in runs of 8, and each run's 8 ends take one step (not one
// each). On an io_context made for one thread the pool's lane is the
// io_context's executor, which that thread runs.
TEST(Resumption, EndsInsideARunOfStartsAreServedInOneStep) {
    asio::io_context io(1);
    auto sched = Sched::builder().pool(Pool<int, int>("p").workers(8, 8, 8).executor_fn(echo)).build(io.get_executor());
    constexpr int tasks = 80;
    std::uint64_t before = 0;
    std::uint64_t after = 0;
    const long long sum = test::run(io, [&]() -> asio::awaitable<long long> {
        std::vector<Task<int>> batch;
        for (int i = 0; i < tasks; ++i) batch.emplace_back(i);
        before = cronoq::diagnostics::lock_acquisitions(sched);
        auto submitted = sched.try_submit_many(std::move(batch));
        long long total = 0;
        for (auto& r : submitted) {
            auto wait = r.value().result();
            total += *co_await std::move(wait);
        }
        after = cronoq::diagnostics::lock_acquisitions(sched);
        co_return total;
    }());
    EXPECT_EQ(sum, static_cast<long long>(tasks) * (tasks - 1) / 2);
    // The admission, one step per run of 8 (10 runs) and the read of the
    // figure: 12, where a step per end would take 82.
    EXPECT_EQ(after - before, 12u);
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

// Whether this thread runs an executor is asked of the executor's own type:
// inside one strand, a thread is not inside the io_context's other strands.
// (Asio 1.22's any_executor::target<T>() casts without checking the type
// held, and the driver once read a strand as its io_context's executor:
// every io thread then took itself to be on every attempt's lane.)
TEST(Resumption, AThreadRunsOnlyTheStrandItIsInside) {
    asio::io_context io;
    asio::thread_pool elsewhere(1);
    const std::vector<asio::any_io_executor> executors{
        io.get_executor(),                                         // 0: the io_context's
        asio::make_strand(io),                                     // 1: a strand of it
        asio::make_strand(io),                                     // 2: another
        asio::make_strand(asio::any_io_executor(io.get_executor())),  // 3: a strand of the erased executor
        elsewhere.get_executor(),                                  // 4: another kind of context
    };
    const auto inside = [&] {
        std::vector<bool> r;
        for (const auto& ex : executors) r.push_back(detail::runs_in_this_thread(ex));
        return r;
    };
    EXPECT_EQ(inside(), (std::vector<bool>{false, false, false, false, false}));
    std::vector<bool> in_plain, in_first, in_erased, in_pool;
    asio::post(executors[0], [&] { in_plain = inside(); });
    asio::post(executors[1], [&] { in_first = inside(); });
    asio::post(executors[3], [&] { in_erased = inside(); });
    asio::post(executors[4], [&] { in_pool = inside(); });
    io.run();
    elsewhere.join();
    EXPECT_EQ(in_plain, (std::vector<bool>{true, false, false, false, false}));
    EXPECT_EQ(in_first, (std::vector<bool>{true, true, false, false, false}));
    EXPECT_EQ(in_erased, (std::vector<bool>{true, false, false, true, false}));
    EXPECT_EQ(in_pool, (std::vector<bool>{false, false, false, false, false}));  // not an executor the driver knows
}

}  // namespace resumption_test
