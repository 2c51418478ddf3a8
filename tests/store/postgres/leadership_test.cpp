// Leadership on one PostgreSQL schema: a standby waits, takes over on
// release in the next epoch, a fenced leader never writes again, a leader
// whose session the server ended stops at once; and with real processes, a
// leader killed with SIGKILL or frozen with SIGSTOP past its lease.
#include "pg_support.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <iostream>
#include <sstream>
#include <thread>

namespace cronoq::test {
namespace {

using namespace std::chrono_literals;
using store::Batch;

class PgLeadership : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(pg_conninfo().empty()) << "CRONOQ_TEST_PG is not set: run through ctest (label postgres)";
    }
};

std::shared_ptr<PostgresStore> connect(const PgSchema& schema, std::chrono::nanoseconds lease) {
    return PostgresStore::connect(pg_conninfo(), schema.config(lease));
}

std::string leader_table(const PgSchema& schema) { return "\"" + schema.name() + "\".leader"; }
std::string tasks_table(const PgSchema& schema) { return "\"" + schema.name() + "\".tasks"; }

TEST_F(PgLeadership, AStandbyTakesOverOnReleaseInTheNextEpoch) {
    PgSchema schema;
    Reports ra, rb;  // outlive the stores, whose destructors report
    auto a = connect(schema, 2s);
    auto b = connect(schema, 2s);
    a->journal().lead(ra.handlers());
    ASSERT_TRUE(ra.wait_leading());
    EXPECT_EQ(ra.recovered->epoch, 1u);
    b->journal().lead(rb.handlers());
    const auto s = a->journal().enqueue(insert_batch(1));
    ASSERT_TRUE(ra.wait_committed(s));
    std::this_thread::sleep_for(300ms);
    EXPECT_FALSE(b->journal().figures().leading) << "one leader at a time";
    RawPg raw;
    EXPECT_EQ(raw.number("SELECT count(*) FROM " + leader_table(schema) +
                         " WHERE holder IS NOT NULL AND backend_pid IS NOT NULL AND expires_at > now()"),
              1)
        << "the lease row names the leader and its backend";
    const auto released = std::chrono::steady_clock::now();
    a->journal().release();
    ASSERT_TRUE(ra.wait_lost());
    EXPECT_EQ(ra.lost->reason, store::LostReason::Released);
    ASSERT_TRUE(rb.wait_leading());
    std::cout << "takeover after a release: "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - released).count()
              << " ms\n";
    EXPECT_EQ(rb.recovered->epoch, 2u);
    ASSERT_EQ(rb.recovered->tasks.size(), 1u);
    EXPECT_EQ(b->journal().figures().epoch, 2u);
}

TEST_F(PgLeadership, AFencedLeaderNeverWritesAgain) {
    PgSchema schema;
    Reports ra;
    auto a = connect(schema, 10s);
    a->journal().lead(ra.handlers());
    ASSERT_TRUE(ra.wait_leading());
    ASSERT_TRUE(ra.wait_committed(a->journal().enqueue(insert_batch(1))));
    RawPg raw;
    // Another process took over (as a standby does after terminating a
    // frozen leader's session): the epoch moved on.
    raw.exec("UPDATE " + leader_table(schema) + " SET epoch = epoch + 1");
    a->journal().enqueue(insert_batch(2));
    ASSERT_TRUE(ra.wait_lost());
    EXPECT_EQ(ra.lost->reason, store::LostReason::Fenced);
    EXPECT_NE(ra.lost->message.find("epoch 2"), std::string::npos) << ra.lost->message;
    a->journal().enqueue(insert_batch(3));
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(raw.number("SELECT count(*) FROM " + tasks_table(schema)), 1);
    EXPECT_FALSE(a->journal().figures().leading);
    // The fenced store gave its session up: a new one leads in epoch 3.
    Reports rb;
    auto b = connect(schema, 10s);
    b->journal().lead(rb.handlers());
    ASSERT_TRUE(rb.wait_leading());
    EXPECT_EQ(rb.recovered->epoch, 3u);
}

TEST_F(PgLeadership, ALeaderWhoseSessionEndsIsFencedAtOnce) {
    PgSchema schema;
    Reports ra, rb;
    auto a = connect(schema, 10s);
    auto b = connect(schema, 10s);
    a->journal().lead(ra.handlers());
    ASSERT_TRUE(ra.wait_leading());
    b->journal().lead(rb.handlers());
    ASSERT_TRUE(ra.wait_committed(a->journal().enqueue(insert_batch(1))));
    RawPg raw;
    raw.exec("SELECT pg_terminate_backend(backend_pid) FROM " + leader_table(schema));
    // The standby takes the freed lock at its next look, long before the lease.
    ASSERT_TRUE(rb.wait_leading());
    EXPECT_EQ(rb.recovered->epoch, 2u);
    a->journal().enqueue(insert_batch(2));
    ASSERT_TRUE(ra.wait_lost());
    EXPECT_EQ(ra.lost->reason, store::LostReason::Fenced);
    std::cout << "the old leader: " << ra.lost->message << "\n";
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(raw.number("SELECT count(*) FROM " + tasks_table(schema)), 1) << "the old leader wrote nothing";
    ASSERT_TRUE(rb.wait_committed(b->journal().enqueue(insert_batch(5))));
    EXPECT_EQ(raw.number("SELECT count(*) FROM " + tasks_table(schema)), 2);
}

