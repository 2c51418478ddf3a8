#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <asio/post.hpp>
#include <asio/this_coro.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>

#include <atomic>
#include <thread>
#include <vector>

namespace executor_fn_test {

using namespace std::chrono_literals;
using cronoq::Pool;
using cronoq::Result;
using cronoq::Scheduler;
using cronoq::Task;
using cronoq::TaskContext;
using cronoq::TaskError;

namespace {

using Sched = Scheduler<int, int>;

Pool<int, int> doubling_pool(std::size_t workers = 2) {
    return Pool<int, int>("default").workers(1, workers, workers).executor_fn(
        [](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> { co_return *x * 2; });
}

}  // namespace

TEST(ExecutorFn, RoundTripReturnsOutput) {
    asio::io_context io;
    auto sched = Sched::builder().pool(doubling_pool()).build(io.get_executor());
    const int got = cronoq::test::run(io, [&]() -> asio::awaitable<int> {
        auto h = co_await sched.submit(Task<int>(21));
        co_return *co_await h.result();
    }());
    EXPECT_EQ(got, 42);
}

TEST(ExecutorFn, IdleSchedulerLetsRunReturn) {
    asio::io_context io;
    auto sched = Sched::builder().pool(doubling_pool()).build(io.get_executor());
    auto h = sched.try_submit(Task<int>(1)).value();
    io.run();  // returns: nothing pending once the task is done
    EXPECT_EQ(h.status(), cronoq::TaskStatus::Succeeded);
}

TEST(ExecutorFn, PlainCallableRunsOffTheEventLoop) {
    asio::io_context io;
    const auto loop_thread = std::this_thread::get_id();
    std::thread::id ran_on;
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("blocking").executor_fn([&](TaskContext, std::shared_ptr<const int> x) {
                         ran_on = std::this_thread::get_id();
                         return *x + 1;  // plain O, no coroutine
                     }))
                     .build(io.get_executor());
    const int got = cronoq::test::run(io, [&]() -> asio::awaitable<int> {
        auto h = co_await sched.submit(Task<int>(1));
        co_return *co_await h.result();
    }());
    EXPECT_EQ(got, 2);
    EXPECT_NE(ran_on, loop_thread);
}

TEST(ExecutorFn, VoidResultAndThrownTaskErrorAreReported) {
    asio::io_context io;
    auto sched = Scheduler<int, void>::builder()
                     .pool(Pool<int, void>("v").executor_fn(
                         [](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<void>> {
                             if (*x < 0) throw TaskError::permanent("negative input");
                             co_return cronoq::ok();
                         }))
                     .build(io.get_executor());
    auto good = sched.try_submit(Task<int>(1)).value();
    auto bad = sched.try_submit(Task<int>(-1)).value();
    io.run();
    EXPECT_EQ(good.status(), cronoq::TaskStatus::Succeeded);
    EXPECT_EQ(bad.status(), cronoq::TaskStatus::Failed);
    EXPECT_THROW(cronoq::test::run(io, bad.result()), cronoq::TaskFailure);
}

TEST(ExecutorFn, ContextDescribesTheAttempt) {
    asio::io_context io;
    auto clock = std::make_shared<cronoq::ManualClock>();
    std::optional<TaskContext> seen;
    auto sched = Sched::builder()
                     .clock(clock)
                     .pool(doubling_pool())
                     .pool(Pool<int, int>("ctx").executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             seen = ctx;
                             co_return 0;
                         }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)
                                  .pool("ctx")
                                  .kind("resize")
                                  .key("img-7")
                                  .tag("traceparent", "00-abc-def-01")
                                  .tag("tenant", "t1")
                                  .deadline_in(10s)
                                  .timeout(3s))
                 .value();
    io.run();
    ASSERT_TRUE(seen);
    EXPECT_EQ(seen->id(), h.id());
    EXPECT_EQ(seen->attempt(), 1u);
    EXPECT_EQ(seen->pool(), "ctx");
    EXPECT_EQ(seen->kind(), "resize");
    EXPECT_EQ(seen->key(), std::optional<std::string>("img-7"));
    EXPECT_EQ(seen->tag("tenant"), std::optional<std::string>("t1"));
    EXPECT_EQ(seen->tag("missing"), std::nullopt);
    EXPECT_EQ(seen->traceparent(), std::optional<std::string>("00-abc-def-01"));
    EXPECT_EQ(seen->deadline(), clock->system_now() + 10s);
    EXPECT_EQ(seen->timeout(), std::optional<std::chrono::nanoseconds>(3s));
    EXPECT_TRUE(seen->lease());
    // Valid after the attempt ended, but then reports cancelled.
    EXPECT_TRUE(seen->is_cancelled());
}

