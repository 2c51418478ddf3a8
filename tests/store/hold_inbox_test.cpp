// Holding admissions open (docs/store.md, "Holding admissions open") on
// SQLite: while the store's thread holds a group, it still looks for
// clients' commits at its usual pace, so a client's task is not kept
// waiting for the hold.
#include "store_support.hpp"

#include <cronoq/store/client_access.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <vector>

namespace cronoq::test::hold_inbox_test {
namespace {

using namespace std::chrono_literals;

TEST(HoldingAdmissionsOpen, TheLeaderLooksAtClientsCommitsWhileItHoldsAGroup) {
    ScratchDir dir;
    // Declared before the stores: the store's thread reports into them
    // until the leader's store is closed, at the end of the test.
    Reports reports;
    std::atomic<store::Sequence> reported{0};
    std::mutex mutex;
    std::condition_variable looked;
    std::vector<store::Sequence> looks;  // what had committed at each on_inbox
    const SqliteStoreConfig config{Durability::Full, 10s, 24h};
    auto leader = SqliteStore::open(dir.file("s.db"), config);
    auto client = SqliteStore::open(dir.file("s.db"), config);
    reports.after_commit = [&](const store::CommitReport& report) {
        if (!report.error) reported = report.committed;
    };
    store::LeadHandlers handlers = reports.handlers();
    handlers.on_inbox = [&] {
        std::lock_guard lock(mutex);
        looks.push_back(reported.load());
        looked.notify_all();
    };
    leader->journal().lead(std::move(handlers));
    ASSERT_TRUE(reports.wait_leading());

    // A round where the client commits after the hold ended (a thread
    // paused on a loaded machine), or before the store's thread took the
    // group up, proves little: of five rounds, most must see the client's
    // commit before the held group commits. Without a look during the hold
    // a round sees it so only when the store's thread was late to take the
    // group.
    constexpr int rounds = 5;
    int seen_while_held = 0;
    std::uint64_t next_id = 1;
    for (int round = 0; round < rounds; ++round) {
        // Tasks that stay Ready: the group is held for at least half of its
        // expected commit time, tens of milliseconds for this many rows.
        store::Batch batch;
        for (int i = 0; i < 16000; ++i) batch.changes.emplace_back(store::TaskInserted{task_row(next_id++)});
        {
            std::lock_guard lock(mutex);
            looks.clear();
        }
        const store::Sequence held = leader->journal().enqueue(std::move(batch));
        client->client_access().submit({task_row(0)});
        ASSERT_TRUE(reports.wait_committed(held));
        std::unique_lock lock(mutex);
        ASSERT_TRUE(looked.wait_for(lock, 60s, [&] { return !looks.empty(); })) << "the client's commit was never seen";
        if (looks.front() < held) ++seen_while_held;
    }
    std::cout << "client commits seen while the group was held: " << seen_while_held << " of " << rounds << "\n";
    EXPECT_GE(seen_while_held, 3) << "the inbox was looked at only once the held group had committed";
}

}  // namespace
}  // namespace cronoq::test::hold_inbox_test
