// A server restart, on a server of this test's own: the leader's session
// ends, so it is fenced at once and never writes again; a standby and a
// connect() wait while the server is away and carry on once it is back.
#include "pg_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <future>
#include <iostream>
#include <thread>

namespace cronoq::test::restart_test {
namespace {

using namespace std::chrono_literals;

int server(const std::string& command) {
    const std::string line = std::string("PG_BIN=") + CRONOQ_TEST_PG_BIN + " " + CRONOQ_TEST_PG_SERVER_SH + " " +
                             command + " " + CRONOQ_TEST_PG_OWN_DIR + " >/dev/null 2>&1";
    return std::system(line.c_str());
}

struct OwnServer {
    OwnServer() { started = server("start") == 0; }
    ~OwnServer() { server("stop"); }
    std::string conninfo() const { return std::string("host=") + CRONOQ_TEST_PG_OWN_DIR + " dbname=cronoq_test user=postgres"; }
    bool started = false;
};

TEST(PgRestart, TheLeaderIsFencedAndAStandbyLeadsOnceTheServerIsBack) {
    OwnServer own;
    ASSERT_TRUE(own.started);
    PostgresStoreConfig config;
    config.schema = "restart";
    config.leader_lease = 1500ms;
    Reports ra, rb;
    auto a = PostgresStore::connect(own.conninfo(), config);
    auto b = PostgresStore::connect(own.conninfo(), config);
    a->journal().lead(ra.handlers());
    ASSERT_TRUE(ra.wait_leading());
    b->journal().lead(rb.handlers());
    ASSERT_TRUE(ra.wait_committed(a->journal().enqueue(insert_batch(1))));

    ASSERT_EQ(server("pause"), 0);
    // The leader's next renewal (every lease / 3) finds its session gone.
    ASSERT_TRUE(ra.wait_lost());
    EXPECT_EQ(ra.lost->reason, store::LostReason::Fenced);
    std::cout << "the leader, server stopped: " << ra.lost->message << "\n";
    a->journal().enqueue(insert_batch(2));

    // connect() while the server is away waits for it (up to connect_timeout).
    auto later = std::async(std::launch::async, [&] {
        PostgresStoreConfig c = config;
        c.connect_timeout = 30s;
        return PostgresStore::connect(own.conninfo(), c);
    });
    std::this_thread::sleep_for(500ms);
    EXPECT_FALSE(rb.recovered) << "nobody leads while the server is away";
    ASSERT_EQ(server("resume"), 0);
    const auto back = std::chrono::steady_clock::now();
    ASSERT_TRUE(rb.wait_leading());
    std::cout << "the standby leads "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - back).count()
              << " ms after the server is back\n";
    EXPECT_EQ(rb.recovered->epoch, 2u);
    ASSERT_EQ(rb.recovered->tasks.size(), 1u) << "the fenced leader wrote nothing";
    auto c = later.get();
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->get_task(TaskId{1}));
    EXPECT_FALSE(c->get_task(TaskId{2}));
}

}  // namespace
}  // namespace cronoq::test::restart_test