TEST(ExecutorFn, SubmitErrorsAreReported) {
    asio::io_context io;
    auto sched = Sched::builder().pool(doubling_pool()).build(io.get_executor());
    auto unknown = sched.try_submit(Task<int>(1).pool("nope"));
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error(), cronoq::SubmitError::UnknownPool);
    EXPECT_NE(unknown.message().find("nope"), std::string::npos);
    auto invalid = sched.try_submit(Task<int>(1).timeout(-1s));
    ASSERT_FALSE(invalid);
    EXPECT_EQ(invalid.error(), cronoq::SubmitError::Invalid);
    EXPECT_THROW(cronoq::test::run(io, sched.submit(Task<int>(1).pool("nope"))), cronoq::SubmitException);
    cronoq::test::run(io, sched.shutdown(0s));
    auto late = sched.try_submit(Task<int>(1));
    ASSERT_FALSE(late);
    EXPECT_EQ(late.error(), cronoq::SubmitError::ShuttingDown);
}

TEST(ExecutorFn, RunOnPlacesAttemptsOnThePoolsExecutor) {
    asio::io_context io;       // the scheduler's
    asio::io_context workers;  // the pool's
    std::thread::id ran_on;
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("elsewhere")
                               .run_on(workers.get_executor())
                               .executor_fn([&](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                                   ran_on = std::this_thread::get_id();
                                   co_return *x;
                               }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(5)).value();
    io.poll();
    EXPECT_EQ(h.status(), cronoq::TaskStatus::Running);  // waits for the pool's context
    std::thread worker([&] { workers.run(); });
    worker.join();
    EXPECT_EQ(h.status(), cronoq::TaskStatus::Succeeded);
    EXPECT_NE(ran_on, std::this_thread::get_id());
    EXPECT_EQ(*cronoq::test::run(io, h.result()), 5);
}

// A pool may run on an executor of any kind, here a thread pool's: its
// attempts get strands of that executor as lanes.
TEST(ExecutorFn, RunOnAThreadPoolsExecutor) {
    asio::io_context io;
    asio::thread_pool workers(2);
    std::atomic<int> off_io{0};
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("pooled")
                               .workers(1, 4, 4)
                               .run_on(workers.get_executor())
                               .executor_fn([&](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                                   if (!io.get_executor().running_in_this_thread()) off_io.fetch_add(1);
                                   co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
                                   co_return *x * 2;
                               }))
                     .build(io.get_executor());
    std::vector<cronoq::TaskHandle<int>> handles;
    for (int i = 0; i < 8; ++i) handles.push_back(sched.try_submit(Task<int>(i)).value());
    for (int i = 0; i < 8; ++i) EXPECT_EQ(*cronoq::test::run(io, handles[static_cast<std::size_t>(i)].result()), i * 2);
    EXPECT_EQ(off_io.load(), 8);
    cronoq::test::run(io, sched.shutdown(0s));
    workers.join();
}

