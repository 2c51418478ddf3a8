// Remote pools in the driver (docs/remote.md), through the scheduler's RemoteHost
// with an in-test session that records what the scheduler sends: a real
// scheduler, no server, no network.
#include "driver_harness.hpp"

#include <cronoq/codec.hpp>
#include <cronoq/detail/remote_host.hpp>
#include <cronoq/diagnostics.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace remote_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using detail::ConnectRefused;
using detail::RemoteLeaseOut;
using detail::RemoteReport;
using detail::WorkerGrant;
using detail::WorkerRegistration;
using Sched = Scheduler<std::string, int>;  // payloads as raw bytes, outputs as JSON

/// A worker's stream as the scheduler sees it: records every call.
class RecordingSession : public detail::RemoteSession {
public:
    /// A lease with this payload throws, as a server's session does for
    /// one larger than its message limit.
    std::string refuse_payload;

    void lease(RemoteLeaseOut lease) override {
        if (lease.payload == refuse_payload) throw std::length_error("lease: cannot send " + lease.payload);
        std::lock_guard lock(mu_);
        pending_.push_back(lease);
        leases_.push_back(std::move(lease));
        cv_.notify_all();
    }
    void abort(LeaseId lease, std::string reason) override {
        std::lock_guard lock(mu_);
        aborts_.emplace_back(lease, std::move(reason));
    }
    void shutdown(std::string reason, bool not_leader) override {
        std::lock_guard lock(mu_);
        shutdowns_.emplace_back(std::move(reason), not_leader);
    }

    std::vector<RemoteLeaseOut> leases() const {
        std::lock_guard lock(mu_);
        return leases_;
    }
    std::vector<std::pair<LeaseId, std::string>> aborts() const {
        std::lock_guard lock(mu_);
        return aborts_;
    }
    std::vector<std::pair<std::string, bool>> shutdowns() const {
        std::lock_guard lock(mu_);
        return shutdowns_;
    }
    /// Waits for a lease not yet taken, or for `stop`.
    std::optional<RemoteLeaseOut> take(const std::atomic<bool>& stop) {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !pending_.empty() || stop.load(); });
        if (pending_.empty()) return std::nullopt;
        RemoteLeaseOut out = std::move(pending_.front());
        pending_.pop_front();
        return out;
    }
    void wake() {
        std::lock_guard lock(mu_);
        cv_.notify_all();
    }

private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::vector<RemoteLeaseOut> leases_;
    std::deque<RemoteLeaseOut> pending_;
    std::vector<std::pair<LeaseId, std::string>> aborts_;
    std::vector<std::pair<std::string, bool>> shutdowns_;
};

Pool<std::string, int> local_pool() {
    return Pool<std::string, int>("local").executor_fn(
        [](TaskContext, std::shared_ptr<const std::string> p) -> asio::awaitable<Result<int>> {
            co_return static_cast<int>(p->size());
        });
}

struct RemoteFixture {
    explicit RemoteFixture(RetryPolicy retry = RetryPolicy{3, 1ms, 1.0, 1ms, false})
        : sched(Sched::builder()
                    .clock(vt.clock)
                    .pool(Pool<std::string, int>("remote").remote().retry(retry))
                    .pool(local_pool())
                    .build(vt.io.get_executor())),
          host(detail::Access::core(sched)->remote_host()) {}

    WorkerGrant connect(const std::shared_ptr<RecordingSession>& session, std::size_t slots,
                        std::map<std::string, std::string> labels = {}, std::string pool = "remote") {
        auto r = host->connect(WorkerRegistration{std::move(pool), slots, "test-worker", std::move(labels)}, session);
        EXPECT_TRUE(std::holds_alternative<WorkerGrant>(r));
        return std::holds_alternative<WorkerGrant>(r) ? std::get<WorkerGrant>(r) : WorkerGrant{};
    }
    void report(WorkerGrant w, LeaseId lease, decltype(RemoteReport::what) what) {
        host->report(w.id, RemoteReport{lease, std::move(what)});
    }
    TaskHandle<int> submit(Task<std::string> task) {
        auto r = sched.try_submit(std::move(task.pool("remote")));
        EXPECT_TRUE(r.has_value()) << (r ? "" : r.message());
        return std::move(r.value());
    }

