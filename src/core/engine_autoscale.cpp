// Autoscaling in the engine (docs/guide/resources-and-bounds.md): the pool's Autoscaler is evaluated
// when due, from the pool's exact state; a new capacity is applied at once
// (lowering it never aborts a running attempt) and announced with ScaleTo.
// A user policy is the owner's code, which the engine never runs: it emits
// AskScaler and applies the answer the owner gives back (answer_scaler).
#include "engine_state.hpp"

namespace cronoq::core {

void Engine::State::autoscale(PoolId id, Time now) {
    PoolState& p = pools[id];
    detail::Autoscaler& a = *scaler_of(p, now);
    if (auto due = a.next_evaluation(); due && *due <= now && !a.asking()) {
        const auto capacity = a.evaluate(now, load_of(p, a, now));
        if (a.asking()) actions.emplace_back(AskScaler{id});
        if (capacity) scale_to(id, *capacity, now);
    }
    // No wakeup while a question is open: its answer evaluates again.
    const Time next = a.asking() ? never : a.next_evaluation().value_or(never);
    if (next != p.autoscale_armed) {
        p.autoscale_armed = next;
        if (next != never) push_timer(next, id, 0, TimerKind::Autoscale);
    }
}

bool Engine::State::answer_scaler(PoolId id, std::optional<std::size_t> wanted, Time now) {
    PoolState& p = pools[id];
    if (!p.autoscaler || !p.autoscaler->asking()) return false;
    detail::Autoscaler& a = *p.autoscaler;
    if (auto capacity = a.answer(now, wanted, load_of(p, a, now))) scale_to(id, *capacity, now);
    return true;
}

detail::PoolLoad Engine::State::load_of(PoolState& p, const detail::Autoscaler& a, Time now) {
    detail::PoolLoad load;
    load.capacity = p.capacity;
    load.busy = p.counters.running;
    const auto live = [this](detail::QueueRef r) { return slots[r.slot].gen == r.gen; };
    for (std::size_t c = 0; c < priority_count; ++c) {
        load.pending[c] = p.counters.ready_by_class[c];
        if (auto head = p.queue.fifo_head(c, live)) load.oldest_wait[c] = now - slots[*head].ready_since;
    }
    load.reserved = p.reservations.peak(now, later(now, a.config().reservation_horizon));
    return load;
}

void Engine::State::scale_to(PoolId id, std::size_t capacity, Time now) {
    PoolState& p = pools[id];
    if (capacity == p.capacity) return;
    p.metrics.accrue(now, p.counters.running, p.capacity);
    p.capacity = capacity;
    p.counters.capacity = capacity;
    p.dirty = true;
    actions.emplace_back(ScaleTo{id, capacity});
}

}  // namespace cronoq::core
