// A remote pool on a scheduler with a store (SQLite): what waits for a
// worker, and what a worker was running, survives the scheduler's restart
// and ends on a worker of the next scheduler, its output kept in the store.
// Workers are child processes (child_worker.cpp); which worker ran a task,
// and as which attempt, is in its output ("<name> attempt=<n>").
#include "raw_worker.hpp"
#include "remote_support.hpp"

#include <cronoq/blocking_scheduler.hpp>
#include <cronoq/remote/worker_server.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include <gtest/gtest.h>

namespace cronoq::test::durable_remote_test {
namespace {

using namespace std::chrono_literals;
using Sched = BlockingScheduler<std::string, std::string>;

/// A scheduler leading on the store at `file`, with the remote pool "work",
/// served on a port of its own.
struct DurableServed {
    Sched sched;
    std::optional<WorkerServer> server;

    explicit DurableServed(const std::filesystem::path& file)
        : sched(Sched::builder()
                    .threads(2)
                    .pool(Pool<std::string, std::string>("work").remote().retry(RetryPolicy{3, 10ms, 1.0, 10ms, false}))
                    .store(SqliteStore::open(file, SqliteStoreConfig{Durability::Full, 600ms, 24h}))
                    .open()) {
        WorkerServerConfig config;
        config.listen = "127.0.0.1:0";
        config.tokens = {"secret"};
        auto scheduler = sched.scheduler();
        server.emplace(WorkerServer::start(scheduler, std::move(config)));
    }
    std::unique_ptr<Child> worker(const std::string& name) const {
        return std::make_unique<Child>(std::vector<std::string>{
            "worker", "target=127.0.0.1:" + std::to_string(server->port()), "token=secret", "name=" + name, "slots=4",
            "backoff_ms=20"});
    }
    BlockingHandle<std::string> submit(std::string payload, std::string key) {
        return sched.submit(Task<std::string>(std::move(payload)).pool("work").key(std::move(key)));
    }
    std::string output_of(const std::string& key) {
        auto h = sched.find(TaskRef(key));
        if (!h) return "(no task " + key + ")";
        return *h->get();
    }
};

TEST(DurableRemote, TasksWaitingForAWorkerRunOnAWorkerOfTheNextScheduler) {
    ScratchDir dir;
    {
        DurableServed first(dir.file("s.db"));
        // No worker: the pool has no capacity, so both wait in the store.
        first.submit("echo:a", "a");
        first.submit("who", "who");
        first.sched.shutdown(0s);
    }
    {
        DurableServed second(dir.file("s.db"));
        auto w1 = second.worker("w1");
        // Their payloads came back from the store and went out on the wire.
        EXPECT_EQ(second.output_of("a"), "a");
        EXPECT_EQ(second.output_of("who"), "w1 attempt=1");
    }
    // The outputs the worker reported are in the store.
    DurableServed third(dir.file("s.db"));
    EXPECT_EQ(third.sched.status(TaskRef("a")), TaskStatus::Succeeded);
    EXPECT_EQ(third.output_of("a"), "a");
    EXPECT_EQ(third.output_of("who"), "w1 attempt=1");
}

TEST(DurableRemote, AnAttemptRunningOnAWorkerAtShutdownRunsAgainOnTheNextSchedulersWorker) {
    ScratchDir dir;
    {
        DurableServed first(dir.file("s.db"));
        auto w1 = first.worker("w1");
        first.submit("hold_on:w1", "held");  // w1 holds it until cancelled
        ASSERT_TRUE(w1->read_until("S "));
        first.sched.shutdown(0s);
        // The shutdown aborted the lease: the handler's cancelled() completed.
        EXPECT_TRUE(w1->read_until("C "));
    }
    DurableServed second(dir.file("s.db"));
    auto w2 = second.worker("w2");
    // The aborted attempt counts as lost: the task runs again, elsewhere.
    EXPECT_EQ(second.output_of("held"), "w2 attempt=2");
    EXPECT_EQ(second.sched.status(TaskRef("held")), TaskStatus::Succeeded);
}

TEST(DurableRemote, AShutdownThatReleasesTheLeadTellsWorkersNotLeader) {
    ScratchDir dir;
    DurableServed s(dir.file("s.db"));
    RawWorker worker("127.0.0.1:" + std::to_string(s.server->port()));
    const auto first = worker.read();
    ASSERT_TRUE(first && first->has_registered());
    s.sched.shutdown(0s);
    // The lead is free for a standby at once: the worker reconnects at once,
    // through a target that reaches the standbys (docs/remote.md, Reconnects).
    const auto shutdown = worker.read_until_shutdown();
    ASSERT_TRUE(shutdown);
    EXPECT_TRUE(shutdown->not_leader());
    EXPECT_EQ(shutdown->reason(), "the scheduler shut down and released the lead: a standby may take it");
}

}  // namespace
}  // namespace cronoq::test::durable_remote_test