// An output with no default value: co_spawn cannot take the executor's
// coroutine as it is, so it runs inside one of the driver's (spawn_attempt);
// outputs, errors and throws come back the same way.
struct Named {
    explicit Named(std::string n) : name(std::move(n)) {}
    std::string name;
};
static_assert(!std::is_default_constructible_v<Result<Named>>);
static_assert(std::is_default_constructible_v<Result<int>>);

TEST(ExecutorFn, OutputWithoutDefaultValue) {
    asio::io_context io;
    auto sched = Scheduler<int, Named>::builder()
                     .pool(Pool<int, Named>("named").workers(1, 2, 2).retry(cronoq::RetryPolicy{1, 0ms, 1.0, 0ms, false}).executor_fn(
                         [](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<Named>> {
                             if (*x == 1) co_return TaskError::permanent("one");
                             if (*x == 2) throw std::runtime_error("two");
                             co_return Named("task " + std::to_string(*x));
                         }))
                     .build(io.get_executor());
    auto ok = sched.try_submit(Task<int>(7)).value();
    auto refused = sched.try_submit(Task<int>(1)).value();
    auto thrown = sched.try_submit(Task<int>(2)).value();
    io.run();
    EXPECT_EQ(ok.status(), cronoq::TaskStatus::Succeeded);
    EXPECT_EQ(cronoq::test::run(io, ok.result())->name, "task 7");
    EXPECT_EQ(refused.status(), cronoq::TaskStatus::Failed);
    EXPECT_EQ(thrown.status(), cronoq::TaskStatus::Failed);
}

// An executor that throws before it returns its coroutine (a plain function
// returning an awaitable): that attempt fails as a panic, like a throw from
// inside the coroutine, and the pool goes on with the next task. The call
// is made inside the spawn, with and without a default output: `make(x)`
// makes task x's coroutine; the output of task 4 is returned.
template <class O, class Make>
std::shared_ptr<const O> run_a_throw_before_the_coroutine(Make make) {
    asio::io_context io;
    auto sched = Scheduler<int, O>::builder()
                     .pool(Pool<int, O>("p").workers(1, 1, 1).retry(cronoq::RetryPolicy{1, 0ms, 1.0, 0ms, false}).executor_fn(
                         [make](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<O>> {
                             if (*x == 3) throw std::runtime_error("no coroutine for 3");
                             return make(std::move(x));
                         }))
                     .build(io.get_executor());
    auto thrown = sched.try_submit(Task<int>(3)).value();
    auto next = sched.try_submit(Task<int>(4)).value();
    io.run();
    EXPECT_EQ(thrown.status(), cronoq::TaskStatus::Failed);
    try {
        cronoq::test::run(io, thrown.result());
        ADD_FAILURE() << "the result of a failed task must throw";
    } catch (const cronoq::TaskFailure& f) {
        EXPECT_EQ(f.message(), "panic: no coroutine for 3");
    }
    return cronoq::test::run(io, next.result());
}

asio::awaitable<Result<int>> doubled(std::shared_ptr<const int> x) { co_return *x * 2; }
asio::awaitable<Result<Named>> named(std::shared_ptr<const int> x) { co_return Named("n" + std::to_string(*x)); }

TEST(ExecutorFn, AThrowBeforeTheCoroutineIsMadeFailsOnlyThatAttempt) {
    EXPECT_EQ(*run_a_throw_before_the_coroutine<int>(doubled), 8);
}

TEST(ExecutorFn, AThrowBeforeTheCoroutineIsMadeFailsOnlyThatAttemptWithoutADefaultOutput) {
    EXPECT_EQ(run_a_throw_before_the_coroutine<Named>(named)->name, "n4");
}

// A default Result<O> holds a value-initialized O, as std::expected does.
TEST(ExecutorFn, DefaultResultHoldsValueInitializedOutput) {
    const Result<int> r;
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r.value(), 0);
    const Result<std::string> s;
    ASSERT_TRUE(s.has_value());
    EXPECT_TRUE(s.value().empty());
}
}  // namespace executor_fn_test
