// Scheduler::query with a store (docs/guide/operations.md, "Queries"), on
// each backend: the store's pages, the rows of tasks the scheduler no
// longer holds included.
#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>

#include <gtest/gtest.h>

#include <string>

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

class DurableQuery : public ::testing::TestWithParam<test::Backend> {};

}  // namespace

TEST_P(DurableQuery, TheSchedulerPagesThroughTheStore) {
    test::TestStore store(GetParam());
    std::vector<TaskId> ids;
    {
        auto sched = test::Durable::builder().threads(1).pool(test::identity_pool("p")).store(store.open()).open();
        for (int i = 0; i < 5; ++i) ids.push_back(sched.submit(Task<std::string>("t" + std::to_string(i)).key("k" + std::to_string(i))).id());
        for (const TaskId id : ids) sched.find(TaskRef(id))->get();
        sched.shutdown(0s);
    }
    auto sched = test::Durable::builder()
                     .threads(1)
                     .retention(0s)  // the scheduler holds none of them: the store still does
                     .pool(test::identity_pool("p"))
                     .store(store.open())
                     .open();
    TaskQuery q;
    q.statuses = {TaskStatus::Succeeded};
    q.limit = 3;
    const TaskPage first = sched.query(q);
    ASSERT_EQ(first.tasks.size(), 3u);
    EXPECT_EQ(first.tasks[0].id, ids[4]);
    EXPECT_EQ(first.tasks[0].output, "t4");
    ASSERT_TRUE(first.next_cursor);
    q.cursor = first.next_cursor;
    const TaskPage second = sched.query(q);
    ASSERT_EQ(second.tasks.size(), 2u);
    EXPECT_EQ(second.tasks[1].id, ids[0]);
    EXPECT_FALSE(second.next_cursor);
    sched.shutdown(0s);
}

INSTANTIATE_TEST_SUITE_P(Stores, DurableQuery, ::testing::ValuesIn(test::tested_backends()), test::BackendName{});
