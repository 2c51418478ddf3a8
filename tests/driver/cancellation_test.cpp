// Cancellation reaches attempts in the order of docs/guide/executors.md.
#include "driver_harness.hpp"

#include <asio/experimental/awaitable_operators.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cancellation_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

// Records the order in which an abandoned attempt learns of it.
struct RecordingExecutor {
    std::shared_ptr<std::vector<std::string>> log = std::make_shared<std::vector<std::string>>();
    std::shared_ptr<std::optional<TaskContext>> ctx = std::make_shared<std::optional<TaskContext>>();

    asio::awaitable<Result<int>> execute(TaskContext c, std::shared_ptr<const int>) {
        *ctx = c;
        asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
        auto token = c.cancellation_token();
        token.on_cancel([log = log] { log->push_back("token"); });
        try {
            co_await timer.async_wait(asio::use_awaitable);
            log->push_back("timer fired");
        } catch (const std::system_error& e) {
            log->push_back(e.code() == asio::error::operation_aborted ? "operation_aborted" : "other error");
            log->push_back(c.is_cancelled() ? "context cancelled" : "context live");
        }
        co_return TaskError::cancelled();
    }
    void abort(LeaseId) { log->push_back(ctx->has_value() && (*ctx)->is_cancelled() ? "abort late" : "abort"); }
};

// A gate the test opens by cancelling the task: waits on ctx.cancelled().
asio::awaitable<Result<int>> wait_for_cancel(TaskContext ctx, std::shared_ptr<const int>) {
    co_await ctx.cancelled();
    co_return TaskError::cancelled();
}

}  // namespace

TEST(Cancellation, AbortRunsBeforeContextAndAsioCancellation) {
    asio::io_context io;
    RecordingExecutor exec;
    auto sched = Sched::builder().pool(Pool<int, int>("p").executor(exec)).build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    io.poll();  // the attempt is now waiting on its timer
    ASSERT_EQ(h.status(), TaskStatus::Running);
    EXPECT_TRUE(h.cancel());
    io.run();
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
    EXPECT_EQ(*exec.log, (std::vector<std::string>{"abort", "token", "operation_aborted", "context cancelled"}));
}

TEST(Cancellation, CancelledAwaitableWinsAgainstWork) {
    using namespace asio::experimental::awaitable_operators;
    asio::io_context io;
    bool saw_cancel = false;
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             asio::steady_timer work(co_await asio::this_coro::executor, 1h);
                             auto r = co_await (work.async_wait(asio::use_awaitable) || ctx.cancelled());
                             saw_cancel = r.index() == 1;
                             co_return TaskError::cancelled();
                         }))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    io.poll();
    EXPECT_TRUE(sched.cancel(h.id()));
    io.run();
    EXPECT_TRUE(saw_cancel);
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
    try {
        cronoq::test::run(io, h.result());
        FAIL() << "result() of a cancelled task must throw";
    } catch (const TaskFailure& f) {
        EXPECT_EQ(f.status(), TaskStatus::Cancelled);
        EXPECT_NE(std::string(f.what()).find("cancelled"), std::string::npos);
    }
}

TEST(Cancellation, QueuedTaskNeverRuns) {
    asio::io_context io;
    int runs = 0;
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").workers(1, 1, 1).executor_fn(
                         [&](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                             ++runs;
                             if (*x == 0) co_await ctx.cancelled();
                             co_return *x;
                         }))
                     .build(io.get_executor());
    auto blocker = sched.try_submit(Task<int>(0)).value();
    auto queued = sched.try_submit(Task<int>(1)).value();
    io.poll();
    EXPECT_EQ(queued.status(), TaskStatus::Ready);
    EXPECT_TRUE(queued.cancel());
    EXPECT_FALSE(queued.cancel());  // already terminal
    EXPECT_EQ(sched.status(queued.id()), TaskStatus::Cancelled);
    blocker.cancel();
    io.run();
    EXPECT_EQ(runs, 1);
    EXPECT_FALSE(sched.cancel(TaskId{999999999}));
}

