// The worker endpoint of `Builder::serve_workers` (worker_endpoint.hpp): a
// WorkerServer over the scheduler's host, started by `open()` before it
// waits to lead, and the endpoint the leader advertises (docs/remote.md,
// "Serving while waiting").
#include <cronoq/config_error.hpp>
#include <cronoq/detail/worker_endpoint.hpp>
#include <cronoq/remote/worker_server.hpp>

#include <string_view>

namespace cronoq::detail {

namespace {

/// The host part of `listen` ("0.0.0.0" of "0.0.0.0:7070", "[::]" of "[::]:7070").
std::string_view listen_host(std::string_view listen) {
    const auto colon = listen.rfind(':');
    return colon == std::string_view::npos ? listen : listen.substr(0, colon);
}

bool wildcard(std::string_view host) {
    return host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::" || host == "[::0]" || host == "*";
}

class Endpoint final : public WorkerEndpoint {
public:
    Endpoint(WorkerServer server, std::string advertise) : server_(std::move(server)), advertise_(std::move(advertise)) {}
    const std::string& advertise() const override { return advertise_; }
    void stop() override { server_.stop(); }

private:
    WorkerServer server_;
    const std::string advertise_;
};

class Factory final : public WorkerEndpointFactory {
public:
    explicit Factory(WorkerServerConfig config) : config_(std::move(config)) {}

    std::unique_ptr<WorkerEndpoint> start(std::shared_ptr<RemoteHost> host) const override {
        const bool unix_socket = config_.listen.rfind("unix:", 0) == 0 || config_.listen.rfind("unix-abstract:", 0) == 0;
        const std::string_view host_part = listen_host(config_.listen);
        if (config_.advertise.empty() && !unix_socket && wildcard(host_part))
            throw ConfigError("serve_workers: listen " + config_.listen +
                              " is a wildcard address, which other replicas cannot send workers to: set "
                              "WorkerServerConfig::advertise to the address workers reach this process at");
        WorkerServer server = WorkerServer::start_for_host(std::move(host), config_);
        std::string advertise = config_.advertise;
        if (advertise.empty())
            advertise = unix_socket ? config_.listen
                                    : std::string(config_.tls ? "https://" : "http://") + std::string(host_part) + ":" +
                                          std::to_string(server.port());
        if (config_.on_listening) config_.on_listening(server.port());
        return std::make_unique<Endpoint>(std::move(server), std::move(advertise));
    }

private:
    const WorkerServerConfig config_;
};

}  // namespace

std::shared_ptr<const WorkerEndpointFactory> worker_endpoint_factory(const WorkerServerConfig& config) {
    return std::make_shared<Factory>(config);
}

}  // namespace cronoq::detail
