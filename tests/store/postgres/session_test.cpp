// PostgreSQL only: leadership rides on the leader's session. When the
// server ends it (pg_terminate_backend), the advisory lock goes with it: a
// standby takes over at its next look, long before the lease runs out, and
// the old leader is fenced at its next commit and writes nothing.
#include "pg_support.hpp"

#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

#include <iostream>
#include <thread>

namespace cronoq::test::session_test {
namespace {

using namespace std::chrono_literals;

TEST(PgSession, ALeaderWhoseSessionEndsIsFencedAtOnce) {
    ASSERT_FALSE(pg_conninfo().empty()) << "CRONOQ_TEST_PG is not set: run through ctest (label postgres)";
    PgSchema schema;
    const std::string leader_table = "\"" + schema.name() + "\".leader";
    const std::string tasks_table = "\"" + schema.name() + "\".tasks";
    Reports ra, rb;  // outlive the stores, whose destructors report
    auto a = PostgresStore::connect(pg_conninfo(), schema.config(10s));
    auto b = PostgresStore::connect(pg_conninfo(), schema.config(10s));
    a->journal().lead(ra.handlers());
    ASSERT_TRUE(ra.wait_leading());
    b->journal().lead(rb.handlers());
    ASSERT_TRUE(ra.wait_committed(a->journal().enqueue(insert_batch(1))));
    RawPg raw;
    raw.exec("SELECT pg_terminate_backend(backend_pid) FROM " + leader_table);
    // The standby takes the freed lock at its next look, long before the lease.
    ASSERT_TRUE(rb.wait_leading());
    EXPECT_EQ(rb.recovered->epoch, 2u);
    a->journal().enqueue(insert_batch(2));
    ASSERT_TRUE(ra.wait_lost());
    EXPECT_EQ(ra.lost->reason, store::LostReason::Fenced);
    std::cout << "the old leader: " << ra.lost->message << "\n";
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(raw.number("SELECT count(*) FROM " + tasks_table), 1) << "the old leader wrote nothing";
    ASSERT_TRUE(rb.wait_committed(b->journal().enqueue(insert_batch(5))));
    EXPECT_EQ(raw.number("SELECT count(*) FROM " + tasks_table), 2);
}

}  // namespace
}  // namespace cronoq::test::session_test
