// BlockingScheduler: the synchronous facade over its own io_context threads
// (docs/guide/README.md, docs/guide/operations.md).
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace blocking_scheduler_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Blocking = BlockingScheduler<int, int>;

// Doubles its input; a negative input fails permanently; zero waits until
// the attempt is cancelled, announcing through `started` that it runs.
struct Gated {
    std::shared_ptr<std::promise<void>> started = std::make_shared<std::promise<void>>();

    Pool<int, int> pool(std::string name = "p") const {
        return Pool<int, int>(std::move(name)).workers(1, 2, 2).executor_fn(
            [started = started](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                if (*x < 0) co_return TaskError::permanent("negative input " + std::to_string(*x));
                if (*x == 0) {
                    started->set_value();
                    co_await ctx.cancelled();
                    co_return TaskError::cancelled();
                }
                co_return *x * 2;
            });
    }
};

Blocking make(const Gated& g) { return Blocking::builder().threads(2).pool(g.pool()).build(); }

}  // namespace

TEST(BlockingScheduler, SubmitThenGetReturnsTheOutput) {
    Gated g;
    auto sched = make(g);
    auto h = sched.submit(Task<int>(21));
    auto out = h.get();
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(*out, 42);
    EXPECT_EQ(h.status(), TaskStatus::Succeeded);
}

TEST(BlockingScheduler, ManyTasksFromTheCallingThreadAllComplete) {
    Gated g;
    auto sched = make(g);
    std::vector<BlockingHandle<int>> handles;
    for (int i = 1; i <= 20; ++i) handles.push_back(sched.submit(Task<int>(i)));
    for (int i = 1; i <= 20; ++i) EXPECT_EQ(*handles[static_cast<std::size_t>(i - 1)].get(), 2 * i);
}

TEST(BlockingScheduler, GetOfAFailedTaskThrowsTaskFailureWithStatusAndMessage) {
    Gated g;
    auto sched = make(g);
    auto h = sched.submit(Task<int>(-3));
    try {
        h.get();
        FAIL() << "get() of a failed task must throw";
    } catch (const TaskFailure& f) {
        EXPECT_EQ(f.status(), TaskStatus::Failed);
        EXPECT_EQ(f.message(), "negative input -3");
        EXPECT_EQ(f.attempt(), 1u);
        EXPECT_NE(std::string(f.what()).find("failed"), std::string::npos);
        EXPECT_NE(std::string(f.what()).find("negative input -3"), std::string::npos);
    }
    // get_for of an ended task throws the same way rather than returning empty.
    EXPECT_THROW(h.get_for(1ms), TaskFailure);
}

TEST(BlockingScheduler, GetForTimesOutOnARunningTaskThenCancelEndsItCancelled) {
    Gated g;
    auto sched = make(g);
    auto h = sched.submit(Task<int>(0));
    g.started->get_future().wait();  // the attempt is running and waits on ctx.cancelled()
    EXPECT_EQ(h.get_for(20ms), std::nullopt);
    EXPECT_EQ(h.status(), TaskStatus::Running);
    EXPECT_EQ(sched.status(h.id()), TaskStatus::Running);
    EXPECT_TRUE(h.cancel());
    try {
        h.get();
        FAIL() << "get() of a cancelled task must throw";
    } catch (const TaskFailure& f) {
        EXPECT_EQ(f.status(), TaskStatus::Cancelled);
    }
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
    EXPECT_EQ(sched.status(h.id()), TaskStatus::Cancelled);
    EXPECT_FALSE(h.cancel());  // already terminal
}

TEST(BlockingScheduler, CancelByIdThroughTheScheduler) {
    Gated g;
    auto sched = make(g);
    auto h = sched.submit(Task<int>(0));
    g.started->get_future().wait();
    EXPECT_TRUE(sched.cancel(h.id()));
    EXPECT_THROW(h.get(), TaskFailure);
    EXPECT_FALSE(sched.cancel(h.id()));
}

TEST(BlockingScheduler, StatusOfKnownAndUnknownTasks) {
    Gated g;
    auto sched = make(g);
    auto h = sched.submit(Task<int>(5));
    EXPECT_EQ(*h.get(), 10);
    EXPECT_EQ(sched.status(h.id()), TaskStatus::Succeeded);  // retained after the end
    EXPECT_EQ(sched.status(TaskId{987654321}), std::nullopt);
    EXPECT_FALSE(sched.cancel(TaskId{987654321}));
}

TEST(BlockingScheduler, TrySubmitToAnUnknownPoolIsAnError) {
    Gated g;
    auto sched = make(g);
    auto r = sched.try_submit(Task<int>(1).pool("nowhere"));
    ASSERT_FALSE(r.has_value());
    EXPECT_FALSE(static_cast<bool>(r));
    EXPECT_EQ(r.error(), SubmitError::UnknownPool);
    EXPECT_NE(r.message().find("nowhere"), std::string::npos);
    // submit() throws the same error.
    try {
        sched.submit(Task<int>(1).pool("nowhere"));
        FAIL() << "submit() to an unknown pool must throw";
    } catch (const SubmitException& e) {
        EXPECT_EQ(e.error(), SubmitError::UnknownPool);
    }
    // A good submit still works afterwards.
    auto ok = sched.try_submit(Task<int>(4).pool("p"));
    ASSERT_TRUE(ok.has_value());
    EXPECT_EQ(*ok.value().get(), 8);
}

