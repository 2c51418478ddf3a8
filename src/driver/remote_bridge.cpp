// The driver's side of the seam with a worker server (remote_bridge.hpp).
#include "remote_bridge.hpp"

#include "lease_tags.hpp"

#include <cronoq/logging.hpp>

#include <spdlog/spdlog.h>

#include <utility>

namespace cronoq::detail {

namespace {

// Calls into a session are the server's code: what one throws is logged,
// never let into the scheduler's steps.
template <class F>
void to_session(const char* what, F&& f) noexcept {
    try {
        f();
    } catch (const std::exception& e) {
        logger()->warn("remote worker session: {} threw: {}", what, e.what());
    } catch (...) {
        logger()->warn("remote worker session: {} threw a non-standard exception", what);
    }
}

std::int64_t unix_ns(std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

void RemoteBridge::connect(WorkerId worker, Link link) {
    std::lock_guard lock(mu_);
    links_.emplace(worker.value, std::move(link));
}

void RemoteBridge::disconnect(WorkerId worker) {
    std::lock_guard lock(mu_);
    links_.erase(worker.value);
}

std::optional<core::PoolId> RemoteBridge::pool_of(WorkerId worker) const {
    std::lock_guard lock(mu_);
    if (auto it = links_.find(worker.value); it != links_.end()) return it->second.pool;
    return std::nullopt;
}

std::shared_ptr<RemoteSession> RemoteBridge::session_of(WorkerId worker) const {
    std::lock_guard lock(mu_);
    if (auto it = links_.find(worker.value); it != links_.end()) return it->second.session;
    return nullptr;
}

std::shared_ptr<RemoteHost> RemoteBridge::host(const std::function<std::shared_ptr<RemoteHost>()>& make) {
    std::lock_guard lock(mu_);
    if (!host_) host_ = make();
    return host_;
}

UniqueFunction<void()> RemoteBridge::lease(const EngineHeld&, std::shared_ptr<Attempt> attempt,
                                           std::optional<std::chrono::nanoseconds> timeout, const Encoder& encoder,
                                           std::function<void(RemoteEnd)> failed) {
    leases_.emplace(attempt->lease.value, attempt);
    auto session = session_of(attempt->worker);
    if (!session) return {};  // cannot be: a worker leaves the engine before its link goes
    // The lease message is made after the mutex: a task's description never
    // changes once submitted, and its payload may still need encoding (a
    // recurring occurrence, a recovered or resubmitted task).
    return [&encoder, session = std::move(session), a = std::move(attempt), timeout, failed = std::move(failed)] {
        const TaskRecord& r = *a->record;
        RemoteLeaseOut out;
        out.lease = a->lease;
        out.task = r.id();
        out.attempt = a->attempt;
        out.pool = *r.pool;
        std::string problem;
        out.payload = r.remote_payload ? *r.remote_payload : encoder.lease_payload(*a->pool, r.payload, problem);
        if (problem.empty()) {
            out.kind = r.kind;
            out.key = r.key().value_or(std::string{});
            out.tags = lease_tags(r.tags(), r.traceparent());
            // Workers see the tenant as they see the task's other labels of origin.
            if (!r.fair_key().empty()) out.tags.emplace_back("fair_key", r.fair_key());
            out.timeout = timeout;
            if (r.deadline) out.deadline_unix_ns = unix_ns(*r.deadline);
            // A lease the session cannot send (admitted before the server
            // said its limit, recovered from a store, a recurring
            // occurrence) fails here, and only this attempt.
            try {
                session->lease(std::move(out));
            } catch (const std::exception& e) {
                problem = e.what();
            } catch (...) {
                problem = "lease: the worker's session cannot send it";
            }
        }
        // The worker never sees it; the attempt fails for good, as its
        // worker would report it. Permanent: every worker of the server gets
        // the same message.
        if (!problem.empty())
            failed(RemoteEnd{a->worker, a->lease, RemoteEnd::Kind::Ended,
                             AttemptOutput::failed(TaskError::permanent(std::move(problem))), {}});
    };
}

UniqueFunction<void()> RemoteBridge::abort(const EngineHeld&, const Attempt& attempt, std::string reason) {
    leases_.erase(attempt.lease.value);
    // A worker that disconnected (WorkerLost) has no link any more.
    auto session = session_of(attempt.worker);
    if (!session) return {};
    return [session = std::move(session), lease = attempt.lease, reason = std::move(reason)] {
        to_session("abort", [&] { session->abort(lease, std::string(reason)); });
    };
}

std::shared_ptr<Attempt> RemoteBridge::end_lease(const EngineHeld&, LeaseId lease) {
    auto it = leases_.find(lease.value);
    if (it == leases_.end()) return nullptr;
    auto attempt = std::move(it->second);
    leases_.erase(it);
    return attempt;
}

UniqueFunction<void()> RemoteBridge::shutdown(const EngineHeld&, std::string reason, bool not_leader) {
    std::vector<std::shared_ptr<RemoteSession>> sessions;
    {
        std::lock_guard lock(mu_);
        for (auto& [id, link] : links_) sessions.push_back(link.session);
    }
    if (sessions.empty()) return {};
    return [sessions = std::move(sessions), reason = std::move(reason), not_leader] {
        for (const auto& session : sessions) to_session("shutdown", [&] { session->shutdown(reason, not_leader); });
    };
}

}  // namespace cronoq::detail
