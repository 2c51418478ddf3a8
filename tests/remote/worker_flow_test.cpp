// A WorkerServer and RemoteWorker processes over loopback: leases out,
// outcomes back, heartbeats, aborts, slots, kills, drops and the drain.
#include "remote_support.hpp"

#include <cronoq/remote/worker_server.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <stdexcept>

namespace cronoq::test::worker_flow_test {
namespace {

using R = detail::RemoteReport;
using namespace std::chrono_literals;

struct Served {
    std::shared_ptr<RecordingHost> host = std::make_shared<RecordingHost>();
    WorkerServer server;
    explicit Served(WorkerServerConfig config = {}, std::shared_ptr<RecordingHost> h = nullptr)
        : host(h ? h : std::make_shared<RecordingHost>()), server(start(host, std::move(config))) {}
    static WorkerServer start(std::shared_ptr<RecordingHost> host, WorkerServerConfig config) {
        if (config.listen == WorkerServerConfig{}.listen) config.listen = "127.0.0.1:0";
        if (config.tokens.empty()) config.tokens = {"secret"};
        return WorkerServer::start_for_host(std::move(host), std::move(config));
    }
    std::string target() const { return "127.0.0.1:" + std::to_string(server.port()); }
    bool wait_connected(std::size_t n) {
        return host->wait([&] { return host->connected.size() >= n; });
    }
};

std::vector<std::string> worker_args(const std::string& target, std::vector<std::string> more = {}) {
    std::vector<std::string> args{"worker", "target=" + target, "token=secret"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

TEST(WorkerFlow, OutcomesTravelBackAsReports) {
    Served s;
    Child worker(worker_args(s.target(), {"name=w1", "slots=16", "label=gpu:a100"}));
    ASSERT_TRUE(s.wait_connected(1));
    {
        auto lock = s.host->lock();
        const auto& reg = s.host->connected[0].registration;
        EXPECT_EQ(reg.pool, "work");
        EXPECT_EQ(reg.name, "w1");
        EXPECT_EQ(reg.slots, 16u);
        EXPECT_EQ(reg.labels, (std::map<std::string, std::string>{{"gpu", "a100"}}));
    }
    const std::vector<std::string> payloads{"echo:hello", "fail:flaky", "permanent:broken", "reject:busy gpu",
                                            "throw:boom", "cancel"};
    for (std::size_t i = 0; i < payloads.size(); ++i) s.host->send_lease(0, i + 1, payloads[i]);
    ASSERT_TRUE(s.host->wait([&] {
        for (std::uint64_t l = 1; l <= payloads.size(); ++l)
            if (!s.host->end_report(LeaseId{l})) return false;
        return true;
    }));
    auto lock = s.host->lock();
    const auto end = [&](std::uint64_t l) { return s.host->end_report(LeaseId{l})->what; };
    ASSERT_TRUE(std::holds_alternative<R::Complete>(end(1)));
    EXPECT_EQ(std::get<R::Complete>(end(1)).output, "hello");
    ASSERT_TRUE(std::holds_alternative<R::Fail>(end(2)));
    EXPECT_EQ(std::get<R::Fail>(end(2)).message, "flaky");
    EXPECT_FALSE(std::get<R::Fail>(end(2)).permanent);
    ASSERT_TRUE(std::holds_alternative<R::Fail>(end(3)));
    EXPECT_TRUE(std::get<R::Fail>(end(3)).permanent);
    ASSERT_TRUE(std::holds_alternative<R::Nack>(end(4)));
    EXPECT_EQ(std::get<R::Nack>(end(4)).reason, "busy gpu");
    ASSERT_TRUE(std::holds_alternative<R::Fail>(end(5)));  // a throwing handler: retryable
    EXPECT_EQ(std::get<R::Fail>(end(5)).message, "panic: boom");
    EXPECT_FALSE(std::get<R::Fail>(end(5)).permanent);
    EXPECT_TRUE(std::holds_alternative<R::Cancelled>(end(6)));
    // Every field of the lease reached the handler.
    lock.unlock();
    const auto info = worker.read_until("I 1 ");
    ASSERT_TRUE(info);
    EXPECT_EQ(*info, "I 1 task=1001 attempt=1 pool=work kind=test key=key-1 type=text/plain tag:team=a "
                     "timeout_ms=90000 deadline_ns=1700000000000000000");
}

TEST(WorkerFlow, HeartbeatsEveryThirdOfTheTtlAndAbortReachesTheHandler) {
    auto host = std::make_shared<RecordingHost>();
    host->lease_ttl = std::chrono::milliseconds(300);
    Served s({}, host);
    Child worker(worker_args(s.target()));
    ASSERT_TRUE(s.wait_connected(1));
    s.host->send_lease(0, 7, "block");
    // The handler never heartbeats by itself: the worker does.
    ASSERT_TRUE(s.host->wait([&] { return s.host->count<R::Heartbeat>(LeaseId{7}) >= 3; }));
    std::shared_ptr<detail::RemoteSession> session;
    {
        auto lock = s.host->lock();
        session = s.host->connected[0].session;
    }
    session->abort(LeaseId{7}, "timed out");
    ASSERT_EQ(worker.read_until("C "), "C 7");
    // A report after an abort would be ignored anyway: the worker sends none.
    s.host->send_lease(0, 8, "echo:after");
    ASSERT_TRUE(s.host->wait([&] { return s.host->end_report(LeaseId{8}).has_value(); }));
    auto lock = s.host->lock();
    EXPECT_FALSE(s.host->end_report(LeaseId{7}).has_value());
}

TEST(WorkerFlow, AWorkerRunsNoMoreThanItsGrantedSlots) {
    auto host = std::make_shared<RecordingHost>();
    host->max_slots = 1;
    Served s({}, host);
    Child worker(worker_args(s.target(), {"slots=4"}));
    ASSERT_TRUE(s.wait_connected(1));
    s.host->send_lease(0, 1, "block");
    s.host->send_lease(0, 2, "echo:over the grant");
    ASSERT_TRUE(s.host->wait([&] { return s.host->end_report(LeaseId{2}).has_value(); }));
    auto lock = s.host->lock();
    const auto second = s.host->end_report(LeaseId{2})->what;
    ASSERT_TRUE(std::holds_alternative<R::Nack>(second));
    EXPECT_EQ(std::get<R::Nack>(second).reason, "the worker runs all its granted slots");
    EXPECT_FALSE(s.host->end_report(LeaseId{1}).has_value());
}

TEST(WorkerFlow, ALeaseLargerThanMaxMessageBytesIsRefusedAndTheStreamGoesOn) {
    WorkerServerConfig config;
    config.max_message_bytes = 64 * 1024;
    Served s(config);
    Child worker(worker_args(s.target(), {"slots=4"}));
    ASSERT_TRUE(s.wait_connected(1));
    s.host->send_lease(0, 1, "block");
    ASSERT_EQ(worker.read_until("S "), "S 1");
    // Written, it would fail gRPC's send and end the stream with lease 1.
    EXPECT_THROW(s.host->send_lease(0, 2, std::string(config.max_message_bytes, 'x')), std::length_error);
    s.host->send_lease(0, 3, "echo:after");
    ASSERT_TRUE(s.host->wait([&] { return s.host->end_report(LeaseId{3}).has_value(); }));
    auto lock = s.host->lock();
    const auto after = s.host->end_report(LeaseId{3})->what;
    ASSERT_TRUE(std::holds_alternative<R::Complete>(after));
    EXPECT_EQ(std::get<R::Complete>(after).output, "after");
    EXPECT_FALSE(s.host->end_report(LeaseId{1}).has_value()) << "lease 1 still runs";
    EXPECT_TRUE(s.host->disconnected.empty());
    EXPECT_EQ(s.host->connected.size(), 1u);
}

TEST(WorkerFlow, AKilledWorkerIsDisconnectedAtOnce) {
    Served s;
    Child worker(worker_args(s.target()));
    ASSERT_TRUE(s.wait_connected(1));
    s.host->send_lease(0, 1, "block");
    ASSERT_EQ(worker.read_until("S "), "S 1");
    worker.signal(SIGKILL);
    ASSERT_TRUE(s.host->wait([&] { return !s.host->disconnected.empty(); }));
    auto lock = s.host->lock();
    EXPECT_EQ(s.host->disconnected[0], s.host->connected[0].id);
}

TEST(WorkerFlow, AWorkerWhoseStreamDropsReconnects) {
    auto host = std::make_shared<RecordingHost>();
    std::optional<Served> s(std::in_place, WorkerServerConfig{}, host);
    const std::uint16_t port = s->server.port();
    Child worker(worker_args(s->target()));
    ASSERT_TRUE(s->wait_connected(1));
    s->host->send_lease(0, 1, "block");
    ASSERT_EQ(worker.read_until("S "), "S 1");
    s.reset();  // the server goes away with the lease in flight
    {
        auto lock = host->lock();
        EXPECT_EQ(host->disconnected.size(), 1u);
    }
    ASSERT_EQ(worker.read_until("C "), "C 1");  // the lost stream cancels the handler
    WorkerServerConfig again;
    again.listen = "127.0.0.1:" + std::to_string(port);
    s.emplace(again, host);
    ASSERT_TRUE(s->wait_connected(2));
    s->host->send_lease(1, 2, "echo:back");
    ASSERT_TRUE(host->wait([&] { return host->end_report(LeaseId{2}).has_value(); }));
}

TEST(WorkerFlow, AnUnavailableSchedulerIsRetriedWithExponentialBackoff) {
    auto host = std::make_shared<RecordingHost>();
    host->refuse = detail::ConnectRefused::Kind::ShuttingDown;  // UNAVAILABLE: worth retrying
    Served s({}, host);
    Child worker(worker_args(s.target(), {"backoff_ms=40"}));  // 40 ms doubling to 320 ms
    ASSERT_TRUE(host->wait([&] { return host->attempts.size() >= 6; }));
    auto lock = host->lock();
    // Each retry waits at least its backoff after the refusal, which the
    // host's record precedes (lower bounds only: the machine may be slow).
    const std::vector<std::chrono::milliseconds> backoff{40ms, 80ms, 160ms, 320ms, 320ms};
    for (std::size_t i = 0; i < backoff.size(); ++i)
        EXPECT_GE(host->attempts[i + 1] - host->attempts[i], backoff[i]) << "retry " << i + 1;
    EXPECT_TRUE(host->connected.empty());
}

TEST(WorkerFlow, APoolThatIsNotRemoteEndsTheWorker) {
    auto host = std::make_shared<RecordingHost>();
    host->refuse = detail::ConnectRefused::Kind::NotRemote;
    Served s({}, host);
    Child worker(worker_args(s.target()));
    const auto line = worker.read_until("E ");
    ASSERT_TRUE(line);
    EXPECT_EQ(*line, "E 9 FAILED_PRECONDITION: cronoq: pool \"work\" runs local executors");
    EXPECT_EQ(worker.wait(), 1);
}

TEST(WorkerFlow, ShutdownNotLeaderReconnectsAtOnce) {
    Served s;
    // A backoff longer than the hang guard: only reconnecting at once passes.
    Child worker(worker_args(s.target(), {"backoff_ms=3600000"}));
    ASSERT_TRUE(s.wait_connected(1));
    std::shared_ptr<detail::RemoteSession> session;
    {
        auto lock = s.host->lock();
        session = s.host->connected[0].session;
    }
    session->shutdown("lost the lead", true);
    ASSERT_TRUE(s.wait_connected(2));
    // The old stream's end reaches the host too (in no particular order
    // with the new registration).
    ASSERT_TRUE(s.host->wait([&] { return s.host->disconnected.size() == 1; }));
    auto lock = s.host->lock();
    EXPECT_EQ(s.host->disconnected[0], s.host->connected[0].id);
}

TEST(WorkerFlow, StopDrainsRunningLeasesThenCancelsTheRest) {
    Served s;
    Child worker(worker_args(s.target(), {"drain_ms=300"}));
    ASSERT_TRUE(s.wait_connected(1));
    s.host->send_lease(0, 1, "wait_ms:50");
    s.host->send_lease(0, 2, "block");
    ASSERT_TRUE(worker.read_until("S ").has_value());
    ASSERT_TRUE(worker.read_until("S ").has_value());
    worker.signal(SIGTERM);
    ASSERT_EQ(worker.read_until("X"), "X");
    EXPECT_EQ(worker.wait(), 0);
    ASSERT_TRUE(s.host->wait([&] { return !s.host->disconnected.empty(); }));
    auto lock = s.host->lock();
    ASSERT_FALSE(s.host->slot_requests.empty());
    EXPECT_EQ(s.host->slot_requests[0].second, 0u);  // no new leases while draining
    ASSERT_TRUE(s.host->end_report(LeaseId{1}).has_value());  // finished within the drain
    EXPECT_TRUE(std::holds_alternative<R::Complete>(s.host->end_report(LeaseId{1})->what));
    // Cancelled at the end of the drain: not reported, failed by the disconnect.
    EXPECT_FALSE(s.host->end_report(LeaseId{2}).has_value());
}

}  // namespace
}  // namespace cronoq::test::worker_flow_test
