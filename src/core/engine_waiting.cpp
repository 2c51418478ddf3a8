// Tasks that wait before they are ready: on dependencies (Blocked, docs/guide/dependencies-and-keys.md)
// and for a fixed start (Scheduled, docs/guide/time-and-cron.md).
#include "engine_state.hpp"

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

void Engine::State::release(std::uint32_t s, Time now, bool admitting) {
    TaskSlot& t = slots[s];
    if (!t.has_start) return make_ready(s, now, false, admitting);
    const StartInfo& start = starts.at(t.id.value);
    if (start.start <= now) return start_due(s, now);
    leave(t);
    t.status = TaskStatus::Scheduled;
    ++t.gen;
    ++pools[t.pool].counters.scheduled;
    pools[t.pool].held_starts.insert(start.start);
    push_timer(start.start, s, t.gen, TimerKind::Start);
    emit_status(t, now, start.start);
}

void Engine::State::start_due(std::uint32_t s, Time now) {
    TaskSlot& t = slots[s];
    const StartInfo& start = starts.at(t.id.value);
    const Duration late = diff_saturated(now, start.start);
    if (late > start.tolerance && start.on_miss != MissPolicy::RunLate) return miss_start(s, now);
    make_ready(s, now, true);
    // Still within the tolerance: if no slot frees by its end, it is missed.
    // Saturating: a tolerance of Duration::max() never ends, so it arms
    // nothing (its end + 1 ns used to wrap into the past and miss at once).
    if (start.on_miss != MissPolicy::RunLate && late <= start.tolerance) {
        const Time miss_at = later(later(start.start, start.tolerance), Duration(1));
        if (miss_at != never) push_timer(miss_at, s, t.gen, TimerKind::MissCheck);
    }
}

void Engine::State::miss_start(std::uint32_t s, Time now) {
    TaskSlot& t = slots[s];
    const StartInfo& start = starts.at(t.id.value);
    ++pools[t.pool].counters.starts_late;
    ++pools[t.pool].metrics.at(now).starts_late;
    std::string message = describe_lateness(diff_saturated(now, start.start));
    finish(s, start.on_miss == MissPolicy::Skip ? TaskStatus::Missed : TaskStatus::Failed, std::move(message), now);
}

void Engine::State::count_start(const TaskSlot& t, Time now) {
    const StartInfo& start = starts.at(t.id.value);
    PoolCounters& c = pools[t.pool].counters;
    detail::MetricsSlice& m = pools[t.pool].metrics.at(now);
    if (diff_saturated(now, start.start) <= start.tolerance) {
        ++c.starts_on_time;
        ++m.starts_on_time;
    } else {
        ++c.starts_late;
        ++m.starts_late;
    }
}

void Engine::State::drop_start(TaskSlot& t) {
    auto it = starts.find(t.id.value);
    pools[t.pool].reservations.remove(it->second.start, t.id);
    starts.erase(it);
    t.has_start = false;
}

void Engine::State::expire_await(std::uint32_t s, Time now) {
    const TaskSlot& t = slots[s];
    auto b = graph.blocked.find(t.id.value);
    if (b == graph.blocked.end() || b->second.awaited.empty()) return;
    std::string message = "dependency key \"";
    message.append(b->second.awaited.front());
    message.append("\" was not submitted in time");
    finish(s, TaskStatus::Skipped, std::move(message), now);
}

void Engine::State::drop_blocked(TaskId id) {
    auto b = graph.blocked.find(id.value);
    if (b == graph.blocked.end()) return;
    // Edges from live parents are dropped lazily (the parent's list is read
    // once, when it ends); awaited keys may never appear, so leave no trace.
    for (const std::string& key : b->second.awaited) {
        auto w = graph.awaiting.find(key);
        if (w == graph.awaiting.end()) continue;
        std::erase_if(w->second, [id](const detail::Edge& e) { return e.child == id; });
        if (w->second.empty()) graph.awaiting.erase(w);
    }
    graph.blocked.erase(b);
}

void Engine::State::resolve_dependents(Time now) {
    // finish() appends while this runs: index, never hold a reference.
    for (std::size_t i = 0; i < graph.resolved.size(); ++i) {
        const auto [parent, status] = graph.resolved[i];
        auto it = graph.dependents.find(parent.value);
        if (it == graph.dependents.end()) continue;
        const std::vector<detail::Edge> edges = std::move(it->second);
        graph.dependents.erase(it);
        for (const detail::Edge& e : edges) {
            const auto child = live_slot(e.child);
            if (!child || slots[*child].status != TaskStatus::Blocked) continue;  // ended meanwhile
            if (!dep_met(e.kind, status)) {
                std::string message = "dependency " + describe_task(parent);
                message.append(" ended ");
                message.append(to_string(status));
                finish(*child, TaskStatus::Skipped, std::move(message), now);
                continue;
            }
            if (--graph.blocked.at(e.child.value).unmet == 0) release(*child, now);
        }
    }
    graph.resolved.clear();
}

}  // namespace cronoq::core
