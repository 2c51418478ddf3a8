// Failover that only a PostgreSQL store has (docs/guide/durability.md "Leader, standbys,
// fencing"), with real processes: the server ends the leading scheduler's
// session (pg_terminate_backend, as an administrator or a standby does).
// The standby takes the freed lock over at its next look, long before the
// lease; the old leader is fenced at its next commit, stops, and writes
// nothing after the takeover. Built into test_durable_postgres only.
#include "durable_support.hpp"
#include "postgres/pg_support.hpp"

#include <cronoq/cronoq.hpp>

#include <gtest/gtest.h>

#include <iostream>

namespace postgres_failover_test {

using namespace std::chrono_literals;
using namespace cronoq;

TEST(PostgresFailover, ALeaderWhoseSessionIsTerminatedIsFencedAndWritesNothingAfterTheTakeover) {
    test::TestStore store(test::Backend::Postgres);
    test::Child leader({"lead", store.location(), "5"});
    ASSERT_EQ(leader.read_line(), "R");
    // The standby's attempts wait for the gate: it changes nothing of what
    // it took over while the old leader stops.
    std::promise<void> gate;
    std::shared_future<void> gate_open = gate.get_future().share();
    test::Standby standby(store.location(), test::gated_pool(gate_open, 2));
    test::Acks acks;
    acks.read(leader, 10);

    test::RawPg raw;
    const std::string lease_row = "FROM \"" + store.location().substr(std::string("postgres:").size()) + "\".leader";
    const std::int64_t session = raw.number("SELECT backend_pid " + lease_row);
    const std::int64_t epoch = raw.number("SELECT epoch " + lease_row);
    ASSERT_GT(session, 0) << "the lease row names the leader's session";
    const auto terminated_at = std::chrono::steady_clock::now();
    EXPECT_EQ(raw.value("SELECT pg_terminate_backend(" + std::to_string(session) + ")"), "t");

    ASSERT_EQ(standby.led.wait_for(60s), std::future_status::ready) << "the standby never led";
    standby.led.get();
    std::cout << "the standby led "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - terminated_at)
                     .count()
              << " ms after the leader's session was terminated (lease " << test::test_lease.count() << " ms)\n";
    EXPECT_EQ(raw.number("SELECT epoch " + lease_row), epoch + 1);
    EXPECT_NE(raw.number("SELECT backend_pid " + lease_row), session);
    test::Durable& sched = *standby.sched;
    sched.flush();  // its recovery's changes
    const auto at_takeover = test::task_rows(store.location());

    // The old leader finds its session gone at its next commit.
    test::expect_fenced_and_nothing_lost(leader, acks, store.location(), at_takeover, gate, sched);
}
}  // namespace postgres_failover_test