    test::VirtualTime vt;
    Sched sched;
    std::shared_ptr<detail::RemoteHost> host;
};

TEST(RemoteDriver, LeaseGoesToAConnectedWorkerAndCompletesWithItsDecodedOutput) {
    RemoteFixture f;
    auto handle = f.submit(Task<std::string>("payload bytes").kind("resize").key("job-1").tag("team", "a").timeout(9s));
    EXPECT_EQ(handle.status(), TaskStatus::Ready) << "no worker yet";
    auto session = std::make_shared<RecordingSession>();
    const WorkerGrant w = f.connect(session, 2);
    EXPECT_TRUE(w.id);
    EXPECT_EQ(w.slots, 2u);
    EXPECT_EQ(w.lease_ttl, std::chrono::nanoseconds(30s)) << "a remote pool without lease_ttl gets 30 s";
    const auto leases = session->leases();
    ASSERT_EQ(leases.size(), 1u);
    const RemoteLeaseOut& l = leases.front();
    EXPECT_EQ(l.task, handle.id());
    EXPECT_EQ(l.attempt, 1u);
    EXPECT_EQ(l.pool, "remote");
    EXPECT_EQ(l.payload, "payload bytes");
    EXPECT_EQ(l.kind, "resize");
    EXPECT_EQ(l.key, "job-1");
    ASSERT_EQ(l.tags.size(), 1u);
    EXPECT_EQ(l.tags.front(), (std::pair<std::string, std::string>{"team", "a"}));
    EXPECT_EQ(l.timeout, std::optional<std::chrono::nanoseconds>(9s));
    EXPECT_EQ(handle.status(), TaskStatus::Running);

    const Snapshot snap = f.sched.snapshot();
    ASSERT_EQ(snap.pools.size(), 2u);
    EXPECT_EQ(snap.pools[0].capacity, 2u);
    EXPECT_EQ(snap.pools[0].busy, 1u);
    EXPECT_EQ(snap.pools[0].remote_workers, std::optional<std::size_t>(1));
    EXPECT_FALSE(snap.pools[1].remote_workers.has_value());
    const nlohmann::json json = snap.to_json();
    EXPECT_EQ(json["pools"][0]["remote_workers"], 1);
    EXPECT_FALSE(json["pools"][1].contains("remote_workers"));

    f.report(w, l.lease, RemoteReport::Heartbeat{});
    f.report(w, l.lease, RemoteReport::Complete{"42"});
    EXPECT_EQ(handle.status(), TaskStatus::Succeeded);
    EXPECT_EQ(*test::run(f.vt.io, handle.result()), 42);
    const auto late = cronoq::diagnostics::counters(f.sched, "remote")->succeeded;
    f.report(w, l.lease, RemoteReport::Complete{"43"});  // after its end: ignored
    EXPECT_EQ(cronoq::diagnostics::counters(f.sched, "remote")->succeeded, late);
    EXPECT_EQ(*test::run(f.vt.io, handle.result()), 42);
}

// docs/guide/operations.md, "Tracing": the submitter's traceparent goes to
// the worker as a lease tag (once: a task's own "traceparent" tag wins).
TEST(RemoteDriver, ALeaseCarriesTheTraceparentAsATag) {
    RemoteFixture f;
    auto traced = f.submit(Task<std::string>("a").traceparent("00-abc-def-01").tag("team", "a"));
    auto tagged = f.submit(Task<std::string>("b").tag("traceparent", "00-own-tag-01"));
    auto session = std::make_shared<RecordingSession>();
    f.connect(session, 2);
    const auto leases = session->leases();
    ASSERT_EQ(leases.size(), 2u);
    using Tags = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(leases[0].tags, (Tags{{"team", "a"}, {"traceparent", "00-abc-def-01"}}));
    EXPECT_EQ(leases[1].tags, (Tags{{"traceparent", "00-own-tag-01"}}));
}

