// Remote pools in the driver (docs/remote.md): the scheduler's side of the seam
// with a worker server (<cronoq/detail/remote_host.hpp>). Workers register
// with the engine as it hands out leases; a Dispatch naming a worker sends
// that worker's session a lease (payload encoded by codec<P>), an Abort
// tells it the lease is over; reports come back through the same inbox as
// local attempt ends, their outputs decoded by codec<O> before the engine's
// mutex. Sessions are called after the mutex, in the engine's order.
#include <cronoq/detail/remote_host.hpp>
#include <cronoq/logging.hpp>

#include "scheduler_state.hpp"

#include <asio/post.hpp>
#include <spdlog/spdlog.h>

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

const PoolRuntime* SchedulerCore::State::remote_pool_of(const TaskRequest& r) const {
    // Pool definitions never change after build: read without the mutex.
    if (!r.pool) return pools.front().def.engine.remote ? &pools.front() : nullptr;
    for (const PoolRuntime& p : pools)
        if (*p.name == *r.pool) return p.def.engine.remote ? &p : nullptr;
    return nullptr;  // unknown: the engine says so
}

std::string SchedulerCore::State::lease_too_large(const TaskRequest& r, const PoolRuntime& pool,
                                                  std::size_t payload_bytes) const {
    const std::size_t limit = lease_limit.load(std::memory_order_relaxed);
    const std::size_t bound =
        lease_size_bound(payload_bytes, *pool.name, r.kind, r.key.value_or(std::string{}), r.tags);
    if (bound <= limit) return {};
    std::size_t tag_bytes = 0;
    for (const auto& [name, value] : r.tags) tag_bytes += name.size() + value.size();
    return "lease: up to " + std::to_string(bound) + " bytes encoded (payload " + std::to_string(payload_bytes) +
           ", key " + std::to_string(r.key ? r.key->size() : 0) + ", tags " + std::to_string(tag_bytes) +
           "), more than the worker server sends (max_message_bytes " + std::to_string(limit) + ")";
}

