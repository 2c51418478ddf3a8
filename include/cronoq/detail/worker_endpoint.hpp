#pragma once
// The worker endpoint a scheduler serves from `open()` on
// (`Builder::serve_workers`, docs/remote.md "Serving while waiting"): the
// seam between the driver, which starts it before it waits to lead and says
// who leads, and the gRPC component, which serves it. No gRPC here.
#include <cronoq/detail/remote_host.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace cronoq {
struct WorkerServerConfig;
}

namespace cronoq::detail {

/// A running endpoint; stopping it (or destroying it) ends every stream.
class WorkerEndpoint {
public:
    virtual ~WorkerEndpoint() = default;
    /// What the leader writes to the store for workers to be sent to:
    /// `WorkerServerConfig::advertise`, or the scheme, listen host and
    /// bound port.
    virtual const std::string& advertise() const = 0;
    virtual void stop() = 0;
};

/// Starts endpoints for one configuration.
class WorkerEndpointFactory {
public:
    virtual ~WorkerEndpointFactory() = default;
    /// Binds and serves `host`'s pools, then calls `on_listening`. Throws
    /// ConfigError for a wildcard listen host without `advertise`, and
    /// std::runtime_error as `WorkerServer::start` does.
    virtual std::unique_ptr<WorkerEndpoint> start(std::shared_ptr<RemoteHost> host) const = 0;
};

/// Defined by the `cronoq::grpc` component: a program that calls
/// `Builder::serve_workers` without linking it does not link.
std::shared_ptr<const WorkerEndpointFactory> worker_endpoint_factory(const WorkerServerConfig& config);

}  // namespace cronoq::detail
