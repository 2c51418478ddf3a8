// What the server refuses, and how: bad tokens, unknown pools, other
// protocol versions, oversized messages, TLS settings with a plaintext
// target; and what it accepts over TLS and mTLS (certificates made with
// openssl for the run).
#include "remote_support.hpp"

#include <cronoq/remote/remote_worker.hpp>
#include <cronoq/remote/worker_server.hpp>

#include "cronoq/v1/workers.grpc.pb.h"

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <gtest/gtest.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <fstream>
#include <iterator>
#include <thread>
#include <utility>

namespace cronoq::test::refusal_test {
namespace {

using Worker = RemoteWorker<std::string, std::string>;

asio::awaitable<Result<std::string>> echo(RemoteLease<std::string> lease) { co_return *lease.payload(); }

struct Served {
    std::shared_ptr<RecordingHost> host = std::make_shared<RecordingHost>();
    WorkerServer server;
    explicit Served(WorkerServerConfig config) : server(WorkerServer::start_for_host(host, with_port0(config))) {}
    static WorkerServerConfig with_port0(WorkerServerConfig c) {
        c.listen = "127.0.0.1:0";
        return c;
    }
    std::string address() const { return "127.0.0.1:" + std::to_string(server.port()); }
};

WorkerServerConfig token_config() {
    WorkerServerConfig c;
    c.tokens = {"secret"};
    return c;
}

RemoteWorkerOptions options_for(const std::string& target, std::string token = "secret") {
    RemoteWorkerOptions o;
    o.target = target;
    o.pool = "work";
    o.token = std::move(token);
    o.initial_backoff = std::chrono::milliseconds(20);
    o.max_backoff = std::chrono::milliseconds(100);
    return o;
}

/// Runs a worker in this process until run() ends; `until` (if given) is
/// awaited on this thread, then the worker is stopped. Without `until`,
/// only a hang guard stops it.
std::exception_ptr run_worker(RemoteWorkerOptions options, const std::function<void()>& until = {}) {
    asio::io_context io;
    Worker worker(std::move(options), echo);
    std::exception_ptr error;
    bool ended = false;
    asio::steady_timer guard(io, hang_guard);
    guard.async_wait([&](std::error_code ec) {
        if (!ec) worker.stop();
    });
    asio::co_spawn(io, worker.run(), [&](std::exception_ptr e) {
        error = e;
        ended = true;
        guard.cancel();
    });
    std::thread runner([&] { io.run(); });
    if (until) {
        until();
        worker.stop();
    }
    runner.join();
    EXPECT_TRUE(ended);
    return error;
}

/// The RemoteWorkerError `error` holds (fails the test if none).
std::optional<RemoteWorkerError> refusal(std::exception_ptr error) {
    try {
        if (error) std::rethrow_exception(error);
    } catch (const RemoteWorkerError& e) {
        return e;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "unexpected exception: " << e.what();
        return std::nullopt;
    }
    ADD_FAILURE() << "run() ended without a refusal";
    return std::nullopt;
}

TEST(Refusal, ABadTokenIsUnauthenticated) {
    Served s(token_config());
    const auto e = refusal(run_worker(options_for(s.address(), "wrong")));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), RemoteWorkerError::Code::Unauthenticated);
    EXPECT_NE(std::string(e->what()).find("UNAUTHENTICATED: cronoq: missing or unknown bearer token"),
              std::string::npos)
        << e->what();
    auto lock = s.host->lock();
    EXPECT_TRUE(s.host->connected.empty());
}

TEST(Refusal, NoTokensConfiguredAcceptsNone) {
    Served s(WorkerServerConfig{});
    const auto e = refusal(run_worker(options_for(s.address(), "")));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), RemoteWorkerError::Code::Unauthenticated);
}

TEST(Refusal, AnUnknownPoolIsNotFound) {
    Served s(token_config());
    auto options = options_for(s.address());
    options.pool = "nope";
    const auto e = refusal(run_worker(options));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), RemoteWorkerError::Code::NotFound);
    EXPECT_NE(std::string(e->what()).find("NOT_FOUND: cronoq: no pool named \"nope\""), std::string::npos) << e->what();
}

