#pragma once
// What a worker's stream carries, without gRPC: the server's messages as the
// C++ worker receives them, and the worker's own. wire.cpp converts them to
// and from the protocol's messages.
#include <cronoq/detail/remote_host.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace cronoq::detail {

inline constexpr std::uint32_t protocol_version = 3;
/// The trailing metadata of a redirect (docs/remote.md, Redirects).
inline constexpr std::string_view shard_key = "cronoq-shard";
inline constexpr std::string_view shard_endpoint_key = "cronoq-shard-endpoint";

// ---- server -> worker
struct WorkerRegistered {
    std::uint64_t worker_id = 0;
    std::chrono::nanoseconds lease_ttl{};
    std::size_t slots = 0;
    std::size_t max_message_bytes = 0;
};
struct WorkerAbort {
    LeaseId lease;
    std::string reason;
};
struct WorkerShutdown {
    std::string reason;
    bool not_leader = false;
};
struct WorkerSlots {
    std::size_t slots = 0;
};
/// The stream ended, with its gRPC status (0: OK).
struct StreamClosed {
    int code = 0;
    std::string message;
    /// A redirect's trailing metadata: `cronoq-shard` (its presence makes
    /// the refusal a redirect) and `cronoq-shard-endpoint` (when one leads).
    std::optional<std::string> shard;
    std::optional<std::string> shard_endpoint;
    /// The closed stream's last reference, dropped by whoever handles the
    /// event: never on gRPC's thread, where releasing a channel's last
    /// reference makes gRPC's callback queue join the thread it runs on.
    std::shared_ptr<void> stream;
};
using ServerEvent = std::variant<WorkerRegistered, RemoteLeaseOut, WorkerAbort, WorkerShutdown, WorkerSlots, StreamClosed>;

// ---- worker -> server
struct RegisterMessage {
    WorkerRegistration registration;
    std::uint32_t protocol_version = detail::protocol_version;
};
using WorkerSend = std::variant<RegisterMessage, RemoteReport, WorkerSlots>;

}  // namespace cronoq::detail
