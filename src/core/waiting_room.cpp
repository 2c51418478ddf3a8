#include "waiting_room.hpp"

#include "lifecycle.hpp"

#include <algorithm>
#include <string>

namespace cronoq::core {

namespace {

std::string describe_lateness(Duration late) {
    std::string m = "missed its start by ";
    m.append(std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(late).count()));
    m.append(" ms");
    return m;
}

}  // namespace

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

void WaitingRoom::release(std::uint32_t s, Time now, Lifecycle& life, bool admitting) {
    TaskSlot& t = tasks_[s];
    if (!t.has_start) return life.make_ready(s, now, false, admitting);
    const StartInfo& start = starts_.at(t.id.value);
    if (start.start <= now) return start_due(s, now, life);
    life.leave(t);
    t.status = TaskStatus::Scheduled;
    ++t.gen;
    ++pools_[t.pool].counters.scheduled;
    pools_[t.pool].held_starts.insert(start.start);
    timers_.push(start.start, s, t.gen, TimerKind::Start);
    out_.emit_status(t, now, start.start);
}

void WaitingRoom::start_due(std::uint32_t s, Time now, Lifecycle& life) {
    TaskSlot& t = tasks_[s];
    const StartInfo& start = starts_.at(t.id.value);
    const Duration late = diff_saturated(now, start.start);
    // Paused, it waits in the due starts: resumed() judges it.
    if (late > start.tolerance && start.on_miss != MissPolicy::RunLate && !pools_[t.pool].paused)
        return miss_start(s, now, life);
    life.make_ready(s, now, true);
    // Still within the tolerance: if no slot frees by its end, it is missed.
    // Saturating: a tolerance of Duration::max() never ends, so it arms
    // nothing (its end + 1 ns used to wrap into the past and miss at once).
    if (start.on_miss != MissPolicy::RunLate && late <= start.tolerance) {
        const Time miss_at = later(later(start.start, start.tolerance), Duration(1));
        if (miss_at != never) timers_.push(miss_at, s, t.gen, TimerKind::MissCheck);
    }
}

void WaitingRoom::miss_start(std::uint32_t s, Time now, Lifecycle& life) {
    TaskSlot& t = tasks_[s];
    const StartInfo& start = starts_.at(t.id.value);
    ++pools_[t.pool].counters.starts_late;
    ++pools_[t.pool].metrics.at(now).starts_late;
    std::string message = describe_lateness(diff_saturated(now, start.start));
    life.finish(s, start.on_miss == MissPolicy::Skip ? TaskStatus::Missed : TaskStatus::Failed, std::move(message),
                now);
}

void WaitingRoom::resumed(PoolState& p, Time now, Lifecycle& life) {
    std::vector<std::uint32_t> missed;
    for (std::size_t i = 0; i < p.due_starts.size(); ++i) {
        const detail::QueueRef r = p.due_starts[i];
        if (!tasks_.live(r)) continue;
        const StartInfo& start = starts_.at(tasks_[r.slot].id.value);
        if (start.on_miss == MissPolicy::RunLate) continue;
        if (diff_saturated(now, start.start) > start.tolerance) {
            missed.push_back(r.slot);
        } else {
            const Time miss_at = later(later(start.start, start.tolerance), Duration(1));
            if (miss_at != never) timers_.push(miss_at, r.slot, r.gen, TimerKind::MissCheck);
        }
    }
    // Ending them bumps their generations: their entries go stale.
    for (const std::uint32_t s : missed) miss_start(s, now, life);
}

void WaitingRoom::expire_await(std::uint32_t s, Time now, Lifecycle& life) {
    const TaskSlot& t = tasks_[s];
    auto b = graph_.blocked.find(t.id.value);
    if (b == graph_.blocked.end() || b->second.awaited.empty()) return;
    std::string message = "dependency key \"";
    message.append(b->second.awaited.front());
    message.append("\" was not submitted in time");
    life.finish(s, TaskStatus::Skipped, std::move(message), now);
}

void WaitingRoom::resolve_dependents(Time now, Lifecycle& life) {
    // finish() appends while this runs: index, never hold a reference.
    for (std::size_t i = 0; i < graph_.resolved.size(); ++i) {
        const auto [parent, status] = graph_.resolved[i];
        auto it = graph_.dependents.find(parent.value);
        if (it == graph_.dependents.end()) continue;
        const std::vector<detail::Edge> edges = std::move(it->second);
        graph_.dependents.erase(it);
        for (const detail::Edge& e : edges) {
            const auto child = tasks_.live_slot(e.child);
            if (!child || tasks_[*child].status != TaskStatus::Blocked) continue;  // ended meanwhile
            if (!dep_met(e.kind, status)) {
                std::string message = "dependency " + tasks_.describe(parent);
                message.append(" ended ");
                message.append(to_string(status));
                life.finish(*child, TaskStatus::Skipped, std::move(message), now);
                continue;
            }
            if (--graph_.blocked.at(e.child.value).unmet == 0) release(*child, now, life);
        }
    }
    graph_.resolved.clear();
}

}  // namespace cronoq::core
