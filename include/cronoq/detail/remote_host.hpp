#pragma once
// The seam between a scheduler and the worker server (docs/remote.md): what the
// gRPC component asks of a `Scheduler` about remote pools, and what the
// scheduler tells each connected worker's stream. Bytes only (payloads and
// outputs pass through the pool's `codec<P>` / `codec<O>` on the scheduler's
// side), no Asio, no gRPC: the scheduler's core does not link the server,
// and the server does not see the engine.
#include <cronoq/ids.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace cronoq::detail {

/// A connected remote worker, as the scheduler's engine knows it. Unique in
/// the process, never reused; 0 is never an id. Defined in <cronoq/ids.hpp>
/// beside TaskId and LeaseId, because the engine hands it out.
using WorkerId = cronoq::WorkerId;

/// One attempt handed to a remote worker: the seam's form of the protocol's
/// `lease` message.
struct RemoteLeaseOut {
    LeaseId lease;
    TaskId task;
    std::uint32_t attempt = 0;
    std::string pool;
    std::string payload;  ///< codec<P>::encode of the task's payload
    std::string content_type;
    std::string kind;
    std::string key;
    std::vector<std::pair<std::string, std::string>> tags;
    /// The attempt's timeout, enforced by the scheduler (information for
    /// the handler); empty for none.
    std::optional<std::chrono::nanoseconds> timeout;
    /// The task's soft deadline, as nanoseconds since the Unix epoch.
    std::optional<std::int64_t> deadline_unix_ns;
};

/// A connected worker's stream, as the scheduler sees it: implemented by
/// the server, one per `RemoteHost::connect`. Called from any thread, never
/// under a lock of the scheduler's that the session may need: an
/// implementation queues the message for its stream and returns; it must
/// not block and must not call back into the host from inside these calls.
class RemoteSession {
public:
    virtual ~RemoteSession() = default;
    /// A new lease for this worker (one of its granted slots). Throws when
    /// this one message cannot be sent (larger than the stream's message
    /// limit): the scheduler fails the attempt for good with what() and
    /// the stream goes on (docs/remote.md, Message size).
    virtual void lease(RemoteLeaseOut lease) = 0;
    /// The scheduler abandoned this lease (cancelled, timed out, expired,
    /// shutdown): the slot is already free and later reports are ignored.
    virtual void abort(LeaseId lease, std::string reason) = 0;
    /// The scheduler stops serving this worker (`not_leader`: another
    /// scheduler may lead at once, as after a lost lead or a store-backed
    /// shutdown, so the worker should reconnect at once, possibly elsewhere;
    /// docs/remote.md, Reconnects).
    virtual void shutdown(std::string reason, bool not_leader) = 0;
};

/// Why `RemoteHost::connect` refused a worker.
struct ConnectRefused {
    enum class Kind : std::uint8_t {
        UnknownPool,   ///< no pool of that name (gRPC NOT_FOUND)
        NotRemote,     ///< the pool runs local executors (FAILED_PRECONDITION)
        ShuttingDown,  ///< or not leading, with no endpoint to send it to (UNAVAILABLE)
        /// This process does not lead the pool's shard: a redirect
        /// (FAILED_PRECONDITION with the trailing metadata `cronoq-shard`
        /// and, when one leads, `cronoq-shard-endpoint`; docs/remote.md,
        /// Redirects).
        NotLeader,
    };
    Kind kind;
    std::string message;
    /// NotLeader: the shard that serves the pool.
    std::string shard;
    /// NotLeader: its leader's advertised endpoint, verbatim; empty while
    /// none leads (or its lease ran out).
    std::optional<std::string> endpoint;
};

/// A worker as it registers: the protocol's `register` message.
struct WorkerRegistration {
    std::string pool;
    std::size_t slots = 0;
    std::string name;
    std::map<std::string, std::string> labels;
};

/// What a worker was granted: the protocol's `registered` message.
struct WorkerGrant {
    WorkerId id;
    std::chrono::nanoseconds lease_ttl{};  ///< the pool's, else 30 s
    std::size_t slots = 0;                 ///< granted (may be fewer than asked)
};

/// A report from a worker about one of its leases. A report for a lease
/// that is not live, or not this worker's, is ignored (the lease is the
/// fencing token); so is anything after the lease's first end report.
struct RemoteReport {
    struct Complete { std::string output; };  ///< codec<O>::encode'd
    struct Fail { std::string message; bool permanent = false; std::optional<std::chrono::nanoseconds> retry_after; };
    struct Nack { std::string reason; };
    struct Cancelled {};
    struct Heartbeat {};
    LeaseId lease;
    std::variant<Complete, Fail, Nack, Cancelled, Heartbeat> what;
};

/// A scheduler as the worker server sees it: type-erased, thread-safe
/// (every call may come from any thread), non-blocking (reports go through
/// the scheduler's batched path).
class RemoteHost {
public:
    virtual ~RemoteHost() = default;
    /// Registers a worker of a remote pool; its slots count towards the
    /// pool's capacity from now on, and `session` receives its leases (the
    /// first ones possibly before `connect` returns).
    virtual std::variant<WorkerGrant, ConnectRefused> connect(WorkerRegistration registration,
                                                              std::shared_ptr<RemoteSession> session) = 0;
    /// The worker asks for `slots` (0 drains: no new leases, running ones
    /// go on). Returns the slots granted.
    virtual std::size_t set_slots(WorkerId worker, std::size_t slots) = 0;
    virtual void report(WorkerId worker, RemoteReport report) = 0;
    /// The stream ended: the worker's live leases fail as retryable
    /// ("worker disconnected") and are retried elsewhere; its slots leave
    /// the pool's capacity. Idempotent.
    virtual void disconnect(WorkerId worker) = 0;
    /// The largest message the server sends (its `max_message_bytes`): a
    /// task whose lease could be larger (`lease_size_bound`) is
    /// `SubmitError::Invalid` at submit.
    virtual void limit_lease(std::size_t max_message_bytes) = 0;
};

/// An upper bound of the encoded size of a lease message (workers.proto's
/// `ServerMessage{lease}`) with these fields: each string's bytes with the
/// longest field tag and length prefix protobuf gives it, each tag's map
/// entry framing, and a fixed allowance for the rest (the envelope, ids,
/// attempt, timeout, deadline, content type). Never below the real size,
/// so a task that passes at submit can be sent (docs/remote.md, Message size).
inline std::size_t lease_size_bound(std::size_t payload_bytes, std::string_view pool, std::string_view kind,
                                    std::string_view key,
                                    const std::vector<std::pair<std::string, std::string>>& tags) {
    constexpr std::size_t field = 1 + 10;     // a field's tag and its length as a varint, at most
    constexpr std::size_t tag_entry = 3 * field;  // a map entry: itself, its name, its value
    constexpr std::size_t rest = 256;
    std::size_t bound = rest + 4 * field + payload_bytes + pool.size() + kind.size() + key.size();
    for (const auto& [name, value] : tags) bound += tag_entry + name.size() + value.size();
    return bound;
}

}  // namespace cronoq::detail
