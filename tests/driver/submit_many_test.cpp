// try_submit_many (docs/design.md): independent tasks in one engine step, each
// admitted or rejected on its own.
#include "driver_harness.hpp"

#include <cronoq/diagnostics.hpp>

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace submit_many_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

asio::awaitable<Result<int>> twice(TaskContext, std::shared_ptr<const int> x) { co_return *x * 2; }

}  // namespace

TEST(SubmitMany, EachTaskIsAdmittedOrRejectedOnItsOwn) {
    asio::io_context io;
    auto sched = Sched::builder().pool(Pool<int, int>("p").workers(1, 2, 2).executor_fn(twice)).build(io.get_executor());
    std::vector<Task<int>> tasks;
    tasks.push_back(Task<int>(1));
    tasks.push_back(Task<int>(2).pool("nowhere"));
    tasks.push_back(Task<int>(3).key("k"));
    tasks.push_back(Task<int>(4).key("k"));  // the same key: the same task
    tasks.push_back(Task<int>(5));
    auto results = sched.try_submit_many(std::move(tasks));
    ASSERT_EQ(results.size(), 5u);
    ASSERT_TRUE(results[0]);
    ASSERT_FALSE(results[1]);
    EXPECT_EQ(results[1].error(), SubmitError::UnknownPool);
    EXPECT_NE(results[1].message().find("nowhere"), std::string::npos);
    ASSERT_TRUE(results[2]);
    ASSERT_TRUE(results[3]);
    EXPECT_EQ(results[2].value().id(), results[3].value().id());
    ASSERT_TRUE(results[4]);
    io.run();
    EXPECT_EQ(*test::run(io, results[0].value().result()), 2);
    EXPECT_EQ(*test::run(io, results[3].value().result()), 6);
    EXPECT_EQ(*test::run(io, results[4].value().result()), 10);
    test::run(io, sched.shutdown(0s));
}

TEST(SubmitMany, TakesTheEngineOnceForAllItsTasks) {
    asio::io_context io;
    auto sched = Sched::builder().pool(Pool<int, int>("p").workers(1, 4, 4).executor_fn(twice)).build(io.get_executor());
    std::vector<Task<int>> tasks;
    for (int i = 0; i < 100; ++i) tasks.push_back(Task<int>(i));
    const auto before = cronoq::diagnostics::lock_acquisitions(sched);
    auto results = sched.try_submit_many(std::move(tasks));
    EXPECT_EQ(cronoq::diagnostics::lock_acquisitions(sched) - before, 2u) << "one for the step, one to read the figure";
    for (const auto& r : results) EXPECT_TRUE(r);
    io.run();
    for (int i = 0; i < 100; ++i) EXPECT_EQ(*test::run(io, results[static_cast<std::size_t>(i)].value().result()), 2 * i);
    test::run(io, sched.shutdown(0s));
}

TEST(SubmitMany, AfterShutdownEveryTaskIsRejected) {
    asio::io_context io;
    auto sched = Sched::builder().pool(Pool<int, int>("p").executor_fn(twice)).build(io.get_executor());
    test::run(io, sched.shutdown(0s));
    std::vector<Task<int>> tasks;
    tasks.push_back(Task<int>(1));
    tasks.push_back(Task<int>(2));
    for (const auto& r : sched.try_submit_many(std::move(tasks))) {
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), SubmitError::ShuttingDown);
    }
}

// Each task's options reach its own attempts only: a task without options
// after one with them, or after one that was rejected, has the defaults.
TEST(SubmitMany, EachTaskKeepsItsOwnOptions) {
    struct Seen {
        std::string kind;
        Tags tags;
        std::optional<std::chrono::nanoseconds> timeout;
        std::optional<std::string> key;
    };
    auto seen = std::make_shared<std::map<int, Seen>>();
    auto record = [seen](TaskContext ctx, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
        (*seen)[*x] = Seen{ctx.kind(), ctx.tags(), ctx.timeout(), ctx.key()};
        co_return *x;
    };
    asio::io_context io;
    auto sched = Sched::builder().pool(Pool<int, int>("p").workers(1, 4, 4).executor_fn(record)).build(io.get_executor());
    Task<int> with_options(1);
    with_options.kind("a").tag("t", "1").timeout(3s).key("one");
    const Task<int> copied = with_options;  // a copy keeps every option
    with_options.timeout(5s);
    std::vector<Task<int>> tasks;
    tasks.push_back(with_options);
    tasks.push_back(Task<int>(2));
    tasks.push_back(Task<int>(3).kind("c").pool("nowhere"));
    tasks.push_back(Task<int>(4).kind("d"));
    auto results = sched.try_submit_many(std::move(tasks));
    ASSERT_EQ(results.size(), 4u);
    ASSERT_TRUE(results[0]);
    ASSERT_TRUE(results[1]);
    ASSERT_FALSE(results[2]);
    ASSERT_TRUE(results[3]);
    io.run();
    test::run(io, sched.shutdown(0s));
    ASSERT_EQ(seen->size(), 3u);
    EXPECT_EQ(seen->at(1).kind, "a");
    EXPECT_EQ(seen->at(1).tags.size(), 1u);
    EXPECT_EQ(seen->at(1).timeout, std::chrono::nanoseconds(5s));
    EXPECT_EQ(seen->at(1).key, "one");
    EXPECT_EQ(seen->at(2).kind, "");
    EXPECT_TRUE(seen->at(2).tags.empty());
    EXPECT_EQ(seen->at(2).timeout, std::nullopt);
    EXPECT_EQ(seen->at(2).key, std::nullopt);
    EXPECT_EQ(seen->at(4).kind, "d");
    EXPECT_TRUE(seen->at(4).tags.empty());
    const auto c = detail::Access::state(copied);
    EXPECT_EQ(c.kind, "a");
    EXPECT_EQ(c.timeout, std::chrono::nanoseconds(3s));
    EXPECT_EQ(c.key, "one");
    EXPECT_EQ(*static_cast<const int*>(c.payload.get()), 1);
}

TEST(SubmitMany, BlockingSchedulerToo) {
    auto sched = BlockingScheduler<int, int>::builder().pool(Pool<int, int>("p").executor_fn(twice)).build();
    std::vector<Task<int>> tasks;
    tasks.push_back(Task<int>(20));
    tasks.push_back(Task<int>(1).pool("nowhere"));
    auto results = sched.try_submit_many(std::move(tasks));
    ASSERT_EQ(results.size(), 2u);
    ASSERT_TRUE(results[0]);
    EXPECT_EQ(*results[0].value().get(), 40);
    ASSERT_FALSE(results[1]);
    EXPECT_EQ(results[1].error(), SubmitError::UnknownPool);
    sched.shutdown(0s);
}
}  // namespace submit_many_test