// A nacked lease ends its observed attempt with Ready (given back); the
// attempt the next worker runs is a new start.
TEST(RemoteDriver, ANackedLeaseEndsItsObservedAttemptReady) {
    test::VirtualTime vt;
    std::vector<std::string> seen;
    auto sched = Sched::builder()
                     .clock(vt.clock)
                     .observer(AttemptObserver{
                         [&](const AttemptStart& s) { seen.push_back("start " + std::to_string(s.attempt)); },
                         [&](const AttemptEnd& e) {
                             seen.push_back("end " + std::to_string(e.start.attempt) + " " +
                                            std::string(to_string(e.outcome)));
                         }})
                     .pool(Pool<std::string, int>("remote").remote())
                     .build(vt.io.get_executor());
    auto host = detail::Access::core(sched)->remote_host();
    auto handle = sched.try_submit(Task<std::string>("x").pool("remote")).value();
    auto a = std::make_shared<RecordingSession>();
    auto b = std::make_shared<RecordingSession>();
    const auto wa = std::get<WorkerGrant>(host->connect(WorkerRegistration{"remote", 1, "a", {}}, a));
    const auto wb = std::get<WorkerGrant>(host->connect(WorkerRegistration{"remote", 1, "b", {}}, b));
    const bool a_first = !a->leases().empty();
    auto& first = a_first ? a : b;
    auto& second = a_first ? b : a;
    host->report(a_first ? wa.id : wb.id, RemoteReport{first->leases().at(0).lease, RemoteReport::Nack{"busy"}});
    ASSERT_EQ(second->leases().size(), 1u);
    host->report(a_first ? wb.id : wa.id, RemoteReport{second->leases().at(0).lease, RemoteReport::Complete{"1"}});
    EXPECT_EQ(handle.status(), TaskStatus::Succeeded);
    EXPECT_EQ(seen, (std::vector<std::string>{"start 1", "end 1 ready", "start 1", "end 1 succeeded"}));
    test::run(vt.io, sched.shutdown(0s));
}

TEST(RemoteDriver, AnOutputThatCannotBeDecodedFailsTheTaskForGood) {
    RemoteFixture f;
    auto handle = f.submit(Task<std::string>("x"));
    auto session = std::make_shared<RecordingSession>();
    const WorkerGrant w = f.connect(session, 1);
    f.report(w, session->leases().at(0).lease, RemoteReport::Complete{"not json"});
    EXPECT_EQ(handle.status(), TaskStatus::Failed);
    try {
        test::run(f.vt.io, handle.result());
        ADD_FAILURE() << "a failed task's result must throw";
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.status(), TaskStatus::Failed);
        EXPECT_NE(e.message().find("decode"), std::string::npos) << e.message();
    }
    EXPECT_EQ(session->leases().size(), 1u) << "not retried";
}

TEST(RemoteDriver, FailuresRetryUnderThePolicy) {
    RemoteFixture f(RetryPolicy{2, 1ms, 1.0, 1ms, false});
    auto retried = f.submit(Task<std::string>("a"));
    auto session = std::make_shared<RecordingSession>();
    const WorkerGrant w = f.connect(session, 1);
    f.report(w, session->leases().at(0).lease, RemoteReport::Fail{"flaky", false, std::nullopt});
    EXPECT_EQ(retried.status(), TaskStatus::Retrying);
    f.vt.advance(1ms);
    ASSERT_EQ(session->leases().size(), 2u);
    EXPECT_EQ(session->leases().at(1).attempt, 2u);
    f.report(w, session->leases().at(1).lease, RemoteReport::Fail{"still flaky", false, std::nullopt});
    EXPECT_EQ(retried.status(), TaskStatus::DeadLettered);

    auto failed = f.submit(Task<std::string>("b"));
    ASSERT_EQ(session->leases().size(), 3u);
    f.report(w, session->leases().at(2).lease, RemoteReport::Fail{"bad input", true, std::nullopt});
    EXPECT_EQ(failed.status(), TaskStatus::Failed);
    try {
        test::run(f.vt.io, failed.result());
        ADD_FAILURE() << "a failed task's result must throw";
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.message(), "bad input");
    }
}

