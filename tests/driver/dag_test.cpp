// Dependencies, batches and fixed starts through the driver (docs/guide/time-and-cron.md, docs/guide/dependencies-and-keys.md).
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dag_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<std::string, std::string>;

// Every step records its name; "fail:" steps fail permanently.
Sched build(asio::io_context& io, std::vector<std::string>& ran, std::shared_ptr<Clock> clock = nullptr) {
    auto pool = Pool<std::string, std::string>("steps").workers(1, 4, 4).retry(RetryPolicy::none()).executor_fn(
        [&ran](TaskContext, std::shared_ptr<const std::string> step) -> asio::awaitable<Result<std::string>> {
            ran.push_back(*step);
            if (step->rfind("fail:", 0) == 0) co_return TaskError::permanent("step failed");
            co_return *step + " done";
        });
    auto b = Sched::builder().pool(std::move(pool));
    if (clock) b.clock(std::move(clock));
    return b.build(io.get_executor());
}

std::size_t position(const std::vector<std::string>& ran, const std::string& step) {
    for (std::size_t i = 0; i < ran.size(); ++i)
        if (ran[i] == step) return i;
    ADD_FAILURE() << step << " did not run";
    return ran.size();
}

}  // namespace

TEST(Dag, RunsInDependencyOrder) {
    asio::io_context io;
    std::vector<std::string> ran;
    auto sched = build(io, ran);
    auto handles = test::run(io, sched.submit_batch({
        Task<std::string>("load-a").depends_on(Dep::on_success("transform")),
        Task<std::string>("load-b").depends_on(Dep::on_success("transform")),
        Task<std::string>("transform").key("transform").depends_on(Dep::on_success("fetch")),
        Task<std::string>("cleanup").depends_on(Dep::on_failure("fetch")),
        Task<std::string>("fetch").key("fetch"),
    }));
    ASSERT_EQ(handles.size(), 5u);
    EXPECT_EQ(*test::run(io, handles[0].result()), "load-a done");
    EXPECT_EQ(*test::run(io, handles[1].result()), "load-b done");
    EXPECT_EQ(handles[3].status(), TaskStatus::Skipped);
    EXPECT_EQ(ran.size(), 4u);
    EXPECT_EQ(position(ran, "fetch"), 0u);
    EXPECT_EQ(position(ran, "transform"), 1u);
    EXPECT_GT(position(ran, "load-a"), 1u);
    EXPECT_GT(position(ran, "load-b"), 1u);
    try {
        test::run(io, handles[3].result());
        FAIL() << "a skipped task has no result";
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.status(), TaskStatus::Skipped);
    }
}

TEST(Dag, AFailureRunsTheCleanupAndSkipsTheRest) {
    asio::io_context io;
    std::vector<std::string> ran;
    auto sched = build(io, ran);
    auto fetch = sched.try_submit(Task<std::string>("fail:fetch")).value();
    auto load = sched.try_submit(Task<std::string>("load").depends_on(Dep::on_success(fetch.id()))).value();
    auto cleanup = sched.try_submit(Task<std::string>("cleanup").depends_on(Dep::on_failure(fetch.id()))).value();
    EXPECT_EQ(*test::run(io, cleanup.result()), "cleanup done");
    EXPECT_EQ(load.status(), TaskStatus::Skipped);
    EXPECT_EQ(ran, (std::vector<std::string>{"fail:fetch", "cleanup"}));
}

TEST(Dag, ABadBatchAdmitsNothing) {
    asio::io_context io;
    std::vector<std::string> ran;
    auto sched = build(io, ran);
    auto dup = sched.try_submit_batch({Task<std::string>("a").key("k"), Task<std::string>("b").key("k")});
    ASSERT_FALSE(dup.has_value());
    EXPECT_EQ(dup.error(), SubmitError::DuplicateKeyInBatch);
    try {
        test::run(io, sched.submit_batch({Task<std::string>("a").key("a"), Task<std::string>("b").depends_on(Dep::on_success("nope"))}));
        FAIL();
    } catch (const SubmitException& e) {
        EXPECT_EQ(e.error(), SubmitError::UnknownDependency);
    }
    EXPECT_FALSE(sched.status("a").has_value());
    io.run();
    EXPECT_TRUE(ran.empty());
}

TEST(Dag, AFixedStartRunsAtItsTime) {
    asio::io_context io;
    std::vector<std::string> ran;
    auto clock = std::make_shared<ManualClock>();
    auto sched = build(io, ran, clock);
    auto at = sched.try_submit(Task<std::string>("at").start_at(clock->system_now() + 10s)).value();
    auto in = sched.try_submit(Task<std::string>("in").start_in(20s)).value();
    io.poll();
    EXPECT_EQ(at.status(), TaskStatus::Scheduled);
    clock->advance(10s - 1ms);
    io.poll();
    EXPECT_TRUE(ran.empty());
    clock->advance(1ms);
    io.poll();
    EXPECT_EQ(ran, std::vector<std::string>{"at"});
    EXPECT_EQ(in.status(), TaskStatus::Scheduled);
    clock->advance(10s);
    io.poll();
    EXPECT_EQ(ran, (std::vector<std::string>{"at", "in"}));
    EXPECT_EQ(sched.try_submit(Task<std::string>("x").start_in(20s)).value().status(), TaskStatus::Scheduled);
}
}  // namespace dag_test
