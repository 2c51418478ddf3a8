// Leadership between two stores on one file in one process: waiting,
// takeover on release, renewal, fencing.
#include "store_support.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace cronoq::test {
namespace {

using namespace std::chrono_literals;

TEST(Leadership, AStandbyTakesOverAtOnceWhenTheLeaderReleases) {
    ScratchDir dir;
    // A long lease: only the release can let the standby in within the test.
    const SqliteStoreConfig config{Durability::Full, 60s, 24h};
    Reports a, b;  // outlive the stores, whose destruction reports to them
    auto first = SqliteStore::open(dir.file("s.db"), config);
    auto second = SqliteStore::open(dir.file("s.db"), config);
    first->journal().lead(a.handlers());
    ASSERT_TRUE(a.wait_leading());
    EXPECT_EQ(a.recovered->epoch, 1u);
    second->journal().lead(b.handlers());
    ASSERT_TRUE(a.wait_committed(first->journal().enqueue(insert_batch(1))));
    EXPECT_FALSE(b.recovered) << "the lease is held";

    first->journal().release();
    ASSERT_TRUE(a.wait_lost());
    EXPECT_EQ(a.lost->reason, store::LostReason::Released);
    ASSERT_TRUE(b.wait_leading());
    EXPECT_EQ(b.recovered->epoch, 2u);
    ASSERT_EQ(b.recovered->tasks.size(), 1u);
    ASSERT_TRUE(b.wait_committed(second->journal().enqueue(insert_batch(2))));
    EXPECT_TRUE(second->get_task(TaskId{2}));
}

TEST(Leadership, TheLeaderRenewsItsLeaseWhileIdle) {
    ScratchDir dir;
    const SqliteStoreConfig config{Durability::Full, 300ms, 24h};
    Reports a, b;  // outlive the stores, whose destruction reports to them
    auto first = SqliteStore::open(dir.file("s.db"), config);
    auto second = SqliteStore::open(dir.file("s.db"), config);
    first->journal().lead(a.handlers());
    ASSERT_TRUE(a.wait_leading());
    second->journal().lead(b.handlers());
    // Several leases pass with nothing to commit: renewals keep the standby out.
    std::this_thread::sleep_for(1500ms);
    EXPECT_FALSE(b.recovered);
    EXPECT_FALSE(a.lost);
    first.reset();  // destruction releases
    ASSERT_TRUE(b.wait_leading());
    EXPECT_EQ(b.recovered->epoch, 2u);
}

TEST(Leadership, AFencedLeaderNeverWritesAgain) {
    ScratchDir dir;
    const SqliteStoreConfig config{Durability::Full, 60s, 24h};
    Reports a, b;  // outlive the stores, whose destruction reports to them
    auto first = SqliteStore::open(dir.file("s.db"), config);
    auto second = SqliteStore::open(dir.file("s.db"), config);
    first->journal().lead(a.handlers());
    ASSERT_TRUE(a.wait_leading());
    ASSERT_TRUE(a.wait_committed(first->journal().enqueue(insert_batch(1))));
    second->journal().lead(b.handlers());
    // As if the leader's lease had run out while it was frozen: the row
    // shows no holder, so the standby takes over in a new epoch.
    RawDb(dir.file("s.db")).exec("UPDATE leader SET holder = NULL");
    ASSERT_TRUE(b.wait_leading());
    EXPECT_EQ(b.recovered->epoch, 2u);

    first->journal().enqueue(insert_batch(100));
    ASSERT_TRUE(a.wait_lost());
    EXPECT_EQ(a.lost->reason, store::LostReason::Fenced);
    EXPECT_NE(a.lost->message.find("fenced"), std::string::npos) << a.lost->message;
    EXPECT_FALSE(second->get_task(TaskId{100}));
    first->journal().enqueue(insert_batch(101));
    ASSERT_TRUE(b.wait_committed(second->journal().enqueue(insert_batch(2))));
    EXPECT_FALSE(second->get_task(TaskId{101}));
    EXPECT_EQ(RawDb(dir.file("s.db")).query_int("SELECT epoch FROM leader"), 2);
}

TEST(Leadership, ReleasingWhileWaitingStopsTheWait) {
    ScratchDir dir;
    const SqliteStoreConfig config{Durability::Full, 60s, 24h};
    Reports a, b;  // outlive the stores, whose destruction reports to them
    auto first = SqliteStore::open(dir.file("s.db"), config);
    auto second = SqliteStore::open(dir.file("s.db"), config);
    first->journal().lead(a.handlers());
    ASSERT_TRUE(a.wait_leading());
    second->journal().lead(b.handlers());
    second->journal().release();
    ASSERT_TRUE(b.wait_lost());
    EXPECT_EQ(b.lost->reason, store::LostReason::Released);
    EXPECT_FALSE(b.recovered);
    EXPECT_FALSE(a.lost);
}

TEST(Leadership, LeadingTwiceIsALogicError) {
    ScratchDir dir;
    Reports a;
    auto store = SqliteStore::open(dir.file("s.db"));
    store->journal().lead(a.handlers());
    EXPECT_THROW(store->journal().lead(a.handlers()), std::logic_error);
}

TEST(Leadership, EpochsGrowAcrossLeaders) {
    ScratchDir dir;
    for (std::uint64_t expected = 1; expected <= 3; ++expected) {
        Reports reports;
        auto store = SqliteStore::open(dir.file("s.db"));
        store->journal().lead(reports.handlers());
        ASSERT_TRUE(reports.wait_leading());
        EXPECT_EQ(reports.recovered->epoch, expected);
        EXPECT_EQ(store->journal().figures().epoch, expected);
    }
}

}  // namespace
}  // namespace cronoq::test