TEST(RemoteDriver, NackGoesToAnotherWorkerAndADisconnectRetriesElsewhere) {
    RemoteFixture f;
    auto a = std::make_shared<RecordingSession>();
    auto b = std::make_shared<RecordingSession>();
    const WorkerGrant wa = f.connect(a, 1);
    const WorkerGrant wb = f.connect(b, 1);
    auto handle = f.submit(Task<std::string>("job"));
    ASSERT_EQ(a->leases().size(), 1u);
    const LeaseId first = a->leases().front().lease;
    f.report(wb, first, RemoteReport::Complete{"1"});  // not b's lease: ignored
    EXPECT_EQ(handle.status(), TaskStatus::Running);
    f.report(wa, first, RemoteReport::Nack{"no capacity"});
    ASSERT_EQ(b->leases().size(), 1u) << "the nacked task went to the other worker";
    EXPECT_EQ(b->leases().front().attempt, 1u) << "a nack does not count an attempt";
    EXPECT_EQ(a->leases().size(), 1u);

    f.host->disconnect(wb.id);
    f.host->disconnect(wb.id);  // idempotent
    EXPECT_EQ(handle.status(), TaskStatus::Retrying);
    EXPECT_TRUE(b->aborts().empty()) << "a gone worker is told nothing";
    const std::uint64_t late = detail::Access::core(f.sched)->late_reports();
    f.report(wb, b->leases().front().lease, RemoteReport::Complete{"2"});
    EXPECT_EQ(detail::Access::core(f.sched)->late_reports(), late + 1);
    f.vt.advance(1ms);
    ASSERT_EQ(a->leases().size(), 2u) << "retried on the worker still connected";
    EXPECT_EQ(a->leases().back().attempt, 2u);
    f.report(wa, a->leases().back().lease, RemoteReport::Complete{"7"});
    EXPECT_EQ(*test::run(f.vt.io, handle.result()), 7);
    EXPECT_EQ(f.sched.snapshot().pools[0].remote_workers, std::optional<std::size_t>(1));
}

TEST(RemoteDriver, CancelAndTimeoutAbortReachTheSession) {
    RemoteFixture f;
    auto session = std::make_shared<RecordingSession>();
    const WorkerGrant w = f.connect(session, 2);
    auto cancelled = f.submit(Task<std::string>("c"));
    auto timed = f.submit(Task<std::string>("t").timeout(5s));
    ASSERT_EQ(session->leases().size(), 2u);
    EXPECT_TRUE(cancelled.cancel());
    ASSERT_EQ(session->aborts().size(), 1u);
    EXPECT_EQ(session->aborts().at(0).first, session->leases().at(0).lease);
    EXPECT_EQ(session->aborts().at(0).second, "cancelled");
    EXPECT_EQ(cancelled.status(), TaskStatus::Cancelled);
    f.report(w, session->leases().at(0).lease, RemoteReport::Complete{"1"});  // after the abort: ignored
    EXPECT_EQ(cancelled.status(), TaskStatus::Cancelled);

    f.vt.advance(5s);
    ASSERT_EQ(session->aborts().size(), 2u);
    EXPECT_EQ(session->aborts().at(1).first, session->leases().at(1).lease);
    EXPECT_EQ(session->aborts().at(1).second, "timeout");
    EXPECT_EQ(timed.status(), TaskStatus::Retrying) << "the timeout is retryable";
    f.vt.advance(1ms);
    ASSERT_EQ(session->leases().size(), 3u);
    // The handler observed cancellation on its own: the task ends Cancelled.
    f.report(w, session->leases().at(2).lease, RemoteReport::Cancelled{});
    EXPECT_EQ(timed.status(), TaskStatus::Cancelled);
}

TEST(RemoteDriver, LabelledTaskWaitsForItsWorkerWithoutHoldingBackOthers) {
    RemoteFixture f;
    auto plain = std::make_shared<RecordingSession>();
    f.connect(plain, 1);
    auto gpu_task = f.submit(Task<std::string>("g").label("gpu", "a100").priority(Priority::High));
    auto plain_task = f.submit(Task<std::string>("p"));
    ASSERT_EQ(plain->leases().size(), 1u);
    EXPECT_EQ(plain->leases().front().task, plain_task.id());
    EXPECT_EQ(gpu_task.status(), TaskStatus::Ready);
    auto gpu = std::make_shared<RecordingSession>();
    f.connect(gpu, 1, {{"gpu", "a100"}, {"zone", "eu"}});
    ASSERT_EQ(gpu->leases().size(), 1u);
    EXPECT_EQ(gpu->leases().front().task, gpu_task.id());

    auto r = f.sched.try_submit(Task<std::string>("l").pool("local").label("gpu", "1"));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), SubmitError::Invalid) << "labels need a remote pool";
}

