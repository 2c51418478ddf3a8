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
    const auto older = [this](std::uint32_t a, std::uint32_t b) {
        const TaskSlot& x = tasks_[a];
        const TaskSlot& y = tasks_[b];
        return x.ready_since != y.ready_since ? x.ready_since < y.ready_since : x.id.value < y.id.value;
    };
    for (std::size_t c = 0; c < priority_count; ++c) {
        load.pending[c] = p.counters.ready_by_class[c];
        // Not the fair order's next (another key's may have waited longer).
        if (p.counters.ready_by_class[c] == 0) continue;
        if (auto oldest = p.queue.oldest_fair(c, live, older)) load.oldest_wait[c] = now - tasks_[*oldest].ready_since;
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
