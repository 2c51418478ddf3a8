#pragma once
// WorkerServer: the gRPC endpoint remote workers connect to, served next to
// a Scheduler (docs/remote.md). Part of the `cronoq::grpc` component; this header
// includes no gRPC (the server lives behind a pointer).
#include <cronoq/detail/access.hpp>
#include <cronoq/detail/remote_host.hpp>
#include <cronoq/remote/tls_files.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cronoq {

template <class P, class O>
class Scheduler;

struct WorkerServerConfig {
    /// host:port to listen on; port 0 picks a free port (see `port()`).
    std::string listen = "127.0.0.1:7070";
    /// Accepted bearer tokens (metadata `authorization: Bearer <token>`);
    /// empty: no token is accepted (only verified client certificates).
    std::vector<std::string> tokens;
    /// The server's certificate and key, and the client CA for mTLS;
    /// empty: plaintext (loopback and trusted networks only).
    std::optional<TlsFiles> tls;
    /// The largest message received or sent; a larger incoming message
    /// ends its stream with RESOURCE_EXHAUSTED, a task whose lease could
    /// be larger is `SubmitError::Invalid` at submit, and a lease larger
    /// all the same fails its attempt for good, not the stream
    /// (docs/remote.md, Message size).
    std::size_t max_message_bytes = 4 << 20;
    /// With `Builder::serve_workers`: the endpoint the leader writes to the
    /// store, which the other replicas send workers to (the trailing
    /// metadata `cronoq-shard-endpoint`, verbatim). Empty: the scheme
    /// `tls` implies, the listen host and the bound port; a wildcard listen
    /// host (`0.0.0.0`, `[::]`) then is a ConfigError at `open()`.
    std::string advertise;
    /// With `Builder::serve_workers`: called once the endpoint is bound
    /// (standbys included, before they wait to lead), with the bound port.
    std::function<void(std::uint16_t port)> on_listening;
};

/// Serves `cronoq.v1.Workers/Work` for one scheduler's remote pools:
/// checks each worker's credentials and protocol version, registers it with
/// the scheduler, writes its leases, aborts and shutdown in order, and turns
/// what it sends into reports. Refusals: a missing or unknown token
/// `UNAUTHENTICATED`, an unknown pool `NOT_FOUND`, a pool that is not
/// remote or another protocol version `FAILED_PRECONDITION`, a scheduler
/// shutting down `UNAVAILABLE`, each with a message naming the cause (at
/// most 1 KiB: what it echoes of the worker's input is cut). A scheduler
/// with a store that does not lead redirects the worker:
/// `FAILED_PRECONDITION` with the trailing metadata `cronoq-shard` and,
/// while one leads, `cronoq-shard-endpoint` (docs/remote.md, Redirects).
///
/// Move-only. `stop()` (also run by the destructor) sends
/// `shutdown{"server stopping"}` to every worker, ends the streams (their
/// in-flight leases fail as retryable) and releases the port.
class WorkerServer {
public:
    /// Starts serving `scheduler`'s remote pools on `config.listen`.
    /// Throws `std::runtime_error` naming the cause when the address is
    /// invalid (no port, or one past 65535) or cannot be bound (in use:
    /// `SO_REUSEPORT` is off), or a TLS file cannot be read (naming it).
    template <class P, class O>
    static WorkerServer start(Scheduler<P, O>& scheduler, WorkerServerConfig config) {
        return start_for_host(detail::Access::remote_host(scheduler), std::move(config));
    }

    /// The same over any `detail::RemoteHost` (what `start` forwards to):
    /// a detail-level entry point for tests of the server and for hosts
    /// other than `Scheduler`. The server keeps `host` until `stop()`.
    static WorkerServer start_for_host(std::shared_ptr<detail::RemoteHost> host, WorkerServerConfig config);

    WorkerServer(WorkerServer&&) noexcept;
    WorkerServer& operator=(WorkerServer&&) noexcept;
    ~WorkerServer();

    /// The bound port (the one picked when `listen` asked for port 0).
    std::uint16_t port() const;
    /// Idempotent; waits until every stream has ended.
    void stop();

private:
    struct Impl;
    explicit WorkerServer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace cronoq
