// The scheduler as a worker server sees it (scheduler_host.hpp).
#include "scheduler_host.hpp"

#include <cronoq/logging.hpp>

#include "actions.hpp"
#include "leader_directory.hpp"
#include "scheduler_state.hpp"
#include "step_pipeline.hpp"

#include <spdlog/spdlog.h>

namespace cronoq::detail {

namespace {

class SchedulerHost final : public RemoteHost {
public:
    SchedulerHost(std::weak_ptr<SchedulerCore> core, SchedulerCore::State* state) : core_(std::move(core)), s_(state) {}

    std::variant<WorkerGrant, ConnectRefused> connect(WorkerRegistration reg, std::shared_ptr<RemoteSession> session) override {
        auto core = core_.lock();
        if (!core) return ConnectRefused{ConnectRefused::Kind::ShuttingDown, "the scheduler is gone"};
        const std::string reg_pool = reg.pool;
        auto outcome = connect_leading(std::move(reg), std::move(session));
        // Not leading: where the leader is comes from the store, read
        // outside the engine's mutex (docs/remote.md, Redirects).
        auto* refused = std::get_if<ConnectRefused>(&outcome);
        if (!refused || !s_->options.store) return outcome;
        if (refused->kind == ConnectRefused::Kind::NotLeader)
            return redirect_to_leader(*s_->options.store, refused->message, s_->options.shard);
        // A pool of another shard: its leader serves the worker
        // (docs/guide/replicas.md, "Shards").
        if (refused->kind == ConnectRefused::Kind::UnknownPool)
            if (auto shard = shard_of_pool(*s_->options.store, reg_pool); shard && *shard != s_->options.shard)
                return redirect_to_leader(*s_->options.store,
                                          "pool \"" + reg_pool + "\" belongs to shard \"" + *shard + "\", not \"" +
                                              s_->options.shard + "\"",
                                          *shard);
        return outcome;
    }

    std::variant<WorkerGrant, ConnectRefused> connect_leading(WorkerRegistration reg, std::shared_ptr<RemoteSession> session) {
        SchedulerCore::State& s = *s_;
        SchedulerCore::State::Step step(s);
        const auto pool = s.engine.find_pool(reg.pool);
        if (!pool) return ConnectRefused{ConnectRefused::Kind::UnknownPool, "no pool named \"" + reg.pool + "\""};
        if (!s.pools[*pool].def.engine.remote)
            return ConnectRefused{ConnectRefused::Kind::NotRemote,
                                  "pool \"" + reg.pool + "\" runs local executors, not remote workers"};
        // With a store, a scheduler that does not lead (a standby, one that
        // lost or gave up the lead) sends the worker to the leader.
        if (s.durable && (s.shutdown.shutting_down(s.held()) || !s.durable->writing(s.held())))
            return ConnectRefused{ConnectRefused::Kind::NotLeader, "this process does not lead the store"};
        if (s.shutdown.shutting_down(s.held())) return ConnectRefused{ConnectRefused::Kind::ShuttingDown, "the scheduler is shutting down"};
        core::Labels labels(reg.labels.begin(), reg.labels.end());  // a map: sorted, each name once
        const auto now = s.clock->now();
        const WorkerId id = s.engine.connect_worker(*pool, reg.slots, std::move(labels), now);
        if (!id) return ConnectRefused{ConnectRefused::Kind::ShuttingDown, "the scheduler is shutting down"};
        s.remote.connect(id, RemoteBridge::Link{std::move(session), *pool});
        WorkerGrant grant{id, s.engine.pool_config(*pool).lease_ttl.value_or(std::chrono::seconds(30)),
                          s.engine.worker_slots(id)};
        if (s.debug_logging)
            s.log([name = std::move(reg.name), pool = reg.pool, id, slots = grant.slots] {
                logger()->debug("pool \"{}\": worker {} (\"{}\") connected with {} slot(s)", pool, id.value, name, slots);
            });
        s.actions.apply(s.held(), now);  // its first leases, sent when the step ends
        return grant;
    }

    std::size_t set_slots(WorkerId worker, std::size_t slots) override {
        auto core = core_.lock();
        if (!core) return 0;
        SchedulerCore::State::Step step(*s_);
        const auto now = s_->clock->now();
        const std::size_t granted = s_->engine.set_worker_slots(worker, slots, now);
        s_->actions.apply(s_->held(), now);
        return granted;
    }

    void report(WorkerId worker, RemoteReport report) override {
        auto core = core_.lock();
        if (!core) return;
        RemoteEnd end{worker, report.lease, RemoteEnd::Kind::Ended, {}, {}};
        std::visit([&](auto& what) { fill(end, worker, what); }, report.what);
        s_->pipeline.post_remote(std::move(end));
    }

    void disconnect(WorkerId worker) override {
        auto core = core_.lock();
        if (!core) return;
        SchedulerCore::State::Step step(*s_);
        const auto now = s_->clock->now();
        // Out of the engine first: the aborts of its leases find no session.
        s_->remote.disconnect(worker);
        s_->engine.disconnect_worker(worker, now);
        s_->actions.apply(s_->held(), now);
    }

    void limit_lease(std::size_t max_message_bytes) override {
        s_->encoder.limit_lease(max_message_bytes);
    }

private:
    // The output is decoded here, on the reporting thread, never under the
    // engine's mutex (the codec is the application's code).
    void fill(RemoteEnd& end, WorkerId worker, RemoteReport::Complete& c) {
        const auto pool_id = s_->remote.pool_of(worker);
        if (!pool_id) return;
        const PoolRuntime* pool = &s_->pools[*pool_id];  // not connected: the engine counts the report late
        const auto& decode = pool->def.codec.decode_output;
        if (!decode) return;  // a void output: nothing to decode
        try {
            end.output.output.value = decode(c.output);
            if (s_->durable) end.output.output.bytes = std::move(c.output);  // the store keeps these bytes
        } catch (const std::exception& e) {
            end.output = AttemptOutput::failed(TaskError::permanent(std::string("decode: the output cannot be read: ") + e.what()));
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

std::shared_ptr<RemoteHost> make_scheduler_host(std::weak_ptr<SchedulerCore> core, SchedulerCore::State* state) {
    return std::make_shared<SchedulerHost>(std::move(core), state);
}

std::shared_ptr<RemoteHost> SchedulerCore::remote_host() {
    return s_->remote.host([this] { return make_scheduler_host(weak_from_this(), s_.get()); });
}

}  // namespace cronoq::detail
