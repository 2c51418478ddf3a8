#include "wire.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cronoq::detail::wire {

namespace {

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

/// Non-negative, finite seconds as nanoseconds (saturated); anything else
/// as none.
std::optional<std::chrono::nanoseconds> nanoseconds_of(double s) {
    if (!std::isfinite(s) || s < 0) return std::nullopt;
    constexpr double max_s = static_cast<double>(std::numeric_limits<std::int64_t>::max()) / 1e9;
    if (s >= max_s) return std::chrono::nanoseconds::max();
    return std::chrono::nanoseconds(static_cast<std::int64_t>(s * 1e9));
}

std::uint32_t clamp32(std::size_t n) {
    return n > std::numeric_limits<std::uint32_t>::max() ? std::numeric_limits<std::uint32_t>::max()
                                                         : static_cast<std::uint32_t>(n);
}

}  // namespace

WorkerRegistration registration(const v1::Register& message) {
    WorkerRegistration r;
    r.pool = message.pool();
    r.slots = message.slots();
    r.name = message.worker_name();
    r.labels.insert(message.labels().begin(), message.labels().end());
    return r;
}

v1::ServerMessage registered(const WorkerGrant& grant, std::size_t max_message_bytes) {
    v1::ServerMessage m;
    auto& r = *m.mutable_registered();
    r.set_worker_id(grant.id.value);
    r.set_lease_ttl_s(seconds(grant.lease_ttl));
    r.set_slots(clamp32(grant.slots));
    r.set_protocol_version(protocol_version);
    r.set_max_message_bytes(max_message_bytes);
    return m;
}

v1::ServerMessage lease(const RemoteLeaseOut& lease) {
    v1::ServerMessage m;
    fill_lease(lease, *m.mutable_lease());
    return m;
}

void fill_lease(const RemoteLeaseOut& lease, v1::Lease& l) {
    l.Clear();  // keeps the strings' storage
    l.set_lease(lease.lease.value);
    l.set_task_id(lease.task.value);
    l.set_attempt(lease.attempt);
    l.set_pool(lease.pool);
    l.set_payload(lease.payload);
    l.set_content_type(lease.content_type);
    l.set_kind(lease.kind);
    l.set_key(lease.key);
    // A map on the wire: of repeated names, the last value wins.
    for (const auto& [name, value] : lease.tags) (*l.mutable_tags())[name] = value;
    if (lease.timeout) l.set_timeout_s(seconds(*lease.timeout));
    if (lease.deadline_unix_ns) l.set_deadline_unix_ns(*lease.deadline_unix_ns);
}

v1::ServerMessage abort(LeaseId lease, const std::string& reason) {
    v1::ServerMessage m;
    m.mutable_abort()->set_lease(lease.value);
    m.mutable_abort()->set_reason(reason);
    return m;
}

v1::ServerMessage shutdown(const std::string& reason, bool not_leader) {
    v1::ServerMessage m;
    m.mutable_shutdown()->set_reason(reason);
    m.mutable_shutdown()->set_not_leader(not_leader);
    return m;
}

v1::ServerMessage slots(std::size_t granted) {
    v1::ServerMessage m;
    m.mutable_set_slots()->set_slots(clamp32(granted));
    return m;
}

std::optional<RemoteReport> report(const v1::WorkerMessage& message) {
    switch (message.message_case()) {
        case v1::WorkerMessage::kHeartbeat:
            return RemoteReport{LeaseId{message.heartbeat().lease()}, RemoteReport::Heartbeat{}};
        case v1::WorkerMessage::kComplete:
            return RemoteReport{LeaseId{message.complete().lease()}, RemoteReport::Complete{message.complete().output()}};
        case v1::WorkerMessage::kFail: {
            const auto& f = message.fail();
            RemoteReport::Fail fail{f.message(), f.permanent(), std::nullopt};
            if (f.has_retry_after_s()) fail.retry_after = nanoseconds_of(f.retry_after_s());
            return RemoteReport{LeaseId{f.lease()}, std::move(fail)};
        }
        case v1::WorkerMessage::kNack:
            return RemoteReport{LeaseId{message.nack().lease()}, RemoteReport::Nack{message.nack().reason()}};
        case v1::WorkerMessage::kCancelled:
            return RemoteReport{LeaseId{message.cancelled().lease()}, RemoteReport::Cancelled{}};
        default: return std::nullopt;
    }
}

