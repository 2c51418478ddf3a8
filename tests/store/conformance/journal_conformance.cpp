// The commit pipeline, on every backend: what each change writes, group
// commit, reports in order from many threads, inspection while a leader
// writes, pruning, recovery, a commit that keeps failing.
#include "store_site.hpp"

#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <future>
#include <iostream>
#include <map>
#include <thread>

namespace cronoq::test {
namespace {

using namespace std::chrono_literals;
using store::Batch;
using store::Sequence;

TEST_P(Journal, EveryChangeKindIsWrittenAndRecovered) {
    const auto t0 = std::chrono::system_clock::now();
    const auto run_at = t0 + 1h;
    {
        Leader leader(site());
        store::TaskRow scheduled = task_row(1, "order-1");
        scheduled.status = TaskStatus::Scheduled;
        scheduled.run_at = run_at;
        scheduled.payload = std::string("\0binary\xff", 8);
        scheduled.options = R"({"deadline":"x"})";
        scheduled.fair_key = "tenant-1";
        store::TaskRow succeeded = task_row(2, "order-2");
        Batch batch{{store::TaskInserted{scheduled}, store::TaskInserted{succeeded},
                     store::TaskTransition{TaskId{2}, TaskStatus::Running, 1, "", t0, std::nullopt, std::nullopt},
                     store::TaskTransition{TaskId{2}, TaskStatus::Succeeded, 1, "", t0, std::nullopt,
                                           std::string("out\0-2", 6)},
                     // Without an output the stored one stays.
                     store::TaskTransition{TaskId{2}, TaskStatus::Succeeded, 1, "late", t0, std::nullopt, std::nullopt},
                     store::TaskInserted{task_row(3)},
                     store::TaskTransition{TaskId{3}, TaskStatus::Retrying, 2, "timeout", t0, run_at, std::nullopt},
                     store::TaskKeyReleased{TaskId{1}},
                     store::RecurringPut{"nightly", "def-1"}, store::RecurringFired{"nightly", t0},
                     store::RecurringPut{"nightly", "def-2"},  // replaced: keeps its last firing
                     store::RecurringPut{"gone", "x"}, store::RecurringRemoved{"gone"},
                     store::HighWaterMarks{10, 50}, store::HighWaterMarks{4, 60},
                     // The last weight per pool and key stays, exactly; a
                     // pool name is not confused with a key's start.
                     store::FairWeightSet{"default", "tenant-1", 2.5}, store::FairWeightSet{"default", "tenant-1", 0.1},
                     store::FairWeightSet{"de", "fault:x", 3.0}, store::FairWeightSet{"other", "", 7.0}}};
        leader.commit(std::move(batch));
        // A transition of a row the store does not hold changes nothing.
        leader.commit(Batch{{store::TaskTransition{TaskId{99}, TaskStatus::Failed, 1, "x", t0, {}, {}}}});

        const auto stored = leader.store->get_task(TaskId{2});
        ASSERT_TRUE(stored);
        EXPECT_EQ(stored->status, TaskStatus::Succeeded);
        EXPECT_EQ(stored->output, std::string("out\0-2", 6));
        EXPECT_EQ(stored->last_error, "late");
        EXPECT_EQ(leader.store->get_task("order-2")->id, TaskId{2});
        EXPECT_FALSE(leader.store->get_task("order-1")) << "the key was released";
        EXPECT_FALSE(leader.store->get_task(TaskId{99}));
        const auto row = leader.store->journal().read_task(TaskId{1});
        ASSERT_TRUE(row);
        EXPECT_EQ(row->options, R"({"deadline":"x"})");
        EXPECT_EQ(row->payload, std::string("\0binary\xff", 8));
        EXPECT_EQ(row->fair_key, "tenant-1");
        EXPECT_EQ(leader.store->get_task(TaskId{1})->fair_key, "tenant-1");
        EXPECT_EQ(leader.store->get_task(TaskId{2})->fair_key, std::nullopt);
        leader.store->journal().release();
        ASSERT_TRUE(leader.reports.wait_lost());
        EXPECT_EQ(leader.reports.lost->reason, store::LostReason::Released);
    }
    const store::Recovered r = recover(site());
    EXPECT_EQ(r.epoch, 2u);
    ASSERT_EQ(r.tasks.size(), 3u);
    const auto* one = find_row(r, 1);
    ASSERT_TRUE(one);
    EXPECT_EQ(one->status, TaskStatus::Scheduled);
    EXPECT_EQ(one->key, std::nullopt);
    EXPECT_EQ(one->run_at, run_at);
    EXPECT_EQ(one->payload, std::string("\0binary\xff", 8));
    EXPECT_EQ(one->options, R"({"deadline":"x"})");
    EXPECT_EQ(one->pool, "default");
    EXPECT_EQ(one->kind, "work");
    EXPECT_EQ(one->fair_key, "tenant-1");
    EXPECT_EQ(find_row(r, 3)->fair_key, std::nullopt);
    const auto* three = find_row(r, 3);
    ASSERT_TRUE(three);
    EXPECT_EQ(three->status, TaskStatus::Retrying);
    EXPECT_EQ(three->attempt, 2u);
    EXPECT_EQ(three->last_error, "timeout");
    EXPECT_EQ(three->run_at, run_at);
    EXPECT_EQ(three->updated_at, t0);
    ASSERT_EQ(r.recurring.size(), 1u);
    EXPECT_EQ(r.recurring[0].name, "nightly");
    EXPECT_EQ(r.recurring[0].definition, "def-2");
    EXPECT_EQ(r.recurring[0].last_fired, t0);
    EXPECT_EQ(r.marks.next_task_id, 10u);
    EXPECT_EQ(r.marks.next_lease_id, 60u);
    ASSERT_EQ(r.fair_weights.size(), 3u);
    std::map<std::pair<std::string, std::string>, double> weights;
    for (const auto& w : r.fair_weights) weights[{w.pool, w.key}] = w.weight;
    EXPECT_EQ(weights[std::make_pair(std::string("default"), std::string("tenant-1"))], 0.1);
    EXPECT_EQ(weights[std::make_pair(std::string("de"), std::string("fault:x"))], 3.0);
    EXPECT_EQ(weights[std::make_pair(std::string("other"), std::string())], 7.0);
}

TEST_P(Journal, PausedPoolsAreWrittenAndRecovered) {
    const auto t0 = std::chrono::system_clock::now();
    {
        Leader leader(site());
        leader.commit(Batch{{store::PoolPaused{"p", true, t0}, store::PoolPaused{"q: odd %_ name", true, t0},
                             store::PoolPaused{"gone", true, t0}, store::PoolPaused{"gone", false, t0},
                             store::PoolPaused{"p", true, t0 + 1s},  // paused again: no error, one row
                             store::PoolPaused{"never", false, t0}}});
        leader.store->journal().release();
        ASSERT_TRUE(leader.reports.wait_lost());
    }
    const store::Recovered r = recover(site());
    EXPECT_EQ(r.paused_pools, (std::vector<std::string>{"p", "q: odd %_ name"}));
    EXPECT_EQ(r.marks.next_task_id, 0u) << "the marks are not disturbed by the rows beside them";
}

TEST_P(Journal, BatchesQueuedBeforeLeadingCommitInOneTransaction) {
    Reports reports;
    auto store = site().open();
    constexpr int threads = 4, per_thread = 500;
    std::vector<std::thread> enqueuers;
    std::atomic<std::uint64_t> next_id{1};
    for (int t = 0; t < threads; ++t)
        enqueuers.emplace_back([&] {
            for (int i = 0; i < per_thread; ++i) store->journal().enqueue(insert_batch(next_id++));
        });
    for (auto& t : enqueuers) t.join();
    EXPECT_EQ(store->journal().figures().pending_changes, std::uint64_t{threads * per_thread});
    store->journal().lead(reports.handlers());
    ASSERT_TRUE(reports.wait_committed(threads * per_thread));
    ASSERT_EQ(reports.commits.size(), 1u);
    EXPECT_EQ(reports.commits[0].batches, std::size_t{threads * per_thread});
    const auto figures = store->journal().figures();
    EXPECT_EQ(figures.commits, 1u);
    EXPECT_EQ(figures.mean_batch_size, double(threads * per_thread));
    EXPECT_EQ(figures.pending_changes, 0u);
    EXPECT_TRUE(figures.leading);
    EXPECT_EQ(figures.epoch, 1u);
    EXPECT_EQ(store->list(TaskStatus::Ready, 10000).size(), std::size_t{threads * per_thread});
}

TEST_P(Journal, WhatQueuesWhileACommitSyncsGoesIntoTheNextOne) {
    Leader leader(site());
    // Hold the commit thread in the first report until 100 more batches wait.
    std::promise<void> queued;
    std::shared_future<void> all_queued = queued.get_future().share();
    std::atomic<int> held{0};
    leader.reports.after_commit = [&](const store::CommitReport&) {
        if (held++ == 0) all_queued.wait();
    };
    const Sequence first = leader.store->journal().enqueue(insert_batch(1));
    ASSERT_TRUE(leader.reports.wait_committed(first));
    Sequence last = 0;
    for (std::uint64_t id = 2; id <= 101; ++id) last = leader.store->journal().enqueue(insert_batch(id));
    queued.set_value();
    ASSERT_TRUE(leader.reports.wait_committed(last));
    ASSERT_EQ(leader.reports.commits.size(), 2u);
    EXPECT_EQ(leader.reports.commits[1].batches, 100u);
    EXPECT_EQ(leader.reports.commits[1].committed, last);
}

TEST_P(Journal, ReportsFromManyThreadsArriveInOrderAndGroup) {
    Leader leader(site());
    constexpr int threads = 4, per_thread = 1000;
    std::atomic<std::uint64_t> next_id{1};
    std::vector<std::thread> enqueuers;
    for (int t = 0; t < threads; ++t)
        enqueuers.emplace_back([&] {
            for (int i = 0; i < per_thread; ++i) leader.store->journal().enqueue(insert_batch(next_id++));
        });
    // Inspection while the leader writes: reads never wait for commits.
    std::size_t seen = 0;
    for (int i = 0; i < 20; ++i) seen = std::max(seen, leader.store->list(TaskStatus::Ready, 100000).size());
    for (auto& t : enqueuers) t.join();
    ASSERT_TRUE(leader.reports.wait_committed(threads * per_thread));
    Sequence previous = 0;
    std::size_t batches = 0;
    for (const auto& report : leader.reports.commits) {
        ASSERT_FALSE(report.error);
        EXPECT_GT(report.committed, previous);
        EXPECT_EQ(report.committed, previous + report.batches) << "each report follows the one before";
        previous = report.committed;
        batches += report.batches;
    }
    EXPECT_EQ(batches, std::size_t{threads * per_thread});
    EXPECT_LT(leader.reports.commits.size(), std::size_t{threads * per_thread}) << "batches were grouped";
    const auto figures = leader.store->journal().figures();
    EXPECT_EQ(figures.commits, leader.reports.commits.size());
    EXPECT_GE(figures.mean_batch_size, 1.0);
    EXPECT_GT(figures.commit_latency_p99.count(), 0);
    EXPECT_GE(figures.commit_latency_p99, figures.commit_latency_p50);
    EXPECT_EQ(leader.store->list(TaskStatus::Ready, 100000).size(), std::size_t{threads * per_thread});
    std::cout << threads * per_thread << " batches in " << leader.reports.commits.size() << " transactions; " << seen
              << " rows seen while writing\n";
}

TEST_P(Journal, InspectionReadsWhileTheLeaderWrites) {
    Leader leader(site());
    constexpr std::uint64_t tasks = 5000;
    std::atomic<bool> done{false};
    std::thread writer([&] {
        for (std::uint64_t id = 1; id <= tasks; ++id) {
            const Sequence s = leader.store->journal().enqueue(insert_batch(id));
            if (id % 50 == 0) leader.reports.wait_committed(s);
        }
        done = true;
    });
    std::size_t seen = 0;
    for (int i = 0; i < 100 || !done; ++i) {
        const auto ready = leader.store->list(TaskStatus::Ready, 1000000);
        EXPECT_GE(ready.size(), seen);  // committed rows never disappear
        seen = ready.size();
        if (!ready.empty()) {
            const auto task = leader.store->get_task(ready.back().id);
            ASSERT_TRUE(task);
            EXPECT_EQ(task->payload, "payload-" + std::to_string(ready.back().id.value));
        }
    }
    writer.join();
    EXPECT_EQ(leader.store->list(TaskStatus::Ready, tasks + 1).size(), tasks);
}

TEST_P(Journal, PruneRemovesOnlyTerminalRowsOlderThanAsked) {
    Leader leader(site());
    const auto now = std::chrono::system_clock::now();
    Batch batch;
    const auto add = [&](std::uint64_t id, TaskStatus status, std::chrono::system_clock::time_point updated) {
        store::TaskRow row = task_row(id);
        row.status = status;
        row.updated_at = updated;
        batch.changes.push_back(store::TaskInserted{row});
    };
    add(1, TaskStatus::Succeeded, now - 48h);
    add(2, TaskStatus::DeadLettered, now - 48h);
    add(3, TaskStatus::Retrying, now - 48h);  // old but live: kept
    add(4, TaskStatus::Succeeded, now - 1h);  // terminal but recent: kept
    leader.commit(std::move(batch));
    EXPECT_EQ(leader.store->prune(24h), 2u);
    EXPECT_FALSE(leader.store->get_task(TaskId{1}));
    EXPECT_FALSE(leader.store->get_task(TaskId{2}));
    EXPECT_TRUE(leader.store->get_task(TaskId{3}));
    EXPECT_TRUE(leader.store->get_task(TaskId{4}));
    EXPECT_EQ(leader.store->prune(24h), 0u);
    // The leader goes on committing after a prune from another connection.
    leader.commit(insert_batch(5));
}

TEST_P(Journal, PruneAndRecoveryFollowTransitionTimes) {
    const auto now = std::chrono::system_clock::now();
    {
        Leader leader(site());
        Batch batch;
        for (std::uint64_t id = 1; id <= 6; ++id) batch.changes.push_back(store::TaskInserted{task_row(id)});
        // 1, 2: ended long ago; 3: ended just now; 4: failed long ago; 5, 6: live.
        batch.changes.push_back(store::TaskTransition{TaskId{1}, TaskStatus::Succeeded, 1, "", now - 48h, {}, "o"});
        batch.changes.push_back(store::TaskTransition{TaskId{2}, TaskStatus::Cancelled, 0, "", now - 3h, {}, {}});
        batch.changes.push_back(store::TaskTransition{TaskId{3}, TaskStatus::Succeeded, 1, "", now, {}, {}});
        batch.changes.push_back(store::TaskTransition{TaskId{4}, TaskStatus::Failed, 1, "e", now - 48h, {}, {}});
        batch.changes.push_back(store::TaskTransition{TaskId{5}, TaskStatus::Running, 1, "", now - 48h, {}, {}});
        leader.commit(std::move(batch));
        EXPECT_EQ(leader.store->prune(24h), 2u) << "tasks 1 and 4";
        EXPECT_FALSE(leader.store->get_task(TaskId{1}));
        EXPECT_TRUE(leader.store->get_task(TaskId{5})) << "a live task is never pruned";
        EXPECT_EQ(leader.store->prune(24h), 0u);
    }
    const store::Recovered r = recover(site(), 1h);
    std::vector<std::uint64_t> ids;
    for (const auto& row : r.tasks) ids.push_back(row.id.value);
    EXPECT_EQ(ids, (std::vector<std::uint64_t>{3, 5, 6})) << "task 2 ended before the retention";
}

TEST_P(Journal, TheLeaderPrunesRowsPastKeepFinishedInTheBackground) {
    // keep_finished 10 s: a prune every second (keep_finished / 10, at least
    // 1 s). With a longer one the next prune after a first pass that ran
    // before the commit below could be a minute away.
    Leader leader(site(), StoreOptions{10s, 10s});
    const auto now = std::chrono::system_clock::now();
    store::TaskRow old_row = task_row(1);
    old_row.status = TaskStatus::Succeeded;
    old_row.updated_at = now - 2h;
    // Task 3 ends long ago by a transition, task 2 lives.
    leader.commit(Batch{{store::TaskInserted{old_row}, store::TaskInserted{task_row(2)}, store::TaskInserted{task_row(3)},
                         store::TaskTransition{TaskId{3}, TaskStatus::Succeeded, 1, "", now - 2h, {}, {}}}});
    // Only a hang guard bounds this wait.
    const auto guard = std::chrono::steady_clock::now() + 60s;
    while ((leader.store->get_task(TaskId{1}) || leader.store->get_task(TaskId{3})) &&
           std::chrono::steady_clock::now() < guard)
        std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(leader.store->get_task(TaskId{1}));
    EXPECT_FALSE(leader.store->get_task(TaskId{3}));
    EXPECT_TRUE(leader.store->get_task(TaskId{2}));
}

TEST_P(Journal, RecoveryBringsBackLiveRowsAndRecentTerminalOnes) {
    const auto now = std::chrono::system_clock::now();
    {
        Leader leader(site());
        Batch batch;
        for (std::uint64_t id = 1; id <= 6; ++id) {
            store::TaskRow row = task_row(id);
            row.status = std::array{TaskStatus::Blocked, TaskStatus::Running, TaskStatus::Succeeded,
                                    TaskStatus::Failed, TaskStatus::Cancelled, TaskStatus::Ready}[id - 1];
            row.updated_at = id % 2 ? now - 3h : now - 10min;  // odd ids are older than the retention
            batch.changes.push_back(store::TaskInserted{row});
        }
        leader.commit(std::move(batch));
    }  // destroyed: released
    const store::Recovered r = recover(site(), 1h);
    std::vector<std::uint64_t> ids;
    for (const auto& row : r.tasks) ids.push_back(row.id.value);
    // 1 (blocked), 2 (running), 4 (failed, recent), 6 (ready); not 3 or 5 (old terminal).
    EXPECT_EQ(ids, (std::vector<std::uint64_t>{1, 2, 4, 6}));
}

TEST_P(Journal, ACommitThatKeepsFailingIsRetriedInOrderThenLeadershipIsGivenUp) {
    Leader leader(site(), StoreOptions{600ms});
    const Sequence good = leader.commit(insert_batch(1));
    // Task 1 again: the insert fails, and so does every retry; the batch
    // behind it waits, and nothing after the failing one commits first.
    const Sequence bad = leader.store->journal().enqueue(insert_batch(1));
    leader.store->journal().enqueue(insert_batch(2));
    ASSERT_TRUE(leader.reports.wait_lost());
    EXPECT_EQ(leader.reports.lost->reason, store::LostReason::Failed);
    EXPECT_NE(leader.reports.lost->message.find("failed for the whole leader lease"), std::string::npos)
        << leader.reports.lost->message;
    EXPECT_NE(leader.reports.lost->message.find(GetParam().duplicate_id_message), std::string::npos)
        << leader.reports.lost->message;
    ASSERT_GE(leader.reports.commits.size(), 3u) << "one success, then retries with backoff";
    EXPECT_FALSE(leader.reports.commits[0].error);
    for (std::size_t i = 1; i < leader.reports.commits.size(); ++i) {
        const auto& report = leader.reports.commits[i];
        ASSERT_TRUE(report.error);
        EXPECT_EQ(report.error->kind(), StoreErrorKind::Corrupt) << report.error->what();
        EXPECT_EQ(report.committed, good);
        ASSERT_TRUE(report.failing_since);
        EXPECT_EQ(report.failing_since, leader.reports.commits[1].failing_since);
    }
    EXPECT_LT(leader.reports.committed, bad);
    EXPECT_FALSE(leader.store->get_task(TaskId{2})) << "nothing after the failing batch commits first";
    EXPECT_EQ(leader.store->journal().figures().failed_commits, leader.reports.commits.size() - 1);
    EXPECT_FALSE(leader.store->journal().figures().leading);
    // After the loss nothing is written again.
    leader.store->journal().enqueue(insert_batch(3));
    EXPECT_FALSE(leader.store->get_task(TaskId{3}));
}

TEST_P(Journal, HugeDurationsMeanForeverInsteadOfWrapping) {
    constexpr auto forever = std::chrono::nanoseconds::max();
    {
        Leader leader(site(), StoreOptions{forever, forever}, forever);
        store::TaskRow old_row = task_row(1);
        old_row.status = TaskStatus::Succeeded;
        old_row.updated_at = std::chrono::system_clock::now() - 24h * 365 * 20;
        leader.commit(Batch{{store::TaskInserted{old_row}}});
        EXPECT_EQ(leader.store->prune(forever), 0u);
        // Saturated (SQLite) or bounded at a century (PostgreSQL): a lease
        // until released, never one that wrapped into the past.
        EXPECT_GE(site().lease_left(), 24h * 365 * 99) << "the lease lasts until released";
    }
    const store::Recovered r = recover(site(), forever);
    ASSERT_EQ(r.tasks.size(), 1u) << "a terminal row of any age is within an endless retention";
}

}  // namespace
}  // namespace cronoq::test
