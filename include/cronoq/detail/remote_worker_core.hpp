#pragma once
// The non-template part of RemoteWorker (docs/remote.md), compiled once into
// cronoq::grpc: the connection, slots, heartbeats, reconnects and the
// drain, over leases and outcomes in bytes. RemoteWorker<P, O> adds the
// codecs and the typed handler.
#include <cronoq/detail/access.hpp>
#include <cronoq/detail/cancel_state.hpp>
#include <cronoq/detail/remote_host.hpp>
#include <cronoq/remote/remote_worker_error.hpp>
#include <cronoq/remote/tls_files.hpp>

#include <asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>

namespace cronoq {

struct RemoteWorkerOptions {
    /// `host:port`, `ipv4:a:port,b:port`, `dns:///name:port`, optionally
    /// prefixed `http://` (plaintext; an error with `tls`) or `https://`
    /// (requires `tls`). Without a prefix, `tls` decides.
    std::string target;
    std::string pool;
    std::size_t slots = 8;  ///< asked for; the server may grant fewer
    std::string token;      ///< sent as `authorization: Bearer <token>`; empty: none
    std::string name;       ///< for the server's logs and snapshots
    std::map<std::string, std::string> labels;
    std::optional<TlsFiles> tls;
    std::chrono::nanoseconds initial_backoff = std::chrono::milliseconds(200);
    std::chrono::nanoseconds max_backoff = std::chrono::seconds(10);
    /// How long `stop()` lets running leases finish before cancelling them.
    std::chrono::nanoseconds drain_timeout = std::chrono::seconds(30);
    /// Follow a redirect from an `https://` connection to a plaintext
    /// `http://` endpoint (trusted networks only). Without it such a
    /// redirect is refused with a warning in the log and the worker retries
    /// its own `target` with backoff (docs/remote.md, Redirects).
    bool insecure_redirect_http = false;
};

}  // namespace cronoq

namespace cronoq::detail {

class RemoteWorkerCore;

/// One lease as a running handler sees it (behind `RemoteLease<P>`).
struct RemoteLeaseState {
    RemoteLeaseOut lease;
    std::optional<std::string> key;  ///< `lease.key`, none when empty
    std::chrono::nanoseconds lease_ttl{};
    std::uint64_t connection = 0;  ///< the stream it came on
    CancelState cancel;            ///< fired by `abort`, a lost stream or the end of the drain
    std::weak_ptr<RemoteWorkerCore> core;
};

/// How a handler's attempt ended, as the worker reports it.
using RemoteOutcome =
    std::variant<RemoteReport::Complete, RemoteReport::Fail, RemoteReport::Nack, RemoteReport::Cancelled>;

class RemoteWorkerCore {
public:
    /// Runs one lease; what it throws is a retryable failure ("panic: ...").
    using Handler = std::function<asio::awaitable<RemoteOutcome>(std::shared_ptr<RemoteLeaseState>)>;

    /// Throws `RemoteWorkerError` (INVALID_ARGUMENT) for invalid options.
    static std::shared_ptr<RemoteWorkerCore> create(RemoteWorkerOptions options, Handler handler);
    virtual ~RemoteWorkerCore() = default;

    /// See `RemoteWorker::run`.
    virtual asio::awaitable<void> run() = 0;
    /// See `RemoteWorker::stop`.
    virtual void stop() = 0;
    /// Sends a heartbeat for the lease now (if it is still running).
    virtual void heartbeat(const RemoteLeaseState& lease) = 0;
    /// The slots the server granted on the current stream (0 when none).
    virtual std::size_t granted_slots() const = 0;
};

}  // namespace cronoq::detail
