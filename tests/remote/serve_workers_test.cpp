// Builder::serve_workers (docs/remote.md, "Serving while waiting"):
// replicas on one SQLite store serve the worker endpoint from open() on; a
// standby refuses `register` with a redirect to the leader; the leader
// serves leases; a worker follows the lead through a SIGKILL of the leader.
// Replicas and workers are processes (child_replica.cpp, child_worker.cpp).
#include "remote_support.hpp"
#include "replica_support.hpp"

#include <cronoq/blocking_scheduler.hpp>
#include <cronoq/codec.hpp>
#include <cronoq/remote/worker_server.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <optional>

namespace cronoq::test::serve_workers_test {
namespace {

using namespace std::chrono_literals;
using Sched = BlockingScheduler<std::string, std::string>;

/// A replica process on the SQLite store `file`.
Replica sqlite_replica(const std::filesystem::path& file, std::vector<std::string> more = {}) {
    return Replica({"store=" + file.string()}, std::move(more));
}

Sched::Builder replica_builder(const std::filesystem::path& file, WorkerServerConfig config) {
    return std::move(Sched::builder()
                         .threads(2)
                         .pool(Pool<std::string, std::string>("work").remote())
                         .store(SqliteStore::open(file, SqliteStoreConfig{Durability::Full, 1s, 24h}))
                         .serve_workers(std::move(config)));
}

TEST(ServeWorkers, AWildcardListenHostWithoutAdvertiseIsAConfigErrorAtOpen) {
    ScratchDir dir;
    WorkerServerConfig config;
    config.listen = "0.0.0.0:0";
    config.tokens = {"secret"};
    try {
        replica_builder(dir.file("s.db"), config).open();
        FAIL() << "open() accepted a wildcard listen host without advertise";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("advertise"), std::string::npos) << e.what();
    }
    config.advertise = "http://127.0.0.1:7070";  // with advertise, the wildcard is fine
    std::optional<std::uint16_t> bound;
    config.on_listening = [&](std::uint16_t port) { bound = port; };
    auto sched = replica_builder(dir.file("s.db"), config).open();
    ASSERT_TRUE(bound);
    EXPECT_NE(*bound, 0);
}

TEST(ServeWorkers, WithoutAStoreItIsAConfigError) {
    WorkerServerConfig config;
    config.listen = "127.0.0.1:0";
    EXPECT_THROW(Sched::builder().pool(Pool<std::string, std::string>("work").remote()).serve_workers(config).build(),
                 ConfigError);
}

TEST(ServeWorkers, AStandbyServesFromOpenRefusesWithARedirectAndServesOnceItLeads) {
    ScratchDir dir;
    std::uint16_t leader_port = 0;
    WorkerServerConfig config;
    config.listen = "127.0.0.1:0";
    config.tokens = {"secret"};
    config.on_listening = [&](std::uint16_t port) { leader_port = port; };
    std::optional<Sched> leader(replica_builder(dir.file("s.db"), config).open());
    ASSERT_NE(leader_port, 0);
    // The leader serves: a worker registers.
    EXPECT_EQ(register_at("127.0.0.1:" + std::to_string(leader_port)).code, grpc::StatusCode::OK);

    // A standby: bound before it leads (on_listening), refusing with a redirect.
    Replica standby = sqlite_replica(dir.file("s.db"));
    ASSERT_NE(standby.port, 0);
    const Refusal refused = register_at(standby.address());
    EXPECT_EQ(refused.code, grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(refused.message.find("does not lead"), std::string::npos) << refused.message;
    ASSERT_TRUE(refused.trailers.count("cronoq-shard"));
    EXPECT_EQ(refused.trailers.at("cronoq-shard"), "default");

    // The leader hands over: the standby leads and serves.
    leader.reset();
    ASSERT_EQ(standby.child->read_until("O"), "O");
    EXPECT_EQ(register_at(standby.address()).code, grpc::StatusCode::OK);
    // And the old leader's endpoint is gone with it.
    EXPECT_EQ(register_at("127.0.0.1:" + std::to_string(leader_port)).code, grpc::StatusCode::UNAVAILABLE);
}

void expect_all_succeeded(const std::filesystem::path& file, const std::map<std::string, std::uint64_t>& acknowledged,
                          Child& new_leader) {
    test::expect_all_succeeded(*SqliteStore::open(file), acknowledged, new_leader);
}

/// Two replicas on one SQLite store, for a worker that follows the lead
/// through a SIGKILL: `first` leads and submitted `tasks` tasks of 150 ms
/// each, all acknowledged; `second` waits as a standby.
struct FollowTheLead {
    static constexpr int tasks = 16;
    ScratchDir dir;
    std::optional<Replica> first, second;
    std::map<std::string, std::uint64_t> acknowledged;

    void start() {
        first.emplace(sqlite_replica(dir.file("s.db"), {"submit=" + std::to_string(tasks), "payload=wait_ms:150"}));
        ASSERT_EQ(first->child->read_until("O"), "O");
        acknowledged = first->acknowledged(tasks);
        ASSERT_EQ(acknowledged.size(), static_cast<std::size_t>(tasks));
        second.emplace(sqlite_replica(dir.file("s.db"), {"await=" + std::to_string(tasks)}));
        ASSERT_NE(second->port, 0);
    }

    /// A worker given the gRPC target `target` runs a task, `first` is
    /// SIGKILLed; `second` leads, and every acknowledged task succeeds.
    void expect_worker_follows(const std::string& target) {
        Child worker({"worker", "target=" + target, "token=secret", "name=w", "slots=4", "backoff_ms=50"});
        ASSERT_TRUE(worker.read_until("S "));  // running on the leader
        first->child->signal(SIGKILL);
        first->child->wait();
        ASSERT_EQ(second->child->read_until("O"), "O");
        expect_all_succeeded(dir.file("s.db"), acknowledged, *second->child);
    }
};

TEST(ServeWorkers, AWorkerFollowsTheLeadThroughASigkillOfTheLeader) {
    FollowTheLead run;
    ASSERT_NO_FATAL_FAILURE(run.start());
    // A target listing both replicas, the leader first.
    run.expect_worker_follows("ipv4:" + run.first->address() + "," + run.second->address());
}

TEST(ServeWorkers, AWorkerReachingAStandbyIsRedirectedToTheLeaderAndFollowsItsSigkill) {
    FollowTheLead run;
    ASSERT_NO_FATAL_FAILURE(run.start());
    // The standby names the leader's advertised endpoint (its default: the
    // scheme, the listen host and the bound port).
    const Refusal refused = register_at(run.second->address());
    EXPECT_EQ(refused.code, grpc::StatusCode::FAILED_PRECONDITION);
    ASSERT_TRUE(refused.trailers.count("cronoq-shard-endpoint")) << refused.message;
    EXPECT_EQ(refused.trailers.at("cronoq-shard-endpoint"), "http://" + run.first->address());
    // A target listing both replicas, the standby first: gRPC picks it, and
    // it sends the worker to the leader.
    run.expect_worker_follows("ipv4:" + run.second->address() + "," + run.first->address());
}

// Shards (docs/guide/replicas.md, "Shards"): a process that leads shard
// "b" sends a worker of pool "work", which shard "a" declares, to a's
// leader, naming the shard; the worker follows and runs a's tasks.
TEST(ServeWorkers, AWorkerOfAPoolOfAnotherShardIsRedirectedToThatShardsLeader) {
    ScratchDir dir;
    constexpr int tasks = 8;
    Replica a = sqlite_replica(dir.file("s.db"), {"shard=a", "submit=" + std::to_string(tasks), "await=" + std::to_string(tasks),
                                              "payload=wait_ms:20"});
    ASSERT_EQ(a.child->read_until("O"), "O");
    const auto acknowledged = a.acknowledged(tasks);
    ASSERT_EQ(acknowledged.size(), static_cast<std::size_t>(tasks));
    Replica b = sqlite_replica(dir.file("s.db"), {"shard=b", "pool=other"});
    ASSERT_EQ(b.child->read_until("O"), "O") << "shard b waited for shard a's lease";
    Refusal refused = register_at(b.address());
    EXPECT_EQ(refused.code, grpc::StatusCode::FAILED_PRECONDITION) << refused.message;
    EXPECT_EQ(refused.trailers["cronoq-shard"], "a") << refused.message;
    EXPECT_EQ(refused.trailers["cronoq-shard-endpoint"], "http://" + a.address()) << refused.message;
    EXPECT_NE(refused.message.find("shard \"a\""), std::string::npos) << refused.message;
    // A worker whose target is shard b's process only.
    Child worker({"worker", "target=" + b.address(), "token=secret", "name=w", "slots=4", "backoff_ms=50"});
    expect_all_succeeded(dir.file("s.db"), acknowledged, *a.child);
}

}  // namespace
}  // namespace cronoq::test::serve_workers_test
