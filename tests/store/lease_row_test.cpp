// SQLite only: the lease row alone decides who leads, so a standby that
// finds it free takes over, and the old leader's next commit is fenced.
// (A PostgreSQL standby needs the leader's session gone too: see
// postgres/session_test.cpp.)
#include "sqlite_site.hpp"

#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

namespace cronoq::test::lease_row_test {
namespace {

using namespace std::chrono_literals;

TEST(SqliteLeadership, AStandbyFindingTheLeaseFreeTakesOverAndTheLeaderNeverWritesAgain) {
    SqliteSite site;
    const StoreOptions options{60s};
    Reports a, b;  // outlive the stores, whose destruction reports to them
    auto first = site.open(options);
    auto second = site.open(options);
    first->journal().lead(a.handlers());
    ASSERT_TRUE(a.wait_leading());
    ASSERT_TRUE(a.wait_committed(first->journal().enqueue(insert_batch(1))));
    second->journal().lead(b.handlers());
    // As if the leader's lease had run out while it was frozen: the row
    // shows no holder, so the standby takes over in a new epoch.
    RawDb(site.file()).exec("UPDATE leader SET holder = NULL");
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
    EXPECT_EQ(site.leader_epoch(), 2);
}

}  // namespace
}  // namespace cronoq::test::lease_row_test