TEST(Refusal, AnUnknownPoolWithAHugeNameIsStillNotFoundWithABoundedMessage) {
    // The name is echoed in the refusal: echoed whole, the status would be
    // larger than gRPC's metadata limit and reach the worker as
    // RESOURCE_EXHAUSTED, which it retries for ever.
    Served s(token_config());
    auto options = options_for(s.address());
    options.pool = std::string(100'000, 'p');
    const auto e = refusal(run_worker(options));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), RemoteWorkerError::Code::NotFound) << e->what();
    const std::string what = e->what();
    EXPECT_NE(what.find("NOT_FOUND: cronoq: no pool named \"ppp"), std::string::npos) << what.substr(0, 200);
    EXPECT_LT(what.size(), 2048u);
    EXPECT_NE(what.find("100"), std::string::npos) << "the cut says how long the whole was: " << what;
}

TEST(Refusal, AListenAddressThatIsInvalidOrTakenIsARuntimeError) {
    auto host = std::make_shared<RecordingHost>();
    for (const char* listen : {"127.0.0.1:99999", "127.0.0.1:65536", "127.0.0.1:", "127.0.0.1", "127.0.0.1:7x"}) {
        WorkerServerConfig config;
        config.listen = listen;
        try {
            auto server = WorkerServer::start_for_host(host, config);
            ADD_FAILURE() << listen << " was taken, serving on port " << server.port();
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(listen), std::string::npos) << e.what();
        }
    }
    WorkerServerConfig config;
    config.listen = "127.0.0.1:0";
    auto first = WorkerServer::start_for_host(host, config);
    // Two servers on one port would split the workers between them.
    config.listen = "127.0.0.1:" + std::to_string(first.port());
    try {
        auto second = WorkerServer::start_for_host(host, config);
        ADD_FAILURE() << "a second server listens on " << config.listen;
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(config.listen), std::string::npos) << e.what();
    }
}

/// A raw client of the protocol: sends `message` first and returns how the
/// server ended the stream.
grpc::Status raw_exchange(const std::string& address, const v1::WorkerMessage& message,
                          std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials()) {
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);
    auto stub = v1::Workers::NewStub(grpc::CreateCustomChannel(address, credentials, args));
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer secret");
    auto stream = stub->Work(&context);
    stream->Write(message);
    v1::ServerMessage reply;
    while (stream->Read(&reply)) {
        if (reply.has_registered()) stream->WritesDone();  // accepted: end it
    }
    return stream->Finish();
}

v1::WorkerMessage register_message(std::uint32_t version) {
    v1::WorkerMessage m;
    m.mutable_register_()->set_pool("work");
    m.mutable_register_()->set_slots(1);
    m.mutable_register_()->set_protocol_version(version);
    return m;
}

TEST(Refusal, AnotherProtocolVersionIsFailedPrecondition) {
    Served s(token_config());
    const auto status = raw_exchange(s.address(), register_message(2));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_EQ(status.error_message(),
              "cronoq: protocol_version 2 is not supported: this server speaks protocol_version 3");
    EXPECT_TRUE(raw_exchange(s.address(), register_message(3)).ok());  // the same client, version 3
}

TEST(Refusal, AMessageOverMaxMessageBytesIsResourceExhausted) {
    auto config = token_config();
    config.max_message_bytes = 64 * 1024;
    Served s(config);
    {
        auto lock = s.host->lock();
        ASSERT_TRUE(s.host->lease_limit);
        EXPECT_EQ(*s.host->lease_limit, config.max_message_bytes);
    }
    auto message = register_message(3);
    (*message.mutable_register_()->mutable_labels())["big"] = std::string(config.max_message_bytes, 'x');
    const auto status = raw_exchange(s.address(), message);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(status.error_message().find("larger than max"), std::string::npos) << status.error_message();
    auto lock = s.host->lock();
    EXPECT_TRUE(s.host->connected.empty());
}

TEST(Refusal, TlsSettingsWithAPlaintextTargetAreAnError) {
    auto options = options_for("http://127.0.0.1:1");
    options.tls = TlsFiles{};
    try {
        Worker worker(options, echo);
        FAIL() << "a worker with tls settings and an http:// target was made";
    } catch (const RemoteWorkerError& e) {
        EXPECT_EQ(e.code(), RemoteWorkerError::Code::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("is http:// (plaintext) but the worker has tls settings"),
                  std::string::npos)
            << e.what();
    }
    try {
        Worker worker(options_for("https://127.0.0.1:1"), echo);
        FAIL() << "a worker with an https:// target and no tls settings was made";
    } catch (const RemoteWorkerError& e) {
        EXPECT_EQ(e.code(), RemoteWorkerError::Code::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("is https:// but the worker has no tls settings"), std::string::npos)
            << e.what();
    }
}

