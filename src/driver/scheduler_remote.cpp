// Remote pools in the driver's steps (docs/remote.md): a Dispatch naming a
// worker sends that worker a lease, an Abort tells it the lease is over, a
// shutdown tells every worker; the sessions are the bridge's
// (remote_bridge.hpp), called after the engine's mutex, in the engine's
// order. Reports come back through the same inbox as local attempt ends.
#include "scheduler_host.hpp"
#include "scheduler_state.hpp"

#include <asio/post.hpp>

namespace cronoq::detail {

void SchedulerCore::State::dispatch_remote(core::Dispatch& d, TaskRecord& record, PoolRuntime& pool) {
    auto attempt = attempt_blocks.make<Attempt>();
    attempt->task = std::shared_ptr<const TaskInfo>(record.engine_ref, static_cast<const TaskInfo*>(&record));
    attempt->lease = d.lease;
    attempt->attempt = d.attempt;
    attempt->record = &record;
    attempt->pool = &pool;
    attempt->worker = d.worker;
    record.live = attempt;
    // A lease that cannot be sent fails as its worker would report it
    // (posted: the sending runs while delivering).
    auto failed = [weak = self, ex = executor](RemoteEnd end) {
        asio::post(ex, [weak, end = std::move(end)]() mutable {
            if (auto core = weak.lock()) core->s_->post_remote(std::move(end));
        });
    };
    if (auto send = remote.lease(held(), std::move(attempt), d.timeout, encoder, std::move(failed)))
        deferred.emplace_back(std::move(send));
}

void SchedulerCore::State::abort_remote(const core::Abort& a, std::shared_ptr<Attempt> attempt) {
    if (auto tell = remote.abort(held(), *attempt, std::string(core::to_string(a.reason))))
        deferred.emplace_back(std::move(tell));
}

void SchedulerCore::State::shutdown_sessions() {
    // `not_leader` only when another scheduler may lead at once: this one
    // lost the lead, or gives it up for a standby as a store-backed shutdown
    // does. Without a store nobody takes over: the workers back off
    // (docs/remote.md, Reconnects).
    std::string reason = "the scheduler shut down";
    if (durable)
        reason = durable->lead_ended(held()) ? "the scheduler lost the lead"
                                     : "the scheduler shut down and released the lead: a standby may take it";
    if (auto tell = remote.shutdown(held(), std::move(reason), durable != nullptr)) deferred.emplace_back(std::move(tell));
}

std::shared_ptr<RemoteHost> SchedulerCore::remote_host() {
    return s_->remote.host([this] { return make_scheduler_host(weak_from_this(), s_.get()); });
}

}  // namespace cronoq::detail
