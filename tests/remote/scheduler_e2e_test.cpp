// A real scheduler behind a WorkerServer (WorkerServer::start(Scheduler&)),
// and RemoteWorker processes over loopback: the two halves of the remote
// pools together. Which worker ran a task is in its output ("<name>
// attempt=<n>", child_worker.cpp's `who`); a worker proves it is connected
// by running a task labelled with its name (no polling).
#include "raw_worker.hpp"
#include "remote_support.hpp"

#include <cronoq/blocking_scheduler.hpp>
#include <cronoq/codec.hpp>
#include <cronoq/remote/worker_server.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <map>

namespace cronoq::test::scheduler_e2e_test {
namespace {

using namespace std::chrono_literals;
using Sched = BlockingScheduler<std::string, std::string>;
using RemotePool = Pool<std::string, std::string>;

/// Quick retries: the tests wait for them.
constexpr RetryPolicy quick_retry{3, 10ms, 1.0, 10ms, false};

RemotePool work_pool() { return RemotePool("work").remote().retry(quick_retry); }

struct Served {
    Sched sched;
    std::optional<WorkerServer> server;
    std::uint16_t port = 0;

    explicit Served(RemotePool pool = work_pool(), bool serve_now = true)
        : sched(Sched::builder().threads(2).pool(std::move(pool)).build()) {
        if (serve_now) serve("127.0.0.1:0");
    }
    void serve(const std::string& listen, std::size_t max_message_bytes = WorkerServerConfig{}.max_message_bytes) {
        WorkerServerConfig config;
        config.listen = listen;
        config.tokens = {"secret"};
        config.max_message_bytes = max_message_bytes;
        auto scheduler = sched.scheduler();  // a copy shares the scheduler
        server.emplace(WorkerServer::start(scheduler, std::move(config)));
        port = server->port();
    }
    std::string target() const { return "127.0.0.1:" + std::to_string(port); }
    /// A worker named `name` (also its label `name:<name>`).
    std::unique_ptr<Child> worker(const std::string& name, std::size_t slots, std::vector<std::string> more = {}) {
        std::vector<std::string> args{"worker", "target=" + target(), "token=secret", "name=" + name,
                                      "slots=" + std::to_string(slots), "label=name:" + name, "backoff_ms=20"};
        args.insert(args.end(), more.begin(), more.end());
        return std::make_unique<Child>(std::move(args));
    }
    BlockingHandle<std::string> submit(Task<std::string> task) { return sched.submit(std::move(task.pool("work"))); }
    /// Returns once `name` is connected: a task only it can run has run there.
    void proves_connected(const std::string& name) {
        EXPECT_EQ(*submit(Task<std::string>("who").label("name", name)).get(), name + " attempt=1");
    }
};

TEST(SchedulerE2E, OutcomesAndRetriesAsForLocalExecutors) {
    Served s;
    auto w1 = s.worker("w1", 4);
    auto ok = s.submit(Task<std::string>("who"));
    auto flaky = s.submit(Task<std::string>("fail_until:3"));  // two retryable failures, then success
    auto exhausted = s.submit(Task<std::string>("fail_until:9"));
    auto broken = s.submit(Task<std::string>("permanent:broken"));
    auto panics = s.submit(Task<std::string>("throw:boom"));  // a throwing handler: retryable
    auto gives_up = s.submit(Task<std::string>("cancel"));
    EXPECT_EQ(*ok.get(), "w1 attempt=1");
    EXPECT_EQ(*flaky.get(), "w1 attempt=3");
    auto f = failure_of(exhausted);
    EXPECT_EQ(f.status(), TaskStatus::DeadLettered);
    EXPECT_EQ(f.attempt(), 3u);
    EXPECT_EQ(f.message(), "attempt 3");
    f = failure_of(broken);
    EXPECT_EQ(f.status(), TaskStatus::Failed);
    EXPECT_EQ(f.attempt(), 1u);
    EXPECT_EQ(f.message(), "broken");
    f = failure_of(panics);
    EXPECT_EQ(f.status(), TaskStatus::DeadLettered);
    EXPECT_EQ(f.message(), "panic: boom");
    EXPECT_EQ(failure_of(gives_up).status(), TaskStatus::Cancelled);
}

TEST(SchedulerE2E, HigherPrioritiesLeaseFirst) {
    Served s;
    // Queued before any worker: the pool has no capacity yet.
    std::vector<std::pair<Priority, BlockingHandle<std::string>>> tasks;
    for (Priority p : {Priority::Low, Priority::Normal, Priority::High, Priority::Critical})
        tasks.emplace_back(p, s.submit(Task<std::string>("echo:x").priority(p)));
    auto w1 = s.worker("w1", 1);  // one slot: one lease at a time, in the engine's order
    for (auto& [p, h] : tasks) EXPECT_EQ(*h.get(), "x");
    std::vector<TaskId> order;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        const auto line = w1->read_until("I ");
        ASSERT_TRUE(line);
        const auto at = line->find("task=") + 5;
        order.push_back(TaskId{std::stoull(line->substr(at, line->find(' ', at) - at))});
    }
    EXPECT_EQ(order, (std::vector<TaskId>{tasks[3].second.id(), tasks[2].second.id(), tasks[1].second.id(),
                                          tasks[0].second.id()}));
}

TEST(SchedulerE2E, TheLeaseTagsCarryTheFairKey) {
    Served s;
    auto w1 = s.worker("w1", 1);
    EXPECT_EQ(*s.submit(Task<std::string>("echo:x").fair_key("tenant-7").tag("team", "a")).get(), "x");
    auto line = w1->read_until("I ");
    ASSERT_TRUE(line);
    // Tags travel as a map: by name, the task's own beside the fair key.
    EXPECT_NE(line->find(" tag:fair_key=tenant-7"), std::string::npos) << *line;
    EXPECT_NE(line->find(" tag:team=a"), std::string::npos) << *line;
    // Without a fair key the lease has no such tag.
    EXPECT_EQ(*s.submit(Task<std::string>("echo:y")).get(), "y");
    line = w1->read_until("I ");
    ASSERT_TRUE(line);
    EXPECT_EQ(line->find("fair_key"), std::string::npos) << *line;
}

TEST(SchedulerE2E, TimeoutAbortsTheHandler) {
    Served s;
    auto w1 = s.worker("w1", 2);
    auto h = s.submit(Task<std::string>("block").timeout(200ms).retry(RetryPolicy::none()));
    const auto f = failure_of(h);
    EXPECT_EQ(f.status(), TaskStatus::DeadLettered) << f.what();
    EXPECT_EQ(f.attempt(), 1u);
    // The server aborted the lease: the handler's cancelled() completed.
    EXPECT_TRUE(w1->read_until("C "));
}

TEST(SchedulerE2E, CancelReachesTheHandler) {
    Served s;
    auto w1 = s.worker("w1", 2);
    auto h = s.submit(Task<std::string>("block"));
    ASSERT_TRUE(w1->read_until("S "));
    EXPECT_TRUE(h.cancel());
    EXPECT_EQ(failure_of(h).status(), TaskStatus::Cancelled);
    EXPECT_TRUE(w1->read_until("C "));
}

TEST(SchedulerE2E, HeartbeatsKeepLongAttemptsAndSilenceLosesTheLease) {
    Served s(work_pool().lease_ttl(300ms));
    auto w1 = s.worker("w1", 2);
    // Four lease TTLs long: only the worker's heartbeats keep the lease.
    auto longer = s.submit(Task<std::string>("wait_ms:1200").retry(RetryPolicy::none()));
    EXPECT_EQ(*longer.get(), "waited");
    // A stopped worker sends nothing: past the TTL its lease is lost, and
    // the attempt is retried on a worker that answers (not on the silent
    // one, whose stream is still open and whose slots are free).
    auto held = s.submit(Task<std::string>("hold_on:w1"));
    ASSERT_TRUE(w1->read_until("S "));
    w1->signal(SIGSTOP);
    auto w2 = s.worker("w2", 2);
    EXPECT_EQ(*held.get(), "w2 attempt=2");
    w1->signal(SIGCONT);
}

TEST(SchedulerE2E, KilledWorkersTasksEndOnceOnAnother) {
    Served s;
    auto events = s.sched.subscribe();
    auto w1 = s.worker("w1", 4);
    s.proves_connected("w1");
    std::vector<BlockingHandle<std::string>> held;
    for (int i = 0; i < 4; ++i) held.push_back(s.submit(Task<std::string>("hold_on:w1")));
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(w1->read_until("S "));  // all four leases in flight on w1
    auto w2 = s.worker("w2", 4);
    s.proves_connected("w2");
    w1->signal(SIGKILL);
    EXPECT_EQ(w1->wait(), 128 + SIGKILL);
    for (auto& h : held) EXPECT_EQ(*h.get(), "w2 attempt=2");
    // Shut down: every event is in the stream; each task ended exactly once.
    s.server.reset();
    s.sched.shutdown(0s);
    std::map<std::uint64_t, int> terminal;
    while (auto e = events.try_next())
        if (is_terminal(e->status)) ++terminal[e->id.value];
    EXPECT_EQ(events.dropped(), 0u);
    for (auto& h : held) EXPECT_EQ(terminal[h.id().value], 1) << "task " << h.id().value;
}

TEST(SchedulerE2E, DroppedStreamReconnectsAndTakesLeasesAgain) {
    Served s;
    auto w1 = s.worker("w1", 2);
    s.proves_connected("w1");
    // The server goes away and comes back on the same port: the worker's
    // stream ends, it reconnects with backoff and takes leases again.
    const std::string listen = s.target();
    s.server.reset();
    auto queued = s.submit(Task<std::string>("who").label("name", "w1"));
    s.serve(listen);
    EXPECT_EQ(*queued.get(), "w1 attempt=1");
    s.proves_connected("w1");
}

TEST(SchedulerE2E, LabelledTasksRunOnlyOnMatchingWorkersWithoutHoldingOthersBack) {
    Served s;
    auto w1 = s.worker("w1", 2, {"label=gpu:a100"});
    auto w2 = s.worker("w2", 2);
    s.proves_connected("w1");
    s.proves_connected("w2");
    // No worker has this label: it waits, and what can run runs.
    auto unmatched = s.submit(Task<std::string>("who").label("gpu", "h100"));
    std::vector<BlockingHandle<std::string>> gpu, any;
    for (int i = 0; i < 8; ++i) gpu.push_back(s.submit(Task<std::string>("who").label("gpu", "a100")));
    for (int i = 0; i < 8; ++i) any.push_back(s.submit(Task<std::string>("who")));
    for (auto& h : gpu) EXPECT_EQ(*h.get(), "w1 attempt=1");
    for (auto& h : any) EXPECT_NE(h.get()->find("attempt=1"), std::string::npos);
    EXPECT_EQ(unmatched.status(), TaskStatus::Ready);
    EXPECT_TRUE(unmatched.cancel());
    EXPECT_EQ(failure_of(unmatched).status(), TaskStatus::Cancelled);
}

TEST(SchedulerE2E, NackedLeasesGoToAnotherWorkerWithoutCountingAnAttempt) {
    Served s;
    auto w1 = s.worker("w1", 2);
    auto w2 = s.worker("w2", 2);
    s.proves_connected("w1");
    s.proves_connected("w2");
    std::vector<BlockingHandle<std::string>> tasks;
    for (int i = 0; i < 10; ++i) tasks.push_back(s.submit(Task<std::string>("reject_on:w1")));
    for (auto& h : tasks) EXPECT_EQ(*h.get(), "w2 attempt=1");
}

TEST(SchedulerE2E, ALeaseLargerThanMaxMessageBytesIsInvalidAtSubmitThoughItsPayloadFits) {
    Served s(work_pool(), false);
    s.serve("127.0.0.1:0", 256 * 1024);
    const std::string payload(192 * 1024, 'p');
    auto r = s.sched.try_submit(
        Task<std::string>(payload).pool("work").key(std::string(40 * 1024, 'k')).tag("t", std::string(40 * 1024, 'v')));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), SubmitError::Invalid);
    EXPECT_NE(r.message().find("lease"), std::string::npos) << r.message();
    EXPECT_NE(r.message().find("262144"), std::string::npos) << "names the limit: " << r.message();
    const auto at = r.message().find("up to ");
    ASSERT_NE(at, std::string::npos) << r.message();
    EXPECT_GE(std::stoul(r.message().substr(at + 6)), 192u * 1024 + 80 * 1024) << "names the lease's size: " << r.message();
    auto fits = s.sched.try_submit(Task<std::string>(payload).pool("work").key("k").tag("t", "v"));
    EXPECT_TRUE(fits.has_value()) << fits.message();
}

