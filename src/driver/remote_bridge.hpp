#pragma once
// The driver's side of the seam with a worker server (docs/remote.md,
// <cronoq/detail/remote_host.hpp>): the connected workers' sessions, the
// live remote leases, and the calls into sessions, made after the engine's
// mutex. The bridge owns these; the driver decides, in its steps, what is
// sent (a lease for a Dispatch naming a worker, the end of one for an
// Abort, the shutdown).
#include <cronoq/detail/remote_host.hpp>
#include <cronoq/detail/unique_function.hpp>

#include "attempt_state.hpp"
#include "encoder.hpp"
#include "engine_mutex.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace cronoq::detail {

/// A remote worker's report about one of its leases (RemoteHost::report),
/// its output already decoded off the engine's mutex; served with the
/// attempt ends, through the same inbox.
struct RemoteEnd {
    enum class Kind : std::uint8_t { Ended, Nack, Heartbeat };
    WorkerId worker;
    LeaseId lease;
    Kind kind = Kind::Ended;
    AttemptOutput output;  ///< Ended: the outcome
    std::string reason;    ///< Nack
};

class RemoteBridge {
public:
    /// A connected worker's session, and the pool it serves.
    struct Link {
        std::shared_ptr<RemoteSession> session;
        core::PoolId pool = 0;
    };

    // ---- the connected workers (their own mutex; after the engine's when both are taken)
    void connect(WorkerId worker, Link link);
    void disconnect(WorkerId worker);
    /// The pool a connected worker serves; empty once it disconnected.
    std::optional<core::PoolId> pool_of(WorkerId worker) const;
    /// The scheduler's host, made on first use by `make`.
    std::shared_ptr<RemoteHost> host(const std::function<std::shared_ptr<RemoteHost>()>& make);

    // ---- leases (engine steps)
    /// Work for after the mutex that sends `attempt`'s lease to its worker;
    /// null when the worker has no session (it left the engine first). A
    /// lease that cannot be sent ends as `failed(end)` reports.
    UniqueFunction<void()> lease(const EngineHeld&, std::shared_ptr<Attempt> attempt, std::optional<std::chrono::nanoseconds> timeout,
                                 const Encoder& encoder, std::function<void(RemoteEnd)> failed);
    /// Work for after the mutex that tells the worker its lease is over;
    /// null when the worker has gone.
    UniqueFunction<void()> abort(const EngineHeld&, const Attempt& attempt, std::string reason);
    /// The live remote lease `lease`, no longer live; null if unknown.
    std::shared_ptr<Attempt> end_lease(const EngineHeld&, LeaseId lease);
    /// Work for after the mutex that tells every worker the scheduler
    /// stops; null without workers. `not_leader`: another scheduler may
    /// lead at once.
    UniqueFunction<void()> shutdown(const EngineHeld&, std::string reason, bool not_leader);

private:
    std::shared_ptr<RemoteSession> session_of(WorkerId worker) const;

    mutable std::mutex mu_;
    std::unordered_map<std::uint64_t, Link> links_;  // by worker; guarded by mu_
    std::shared_ptr<RemoteHost> host_;                // guarded by mu_
    // Live remote leases (engine steps): their reports name only the lease.
    std::unordered_map<std::uint64_t, std::shared_ptr<Attempt>> leases_;
};

}  // namespace cronoq::detail
