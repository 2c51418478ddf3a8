#include "autoscaling.hpp"

namespace cronoq::core {

void Autoscaling::evaluate(PoolId id, Time now) {
    PoolState& p = pools_[id];
    detail::Autoscaler& a = *p.scaler(now);
    if (auto due = a.next_evaluation(); due && *due <= now && !a.asking()) {
        const auto capacity = a.evaluate(now, load_of(p, a, now));
        if (a.asking()) out_.emit(AskScaler{id});
        if (capacity) scale_to(id, *capacity, now);
    }
    // No wakeup while a question is open: its answer evaluates again.
    const Time next = a.asking() ? never : a.next_evaluation().value_or(never);
    if (next != p.autoscale_armed) {
        p.autoscale_armed = next;
        if (next != never) timers_.push(next, id, 0, TimerKind::Autoscale);
    }
}

bool Autoscaling::answer(PoolId id, std::optional<std::size_t> wanted, Time now) {
    PoolState& p = pools_[id];
    if (!p.autoscaler || !p.autoscaler->asking()) return false;
    detail::Autoscaler& a = *p.autoscaler;
    if (auto capacity = a.answer(now, wanted, load_of(p, a, now))) scale_to(id, *capacity, now);
    return true;
}

detail::PoolLoad Autoscaling::load_of(PoolState& p, const detail::Autoscaler& a, Time now) const {
    detail::PoolLoad load;
    load.capacity = p.capacity;
    load.busy = p.counters.running;
    const auto live = [this](detail::QueueRef r) { return tasks_.live(r); };
    for (std::size_t c = 0; c < priority_count; ++c) {
        load.pending[c] = p.counters.ready_by_class[c];
        if (auto head = p.queue.fifo_head(c, live)) load.oldest_wait[c] = now - tasks_[*head].ready_since;
    }
    load.reserved = p.reservations.peak(now, later(now, a.config().reservation_horizon));
    return load;
}

void Autoscaling::scale_to(PoolId id, std::size_t capacity, Time now) {
    PoolState& p = pools_[id];
    if (capacity == p.capacity) return;
    p.metrics.accrue(now, p.counters.running, p.capacity);
    p.capacity = capacity;
    p.counters.capacity = capacity;
    p.dirty = true;
    out_.emit(ScaleTo{id, capacity});
}

}  // namespace cronoq::core
