// Clients in processes of their own (docs/guide/replicas.md), on each
// backend: submissions while no leader runs, a key race between client
// processes, a leader killed while three clients submit, a client's handle
// completing after the failover, and a cancel that reaches a running
// attempt in the leader's process.
#include "client_support.hpp"

#include <cronoq/cronoq.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <iostream>
#include <memory>
#include <map>
#include <set>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

class ClientProcesses : public ::testing::TestWithParam<test::Backend> {};
// SQLite's own behaviour: the PostgreSQL binary instantiates it with no backend.
class ClientProcessesOnSqlite : public ClientProcesses {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ClientProcessesOnSqlite);

/// Waits for each task's committed end through a client (a guard against a
/// hang, not a bound: a minute) and checks its output.
void expect_all_succeeded(test::TestClient& client, const std::map<std::uint64_t, std::string>& acks) {
    for (const auto& [id, key] : acks) {
        auto h = client.find(TaskRef(TaskId{id}));
        ASSERT_TRUE(h.has_value()) << "acknowledged task " << id << " (" << key << ") is lost";
        auto out = h->get_for(60s);
        ASSERT_TRUE(out.has_value()) << "task " << id << " (" << key << ") did not end";
        EXPECT_EQ(**out, key + "!");
    }
}

}  // namespace

TEST_P(ClientProcesses, SubmitWhileNoLeaderRunsAndALaterLeaderRunsEveryTask) {
    test::TestStore store(GetParam());
    // Made before the clients start: three processes creating one SQLite
    // file at once wait on each other's schema migration, longer than the
    // test's short lease lets them (a Busy StoreError).
    store.open().reset();
    std::vector<std::unique_ptr<test::Child>> clients;
    for (const char* prefix : {"a", "b", "c"})
        clients.push_back(std::make_unique<test::Child>(std::vector<std::string>{"client-submit", store.location(), prefix, "20", "0"}));
    std::map<std::uint64_t, std::string> acks;
    for (auto& c : clients) {
        ASSERT_TRUE(test::read_client_acks(*c, acks));
        EXPECT_EQ(c->wait(), 0);
    }
    ASSERT_EQ(acks.size(), 60u) << "ids are not unique across client processes";
    for (const auto& [id, key] : acks) EXPECT_GE(id, test::client_ids_from) << key;
    auto reader = store.open();
    for (const auto& [id, key] : acks) EXPECT_EQ(reader->get_task(TaskRef(TaskId{id}))->status, TaskStatus::Ready) << key;

    auto sched = test::Durable::builder().pool(test::paced_pool(0ms)).store(store.open()).open();
    auto client = test::TestClient::open(store.open());
    expect_all_succeeded(client, acks);
    sched.shutdown(0s);
}

TEST_P(ClientProcesses, ClientsRacingWithOneKeyGetOneTaskWhichRunsOnce) {
    test::TestStore store(GetParam());
    test::Child leader({"client-leader", store.location(), "paced"});
    ASSERT_EQ(leader.read_line(), "L");
    std::vector<std::unique_ptr<test::Child>> clients;
    // The same prefix: every client submits the keys k0..k29 in order.
    for (int i = 0; i < 4; ++i)
        clients.push_back(std::make_unique<test::Child>(std::vector<std::string>{"client-submit", store.location(), "k", "30", "0"}));
    std::vector<std::map<std::uint64_t, std::string>> seen(clients.size());
    for (std::size_t i = 0; i < clients.size(); ++i) {
        ASSERT_TRUE(test::read_client_acks(*clients[i], seen[i]));
        EXPECT_EQ(clients[i]->wait(), 0);
    }
    for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_EQ(seen[i], seen[0]) << "clients got different tasks for one key";
    ASSERT_EQ(seen[0].size(), 30u);
    auto client = test::TestClient::open(store.open());
    expect_all_succeeded(client, seen[0]);
    EXPECT_EQ(store.count_tasks(), 30);
    for (const auto& [id, key] : seen[0]) EXPECT_EQ(client.get(TaskRef(TaskId{id}))->attempt, 1u) << key << " ran more than once";
}