/// A child in `pg_leader` mode and what it acknowledged so far.
struct LeaderProcess {
    LeaderProcess(const PgSchema& schema, const std::string& tag, std::chrono::milliseconds lease, int pace_ms)
        : child({"pg_leader", "schema=" + schema.name(), "lease=" + std::to_string(lease.count()), "tag=" + tag,
                 "pace=" + std::to_string(pace_ms)}) {}
    std::optional<std::string> until(const std::string& prefix) {
        return child.read_until(prefix, [this](const std::string& line) { note(line); });
    }
    void drain() {
        while (auto line = child.read_line(5s)) note(*line);
    }
    void note(const std::string& line) {
        std::istringstream in(line.substr(std::min<std::size_t>(2, line.size())));
        if (line.rfind("L ", 0) == 0) in >> epoch >> first;
        else if (line.rfind("C ", 0) == 0) in >> acked;
        else if (line.rfind("X ", 0) == 0) lost = line;
    }
    std::uint64_t end() const { return first + acked; }
    Child child;
    std::uint64_t epoch = 0, first = 0;
    store::Sequence acked = 0;
    std::optional<std::string> lost;
};

TEST_F(PgLeadership, AStandbyTakesOverFromAKilledLeaderProcess) {
    PgSchema schema;
    connect(schema, 1s);  // the schema exists before the child runs
    LeaderProcess leader(schema, "A", 1000ms, 2);
    ASSERT_TRUE(leader.until("L "));
    while (leader.acked < 50) ASSERT_TRUE(leader.until("C "));
    Reports rs;
    auto standby = connect(schema, 1s);
    standby->journal().lead(rs.handlers());
    std::this_thread::sleep_for(100ms);
    leader.child.signal(SIGKILL);
    const auto killed = std::chrono::steady_clock::now();
    leader.drain();
    leader.child.wait();
    ASSERT_TRUE(rs.wait_leading());
    const auto delay = std::chrono::steady_clock::now() - killed;
    std::cout << "takeover after SIGKILL of the leader process (lease 1000 ms): "
              << std::chrono::duration_cast<std::chrono::milliseconds>(delay).count() << " ms\n";
    EXPECT_EQ(rs.recovered->epoch, leader.epoch + 1);
    for (std::uint64_t id = leader.first; id < leader.end(); ++id)
        ASSERT_TRUE(standby->get_task(TaskId{id})) << "acknowledged task " << id << " is missing";
}

TEST_F(PgLeadership, AFrozenLeaderProcessIsTerminatedOvertakenAndFenced) {
    PgSchema schema;
    connect(schema, 1s);
    LeaderProcess leader(schema, "A", 600ms, 2);
    ASSERT_TRUE(leader.until("L "));
    while (leader.acked < 50) ASSERT_TRUE(leader.until("C "));
    Reports rs;
    auto standby = connect(schema, 600ms);
    standby->journal().lead(rs.handlers());
    leader.child.signal(SIGSTOP);
    const auto stopped = std::chrono::steady_clock::now();
    ASSERT_TRUE(rs.wait_leading());
    const auto delay = std::chrono::steady_clock::now() - stopped;
    std::cout << "takeover from a leader frozen with SIGSTOP (lease 600 ms): "
              << std::chrono::duration_cast<std::chrono::milliseconds>(delay).count() << " ms\n";
    EXPECT_GE(delay, 300ms) << "the lease had to run out first";
    EXPECT_EQ(rs.recovered->epoch, leader.epoch + 1);
    RawPg raw;
    const std::string count_a = "SELECT count(*) FROM " + tasks_table(schema) + " WHERE payload LIKE 'A-%'";
    const auto rows_at_takeover = raw.number(count_a);
    const auto marks_at_takeover =
        raw.value("SELECT value FROM \"" + schema.name() + "\".meta WHERE name = 'next_task_id'");
    leader.child.signal(SIGCONT);
    ASSERT_TRUE(leader.until("X "));
    leader.drain();
    EXPECT_EQ(leader.child.wait(), 3) << "the woken leader stops as fenced: " << leader.lost.value_or("");
    std::cout << "the woken leader: " << leader.lost.value_or("") << "\n";
    EXPECT_NE(leader.lost->find("fenced"), std::string::npos);
    EXPECT_EQ(raw.number(count_a), rows_at_takeover) << "the old leader wrote nothing after the takeover";
    EXPECT_EQ(raw.value("SELECT value FROM \"" + schema.name() + "\".meta WHERE name = 'next_task_id'"),
              marks_at_takeover);
    for (std::uint64_t id = leader.first; id < leader.end(); ++id)
        ASSERT_TRUE(standby->get_task(TaskId{id})) << "acknowledged task " << id << " is missing";
}

}  // namespace
}  // namespace cronoq::test
