// Scheduler::query without a store (docs/guide/operations.md, "Queries"):
// live and retained tasks, newest first, filtered, paged with a cursor
// that returns every match once; what the scheduler holds of each.
#include "driver_harness.hpp"

#include <cronoq/codec.hpp>

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

namespace query_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

// A negative input fails permanently; others return their input.
Pool<int, int> pool(std::string name, std::size_t workers = 4) {
    return Pool<int, int>(std::move(name)).workers(workers, workers, workers).retry(RetryPolicy::none()).executor_fn(
        [](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> {
            if (*x < 0) co_return TaskError::permanent("negative " + std::to_string(*x));
            co_return *x;
        });
}

std::vector<TaskId> ids_of(const TaskPage& page) {
    std::vector<TaskId> out;
    for (const StoredTask& t : page.tasks) out.push_back(t.id);
    return out;
}

}  // namespace

TEST(Query, NewestFirstPagedWithACursorEveryMatchOnce) {
    test::VirtualTime vt;
    auto sched = Scheduler<int, int>::builder().clock(vt.clock).pool(pool("p")).build(vt.io.get_executor());
    sched.pause("p");  // its tasks stay live
    std::vector<TaskId> ids;
    for (int i = 0; i < 5; ++i) ids.push_back(sched.try_submit(Task<int>(i).pool("p")).value().id());
    TaskQuery q;
    q.limit = 2;
    const TaskPage first = sched.query(q);
    EXPECT_EQ(ids_of(first), (std::vector<TaskId>{ids[4], ids[3]}));
    ASSERT_TRUE(first.next_cursor);
    sched.try_submit(Task<int>(9).pool("p")).value();  // after the first page: not on the next ones
    q.cursor = first.next_cursor;
    const TaskPage second = sched.query(q);
    EXPECT_EQ(ids_of(second), (std::vector<TaskId>{ids[2], ids[1]}));
    q.cursor = second.next_cursor;
    const TaskPage last = sched.query(q);
    EXPECT_EQ(ids_of(last), std::vector<TaskId>{ids[0]});
    EXPECT_FALSE(last.next_cursor);
    q.cursor = "not-a-cursor";
    EXPECT_THROW(sched.query(q), std::invalid_argument);
    q.cursor.reset();
    q.limit = 0;
    EXPECT_EQ(sched.query(q).tasks.size(), 1u) << "the limit is clamped to at least 1";
    test::run(vt.io, sched.shutdown(0s));
}

TEST(Query, FiltersAndWhatTheSchedulerHoldsOfEachTask) {
    test::VirtualTime vt;
    auto sched = Scheduler<int, int>::builder().clock(vt.clock).pool(pool("p")).pool(pool("q")).build(vt.io.get_executor());
    sched.pause("q");
    const auto start = vt.clock->system_now();
    auto ok = sched.try_submit(Task<int>(1).pool("p").key("order-1").kind("mail")).value();
    vt.advance(1s);
    auto bad = sched.try_submit(Task<int>(-1).pool("p").key("order-2")).value();
    vt.advance(1s);
    auto queued = sched.try_submit(Task<int>(3).pool("q").priority(Priority::High)).value();
    vt.advance(1s);
    ASSERT_EQ(ok.status(), TaskStatus::Succeeded);
    ASSERT_EQ(bad.status(), TaskStatus::Failed);

    TaskQuery failed;
    failed.statuses = {TaskStatus::Failed, TaskStatus::Succeeded};
    const TaskPage ended = sched.query(failed);
    ASSERT_EQ(ids_of(ended), (std::vector<TaskId>{bad.id(), ok.id()})) << "retained tasks are seen";
    const StoredTask& failure = ended.tasks[0];
    EXPECT_EQ(failure.key, "order-2");
    EXPECT_EQ(failure.pool, "p");
    EXPECT_EQ(failure.last_error, "negative -1");
    EXPECT_EQ(failure.attempt, 1u);
    EXPECT_EQ(ended.tasks[1].kind, "mail");
    EXPECT_EQ(ended.tasks[1].submitted_at, start);

    TaskQuery in_q;
    in_q.pool = "q";
    const TaskPage waiting = sched.query(in_q);
    ASSERT_EQ(ids_of(waiting), std::vector<TaskId>{queued.id()});
    EXPECT_EQ(waiting.tasks[0].status, TaskStatus::Ready);
    EXPECT_EQ(waiting.tasks[0].priority, Priority::High);
    EXPECT_EQ(waiting.tasks[0].submitted_at, start + 2s);
    EXPECT_FALSE(waiting.tasks[0].key.has_value());

    TaskQuery prefix;
    prefix.key_prefix = "order-";
    EXPECT_EQ(ids_of(sched.query(prefix)), (std::vector<TaskId>{bad.id(), ok.id()}));
    TaskQuery window;
    window.submitted_after = start + 1s;
    window.submitted_before = start + 2s;
    EXPECT_EQ(ids_of(sched.query(window)), std::vector<TaskId>{bad.id()}) << "after <= t < before";
    TaskQuery kind;
    kind.kind = "mail";
    EXPECT_EQ(ids_of(sched.query(kind)), std::vector<TaskId>{ok.id()});
    TaskQuery no_fair_key;
    no_fair_key.fair_key = "";
    EXPECT_EQ(sched.query(no_fair_key).tasks.size(), 3u) << "\"\" selects tasks without a fair key";
    TaskQuery unknown;
    unknown.pool = "nope";
    EXPECT_TRUE(sched.query(unknown).tasks.empty());
    test::run(vt.io, sched.shutdown(0s));
}

TEST(Query, ARemotePoolsPayloadIsShownAsItsBytes) {
    test::VirtualTime vt;
    auto sched = Scheduler<int, int>::builder().clock(vt.clock).pool(Pool<int, int>("r").remote()).build(vt.io.get_executor());
    sched.try_submit(Task<int>(42).pool("r")).value();
    const TaskPage page = sched.query(TaskQuery{});
    ASSERT_EQ(page.tasks.size(), 1u);
    EXPECT_EQ(page.tasks[0].payload, "42");
    test::run(vt.io, sched.shutdown(0s));
}

}  // namespace query_test
