// Redirects (docs/remote.md, Redirects): what a server that does not lead
// sends (FAILED_PRECONDITION with the trailing metadata cronoq-shard and
// cronoq-shard-endpoint), and how a worker follows it: at once, keeping the
// scheme when the endpoint has none, never from https:// to http:// without
// insecure_redirect_http, loops and redirects to itself broken with
// backoff, and back to its own target after shutdown{not_leader}. Servers
// over recording hosts; workers in child processes (child_worker.cpp).
#include "redirect_chain.hpp"
#include "remote_support.hpp"
#include "worker_events.hpp"

#include <cronoq/remote/worker_server.hpp>

#include "cronoq/v1/workers.grpc.pb.h"

#include <gtest/gtest.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

namespace cronoq::test::redirect_test {
namespace {

using namespace std::chrono_literals;
using detail::ConnectRefused;

struct Served {
    std::shared_ptr<RecordingHost> host = std::make_shared<RecordingHost>();
    WorkerServer server;
    explicit Served(std::optional<TlsFiles> tls = std::nullopt) : server(start(host, std::move(tls))) {}
    static WorkerServer start(std::shared_ptr<RecordingHost> host, std::optional<TlsFiles> tls) {
        WorkerServerConfig config;
        config.listen = "127.0.0.1:0";
        config.tokens = {"secret"};
        config.tls = std::move(tls);
        return WorkerServer::start_for_host(std::move(host), std::move(config));
    }
    std::string address() const { return "127.0.0.1:" + std::to_string(server.port()); }
    /// Refuses every worker: this server does not lead, `endpoint` does.
    void redirect_to(std::optional<std::string> endpoint) {
        auto lock = host->lock();
        host->refuse_with = ConnectRefused{ConnectRefused::Kind::NotLeader, "this process does not lead the store",
                                           "default", std::move(endpoint)};
    }
    std::size_t attempts() {
        auto lock = host->lock();
        return host->attempts.size();
    }
    bool wait_attempts(std::size_t n) {
        return host->wait([&] { return host->attempts.size() >= n; });
    }
    bool wait_connected(std::size_t n) {
        return host->wait([&] { return host->connected.size() >= n; });
    }
    /// The shortest gap between two of the first `n` attempts.
    std::chrono::nanoseconds shortest_gap(std::size_t n) {
        auto lock = host->lock();
        auto gap = std::chrono::nanoseconds::max();
        for (std::size_t i = 1; i < n && i < host->attempts.size(); ++i)
            gap = std::min(gap, std::chrono::nanoseconds(host->attempts[i] - host->attempts[i - 1]));
        return gap;
    }
};

std::unique_ptr<Child> worker(const std::string& target, std::vector<std::string> more = {}) {
    std::vector<std::string> args{"worker", "target=" + target, "token=secret", "name=w", "backoff_ms=200"};
    args.insert(args.end(), more.begin(), more.end());
    return std::make_unique<Child>(std::move(args));
}

// ---- on the wire --------------------------------------------------------------------

TEST(Redirect, TheRefusalIsFailedPreconditionWithTrailingMetadata) {
    Served s;
    s.redirect_to("https://leader.example:7070");
    auto stub = v1::Workers::NewStub(grpc::CreateChannel(s.address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer secret");
    auto stream = stub->Work(&context);
    v1::WorkerMessage message;
    message.mutable_register_()->set_pool("work");
    message.mutable_register_()->set_slots(1);
    message.mutable_register_()->set_protocol_version(detail::protocol_version);
    stream->Write(message);
    v1::ServerMessage reply;
    EXPECT_FALSE(stream->Read(&reply));
    const grpc::Status status = stream->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(status.error_message().find("does not lead"), std::string::npos) << status.error_message();
    const auto& trailers = context.GetServerTrailingMetadata();
    const auto value = [&](const char* key) {
        const auto it = trailers.find(key);
        return it == trailers.end() ? std::string("(absent)") : std::string(it->second.data(), it->second.size());
    };
    EXPECT_EQ(value("cronoq-shard"), "default");
    EXPECT_EQ(value("cronoq-shard-endpoint"), "https://leader.example:7070");
}

// ---- the chain's rules ----------------------------------------------------------------

TEST(Redirect, TheChainKeepsTheSchemeRefusesHttpsToHttpAndBreaksLoops) {
    using Declined = detail::RedirectChain::Declined;
    const detail::ParsedTarget plain{"a:1", false}, tls{"a:1", true};
    {
        detail::RedirectChain chain(false);
        const auto next = chain.next(tls, "b:2");  // no scheme: TLS as the refused connection
        ASSERT_TRUE(std::holds_alternative<detail::ParsedTarget>(next));
        EXPECT_EQ(std::get<detail::ParsedTarget>(next).address, "b:2");
        EXPECT_TRUE(std::get<detail::ParsedTarget>(next).tls);
        const auto back = chain.next(std::get<detail::ParsedTarget>(next), "https://a:1/");
        ASSERT_TRUE(std::holds_alternative<Declined>(back));  // a:1 redirected here before
        EXPECT_NE(std::get<Declined>(back).why.find("loop"), std::string::npos);
    }
    {
        detail::RedirectChain chain(false);
        const auto next = chain.next(tls, "http://b:2");
        ASSERT_TRUE(std::holds_alternative<Declined>(next));
        EXPECT_TRUE(std::get<Declined>(next).warn);
        EXPECT_NE(std::get<Declined>(next).why.find("insecure_redirect_http"), std::string::npos);
    }
    {
        detail::RedirectChain chain(true);
        const auto next = chain.next(tls, "http://b:2");
        ASSERT_TRUE(std::holds_alternative<detail::ParsedTarget>(next));
        EXPECT_FALSE(std::get<detail::ParsedTarget>(next).tls);
    }
    {
        detail::RedirectChain chain(false);
        EXPECT_TRUE(std::holds_alternative<Declined>(chain.next(plain, "a:1")));            // itself
        EXPECT_TRUE(std::holds_alternative<Declined>(chain.next(plain, std::nullopt)));     // none leads
        EXPECT_TRUE(std::holds_alternative<detail::ParsedTarget>(chain.next(plain, "https://b:2")));  // upgrade
    }
}

// ---- workers ------------------------------------------------------------------------

TEST(Redirect, AWorkerFollowsARedirectAtOnceAndRunsLeasesThere) {
    Served leader, standby;
    standby.redirect_to(leader.address());
    // A redirect counted as a failure would wait out the backoff (a minute
    // here) before the leader saw the worker.
    auto w = worker(standby.address(), {"backoff_ms=60000"});
    ASSERT_TRUE(leader.wait_connected(1));
    EXPECT_EQ(standby.attempts(), 1u);
    leader.host->send_lease(0, 1, "echo:led");
    ASSERT_TRUE(leader.host->wait([&] { return leader.host->end_report(LeaseId{1}).has_value(); }));
}

TEST(Redirect, NobodyLeadingMeansBackoffNotAFatalRefusal) {
    Served standby;
    standby.redirect_to(std::nullopt);
    auto w = worker(standby.address());
    ASSERT_TRUE(standby.wait_attempts(3));
    EXPECT_GE(standby.shortest_gap(3), 200ms);  // the worker's initial backoff
    // The worker did not give up: once a process leads here, it registers.
    {
        auto lock = standby.host->lock();
        standby.host->refuse_with.reset();
    }
    EXPECT_TRUE(standby.wait_connected(1));
}

TEST(Redirect, ALoopAndARedirectToItselfAreBrokenWithBackoff) {
    Served a, b;
    a.redirect_to(b.address());
    b.redirect_to("http://" + a.address());
    auto w = worker(a.address());
    // a -> b -> a: the chain sees a again and backs off before its own
    // target; followed for ever, the attempts would come back to back.
    ASSERT_TRUE(a.wait_attempts(3));
    EXPECT_GE(a.shortest_gap(3), 200ms);
    EXPECT_GE(b.attempts(), 2u);

    Served self;
    self.redirect_to(self.address());
    auto w2 = worker(self.address());
    ASSERT_TRUE(self.wait_attempts(3));
    EXPECT_GE(self.shortest_gap(3), 200ms);
}

TEST(Redirect, AfterShutdownNotLeaderTheWorkerStartsAgainFromItsOwnTarget) {
    Served leader, standby;
    standby.redirect_to(leader.address());
    auto w = worker(standby.address());
    ASSERT_TRUE(leader.wait_connected(1));
    std::shared_ptr<detail::RemoteSession> session;
    {
        auto lock = leader.host->lock();
        session = leader.host->connected[0].session;
    }
    session->shutdown("the scheduler lost the lead", true);
    // Back at the standby (its own target), which sends it on again.
    ASSERT_TRUE(standby.wait_attempts(2));
    EXPECT_TRUE(leader.wait_connected(2));
}

class TlsRedirect : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new ScratchDir();
        certs_ = new TestCertificates(dir_->path());
    }
    static void TearDownTestSuite() {
        delete certs_;
        delete dir_;
    }
    static TlsFiles server_tls() { return TlsFiles{certs_->server_cert, certs_->server_key, std::nullopt}; }
    static std::string ca() { return "ca=" + certs_->ca.string(); }
    static ScratchDir* dir_;
    static TestCertificates* certs_;
};
ScratchDir* TlsRedirect::dir_ = nullptr;
TestCertificates* TlsRedirect::certs_ = nullptr;

TEST_F(TlsRedirect, AnEndpointWithoutASchemeKeepsTls) {
    Served leader(server_tls()), standby(server_tls());
    standby.redirect_to(leader.address());  // no scheme: TLS, as the refused connection
    auto w = worker("https://" + standby.address(), {ca()});
    EXPECT_TRUE(leader.wait_connected(1));
}

TEST_F(TlsRedirect, HttpsToHttpIsRefusedWithoutTheFlagAndFollowedWithIt) {
    Served leader, standby(server_tls());
    standby.redirect_to("http://" + leader.address());
    {
        auto w = worker("https://" + standby.address(), {ca()});
        // Refused: the worker retries its own target with backoff, and the
        // plaintext leader never sees it.
        ASSERT_TRUE(standby.wait_attempts(3));
        EXPECT_GE(standby.shortest_gap(3), 200ms);
        EXPECT_EQ(leader.attempts(), 0u);
    }
    auto w = worker("https://" + standby.address(), {ca(), "insecure_redirect_http=1"});
    EXPECT_TRUE(leader.wait_connected(1));
}

}  // namespace
}  // namespace cronoq::test::redirect_test
