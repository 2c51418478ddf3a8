// Bounds on tasks not yet running, and the overflow policies (docs/guide/resources-and-bounds.md).
#include "engine_state.hpp"

#include <string>

namespace cronoq::core {

std::size_t Engine::State::pending_total() const {
    std::size_t n = 0;
    for (const PoolState& p : pools) n += pending(p);
    return n;
}

bool Engine::State::has_room(const PoolState& p, std::size_t incoming) const {
    if (p.config.bounds.bounded() && pending(p) + incoming > p.config.bounds.max_pending) return false;
    return !config.global_bounds.bounded() || pending_total() + incoming <= config.global_bounds.max_pending;
}

void Engine::State::link_ready(std::uint32_t s) {
    TaskSlot& t = slots[s];
    PoolState& p = pools[t.pool];
    const std::size_t c = index_of(t.priority);
    t.older = p.newest_ready[c];
    t.newer = no_slot;
    if (t.older != no_slot)
        slots[t.older].newer = s;
    else
        p.oldest_ready[c] = s;
    p.newest_ready[c] = s;
}

void Engine::State::unlink_ready(std::uint32_t s) {
    TaskSlot& t = slots[s];
    PoolState& p = pools[t.pool];
    const std::size_t c = index_of(t.priority);
    (t.older != no_slot ? slots[t.older].newer : p.oldest_ready[c]) = t.newer;
    (t.newer != no_slot ? slots[t.newer].older : p.newest_ready[c]) = t.older;
    t.older = t.newer = no_slot;
}

std::optional<SubmitError> Engine::State::make_room(PoolId pool, Priority priority, std::string& why, Time now) {
    PoolState& p = pools[pool];
    const bool pool_full = p.config.bounds.bounded() && pending(p) >= p.config.bounds.max_pending;
    const bool global_full = config.global_bounds.bounded() && pending_total() >= config.global_bounds.max_pending;
    if (!pool_full && !global_full) return std::nullopt;
    why = pool_full ? describe_pool(p.config) + std::to_string(pending(p)) + " tasks pending, bounds.max_pending " +
                          std::to_string(p.config.bounds.max_pending)
                    : std::to_string(pending_total()) + " tasks pending, global_bounds.max_pending " +
                          std::to_string(config.global_bounds.max_pending);
    switch (p.config.overflow) {
        case OverflowPolicy::Wait:
            if (!p.full) ++full_pools;
            p.full = true;
            return SubmitError::Full;
        case OverflowPolicy::Reject: return SubmitError::Overloaded;
        case OverflowPolicy::ShedLowest:
        case OverflowPolicy::ShedOldest: break;
    }
    // The victim must relieve the bound that is full: this pool's own, or
    // with only the global one full, any pool's.
    std::uint32_t victim = no_slot;
    const auto consider = [&](std::uint32_t s, bool newest) {
        if (s == no_slot) return;
        if (victim == no_slot) {
            victim = s;
            return;
        }
        const TaskSlot &a = slots[s], &b = slots[victim];
        const bool later = a.ready_since != b.ready_since ? a.ready_since > b.ready_since : a.id.value > b.id.value;
        if (later == newest) victim = s;
    };
    const auto each_pool = [&](auto&& f) {
        if (pool_full) return f(p);
        for (PoolState& q : pools)
            if (q.may_shed) f(q);
    };
    if (p.config.overflow == OverflowPolicy::ShedOldest) {
        each_pool([&](PoolState& q) { consider(q.oldest_ready[index_of(Priority::Low)], false); });
    } else {
        // The newest task of the lowest class strictly below the incoming one.
        for (std::size_t c = priority_count; c-- > index_of(priority) + 1 && victim == no_slot;)
            each_pool([&](PoolState& q) { consider(q.newest_ready[c], true); });
    }
    if (victim == no_slot) {
        why += "; no queued task to shed";
        return SubmitError::Overloaded;
    }
    std::string message = "shed: ";
    message.append(why);
    ++pools[slots[victim].pool].counters.shed;
    finish(victim, TaskStatus::Shed, std::move(message), now);
    return std::nullopt;
}

std::optional<SubmitError> Engine::State::check_room(std::span<const std::size_t> incoming, std::string& why) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < pools.size(); ++i) {
        total += incoming[i];
        PoolState& p = pools[i];
        if (incoming[i] == 0 || !p.config.bounds.bounded() || pending(p) + incoming[i] <= p.config.bounds.max_pending)
            continue;
        why = describe_pool(p.config) + "the batch does not fit bounds.max_pending " +
              std::to_string(p.config.bounds.max_pending);
        if (p.config.overflow != OverflowPolicy::Wait) return SubmitError::Overloaded;
        if (!p.full) ++full_pools;
        p.full = true;
        return SubmitError::Full;
    }
    if (config.global_bounds.bounded() && pending_total() + total > config.global_bounds.max_pending) {
        why = "the batch does not fit global_bounds.max_pending " + std::to_string(config.global_bounds.max_pending);
        for (std::size_t i = 0; i < pools.size(); ++i)
            if (incoming[i] > 0 && pools[i].config.overflow != OverflowPolicy::Wait) return SubmitError::Overloaded;
        for (std::size_t i = 0; i < pools.size(); ++i)
            if (incoming[i] > 0 && !pools[i].full) {
                pools[i].full = true;
                ++full_pools;
            }
        return SubmitError::Full;
    }
    return std::nullopt;
}

void Engine::State::announce_space() {
    for (std::size_t i = 0; i < pools.size(); ++i) {
        PoolState& p = pools[i];
        if (!p.full || !has_room(p, 1)) continue;
        p.full = false;
        --full_pools;
        actions.emplace_back(SpaceAvailable{static_cast<PoolId>(i)});
    }
}

}  // namespace cronoq::core
