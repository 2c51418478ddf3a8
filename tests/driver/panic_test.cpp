// Exceptions escaping executors are contained (docs/guide/executors.md).
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace panic_test {

using namespace cronoq;

namespace {

struct ThrowsBeforeCoroutine {
    asio::awaitable<Result<int>> execute(TaskContext, std::shared_ptr<const int>) {
        throw std::logic_error("refused to start");
    }
};

}  // namespace

TEST(Panic, ThrowingExecutorFailsPermanentlyOthersUnaffected) {
    asio::io_context io;
    int attempts_of_bad = 0;
    auto sched = Scheduler<int, int>::builder()
                     .pool(Pool<int, int>("p").workers(1, 4, 4).executor_fn(
                         [&](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
                             if (*x == 13) {
                                 ++attempts_of_bad;
                                 throw std::runtime_error("boom");
                             }
                             co_return *x;
                         }))
                     .build(io.get_executor());
    std::vector<TaskHandle<int>> good;
    for (int i = 0; i < 10; ++i) good.push_back(sched.try_submit(Task<int>(i)).value());
    auto bad = sched.try_submit(Task<int>(13).retry(RetryPolicy{5, std::chrono::milliseconds(1)})).value();
    io.run();
    for (auto& h : good) EXPECT_EQ(h.status(), TaskStatus::Succeeded);
    EXPECT_EQ(bad.status(), TaskStatus::Failed);
    EXPECT_EQ(attempts_of_bad, 1);  // permanent: never retried
    try {
        cronoq::test::run(io, bad.result());
        FAIL();
    } catch (const TaskFailure& f) {
        EXPECT_EQ(f.message(), "panic: boom");
        EXPECT_EQ(f.attempt(), 1u);
    }
}

TEST(Panic, ThrowFromExecuteItselfIsContained) {
    asio::io_context io;
    auto sched = Scheduler<int, int>::builder()
                     .pool(Pool<int, int>("p").executor(ThrowsBeforeCoroutine{}))
                     .build(io.get_executor());
    auto h = sched.try_submit(Task<int>(1)).value();
    io.run();
    EXPECT_EQ(h.status(), TaskStatus::Failed);
    EXPECT_THROW(cronoq::test::run(io, h.result()), TaskFailure);
}
}  // namespace panic_test
