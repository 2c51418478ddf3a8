// A commit writes the net effect of its batches (docs/store.md, "Net
// changes"), on every backend: a task inserted and moved on within one
// transaction is one row in its final state, a task moved on several times
// one transition; what is read back is what the changes one after the
// other leave.
#include "store_site.hpp"

#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

namespace cronoq::test {
namespace {

using namespace std::chrono_literals;
using store::Batch;
using store::TaskTransition;

TaskTransition moved(std::uint64_t id, TaskStatus status, std::uint32_t attempt, std::string error = "",
                     std::optional<std::string> output = std::nullopt,
                     std::optional<store::WallTime> run_at = std::nullopt) {
    return TaskTransition{TaskId{id}, status, attempt, std::move(error), std::chrono::system_clock::now(), run_at,
                          std::move(output)};
}

TEST_P(Journal, ACommitWritesTheNetChangesOfItsBatches) {
    {
        // Task 3 is stored before: its transitions update it.
        Leader before(site());
        before.commit(Batch{{store::TaskInserted{task_row(3, "k3")}}});
    }
    Reports reports;
    auto store = site().open();
    // Queued before the store leads: one transaction for all of them.
    std::vector<Batch> batches;
    batches.push_back(Batch{{store::TaskInserted{task_row(1, "k1")}, moved(1, TaskStatus::Running, 1)}});
    batches.push_back(Batch{{moved(1, TaskStatus::Succeeded, 1, "", "out-1"), moved(3, TaskStatus::Running, 1),
                             store::TaskKeyReleased{TaskId{1}}, store::TaskInserted{task_row(2)}}});
    batches.push_back(Batch{{moved(3, TaskStatus::Succeeded, 1, "", "out-3"),
                             moved(3, TaskStatus::Succeeded, 1, "late"),  // without an output: out-3 stays
                             moved(2, TaskStatus::Retrying, 1, "flaky", std::nullopt,
                                   std::chrono::system_clock::now() + 1h)}});
    std::size_t queued = 0;
    store::Sequence last = 0;
    for (Batch& b : batches) {
        queued += b.changes.size();
        last = store->journal().enqueue(std::move(b));
    }
    store->journal().lead(reports.handlers());
    ASSERT_TRUE(reports.wait_committed(last));
    ASSERT_EQ(reports.commits.size(), 1u);
    EXPECT_EQ(reports.commits[0].changes, queued) << "the report counts the changes as queued";

    const auto figures = store->journal().figures();
    EXPECT_EQ(figures.changes_committed, 3u)
        << "written: task 1's and task 2's inserts in their final states, one transition of task 3 (of " << queued
        << " changes queued)";
    EXPECT_EQ(figures.pending_changes, 0u);

    const auto one = store->get_task(TaskId{1});
    ASSERT_TRUE(one);
    EXPECT_EQ(one->status, TaskStatus::Succeeded);
    EXPECT_EQ(one->attempt, 1u);
    EXPECT_EQ(one->output, "out-1");
    EXPECT_EQ(one->payload, "payload-1");
    EXPECT_FALSE(store->get_task("k1")) << "the key was released";

    const auto two = store->get_task(TaskId{2});
    ASSERT_TRUE(two);
    EXPECT_EQ(two->status, TaskStatus::Retrying);
    EXPECT_EQ(two->last_error, "flaky");
    EXPECT_FALSE(two->output);

    const auto three = store->get_task(TaskId{3});
    ASSERT_TRUE(three);
    EXPECT_EQ(three->status, TaskStatus::Succeeded);
    EXPECT_EQ(three->last_error, "late");
    EXPECT_EQ(three->output, "out-3");
    EXPECT_EQ(store->get_task("k3")->id, TaskId{3});

    // Recovery reads the same rows.
    const auto row_two = store->journal().read_task(TaskId{2});
    ASSERT_TRUE(row_two);
    EXPECT_TRUE(row_two->run_at.has_value());
}

}  // namespace
}  // namespace cronoq::test