TEST_P(ClientProcesses, LeaderKilledWhileThreeClientsSubmitEveryAcknowledgedTaskEndsOnceSucceeded) {
    test::TestStore store(GetParam());
    test::Child leader({"client-leader", store.location(), "paced"});
    ASSERT_EQ(leader.read_line(), "L");
    test::Child standby({"client-leader", store.location(), "paced"});
    std::vector<std::unique_ptr<test::Child>> clients;
    for (const char* prefix : {"x", "y", "z"})
        clients.push_back(std::make_unique<test::Child>(std::vector<std::string>{"client-submit", store.location(), prefix, "150", "10"}));
    // Some submissions were taken up by the leader before it dies.
    auto watcher = test::TestClient::open(store.open());
    std::map<std::uint64_t, std::string> first;
    while (first.size() < 10) {
        auto line = clients[0]->read_line();
        ASSERT_TRUE(line.has_value());
        std::istringstream in(*line);
        char tag = 0;
        std::uint64_t id = 0;
        std::string key;
        if (in >> tag >> id >> key && tag == 'A') first[id] = key;
    }
    expect_all_succeeded(watcher, first);
    leader.signal(SIGKILL);
    EXPECT_EQ(leader.wait(), 128 + SIGKILL);
    EXPECT_EQ(standby.read_line(), "L");

    std::map<std::uint64_t, std::string> acks = first;
    for (auto& c : clients) {
        ASSERT_TRUE(test::read_client_acks(*c, acks));
        EXPECT_EQ(c->wait(), 0);
    }
    ASSERT_EQ(acks.size(), 450u);
    expect_all_succeeded(watcher, acks);
    EXPECT_EQ(store.count_tasks(), 450) << "a task was submitted twice";
    std::size_t rerun = 0;
    for (const auto& [id, key] : acks) {
        auto row = watcher.get(TaskRef(TaskId{id}));
        ASSERT_TRUE(row.has_value());
        EXPECT_EQ(row->status, TaskStatus::Succeeded) << key;
        rerun += row->attempt > 1;
    }
    std::cout << acks.size() << " acknowledged tasks, " << rerun << " ran again after the failover (at-least-once)\n";
}

TEST_P(ClientProcesses, AClientHandleCompletesAfterAFailover) {
    test::TestStore store(GetParam());
    test::Child leader({"client-leader", store.location(), "hold"});
    ASSERT_EQ(leader.read_line(), "L");
    auto client = test::TestClient::open(store.open());
    auto h = client.submit(Task<std::string>("f").pool("p"));
    ASSERT_EQ(leader.read_line(), "S " + std::to_string(h.id().value));
    leader.signal(SIGKILL);
    EXPECT_EQ(leader.wait(), 128 + SIGKILL);
    // The next leader recovers the running attempt as a retryable failure
    // and runs it again.
    auto sched = test::Durable::builder().pool(test::paced_pool(0ms)).store(store.open()).open();
    EXPECT_EQ(*h.get(), "f!");
    sched.shutdown(0s);
}

TEST_P(ClientProcesses, ACancelFromAClientReachesARunningAttemptInTheLeadersProcess) {
    test::TestStore store(GetParam());
    test::Child leader({"client-leader", store.location(), "hold"});
    ASSERT_EQ(leader.read_line(), "L");
    auto client = test::TestClient::open(store.open());
    auto h = client.submit(Task<std::string>("c").pool("p").key("to-cancel"));
    const std::string id = std::to_string(h.id().value);
    ASSERT_EQ(leader.read_line(), "S " + id);
    EXPECT_TRUE(client.cancel(TaskRef("to-cancel")));
    EXPECT_EQ(leader.read_line(), "C " + id) << "the attempt was not aborted";
    try {
        h.get();
        ADD_FAILURE() << "a cancelled task gave a result";
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.status(), TaskStatus::Cancelled);
        EXPECT_EQ(e.attempt(), 1u);
    }
}

