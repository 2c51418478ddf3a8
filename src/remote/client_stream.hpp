#pragma once
// The C++ worker's side of one stream, without gRPC in the header: a
// channel to the server (made once per worker, it reconnects by itself) and
// streams opened on it, one per registration.
#include "worker_events.hpp"

#include <cronoq/remote/tls_files.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace cronoq::detail {

/// A parsed `RemoteWorkerOptions::target`: gRPC's target and whether the
/// connection uses TLS. Throws `RemoteWorkerError` (INVALID_ARGUMENT) for
/// `https://` without `tls` and for `tls` with `http://`: never a silent
/// plaintext connection.
struct ParsedTarget {
    std::string address;
    bool tls = false;
};
ParsedTarget parse_target(const std::string& target, bool have_tls);

class WorkerChannel;
/// Throws `RemoteWorkerError` (INVALID_ARGUMENT) for a bad target or an
/// unreadable TLS file.
std::shared_ptr<WorkerChannel> make_channel(const std::string& target, const std::optional<TlsFiles>& tls);
/// A channel to an address already parsed (a redirect's endpoint): TLS
/// when `parsed.tls`, with `tls`'s files if given (else the system's
/// roots); plaintext otherwise, whatever `tls` holds.
std::shared_ptr<WorkerChannel> make_channel(const ParsedTarget& parsed, const std::optional<TlsFiles>& tls);

class ClientStream {
public:
    /// Called on gRPC's threads, one event at a time and in order, the
    /// last one `StreamClosed`.
    using OnEvent = std::function<void(ServerEvent)>;

    /// Opens `Work` with the token (if any) and sends `register`.
    static std::shared_ptr<ClientStream> open(const std::shared_ptr<WorkerChannel>& channel, const std::string& token,
                                              RegisterMessage registration, OnEvent on_event);
    virtual ~ClientStream() = default;
    /// Queues a message (written in order); dropped once the stream ended.
    virtual void send(WorkerSend message) = 0;
    /// Closes the worker's side after the queued messages: the server ends
    /// the stream, and its leases fail as retryable.
    virtual void close() = 0;
    /// Ends the stream at once (the server sees it cancelled).
    virtual void cancel() = 0;
};

}  // namespace cronoq::detail