class Tls : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new ScratchDir();
        certs_ = new TestCertificates(dir_->path());
    }
    static void TearDownTestSuite() {
        delete certs_;
        delete dir_;
    }
    static WorkerServerConfig tls_config(bool mutual) {
        WorkerServerConfig c;
        if (!mutual) c.tokens = {"secret"};
        c.tls = TlsFiles{certs_->server_cert, certs_->server_key, std::nullopt};
        if (mutual) c.tls->ca = certs_->ca;
        return c;
    }
    static ScratchDir* dir_;
    static TestCertificates* certs_;
};
ScratchDir* Tls::dir_ = nullptr;
TestCertificates* Tls::certs_ = nullptr;

TEST_F(Tls, AWorkerWithATokenConnectsOverTls) {
    Served s(tls_config(false));
    auto options = options_for("https://" + s.address());
    options.tls = TlsFiles{{}, {}, certs_->ca};
    const auto error = run_worker(options, [&] { ASSERT_TRUE(s.host->wait([&] { return !s.host->connected.empty(); })); });
    EXPECT_FALSE(error);
    // A plaintext client does not get through the TLS port.
    EXPECT_EQ(raw_exchange(s.address(), register_message(3)).error_code(), grpc::StatusCode::UNAVAILABLE);
    // Nor does a client that trusts another CA.
    grpc::SslCredentialsOptions other;
    other.pem_root_certs = [] {
        std::ifstream in(certs_->other_ca);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }();
    EXPECT_EQ(raw_exchange(s.address(), register_message(3), grpc::SslCredentials(other)).error_code(),
              grpc::StatusCode::UNAVAILABLE);
    auto lock = s.host->lock();
    EXPECT_EQ(s.host->connected.size(), 1u);
}

TEST_F(Tls, AVerifiedClientCertificateNeedsNoToken) {
    Served s(tls_config(true));
    auto options = options_for("https://" + s.address(), "");
    options.tls = TlsFiles{certs_->client_cert, certs_->client_key, certs_->ca};
    const auto error = run_worker(options, [&] { ASSERT_TRUE(s.host->wait([&] { return !s.host->connected.empty(); })); });
    EXPECT_FALSE(error);
    // Without a certificate (and no tokens accepted): refused.
    options.tls = TlsFiles{{}, {}, certs_->ca};
    const auto e = refusal(run_worker(options));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code(), RemoteWorkerError::Code::Unauthenticated);
    EXPECT_NE(std::string(e->what()).find("no verified client certificate"), std::string::npos) << e->what();
}

TEST_F(Tls, AMissingCertificateKeyOrCaFileIsARuntimeErrorNamingIt) {
    const auto missing = dir_->path() / "missing.pem";
    for (int which = 0; which < 3; ++which) {
        auto config = tls_config(true);
        if (which == 0) config.tls->cert = missing;
        if (which == 1) config.tls->key = missing;
        if (which == 2) config.tls->ca = missing;
        try {
            Served s(config);
            ADD_FAILURE() << "served with a missing file (" << which << ")";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
        }
    }
}

// The named codes are gRPC's: a server's refusal (a grpc::Status) arrives
// as its number and compares with them, and what() names it as gRPC does.
TEST(RemoteWorkerErrorTest, NamedCodesAreGrpcStatusCodes) {
    using Code = RemoteWorkerError::Code;
    const std::pair<Code, grpc::StatusCode> pairs[] = {
        {Code::InvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
        {Code::NotFound, grpc::StatusCode::NOT_FOUND},
        {Code::FailedPrecondition, grpc::StatusCode::FAILED_PRECONDITION},
        {Code::Unauthenticated, grpc::StatusCode::UNAUTHENTICATED},
    };
    for (const auto& [named, grpc_code] : pairs) {
        const RemoteWorkerError from_name(named, "m");
        const RemoteWorkerError from_number(static_cast<int>(grpc_code), "m");
        EXPECT_EQ(from_name.code(), static_cast<int>(grpc_code));
        EXPECT_TRUE(from_number.code() == named);
        EXPECT_TRUE(named == from_number.code());
        EXPECT_STREQ(from_name.what(), from_number.what());
    }
    EXPECT_STREQ(RemoteWorkerError(Code::Unauthenticated, "bad token").what(), "UNAUTHENTICATED: bad token");
    EXPECT_STREQ(RemoteWorkerError(Code::FailedPrecondition, "x").what(), "FAILED_PRECONDITION: x");
    EXPECT_FALSE(RemoteWorkerError(14, "x").code() == Code::NotFound);
    EXPECT_STREQ(RemoteWorkerError(14, "x").what(), "gRPC status 14: x");
}

}  // namespace
}  // namespace cronoq::test::refusal_test