TEST(RemoteDriver, ALeaseLargerThanTheServerSendsIsInvalidAtSubmit) {
    RemoteFixture f;
    f.host->limit_lease(1024);
    const std::string half(512, 'x');
    auto r = f.sched.try_submit(Task<std::string>(std::string(1024, 'x')).pool("remote"));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), SubmitError::Invalid);
    EXPECT_NE(r.message().find("payload 1024"), std::string::npos) << r.message();
    EXPECT_NE(r.message().find("max_message_bytes 1024"), std::string::npos) << r.message();
    EXPECT_TRUE(f.sched.try_submit(Task<std::string>(half).pool("remote")).has_value());
    // The payload fits, the lease does not: its key and tags count too.
    r = f.sched.try_submit(Task<std::string>(half).pool("remote").key(half));
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.message().find("key 512"), std::string::npos) << r.message();
    r = f.sched.try_submit(Task<std::string>(half).pool("remote").tag("t", half));
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.message().find("tags 513"), std::string::npos) << r.message();
    EXPECT_TRUE(f.sched.try_submit(Task<std::string>(std::string(1024, 'x')).pool("local")).has_value())
        << "a local pool has no limit";
    auto batch = f.sched.try_submit_batch(
        {Task<std::string>("ok").pool("remote"), Task<std::string>(std::string(1024, 'x')).pool("remote")});
    ASSERT_FALSE(batch.has_value());
    EXPECT_EQ(batch.error(), SubmitError::Invalid);
}

TEST(RemoteDriver, ALeaseItsSessionCannotSendFailsThatAttemptForGood) {
    RemoteFixture f;
    auto session = std::make_shared<RecordingSession>();
    session->refuse_payload = "too big";
    f.connect(session, 2);
    auto refused = f.submit(Task<std::string>("too big"));
    auto fine = f.submit(Task<std::string>("fine"));
    ASSERT_EQ(session->leases().size(), 1u) << "the other lease went out on the same session";
    f.vt.io.poll();  // the failure is posted: the session threw while its lease was delivered
    ASSERT_EQ(refused.status(), TaskStatus::Failed);
    try {
        test::run(f.vt.io, refused.result());
        ADD_FAILURE() << "a lease that cannot be sent must fail its task";
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.status(), TaskStatus::Failed);
        EXPECT_EQ(e.attempt(), 1u) << "permanent: no worker of that server can take it";
        EXPECT_EQ(e.message(), "lease: cannot send too big");
    }
    EXPECT_EQ(fine.status(), TaskStatus::Running);
}

TEST(RemoteDriver, ConnectRefusesUnknownAndLocalPoolsAndAfterShutdown) {
    RemoteFixture f;
    auto session = std::make_shared<RecordingSession>();
    auto unknown = f.host->connect(WorkerRegistration{"nope", 1, "w", {}}, session);
    ASSERT_TRUE(std::holds_alternative<ConnectRefused>(unknown));
    EXPECT_EQ(std::get<ConnectRefused>(unknown).kind, ConnectRefused::Kind::UnknownPool);
    auto local = f.host->connect(WorkerRegistration{"local", 1, "w", {}}, session);
    ASSERT_TRUE(std::holds_alternative<ConnectRefused>(local));
    EXPECT_EQ(std::get<ConnectRefused>(local).kind, ConnectRefused::Kind::NotRemote);
    EXPECT_FALSE(std::get<ConnectRefused>(local).message.empty());

    const WorkerGrant w = f.connect(session, 1);
    auto running = f.submit(Task<std::string>("r"));
    ASSERT_EQ(session->leases().size(), 1u);
    test::run(f.vt.io, f.sched.shutdown(0s));
    EXPECT_EQ(running.status(), TaskStatus::Cancelled);
    ASSERT_EQ(session->aborts().size(), 1u);
    EXPECT_EQ(session->aborts().at(0).second, "shutdown");
    ASSERT_EQ(session->shutdowns().size(), 1u);
    EXPECT_FALSE(session->shutdowns().at(0).second) << "without a store there is no next leader";
    auto after = f.host->connect(WorkerRegistration{"remote", 1, "w", {}}, std::make_shared<RecordingSession>());
    ASSERT_TRUE(std::holds_alternative<ConnectRefused>(after));
    EXPECT_EQ(std::get<ConnectRefused>(after).kind, ConnectRefused::Kind::ShuttingDown);
    f.report(w, session->leases().at(0).lease, RemoteReport::Complete{"1"});  // ignored
    EXPECT_EQ(running.status(), TaskStatus::Cancelled);
}

