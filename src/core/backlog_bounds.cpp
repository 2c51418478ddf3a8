#include "backlog_bounds.hpp"

#include <algorithm>
#include <string>

namespace cronoq::core {

void BacklogBounds::add_pool(PoolState& pool) {
    lists_.emplace_back();
    const OverflowPolicy overflow = pool.config.overflow;
    pool.may_shed =
        overflow == OverflowPolicy::ShedLowest || overflow == OverflowPolicy::ShedOldest || global_.bounded();
}

std::size_t BacklogBounds::pending_total() const {
    std::size_t n = 0;
    for (const PoolState& p : pools_) n += p.pending();
    return n;
}

bool BacklogBounds::has_room(std::size_t pool, std::size_t incoming) const {
    const PoolState& p = pools_[pool];
    if (p.config.bounds.bounded() && p.pending() + incoming > p.config.bounds.max_pending) return false;
    return !global_.bounded() || pending_total() + incoming <= global_.max_pending;
}

void BacklogBounds::mark_full(std::size_t pool) {
    if (!lists_[pool].full) ++full_pools_;
    lists_[pool].full = true;
}

void BacklogBounds::link_ready(std::uint32_t s) {
    const TaskSlot& t = tasks_[s];
    PoolLists& l = lists_[t.pool];
    const std::size_t c = index_of(t.priority);
    // Sized by the largest slot linked: the slots of an engine that never
    // sheds have no links at all.
    if (s >= links_.size()) links_.resize(std::max<std::size_t>(s + 1, links_.size() * 2));
    Links& k = links_[s];
    k.older = l.newest[c];
    k.newer = no_slot;
    if (k.older != no_slot)
        links_[k.older].newer = s;
    else
        l.oldest[c] = s;
    l.newest[c] = s;
}

void BacklogBounds::unlink_ready(std::uint32_t s) {
    const TaskSlot& t = tasks_[s];
    PoolLists& l = lists_[t.pool];
    const std::size_t c = index_of(t.priority);
    Links& k = links_[s];
    (k.older != no_slot ? links_[k.older].newer : l.oldest[c]) = k.newer;
    (k.newer != no_slot ? links_[k.newer].older : l.newest[c]) = k.older;
    k.older = k.newer = no_slot;
}

BacklogBounds::Room BacklogBounds::make_room_when_bounded(PoolId pool, Priority priority, std::string& why) {
    const PoolState& p = pools_[pool];
    const bool pool_full = p.config.bounds.bounded() && p.pending() >= p.config.bounds.max_pending;
    const bool global_full = global_.bounded() && pending_total() >= global_.max_pending;
    if (!pool_full && !global_full) return {};
    why = pool_full ? describe_pool(p.config) + std::to_string(p.pending()) + " tasks pending, bounds.max_pending " +
                          std::to_string(p.config.bounds.max_pending)
                    : std::to_string(pending_total()) + " tasks pending, global_bounds.max_pending " +
                          std::to_string(global_.max_pending);
    switch (p.config.overflow) {
        case OverflowPolicy::Wait: mark_full(pool); return {SubmitError::Full};
        case OverflowPolicy::Reject: return {SubmitError::Overloaded};
        case OverflowPolicy::ShedLowest:
        case OverflowPolicy::ShedOldest: break;
    }
    const std::uint32_t victim = pick_victim(pool, priority, pool_full);
    if (victim == no_slot) {
        why += "; no queued task to shed";
        return {SubmitError::Overloaded};
    }
    return {std::nullopt, victim};
}

// The victim must relieve the bound that is full: this pool's own, or
// with only the global one full, any pool's.
std::uint32_t BacklogBounds::pick_victim(PoolId pool, Priority priority, bool pool_full) const {
    std::uint32_t victim = no_slot;
    const auto consider = [&](std::uint32_t s, bool newest) {
        if (s == no_slot) return;
        if (victim == no_slot) {
            victim = s;
            return;
        }
        const TaskSlot &a = tasks_[s], &b = tasks_[victim];
        const bool later = a.ready_since != b.ready_since ? a.ready_since > b.ready_since : a.id.value > b.id.value;
        if (later == newest) victim = s;
    };
    const auto each_pool = [&](auto&& f) {
        if (pool_full) return f(lists_[pool]);
        for (std::size_t i = 0; i < lists_.size(); ++i)
            if (pools_[i].may_shed) f(lists_[i]);
    };
    if (pools_[pool].config.overflow == OverflowPolicy::ShedOldest) {
        each_pool([&](const PoolLists& l) { consider(l.oldest[index_of(Priority::Low)], false); });
    } else {
        // The newest task of the lowest class strictly below the incoming one.
        for (std::size_t c = priority_count; c-- > index_of(priority) + 1 && victim == no_slot;)
            each_pool([&](const PoolLists& l) { consider(l.newest[c], true); });
    }
    return victim;
}

std::optional<SubmitError> BacklogBounds::check_room(std::span<const std::size_t> incoming, std::string& why) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < pools_.size(); ++i) {
        total += incoming[i];
        const PoolState& p = pools_[i];
        if (incoming[i] == 0 || !p.config.bounds.bounded() || p.pending() + incoming[i] <= p.config.bounds.max_pending)
            continue;
        why = describe_pool(p.config) + "the batch does not fit bounds.max_pending " +
              std::to_string(p.config.bounds.max_pending);
        if (p.config.overflow != OverflowPolicy::Wait) return SubmitError::Overloaded;
        mark_full(i);
        return SubmitError::Full;
    }
    if (global_.bounded() && pending_total() + total > global_.max_pending) {
        why = "the batch does not fit global_bounds.max_pending " + std::to_string(global_.max_pending);
        for (std::size_t i = 0; i < pools_.size(); ++i)
            if (incoming[i] > 0 && pools_[i].config.overflow != OverflowPolicy::Wait) return SubmitError::Overloaded;
        for (std::size_t i = 0; i < pools_.size(); ++i)
            if (incoming[i] > 0) mark_full(i);
        return SubmitError::Full;
    }
    return std::nullopt;
}

void BacklogBounds::announce(Outbox& out) {
    for (std::size_t i = 0; i < pools_.size(); ++i) {
        PoolLists& l = lists_[i];
        if (!l.full || !has_room(i, 1)) continue;
        l.full = false;
        --full_pools_;
        out.emit(SpaceAvailable{static_cast<PoolId>(i)});
    }
}

}  // namespace cronoq::core
