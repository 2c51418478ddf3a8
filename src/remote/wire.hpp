#pragma once
// Conversions between the protocol's messages (workers.proto) and the
// seam's types (detail/remote_host.hpp, worker_events.hpp), for the server
// and for the C++ worker.
#include "worker_events.hpp"

#include "cronoq/v1/workers.pb.h"

#include <memory>

namespace cronoq::detail::wire {

// ---- server side
WorkerRegistration registration(const v1::Register& message);
v1::ServerMessage registered(const WorkerGrant& grant, std::size_t max_message_bytes);
v1::ServerMessage lease(const RemoteLeaseOut& lease);
/// `lease` into `out`, whatever `out` held before: a reused message keeps
/// its strings' storage (no allocation per lease once they are large enough).
void fill_lease(const RemoteLeaseOut& lease, v1::Lease& out);
v1::ServerMessage abort(LeaseId lease, const std::string& reason);
v1::ServerMessage shutdown(const std::string& reason, bool not_leader);
v1::ServerMessage slots(std::size_t granted);
/// The report a worker message carries; empty for register and set_slots.
std::optional<RemoteReport> report(const v1::WorkerMessage& message);

// ---- worker side
v1::WorkerMessage to_message(const WorkerSend& send);
/// `send` into `out` (empty): a `complete` goes into `spare` when given
/// (a reused one, owned by `out` after the call).
void to_message(const WorkerSend& send, v1::WorkerMessage& out, std::unique_ptr<v1::Complete> spare);
/// Empty for a message this version does not know (ignored, for newer servers).
std::optional<ServerEvent> to_event(const v1::ServerMessage& message);

}  // namespace cronoq::detail::wire