TEST(BlockingScheduler, SubmitAfterShutdownThrowsShuttingDown) {
    Gated g;
    auto sched = make(g);
    auto h = sched.submit(Task<int>(1));
    EXPECT_EQ(*h.get(), 2);
    sched.shutdown(1s);
    try {
        sched.submit(Task<int>(2));
        FAIL() << "submit() after shutdown must throw";
    } catch (const SubmitException& e) {
        EXPECT_EQ(e.error(), SubmitError::ShuttingDown);
    }
    auto r = sched.try_submit(Task<int>(3));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), SubmitError::ShuttingDown);
    sched.shutdown(1s);  // idempotent
}

TEST(BlockingScheduler, ShutdownCancelsARunningTaskAfterGrace) {
    Gated g;
    auto sched = make(g);
    auto h = sched.submit(Task<int>(0));
    g.started->get_future().wait();
    sched.shutdown(0s);  // returns: the attempt honours cancellation
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
    EXPECT_THROW(h.get(), TaskFailure);
}

TEST(BlockingScheduler, ShutdownLetsARunningAttemptFinishWithinGrace) {
    std::promise<void> started;
    std::promise<void> gate;
    std::shared_future<void> opened = gate.get_future().share();
    auto sched = Blocking::builder()
                     .threads(2)
                     .pool(Pool<int, int>("p").executor_fn([&started, opened](TaskContext, std::shared_ptr<const int> x) {
                         started.set_value();
                         opened.wait();  // a plain executor: runs on the blocking pool
                         return *x + 1;
                     }))
                     .build();
    auto h = sched.submit(Task<int>(1));
    started.get_future().wait();
    // The gate opens while shutdown waits (or just before it begins): the
    // attempt finishes well within the grace either way.
    std::thread opener([&gate] { gate.set_value(); });
    sched.shutdown(1h);
    opener.join();
    EXPECT_EQ(h.status(), TaskStatus::Succeeded);
    EXPECT_EQ(*h.get(), 2);
}

TEST(BlockingScheduler, DestroyingItWithARunningTaskCancelsTheTask) {
    Gated g;
    std::optional<BlockingHandle<int>> h;
    {
        auto sched = make(g);
        h = sched.submit(Task<int>(0));
        g.started->get_future().wait();
        EXPECT_EQ(h->status(), TaskStatus::Running);
    }  // the destructor shuts down with zero grace and joins its threads
    EXPECT_EQ(h->status(), TaskStatus::Cancelled);
    try {
        h->get();
        FAIL() << "get() of a cancelled task must throw";
    } catch (const TaskFailure& f) {
        EXPECT_EQ(f.status(), TaskStatus::Cancelled);
    }
    EXPECT_FALSE(h->cancel());  // the scheduler is gone
}

TEST(BlockingScheduler, PlainExecutorFnRunsOffTheIoThreads) {
    const auto caller = std::this_thread::get_id();
    std::atomic<bool> off_caller{false};
    auto sched = Blocking::builder()
                     .threads(2)
                     .pool(Pool<int, int>("plain").executor_fn([&](TaskContext ctx, std::shared_ptr<const int> x) -> Result<int> {
                         off_caller = std::this_thread::get_id() != caller;
                         if (*x < 0) return TaskError::permanent("plain says no");
                         return *x * 3 + static_cast<int>(ctx.attempt());
                     }))
                     .build();
    auto h = sched.submit(Task<int>(5));
    EXPECT_EQ(*h.get(), 16);  // 15 + attempt 1
    EXPECT_TRUE(off_caller.load());
    auto bad = sched.submit(Task<int>(-1));
    try {
        bad.get();
        FAIL() << "get() of a failed task must throw";
    } catch (const TaskFailure& f) {
        EXPECT_EQ(f.status(), TaskStatus::Failed);
        EXPECT_EQ(f.message(), "plain says no");
    }
}

TEST(BlockingScheduler, PlainExecutorFnSeesCancellationThroughTheContext) {
    std::promise<void> started;
    std::promise<bool> saw_cancel;
    auto sched = Blocking::builder()
                     .threads(2)
                     .pool(Pool<int, int>("plain").executor_fn([&](TaskContext ctx, std::shared_ptr<const int>) -> Result<int> {
                         started.set_value();
                         // Poll, bounded: about 10 s at most.
                         for (int i = 0; i < 10000 && !ctx.is_cancelled(); ++i) std::this_thread::sleep_for(1ms);
                         saw_cancel.set_value(ctx.is_cancelled());
                         return TaskError::cancelled();
                     }))
                     .build();
    auto h = sched.submit(Task<int>(1));
    started.get_future().wait();
    EXPECT_TRUE(h.cancel());
    EXPECT_TRUE(saw_cancel.get_future().get());
    EXPECT_THROW(h.get(), TaskFailure);
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
}

TEST(BlockingScheduler, BatchRunsInDependencyOrder) {
    std::vector<int> order;
    std::mutex mu;
    auto sched = Blocking::builder()
                     .pool(Pool<int, int>("p").workers(1, 2, 2).executor_fn([&](TaskContext, std::shared_ptr<const int> n) -> Result<int> {
                         std::lock_guard lock(mu);
                         order.push_back(*n);
                         return *n;
                     }))
                     .build();
    auto handles = sched.submit_batch({Task<int>(2).depends_on(Dep::on_success("first")), Task<int>(1).key("first")});
    EXPECT_EQ(*handles[0].get(), 2);
    EXPECT_EQ(*handles[1].get(), 1);
    EXPECT_EQ(order, (std::vector<int>{1, 2}));
    EXPECT_THROW(sched.submit_batch({Task<int>(3).key("k"), Task<int>(4).key("k")}), SubmitException);
}
}  // namespace blocking_scheduler_test
