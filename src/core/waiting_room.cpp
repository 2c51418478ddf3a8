#include "waiting_room.hpp"

#include <algorithm>
#include <string>

namespace cronoq::core {

void WaitingRoom::add_start(TaskSlot& t, const TaskSpec& spec, Duration expected) {
    PoolState& p = pools_[spec.pool];
    const Time end = later(*spec.start, expected);
    starts_.emplace(t.id.value, StartInfo{*spec.start, spec.start_tolerance, spec.on_miss});
    p.reservations.add({*spec.start, end}, t.id);
    t.has_start = true;
    // The autoscaler counts reservations within its horizon: wake it
    // when this one enters it, even if the pool is idle by then.
    if (p.autoscale_config) {
        const Duration horizon = p.autoscale_config->reservation_horizon;
        // [now, now + horizon) holds the start from start - horizon + 1 ns.
        const Time enters = spec.start->time_since_epoch() > horizon ? *spec.start - horizon + Duration(1) : Time{};
        timers_.push(enters, static_cast<std::uint32_t>(spec.pool), 0, TimerKind::Horizon);
    }
}

void WaitingRoom::count_start(const TaskSlot& t, Time now) {
    const StartInfo& start = starts_.at(t.id.value);
    PoolCounters& c = pools_[t.pool].counters;
    detail::MetricsSlice& m = pools_[t.pool].metrics.at(now);
    if (diff_saturated(now, start.start) <= start.tolerance) {
        ++c.starts_on_time;
        ++m.starts_on_time;
    } else {
        ++c.starts_late;
        ++m.starts_late;
    }
}

void WaitingRoom::drop_start(TaskSlot& t) {
    auto it = starts_.find(t.id.value);
    pools_[t.pool].reservations.remove(it->second.start, t.id);
    starts_.erase(it);
    t.has_start = false;
}

std::optional<std::vector<detail::Edge>> WaitingRoom::stop_awaiting(const std::string& key) {
    auto w = graph_.awaiting.find(key);
    if (w == graph_.awaiting.end()) return std::nullopt;
    std::vector<detail::Edge> edges = std::move(w->second);
    graph_.awaiting.erase(w);
    for (const detail::Edge& e : edges) {
        detail::BlockedTask& b = graph_.blocked.at(e.child.value);
        if (auto k = std::find(b.awaited.begin(), b.awaited.end(), key); k != b.awaited.end()) b.awaited.erase(k);
    }
    return edges;
}

void WaitingRoom::key_taken(const std::string& key, TaskId holder) {
    auto edges = stop_awaiting(key);
    if (!edges) return;
    for (const detail::Edge& e : *edges) graph_.blocked.at(e.child.value).parents.push_back(holder);
    auto& mine = graph_.dependents[holder.value];
    mine.insert(mine.end(), edges->begin(), edges->end());
}

void WaitingRoom::key_ended(const std::string& key, TaskId holder, TaskStatus status) {
    auto edges = stop_awaiting(key);
    if (!edges) return;
    graph_.dependents[holder.value] = std::move(*edges);
    graph_.resolved.emplace_back(holder, status);
}

void WaitingRoom::block(std::uint32_t s, detail::BlockedTask&& waits, Time now) {
    const TaskSlot& t = tasks_[s];
    if (!waits.awaited.empty())
        timers_.push(later(now, pools_[t.pool].config.unknown_dependency.timeout()), s, t.gen, TimerKind::AwaitExpiry);
    graph_.blocked.emplace(t.id.value, std::move(waits));
}

void WaitingRoom::drop_blocked(TaskId id) {
    // Every task leaves Blocked at its admission; most never waited on anything.
    if (graph_.blocked.empty()) return;
    auto b = graph_.blocked.find(id.value);
    if (b == graph_.blocked.end()) return;
    // Edges from live parents are dropped lazily (the parent's list is read
    // once, when it ends); awaited keys may never appear, so leave no trace.
    for (const std::string& key : b->second.awaited) {
        auto w = graph_.awaiting.find(key);
        if (w == graph_.awaiting.end()) continue;
        std::erase_if(w->second, [id](const detail::Edge& e) { return e.child == id; });
        if (w->second.empty()) graph_.awaiting.erase(w);
    }
    graph_.blocked.erase(b);
}

std::optional<Resolved> WaitingRoom::take_resolved() {
    // Tasks told of an end may end too and append here: index, and clear
    // only once every one is told.
    while (told_ < graph_.resolved.size()) {
        const auto [parent, status] = graph_.resolved[told_++];
        auto it = graph_.dependents.find(parent.value);
        if (it == graph_.dependents.end()) continue;
        Resolved r{parent, status, std::move(it->second)};
        graph_.dependents.erase(it);
        return r;
    }
    graph_.resolved.clear();
    told_ = 0;
    return std::nullopt;
}

const std::string* WaitingRoom::first_awaited(TaskId id) const {
    auto b = graph_.blocked.find(id.value);
    if (b == graph_.blocked.end() || b->second.awaited.empty()) return nullptr;
    return &b->second.awaited.front();
}

}  // namespace cronoq::core