TEST(Cancellation, CancellingTheWaiterLeavesTheTaskAlone) {
    using namespace asio::experimental::awaitable_operators;
    asio::io_context io;
    auto sched = Sched::builder().pool(Pool<int, int>("p").executor_fn(wait_for_cancel)).build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    // Race result() against a short timer: the timer wins and cancels the wait.
    const auto which = cronoq::test::run(io, [&]() -> asio::awaitable<std::size_t> {
        asio::steady_timer t(co_await asio::this_coro::executor, 1ms);
        auto r = co_await (h.result() || t.async_wait(asio::use_awaitable));
        co_return r.index();
    }());
    EXPECT_EQ(which, 1u);
    EXPECT_EQ(h.status(), TaskStatus::Running);
    h.cancel();
    io.restart();
    io.run();
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
}

namespace {

// Its abort() and its first on_cancel callback throw; the log shows which
// later steps of the abort sequence still happened.
struct ThrowingAbortExecutor {
    std::shared_ptr<std::vector<std::string>> log = std::make_shared<std::vector<std::string>>();

    asio::awaitable<Result<int>> execute(TaskContext c, std::shared_ptr<const int>) {
        auto token = c.cancellation_token();
        token.on_cancel([] { throw std::runtime_error("callback kaput"); });
        token.on_cancel([log = log] { log->push_back("second callback"); });
        asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
        try {
            co_await timer.async_wait(asio::use_awaitable);
            log->push_back("timer fired");
        } catch (const std::system_error& e) {
            log->push_back(e.code() == asio::error::operation_aborted ? "operation_aborted" : "other error");
            log->push_back(c.is_cancelled() ? "context cancelled" : "context live");
        }
        co_return TaskError::cancelled();
    }
    void abort(LeaseId) {
        log->push_back("abort");
        throw std::runtime_error("abort kaput");
    }
};

}  // namespace

TEST(Cancellation, ThrowingAbortAndCallbackAreContainedAndTheSequenceGoesOn) {
    asio::io_context io;
    ThrowingAbortExecutor exec;
    auto sched = Sched::builder().pool(Pool<int, int>("p").executor(exec)).build(io.get_executor());
    auto h = sched.try_submit(Task<int>(0)).value();
    io.poll();
    ASSERT_EQ(h.status(), TaskStatus::Running);
    EXPECT_TRUE(h.cancel());
    EXPECT_NO_THROW(io.run()) << "an exception of abort() or on_cancel must not escape run()";
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
    EXPECT_EQ(*exec.log, (std::vector<std::string>{"abort", "second callback", "operation_aborted", "context cancelled"}));
    bool done = false;
    asio::co_spawn(io, sched.shutdown(0s), [&](std::exception_ptr) { done = true; });
    io.restart();
    io.run();
    EXPECT_TRUE(done);
}

// A context stays valid for as long as it lives, also after the scheduler
// (and the io_context it ran on) are gone.
TEST(Cancellation, ContextOutlivesItsScheduler) {
    std::optional<TaskContext> kept;
    {
        asio::io_context io;
        auto sched = Sched::builder()
                         .pool(Pool<int, int>("the-pool").executor_fn(
                             [&](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                                 kept = ctx;
                                 co_return *x;
                             }))
                         .build(io.get_executor());
        sched.try_submit(Task<int>(1).kind("k").key("the-key").tag("t", "v")).value();
        io.run();
        cronoq::test::run(io, sched.shutdown(0s));
    }
    ASSERT_TRUE(kept);
    EXPECT_EQ(kept->pool(), "the-pool");
    EXPECT_EQ(kept->kind(), "k");
    EXPECT_EQ(kept->key(), std::optional<std::string>("the-key"));
    EXPECT_EQ(kept->tag("t"), std::optional<std::string>("v"));
    EXPECT_TRUE(kept->is_cancelled());  // ended attempts report cancelled
    kept->heartbeat();                  // a no-op, not a crash
}
}  // namespace cancellation_test
