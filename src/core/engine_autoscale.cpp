// Autoscaling in the engine (SPEC §9): the pool's Autoscaler is evaluated
// when due, from the pool's exact state; a new capacity is applied at once
// (lowering it never aborts a running attempt) and announced with ScaleTo.
#include "engine_state.hpp"

namespace cronoq::core {

void Engine::State::autoscale(PoolId id, Time now) {
    PoolState& p = pools[id];
    detail::Autoscaler& a = *scaler_of(p, now);
    if (auto due = a.next_evaluation(); due && *due <= now) {
        detail::PoolLoad load;
        load.capacity = p.capacity;
        load.busy = p.counters.running;
        const auto live = [this](detail::QueueRef r) { return slots[r.slot].gen == r.gen; };
        for (std::size_t c = 0; c < priority_count; ++c) {
            load.pending[c] = p.counters.ready_by_class[c];
            if (auto head = p.queue.fifo_head(c, live)) load.oldest_wait[c] = now - slots[*head].ready_since;
        }
        load.reserved = p.reservations.peak(now, later(now, a.config().reservation_horizon));
        if (auto capacity = a.evaluate(now, load); capacity && *capacity != p.capacity) {
            p.metrics.accrue(now, p.counters.running, p.capacity);
            p.capacity = *capacity;
            p.counters.capacity = *capacity;
            p.dirty = true;
            actions.emplace_back(ScaleTo{id, *capacity});
        }
    }
    const Time next = a.next_evaluation().value_or(never);
    if (next != p.autoscale_armed) {
        p.autoscale_armed = next;
        if (next != never) push_timer(next, id, 0, TimerKind::Autoscale);
    }
}

}  // namespace cronoq::core