TEST(SchedulerE2E, ALeaseTooLargeToSendFailsThatAttemptAndNotTheOthersOnItsWorker) {
    // Submitted while no server had said its limit: admitted, and too large
    // for the server started next.
    Served s(work_pool(), false);
    auto oversize = s.submit(Task<std::string>("who").key(std::string(300 * 1024, 'k')));
    std::vector<BlockingHandle<std::string>> others;
    for (int i = 0; i < 3; ++i) others.push_back(s.submit(Task<std::string>("who")));
    s.serve("127.0.0.1:0", 256 * 1024);
    auto w1 = s.worker("w1", 4);  // all four leased to it at once, the oversize one first
    const auto f = failure_of(oversize);
    EXPECT_EQ(f.status(), TaskStatus::Failed) << f.what();
    EXPECT_EQ(f.attempt(), 1u) << "permanent: no worker of this server can take it";
    EXPECT_NE(f.message().find("262144"), std::string::npos) << f.message();
    // Its worker's stream went on: the others ran there once.
    for (auto& h : others) EXPECT_EQ(*h.get(), "w1 attempt=1");
    s.proves_connected("w1");
}

TEST(SchedulerE2E, AShutdownWithoutAStoreSaysSoAndNotThatTheLeadMoved) {
    Served s;
    RawWorker worker(s.target());
    const auto first = worker.read();
    ASSERT_TRUE(first && first->has_registered());
    s.sched.shutdown(0s);
    const auto shutdown = worker.read_until_shutdown();
    ASSERT_TRUE(shutdown);
    EXPECT_EQ(shutdown->reason(), "the scheduler shut down");
    EXPECT_FALSE(shutdown->not_leader()) << "no other scheduler takes over: the worker backs off";
}

}  // namespace
}  // namespace cronoq::test::scheduler_e2e_test