TEST(RemoteDriver, AutoscaleOnARemotePoolIsAConfigError) {
    asio::io_context io;
    EXPECT_THROW(Sched::builder().pool(Pool<std::string, int>("r").remote().autoscale(AutoscaleConfig{})).build(io.get_executor()),
                 ConfigError);
    // workers(...) caps the granted slots.
    auto sched = Sched::builder().pool(Pool<std::string, int>("r").remote().workers(0, 0, 3)).build(io.get_executor());
    auto host = detail::Access::core(sched)->remote_host();
    auto a = host->connect(WorkerRegistration{"r", 2, "a", {}}, std::make_shared<RecordingSession>());
    auto b = host->connect(WorkerRegistration{"r", 2, "b", {}}, std::make_shared<RecordingSession>());
    EXPECT_EQ(std::get<WorkerGrant>(a).slots, 2u);
    EXPECT_EQ(std::get<WorkerGrant>(b).slots, 1u);
    EXPECT_EQ(host->set_slots(std::get<WorkerGrant>(a).id, 0), 0u);
    EXPECT_EQ(host->set_slots(std::get<WorkerGrant>(b).id, 5), 3u);
    EXPECT_EQ(sched.snapshot().pools[0].capacity, 3u);
}

// Several worker threads report at once (the TSan run covers this): each
// task completes once, with its own output. The first worker nacks every
// fifth task it gets; the others take those.
TEST(RemoteDriver, ManyThreadsReportAtOnce) {
    asio::io_context io;
    auto sched = Sched::builder().pool(Pool<std::string, int>("remote").remote()).build(io.get_executor());
    auto host = detail::Access::core(sched)->remote_host();
    constexpr int workers = 4, tasks = 400;
    std::vector<std::shared_ptr<RecordingSession>> sessions;
    std::vector<WorkerGrant> grants;
    for (int i = 0; i < workers; ++i) {
        sessions.push_back(std::make_shared<RecordingSession>());
        auto r = host->connect(WorkerRegistration{"remote", 8, "w" + std::to_string(i), {}}, sessions.back());
        grants.push_back(std::get<WorkerGrant>(r));
    }
    std::atomic<bool> stop{false};
    std::atomic<int> reported{0}, nacked{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < workers; ++i)
        threads.emplace_back([&, i] {
            while (auto lease = sessions[i]->take(stop)) {
                host->report(grants[i].id, RemoteReport{lease->lease, RemoteReport::Heartbeat{}});
                if (i == 0 && lease->task.value % 5 == 0) {
                    host->report(grants[i].id, RemoteReport{lease->lease, RemoteReport::Nack{"not here"}});
                    ++nacked;
                    continue;
                }
                host->report(grants[i].id, RemoteReport{lease->lease, RemoteReport::Complete{lease->payload}});
                if (reported.fetch_add(1) + 1 == tasks) {
                    stop = true;
                    for (auto& s : sessions) s->wake();
                }
            }
        });
    std::vector<TaskHandle<int>> handles;
    for (int i = 0; i < tasks; ++i) handles.push_back(sched.try_submit(Task<std::string>(std::to_string(i))).value());
    for (auto& t : threads) t.join();
    for (int i = 0; i < tasks; ++i) {
        ASSERT_EQ(handles[i].status(), TaskStatus::Succeeded) << "task " << i;
        EXPECT_EQ(*test::run(io, handles[i].result()), i);
    }
    EXPECT_EQ(cronoq::diagnostics::counters(sched, "remote")->succeeded, static_cast<std::uint64_t>(tasks));
    EXPECT_EQ(detail::Access::core(sched)->late_reports(), 0u);
    EXPECT_GT(nacked.load(), 0);
    for (const auto& lease : sessions[0]->leases()) EXPECT_EQ(lease.attempt, 1u) << "a nack counts no attempt";
}

}  // namespace
}  // namespace remote_test