// docs/guide/replicas.md, "Pause and resume": a client's pause reaches the
// leader in another process, which applies it once and writes it for the
// next leader; a client's resume reaches that next leader.
TEST_P(ClientProcesses, APauseFromAClientReachesTheLeadersProcessAndOutlivesIt) {
    test::TestStore store(GetParam());
    test::Child leader({"client-leader", store.location(), "paced"});
    ASSERT_EQ(leader.read_line(), "L");
    auto client = test::TestClient::open(store.open());
    client.pause("p");
    // Ingested after the pause, in commit order: it never starts, and the
    // cancel ends it without an attempt.
    auto held = client.submit(Task<std::string>("held").pool("p"));
    EXPECT_TRUE(client.cancel(TaskRef(held.id())));
    try {
        held.get();
        ADD_FAILURE() << "a task of the paused pool ran";
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.status(), TaskStatus::Cancelled);
        EXPECT_EQ(e.attempt(), 0u) << "a task of the paused pool started";
    }
    auto waits = client.submit(Task<std::string>("waits").pool("p"));
    leader.signal(SIGKILL);
    EXPECT_EQ(leader.wait(), 128 + SIGKILL);
    // The pause was committed with the end above: the next leader starts
    // the pool paused.
    auto sched = test::Durable::builder().pool(test::paced_pool(0ms)).store(store.open()).open();
    EXPECT_TRUE(sched.snapshot().pools.at(0).paused);
    EXPECT_EQ(waits.status(), TaskStatus::Ready);
    client.resume("p");
    auto out = waits.get_for(60s);  // a guard against a hang, not a bound
    ASSERT_TRUE(out.has_value()) << "the resume did not reach the leader";
    EXPECT_EQ(**out, "waits!");
    EXPECT_FALSE(sched.snapshot().pools.at(0).paused);
    sched.shutdown(0s);
}

// docs/store.md, "Clients": the SQLite leader's connection looks for the
// write lock every half millisecond, where SQLite's own wait backs off to a
// look every 100 ms, so clients committing back to back in processes of
// their own do not keep it from committing: it keeps its lease (a standby
// would take over if its renewals starved), and every acknowledged task is
// ingested and runs once.
TEST_P(ClientProcessesOnSqlite, ClientsCommittingBackToBackDoNotStarveTheSqliteLeader) {
    test::TestStore store(GetParam());
    test::Child leader({"client-leader", store.location(), "paced"});
    ASSERT_EQ(leader.read_line(), "L");
    test::Child standby({"client-leader", store.location(), "paced"});
    std::vector<std::unique_ptr<test::Child>> clients;
    for (const char* prefix : {"a", "b", "c", "d"})
        clients.push_back(std::make_unique<test::Child>(std::vector<std::string>{"client-submit", store.location(), prefix, "200", "0"}));
    std::map<std::uint64_t, std::string> acks;
    for (auto& c : clients) {
        ASSERT_TRUE(test::read_client_acks(*c, acks));
        EXPECT_EQ(c->wait(), 0);
    }
    ASSERT_EQ(acks.size(), 800u);
    auto watcher = test::TestClient::open(store.open());
    expect_all_succeeded(watcher, acks);
    EXPECT_EQ(store.count_tasks(), 800) << "a task was submitted twice";
    for (const auto& [id, key] : acks) EXPECT_EQ(watcher.get(TaskRef(TaskId{id}))->attempt, 1u) << key << " ran again";
    const auto lease = store.open()->journal().read_lease();
    EXPECT_EQ(lease.epoch, 1u) << "the first leader lost its lease while the clients committed";
    EXPECT_TRUE(lease.held);
}

INSTANTIATE_TEST_SUITE_P(Backends, ClientProcesses, ::testing::ValuesIn(test::tested_backends()), test::BackendName());
INSTANTIATE_TEST_SUITE_P(Backends, ClientProcessesOnSqlite, ::testing::ValuesIn(test::sqlite_backends()),
                         test::BackendName());
