// Leadership between two stores on one site in one process, on every
// backend: waiting, takeover on release, renewal, fencing, epochs.
#include "store_site.hpp"

#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

#include <iostream>
#include <stdexcept>
#include <thread>

namespace cronoq::test {
namespace {

using namespace std::chrono_literals;

/// Two stores on one site: the first leads, then the second waits as its
/// standby.
struct LeaderAndStandby {
    LeaderAndStandby(StoreSite& site, const StoreOptions& options) : first(site.open(options)), second(site.open(options)) {
        first->journal().lead(a.handlers());
        EXPECT_TRUE(a.wait_leading());
        second->journal().lead(b.handlers());
    }
    Reports a, b;  // outlive the stores, whose destruction reports to them
    std::shared_ptr<Store> first, second;
};

TEST_P(Leadership, AStandbyTakesOverAtOnceWhenTheLeaderReleases) {
    // A long lease: only the release can let the standby in within the test.
    LeaderAndStandby stores(site(), StoreOptions{60s});
    Reports &a = stores.a, &b = stores.b;
    Store &first = *stores.first, &second = *stores.second;
    ASSERT_TRUE(a.recovered);
    EXPECT_EQ(a.recovered->epoch, 1u);
    ASSERT_TRUE(a.wait_committed(first.journal().enqueue(insert_batch(1))));
    std::this_thread::sleep_for(300ms);
    EXPECT_FALSE(b.recovered) << "the lease is held";
    EXPECT_FALSE(second.journal().figures().leading) << "one leader at a time";
    EXPECT_EQ(site().live_leases(), 1) << "the lease row names the leader";

    const auto released = std::chrono::steady_clock::now();
    first.journal().release();
    ASSERT_TRUE(a.wait_lost());
    EXPECT_EQ(a.lost->reason, store::LostReason::Released);
    ASSERT_TRUE(b.wait_leading());
    std::cout << "takeover after a release: "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - released).count()
              << " ms\n";
    EXPECT_EQ(b.recovered->epoch, 2u);
    EXPECT_EQ(second.journal().figures().epoch, 2u);
    ASSERT_EQ(b.recovered->tasks.size(), 1u);
    ASSERT_TRUE(b.wait_committed(second.journal().enqueue(insert_batch(2))));
    EXPECT_TRUE(second.get_task(TaskId{2}));
}

TEST_P(Leadership, ReadLeaseSaysWhoHoldsTheLeaseInWhichEpoch) {
    // What a standby's worker endpoint reads to name the leader
    // (docs/remote.md, Redirects).
    // Before the stores: their destruction reports to the handlers.
    Reports a, b;
    auto first = site().open(StoreOptions{60s});
    auto second = site().open(StoreOptions{60s});
    EXPECT_FALSE(second->journal().read_lease().held) << "nobody led yet";
    first->journal().lead(a.handlers());
    ASSERT_TRUE(a.wait_leading());
    auto lease = second->journal().read_lease();
    EXPECT_TRUE(lease.held);
    EXPECT_EQ(lease.epoch, 1u);
    first->journal().release();
    ASSERT_TRUE(a.wait_lost());
    lease = second->journal().read_lease();
    EXPECT_FALSE(lease.held) << "released";
    EXPECT_EQ(lease.epoch, 1u);
    second->journal().lead(b.handlers());
    ASSERT_TRUE(b.wait_leading());
    lease = first->journal().read_lease();
    EXPECT_TRUE(lease.held);
    EXPECT_EQ(lease.epoch, 2u);
}

TEST_P(Leadership, TheLeaderRenewsItsLeaseWhileIdle) {
    LeaderAndStandby stores(site(), StoreOptions{300ms});
    ASSERT_TRUE(stores.a.recovered);
    // Several leases pass with nothing to commit: renewals keep the standby out.
    std::this_thread::sleep_for(1500ms);
    EXPECT_FALSE(stores.b.recovered);
    EXPECT_FALSE(stores.a.lost);
    stores.first.reset();  // destruction releases
    ASSERT_TRUE(stores.b.wait_leading());
    EXPECT_EQ(stores.b.recovered->epoch, 2u);
}

TEST_P(Leadership, AnotherEpochFencesTheLeaderWhichNeverWritesAgain) {
    // A short lease: the fenced SQLite leader's lease row must run out
    // before the next store leads (a PostgreSQL one leads once the fenced
    // store's session is gone).
    const StoreOptions options{1s};
    Reports a;
    auto first = site().open(options);
    first->journal().lead(a.handlers());
    ASSERT_TRUE(a.wait_leading());
    ASSERT_TRUE(a.wait_committed(first->journal().enqueue(insert_batch(1))));
    // Another process took over (as a standby does once the lease ran out):
    // the epoch moved on.
    site().bump_epoch();
    first->journal().enqueue(insert_batch(2));
    ASSERT_TRUE(a.wait_lost());
    EXPECT_EQ(a.lost->reason, store::LostReason::Fenced);
    EXPECT_NE(a.lost->message.find("fenced"), std::string::npos) << a.lost->message;
    EXPECT_NE(a.lost->message.find("epoch 2"), std::string::npos) << a.lost->message;
    first->journal().enqueue(insert_batch(3));
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(site().count_tasks(), 1) << "the fenced leader wrote nothing";
    EXPECT_FALSE(first->journal().figures().leading);
    // The fenced store gave its lead up: a new one leads in epoch 3.
    Reports b;
    auto second = site().open(options);
    second->journal().lead(b.handlers());
    ASSERT_TRUE(b.wait_leading());
    EXPECT_EQ(b.recovered->epoch, 3u);
    ASSERT_TRUE(b.wait_committed(second->journal().enqueue(insert_batch(4))));
    EXPECT_EQ(site().count_tasks(), 2);
    EXPECT_EQ(site().leader_epoch(), 3);
}

TEST_P(Leadership, ReleasingWhileWaitingStopsTheWait) {
    LeaderAndStandby stores(site(), StoreOptions{60s});
    ASSERT_TRUE(stores.a.recovered);
    stores.second->journal().release();
    ASSERT_TRUE(stores.b.wait_lost());
    EXPECT_EQ(stores.b.lost->reason, store::LostReason::Released);
    EXPECT_FALSE(stores.b.recovered);
    EXPECT_FALSE(stores.a.lost);
}

TEST_P(Leadership, LeadingTwiceIsALogicError) {
    Reports a;
    auto store = site().open();
    store->journal().lead(a.handlers());
    EXPECT_THROW(store->journal().lead(a.handlers()), std::logic_error);
}

TEST_P(Leadership, EpochsGrowAcrossLeaders) {
    for (std::uint64_t expected = 1; expected <= 3; ++expected) {
        Reports reports;
        auto store = site().open();
        store->journal().lead(reports.handlers());
        ASSERT_TRUE(reports.wait_leading());
        EXPECT_EQ(reports.recovered->epoch, expected);
        EXPECT_EQ(store->journal().figures().epoch, expected);
    }
}

}  // namespace
}  // namespace cronoq::test