void SchedulerCore::State::dispatch_remote(core::Dispatch& d, TaskRecord& record, PoolRuntime& pool) {
    auto attempt = attempt_blocks.make<Attempt>();
    attempt->task = std::shared_ptr<const TaskInfo>(record.engine_ref, static_cast<const TaskInfo*>(&record));
    attempt->lease = d.lease;
    attempt->attempt = d.attempt;
    attempt->record = &record;
    attempt->pool = &pool;
    attempt->worker = d.worker;
    record.live = attempt;
    remote_leases.emplace(d.lease.value, attempt);
    std::shared_ptr<RemoteSession> session;
    {
        std::lock_guard lock(remote_mu);
        if (auto it = remote_links.find(d.worker.value); it != remote_links.end()) session = it->second.session;
    }
    if (!session) return;  // cannot be: a worker leaves the engine before its link goes
    // The lease message is made after the mutex: a task's description never
    // changes once submitted, and its payload may still need encoding (a
    // recurring occurrence, a recovered or resubmitted task).
    deferred.emplace_back(UniqueFunction<void()>([this, session = std::move(session), a = std::move(attempt),
                                                  timeout = d.timeout] {
        const TaskRecord& r = *a->record;
        RemoteLeaseOut out;
        out.lease = a->lease;
        out.task = r.id();
        out.attempt = a->attempt;
        out.pool = *r.pool;
        std::string problem;
        if (r.remote_payload) {
            out.payload = *r.remote_payload;
        } else {
            try {
                out.payload = a->pool->def.codec.encode_payload(r.payload.get());
            } catch (const std::exception& e) {
                problem = std::string("payload: the codec cannot encode it: ") + e.what();
            }
        }
        if (problem.empty()) {
            out.kind = r.kind;
            out.key = r.key().value_or(std::string{});
            out.tags = r.tags();
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
        if (!problem.empty()) {
            // The worker never sees it; the attempt fails for good, as its
            // worker would report it (posted: this runs while delivering).
            // Permanent: every worker of the server gets the same message.
            RemoteEnd end{a->worker, a->lease, RemoteEnd::Kind::Ended,
                          AttemptOutput{nullptr, TaskError::permanent(std::move(problem)), {}}, {}};
            asio::post(executor, [weak = self, end = std::move(end)]() mutable {
                if (auto core = weak.lock()) core->s_->post_remote(std::move(end));
            });
        }
    }));
}

void SchedulerCore::State::abort_remote(const core::Abort& a, std::shared_ptr<Attempt> attempt) {
    remote_leases.erase(a.lease.value);
    std::shared_ptr<RemoteSession> session;
    {
        std::lock_guard lock(remote_mu);
        // A worker that disconnected (WorkerLost) has no link any more.
        if (auto it = remote_links.find(attempt->worker.value); it != remote_links.end()) session = it->second.session;
    }
    if (!session) return;
    deferred.emplace_back(UniqueFunction<void()>([session = std::move(session), lease = a.lease, reason = a.reason] {
        to_session("abort", [&] { session->abort(lease, std::string(core::to_string(reason))); });
    }));
}

void SchedulerCore::State::shutdown_sessions() {
    std::vector<std::shared_ptr<RemoteSession>> sessions;
    {
        std::lock_guard lock(remote_mu);
        for (auto& [id, link] : remote_links) sessions.push_back(link.session);
    }
    if (sessions.empty()) return;
    // `not_leader` only when another scheduler may lead at once: this one
    // lost the lead, or gives it up for a standby as a store-backed shutdown
    // does. Without a store nobody takes over: the workers back off
    // (docs/remote.md, Reconnects).
    std::string reason = "the scheduler shut down";
    if (durable)
        reason = durable->lead_ended ? "the scheduler lost the lead"
                                     : "the scheduler shut down and released the lead: a standby may take it";
    deferred.emplace_back(UniqueFunction<void()>([sessions = std::move(sessions), reason = std::move(reason),
                                                  not_leader = durable != nullptr] {
        for (const auto& session : sessions) to_session("shutdown", [&] { session->shutdown(reason, not_leader); });
    }));
}

// ---- the host ---------------------------------------------------------------------------

namespace {

class SchedulerHost final : public RemoteHost {
public:
    SchedulerHost(std::weak_ptr<SchedulerCore> core, SchedulerCore::State* state) : core_(std::move(core)), s_(state) {}

    std::variant<WorkerGrant, ConnectRefused> connect(WorkerRegistration reg, std::shared_ptr<RemoteSession> session) override {
        auto core = core_.lock();
        if (!core) return ConnectRefused{ConnectRefused::Kind::ShuttingDown, "the scheduler is gone"};
        SchedulerCore::State& s = *s_;
        SchedulerCore::State::Step step(s);
        const auto pool = s.engine.find_pool(reg.pool);
        if (!pool) return ConnectRefused{ConnectRefused::Kind::UnknownPool, "no pool named \"" + reg.pool + "\""};
        if (!s.pools[*pool].def.engine.remote)
            return ConnectRefused{ConnectRefused::Kind::NotRemote,
                                  "pool \"" + reg.pool + "\" runs local executors, not remote workers"};
        if (s.shutting_down) return ConnectRefused{ConnectRefused::Kind::ShuttingDown, "the scheduler is shutting down"};
        if (s.durable && !s.durable->writing)
            return ConnectRefused{ConnectRefused::Kind::ShuttingDown, "this scheduler does not lead its store"};
        core::Labels labels(reg.labels.begin(), reg.labels.end());  // a map: sorted, each name once
        const auto now = s.clock->now();
        const WorkerId id = s.engine.connect_worker(*pool, reg.slots, std::move(labels), now);
        if (!id) return ConnectRefused{ConnectRefused::Kind::ShuttingDown, "the scheduler is shutting down"};
        {
            std::lock_guard lock(s.remote_mu);
            s.remote_links.emplace(id.value, RemoteWorkerLink{std::move(session), *pool});
        }
        WorkerGrant grant{id, s.engine.pool_config(*pool).lease_ttl.value_or(std::chrono::seconds(30)),
                          s.engine.worker_slots(id)};
        if (s.debug_logging)
            s.log([name = std::move(reg.name), pool = reg.pool, id, slots = grant.slots] {
                logger()->debug("pool \"{}\": worker {} (\"{}\") connected with {} slot(s)", pool, id.value, name, slots);
            });
        s.apply(now);  // its first leases, sent when the step ends
        return grant;
    }

    std::size_t set_slots(WorkerId worker, std::size_t slots) override {
        auto core = core_.lock();
        if (!core) return 0;
        SchedulerCore::State::Step step(*s_);
        const auto now = s_->clock->now();
        const std::size_t granted = s_->engine.set_worker_slots(worker, slots, now);
        s_->apply(now);
        return granted;
    }

    void report(WorkerId worker, RemoteReport report) override {
        auto core = core_.lock();
        if (!core) return;
        RemoteEnd end{worker, report.lease, RemoteEnd::Kind::Ended, {}, {}};
        std::visit([&](auto& what) { fill(end, worker, what); }, report.what);
        s_->post_remote(std::move(end));
    }

    void disconnect(WorkerId worker) override {
        auto core = core_.lock();
        if (!core) return;
        SchedulerCore::State::Step step(*s_);
        const auto now = s_->clock->now();
        // Out of the engine first: the aborts of its leases find no session.
        {
            std::lock_guard lock(s_->remote_mu);
            s_->remote_links.erase(worker.value);
        }
        s_->engine.disconnect_worker(worker, now);
        s_->apply(now);
    }

    void limit_lease(std::size_t max_message_bytes) override {
        s_->lease_limit.store(max_message_bytes, std::memory_order_relaxed);
    }

private:
    // The output is decoded here, on the reporting thread, never under the
    // engine's mutex (the codec is the application's code).
    void fill(RemoteEnd& end, WorkerId worker, RemoteReport::Complete& c) {
        const PoolRuntime* pool = nullptr;
        {
            std::lock_guard lock(s_->remote_mu);
            if (auto it = s_->remote_links.find(worker.value); it != s_->remote_links.end())
                pool = &s_->pools[it->second.pool];
        }
        if (!pool) return;  // not connected: the engine counts the report late
        const auto& decode = pool->def.codec.decode_output;
        if (!decode) return;  // a void output: nothing to decode
        try {
            end.output.value = decode(c.output);
            if (s_->durable) end.output.encoded = std::move(c.output);  // the store keeps these bytes
        } catch (const std::exception& e) {
            end.output = AttemptOutput{nullptr, TaskError::permanent(std::string("decode: the output cannot be read: ") + e.what()), {}};
        }
    }
    void fill(RemoteEnd& end, WorkerId, RemoteReport::Fail& f) {
        if (f.permanent)
            end.output.error = TaskError::permanent(std::move(f.message));
        else if (f.retry_after)
            end.output.error = TaskError::retry_after(std::move(f.message), *f.retry_after);
        else
            end.output.error = TaskError::retryable(std::move(f.message));
    }
    void fill(RemoteEnd& end, WorkerId, RemoteReport::Nack& n) {
        end.kind = RemoteEnd::Kind::Nack;
        end.reason = std::move(n.reason);
    }
    // Outside an abort, the handler observed cancellation: the task ends
    // Cancelled (docs/remote.md). After an abort the lease is over: ignored.
    void fill(RemoteEnd& end, WorkerId, RemoteReport::Cancelled&) { end.output.error = TaskError::cancelled(); }
    void fill(RemoteEnd& end, WorkerId, RemoteReport::Heartbeat&) { end.kind = RemoteEnd::Kind::Heartbeat; }

    std::weak_ptr<SchedulerCore> core_;
    SchedulerCore::State* s_;  // valid while core_ is
};

}  // namespace

std::shared_ptr<RemoteHost> SchedulerCore::remote_host() {
    std::lock_guard lock(s_->remote_mu);
    if (!s_->host) s_->host = std::make_shared<SchedulerHost>(weak_from_this(), s_.get());
    return s_->host;
}

}  // namespace cronoq::detail
