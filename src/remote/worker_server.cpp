// WorkerServer: gRPC's callback server over the sessions of
// server_session.cpp.
#include <cronoq/remote/worker_server.hpp>

#include "server_session.hpp"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <chrono>
#include <climits>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cronoq {

namespace {

std::string read_pem(const std::filesystem::path& path, const char* what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(std::string("cronoq::WorkerServer: cannot read the TLS ") + what + " " + path.string());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

class WorkersService final : public v1::Workers::CallbackService {
public:
    explicit WorkersService(std::shared_ptr<detail::ServerShared> shared) : shared_(std::move(shared)) {}
    grpc::ServerBidiReactor<v1::WorkerMessage, v1::ServerMessage>* Work(grpc::CallbackServerContext* context) override {
        return new detail::WorkReactor(shared_, context);  // deletes itself in OnDone
    }

private:
    std::shared_ptr<detail::ServerShared> shared_;
};

/// gRPC takes a port past 65535 modulo 2^16 and a missing one as 443:
/// `listen` must end in a port in [0, 65535] (a `unix:` path has none).
void check_listen(const std::string& listen) {
    if (listen.rfind("unix:", 0) == 0 || listen.rfind("unix-abstract:", 0) == 0) return;
    const auto colon = listen.rfind(':');
    const std::string port = colon == std::string::npos ? "" : listen.substr(colon + 1);
    const bool digits = !port.empty() && port.size() <= 5 &&
                        port.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoul(port) > 65535)
        throw std::runtime_error("cronoq::WorkerServer: cannot listen on " + listen +
                                 ": the address must end in :<port>, a port in [0, 65535]");
}

}  // namespace

struct WorkerServer::Impl {
    std::shared_ptr<detail::ServerShared> shared;
    std::unique_ptr<WorkersService> service;
    std::unique_ptr<grpc::Server> server;
    int port = 0;
    bool stopped = false;

    ~Impl() { stop(); }

    void stop() {
        if (stopped) return;
        stopped = true;
        if (!server) {
            // start failed before serving (a TLS file, the address): no stream
            // ever began.
            if (shared) shared->host.reset();
            return;
        }
        std::set<std::shared_ptr<detail::StreamSession>> sessions;
        {
            std::lock_guard lock(shared->mu);
            shared->stopping = true;
            sessions = shared->sessions;
        }
        for (const auto& session : sessions) session->shutdown("server stopping", false);
        // Streams whose worker does not close its side in time are cancelled.
        server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
        {
            std::unique_lock lock(shared->mu);
            shared->streams_ended.wait(lock, [&] { return shared->sessions.empty(); });
        }
        server->Wait();
        shared->host.reset();
    }
};

WorkerServer WorkerServer::start_for_host(std::shared_ptr<detail::RemoteHost> host, WorkerServerConfig config) {
    if (!host) throw std::invalid_argument("cronoq::WorkerServer: no host");
    if (config.max_message_bytes < 1024 || config.max_message_bytes > static_cast<std::size_t>(INT_MAX))
        throw std::invalid_argument("cronoq::WorkerServer: max_message_bytes must be in [1024, 2^31)");
    check_listen(config.listen);
    auto impl = std::make_unique<Impl>();
    impl->shared = std::make_shared<detail::ServerShared>();
    impl->shared->host = host;
    impl->shared->tokens = config.tokens;
    impl->shared->max_message_bytes = config.max_message_bytes;

    std::shared_ptr<grpc::ServerCredentials> credentials;
    if (config.tls) {
        grpc::SslServerCredentialsOptions options(config.tls->ca ? GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY
                                                                 : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
        options.pem_key_cert_pairs.push_back({read_pem(config.tls->key, "key"), read_pem(config.tls->cert, "cert")});
        if (config.tls->ca) options.pem_root_certs = read_pem(*config.tls->ca, "ca");
        credentials = grpc::SslServerCredentials(options);
        impl->shared->accept_client_certificates = config.tls->ca.has_value();
    } else {
        credentials = grpc::InsecureServerCredentials();
    }

    impl->service = std::make_unique<WorkersService>(impl->shared);
    grpc::ServerBuilder builder;
    builder.AddListeningPort(config.listen, credentials, &impl->port);
    builder.RegisterService(impl->service.get());
    builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_message_bytes));
    builder.SetMaxSendMessageSize(static_cast<int>(config.max_message_bytes));
    // gRPC sets SO_REUSEPORT by default: a second server on a port in use
    // would bind too, and the workers would be split between two schedulers.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    impl->server = builder.BuildAndStart();
    if (!impl->server || impl->port == 0)
        throw std::runtime_error("cronoq::WorkerServer: cannot listen on " + config.listen +
                                 " (an address in use, or one this host does not have)");
    host->limit_lease(config.max_message_bytes);
    return WorkerServer(std::move(impl));
}

WorkerServer::WorkerServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WorkerServer::WorkerServer(WorkerServer&&) noexcept = default;
WorkerServer& WorkerServer::operator=(WorkerServer&&) noexcept = default;
WorkerServer::~WorkerServer() = default;

std::uint16_t WorkerServer::port() const { return static_cast<std::uint16_t>(impl_->port); }

void WorkerServer::stop() {
    if (impl_) impl_->stop();
}

}  // namespace cronoq
