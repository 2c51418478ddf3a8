#pragma once
// Conversions between the protocol's messages (workers.proto) and the
// seam's types (detail/remote_host.hpp, worker_events.hpp), for the server
// and for the C++ worker.
#include "worker_events.hpp"

#include "cronoq/v1/workers.pb.h"

namespace cronoq::detail::wire {

// ---- server side
WorkerRegistration registration(const v1::Register& message);
v1::ServerMessage registered(const WorkerGrant& grant, std::size_t max_message_bytes);
v1::ServerMessage lease(const RemoteLeaseOut& lease);
v1::ServerMessage abort(LeaseId lease, const std::string& reason);
v1::ServerMessage shutdown(const std::string& reason, bool not_leader);
v1::ServerMessage slots(std::size_t granted);
/// The report a worker message carries; empty for register and set_slots.
std::optional<RemoteReport> report(const v1::WorkerMessage& message);

// ---- worker side
v1::WorkerMessage to_message(const WorkerSend& send);
/// Empty for a message this version does not know (ignored, for newer servers).
std::optional<ServerEvent> to_event(const v1::ServerMessage& message);

}  // namespace cronoq::detail::wire
