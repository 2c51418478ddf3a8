// Serves on a free port and refuses a worker whose options are invalid:
// the installed headers and library are enough to build, link and run.
#include <cronoq/remote/remote_worker.hpp>
#include <cronoq/remote/worker_server.hpp>

namespace {

struct NoPools : cronoq::detail::RemoteHost {
    std::variant<cronoq::detail::WorkerGrant, cronoq::detail::ConnectRefused> connect(
        cronoq::detail::WorkerRegistration r, std::shared_ptr<cronoq::detail::RemoteSession>) override {
        return cronoq::detail::ConnectRefused{cronoq::detail::ConnectRefused::Kind::UnknownPool, r.pool};
    }
    std::size_t set_slots(cronoq::detail::WorkerId, std::size_t) override { return 0; }
    void report(cronoq::detail::WorkerId, cronoq::detail::RemoteReport) override {}
    void disconnect(cronoq::detail::WorkerId) override {}
    void limit_lease(std::size_t) override {}
};

asio::awaitable<cronoq::Result<std::string>> echo(cronoq::RemoteLease<std::string> lease) {
    co_return *lease.payload();
}

}  // namespace

int main() {
    cronoq::WorkerServerConfig config;
    config.listen = "127.0.0.1:0";
    auto server = cronoq::WorkerServer::start_for_host(std::make_shared<NoPools>(), config);
    if (server.port() == 0) return 1;
    cronoq::RemoteWorkerOptions options;
    options.target = "https://127.0.0.1:" + std::to_string(server.port());
    options.pool = "work";
    try {
        cronoq::RemoteWorker<std::string, std::string> worker(options, echo);
    } catch (const cronoq::RemoteWorkerError& e) {
        return e.code() == cronoq::RemoteWorkerError::Code::InvalidArgument ? 0 : 1;  // https:// without tls settings
    }
    return 1;
}