v1::WorkerMessage to_message(const WorkerSend& send) {
    v1::WorkerMessage m;
    to_message(send, m, nullptr);
    return m;
}

void to_message(const WorkerSend& send, v1::WorkerMessage& m, std::unique_ptr<v1::Complete> spare) {
    if (const auto* reg = std::get_if<RegisterMessage>(&send)) {
        auto& r = *m.mutable_register_();
        r.set_pool(reg->registration.pool);
        r.set_slots(clamp32(reg->registration.slots));
        r.set_worker_name(reg->registration.name);
        r.set_protocol_version(reg->protocol_version);
        for (const auto& [name, value] : reg->registration.labels) (*r.mutable_labels())[name] = value;
    } else if (const auto* s = std::get_if<WorkerSlots>(&send)) {
        m.mutable_set_slots()->set_slots(clamp32(s->slots));
    } else {
        const auto& report = std::get<RemoteReport>(send);
        const std::uint64_t lease = report.lease.value;
        std::visit(
            [&]<class T>(const T& what) {
                if constexpr (std::is_same_v<T, RemoteReport::Heartbeat>) {
                    m.mutable_heartbeat()->set_lease(lease);
                } else if constexpr (std::is_same_v<T, RemoteReport::Complete>) {
                    if (spare) m.set_allocated_complete(spare.release());
                    m.mutable_complete()->set_lease(lease);
                    m.mutable_complete()->set_output(what.output);
                } else if constexpr (std::is_same_v<T, RemoteReport::Fail>) {
                    auto& f = *m.mutable_fail();
                    f.set_lease(lease);
                    f.set_message(what.message);
                    f.set_permanent(what.permanent);
                    if (what.retry_after) f.set_retry_after_s(seconds(*what.retry_after));
                } else if constexpr (std::is_same_v<T, RemoteReport::Nack>) {
                    m.mutable_nack()->set_lease(lease);
                    m.mutable_nack()->set_reason(what.reason);
                } else {
                    m.mutable_cancelled()->set_lease(lease);
                }
            },
            report.what);
    }
}

std::optional<ServerEvent> to_event(const v1::ServerMessage& message) {
    switch (message.message_case()) {
        case v1::ServerMessage::kRegistered: {
            const auto& r = message.registered();
            return WorkerRegistered{r.worker_id(), nanoseconds_of(r.lease_ttl_s()).value_or(std::chrono::seconds(30)),
                                    r.slots(), static_cast<std::size_t>(r.max_message_bytes())};
        }
        case v1::ServerMessage::kLease: {
            const auto& l = message.lease();
            RemoteLeaseOut out;
            out.lease = LeaseId{l.lease()};
            out.task = TaskId{l.task_id()};
            out.attempt = l.attempt();
            out.pool = l.pool();
            out.payload = l.payload();
            out.content_type = l.content_type();
            out.kind = l.kind();
            out.key = l.key();
            out.tags.assign(l.tags().begin(), l.tags().end());
            std::sort(out.tags.begin(), out.tags.end());  // a map's order is unspecified on the wire
            if (l.has_timeout_s()) out.timeout = nanoseconds_of(l.timeout_s());
            if (l.has_deadline_unix_ns()) out.deadline_unix_ns = l.deadline_unix_ns();
            return out;
        }
        case v1::ServerMessage::kAbort: return WorkerAbort{LeaseId{message.abort().lease()}, message.abort().reason()};
        case v1::ServerMessage::kShutdown:
            return WorkerShutdown{message.shutdown().reason(), message.shutdown().not_leader()};
        case v1::ServerMessage::kSetSlots: return WorkerSlots{message.set_slots().slots()};
        default: return std::nullopt;
    }
}

}  // namespace cronoq::detail::wire
