// The engine's public API for remote workers (docs/remote.md) over its
// components (engine_state.hpp): connections, slots, nacks.
#include "engine_state.hpp"

namespace cronoq::core {

WorkerId Engine::connect_worker(PoolId pool, std::size_t slots, Labels labels, Time now) {
    State& s = *s_;
    if (pool >= s.pools.size() || !s.pools[pool].config.remote || s.life.shutting_down()) return {};
    s.run_due_timers(now);
    const WorkerId id = s.workers.connect(pool, slots, std::move(labels), now);
    s.settle(now);
    return id;
}

std::size_t Engine::set_worker_slots(WorkerId worker, std::size_t slots, Time now) {
    State& s = *s_;
    s.run_due_timers(now);
    const std::size_t granted = s.workers.set_slots(worker, slots, now).value_or(0);
    s.settle(now);
    return granted;
}

void Engine::disconnect_worker(WorkerId worker, Time now) {
    State& s = *s_;
    s.run_due_timers(now);
    const auto leaving = s.workers.begin_disconnect(worker);
    if (!leaving) return s.settle(now);
    for (std::uint64_t lease : leaving->leases)
        if (const std::uint32_t* slot = s.tasks.find_lease(LeaseId{lease}))
            s.life.abandon_attempt(*slot, AbortReason::WorkerLost, now);
    s.workers.remove(worker, now);
    for (std::uint32_t slot : s.workers.stranded_after_nack(leaving->pool)) s.life.fail_stranded(slot, now);
    s.settle(now);
}

bool Engine::nack(LeaseId lease, std::string_view reason, Time now, WorkerId from) {
    State& s = *s_;
    const auto found = s.live_lease(lease, now, from);
    if (!found) return false;
    const std::uint32_t slot = *found;
    TaskSlot& t = s.tasks[slot];
    const WorkerId by = s.tasks.attempt(t).worker;
    if (!by) {  // a local attempt cannot be given back
        ++s.late;
        s.settle(now);
        return false;
    }
    s.life.end_lease(t, now);
    s.workers.nacked(t, by);
    if (s.workers.could_take(slot)) {
        --t.attempt;  // given back: it never ran
        s.life.make_ready(slot, now);
    } else {
        std::string message = "nacked";
        if (!reason.empty()) message.append(": ").append(reason);
        message.append("; no other connected worker can take it");
        s.life.fail_retryable(slot, std::move(message), std::nullopt, now);
    }
    s.settle(now);
    return true;
}

std::size_t Engine::worker_slots(WorkerId worker) const { return s_->workers.slots_of(worker); }

std::size_t Engine::worker_leases(WorkerId worker) const { return s_->workers.leases_of(worker); }

std::size_t Engine::connected_workers(PoolId pool) const { return s_->workers.connected(pool); }

}  // namespace cronoq::core
