#include "worker_roster.hpp"

#include <algorithm>
#include <limits>

namespace cronoq::core {

WorkerId WorkerRoster::connect(PoolId pool, std::size_t slots, Labels labels, Time now) {
    std::sort(labels.begin(), labels.end());
    labels.erase(std::unique(labels.begin(), labels.end(),
                             [](const auto& a, const auto& b) { return a.first == b.first; }),
                 labels.end());
    detail::RemotePool& rp = remote_pools_[pool];
    const std::size_t cap = pools_[pool].config.max_workers;
    const std::size_t room = cap > 0 ? cap - std::min(cap, rp.granted) : std::numeric_limits<std::size_t>::max();
    const WorkerId id{detail::next_worker_id.fetch_add(1, std::memory_order_relaxed)};
    detail::RemoteWorker& w = workers_[id.value];
    w.id = id;
    w.pool = pool;
    w.granted = std::min(slots, room);
    w.labels = std::move(labels);
    rp.workers.push_back(id);
    rp.granted += w.granted;
    update_capacity(pool, now);
    unpark_for(w);
    return id;
}

std::optional<std::size_t> WorkerRoster::set_slots(WorkerId worker, std::size_t slots, Time now) {
    auto it = workers_.find(worker.value);
    if (it == workers_.end()) return std::nullopt;
    detail::RemoteWorker& w = it->second;
    detail::RemotePool& rp = remote_pools_[w.pool];
    const std::size_t others = rp.granted - w.granted;
    const std::size_t cap = pools_[w.pool].config.max_workers;
    const std::size_t room = cap > 0 ? cap - std::min(cap, others) : std::numeric_limits<std::size_t>::max();
    w.granted = std::min(slots, room);
    rp.granted = others + w.granted;
    update_capacity(w.pool, now);
    unpark_for(w);
    return w.granted;
}

std::optional<WorkerRoster::Leaving> WorkerRoster::begin_disconnect(WorkerId worker) {
    auto it = workers_.find(worker.value);
    if (it == workers_.end()) return std::nullopt;
    detail::RemoteWorker& w = it->second;
    remote_pools_[w.pool].granted -= w.granted;
    w.granted = 0;
    return Leaving{w.pool, w.leases};
}

void WorkerRoster::remove(WorkerId worker, Time now) {
    auto it = workers_.find(worker.value);
    const PoolId pool = it->second.pool;
    std::erase(remote_pools_[pool].workers, worker);
    workers_.erase(it);
    update_capacity(pool, now);
}

// A nacked attempt waits only while some connected worker could take it;
// once none can, it fails as the nack would have had none been there.
std::vector<std::uint32_t> WorkerRoster::stranded_after_nack(PoolId pool) const {
    std::vector<std::uint32_t> stranded;
    for (const auto& [id, rt] : remote_tasks_) {
        if (rt.nacked_by.empty()) continue;
        const auto s = tasks_.live_slot(TaskId{id});
        if (s && tasks_[*s].pool == pool && tasks_[*s].status == TaskStatus::Ready && !could_take(*s))
            stranded.push_back(*s);
    }
    std::sort(stranded.begin(), stranded.end(), [this](std::uint32_t a, std::uint32_t b) {
        return tasks_[a].id < tasks_[b].id;  // map order is not deterministic across builds
    });
    return stranded;
}

std::size_t WorkerRoster::slots_of(WorkerId worker) const {
    auto it = workers_.find(worker.value);
    return it == workers_.end() ? 0 : it->second.granted;
}

std::size_t WorkerRoster::leases_of(WorkerId worker) const {
    auto it = workers_.find(worker.value);
    return it == workers_.end() ? 0 : it->second.leases.size();
}

void WorkerRoster::set_labels(TaskSlot& t, const Labels& labels) {
    std::vector<detail::LabelGroup>& groups = remote_pools_[t.pool].groups;
    std::size_t g = 0;
    while (g < groups.size() && groups[g].labels != labels) ++g;
    if (g == groups.size()) groups.push_back(detail::LabelGroup{labels, {}});
    remote_of(t).group = static_cast<std::uint32_t>(g);
}

bool WorkerRoster::may_take(const detail::RemoteWorker& w, const TaskSlot& t) const {
    if (!t.has_remote) return true;  // no labels, never nacked
    const detail::RemoteTask& rt = remote_tasks_.at(t.id.value);
    return !rt.excludes(w.id) && detail::labels_cover(w.labels, remote_pools_[t.pool].groups[rt.group].labels);
}

// The least specialised worker first, so that workers with labels stay
// free for the tasks that need them; then the one with the most free slots
// (the load spreads); then the first connected. Deterministic.
WorkerId WorkerRoster::pick(std::uint32_t s) const {
    const TaskSlot& t = tasks_[s];
    const detail::RemoteWorker* best = nullptr;
    for (WorkerId id : remote_pools_[t.pool].workers) {
        const detail::RemoteWorker& w = workers_.at(id.value);
        if (w.free() == 0 || !may_take(w, t)) continue;
        if (!best || w.labels.size() < best->labels.size() ||
            (w.labels.size() == best->labels.size() && w.free() > best->free()))
            best = &w;
    }
    return best ? best->id : WorkerId{};
}

bool WorkerRoster::could_take(std::uint32_t s) const {
    const TaskSlot& t = tasks_[s];
    for (WorkerId id : remote_pools_[t.pool].workers)
        if (may_take(workers_.at(id.value), t)) return true;
    return false;
}

void WorkerRoster::park(std::uint32_t s) {
    const TaskSlot& t = tasks_[s];
    detail::RemotePool& rp = remote_pools_[t.pool];
    const detail::RemoteTask* rt = t.has_remote ? &remote_tasks_.at(t.id.value) : nullptr;
    if (rt && !rt->nacked_by.empty())
        rp.after_nack.push_back({s, t.gen});
    else
        rp.groups[rt ? rt->group : 0].parked[index_of(t.priority)].push_back({s, t.gen});
}

void WorkerRoster::requeue(detail::QueueRef r) {
    const TaskSlot& t = tasks_[r.slot];
    pools_[t.pool].requeue(t, t.has_deadline ? tasks_.extras(t).latest_start : Time{}, r);
}

// At most as many tasks as `w` has free slots go back: the dispatch that
// follows gives the slots to the best-ranked tasks, and a returned task
// that loses parks again. Tasks after a nack first (they already waited a
// whole attempt), then by class, and within a class the group whose first
// task has waited longest.
void WorkerRoster::unpark_for(detail::RemoteWorker& w) {
    std::size_t budget = w.free();
    if (budget == 0) return;
    detail::RemotePool& rp = remote_pools_[w.pool];
    std::erase_if(rp.after_nack, [&](detail::QueueRef r) {
        if (!tasks_.live(r)) return true;
        if (budget == 0 || !may_take(w, tasks_[r.slot])) return false;
        requeue(r);
        --budget;
        return true;
    });
    for (std::size_t cls = 0; cls < priority_count && budget > 0; ++cls) {
        while (budget > 0) {
            detail::Ring<detail::QueueRef>* from = nullptr;
            Time since{};
            for (detail::LabelGroup& g : rp.groups) {
                if (!detail::labels_cover(w.labels, g.labels)) continue;
                auto& ring = g.parked[cls];
                while (!ring.empty() && !tasks_.live(ring.front())) ring.pop_front();
                if (ring.empty()) continue;
                const Time ready = tasks_[ring.front().slot].ready_since;
                if (!from || ready < since) {
                    from = &ring;
                    since = ready;
                }
            }
            if (!from) break;
            requeue(from->front());
            from->pop_front();
            --budget;
        }
    }
}

void WorkerRoster::lease_ended(WorkerId id, LeaseId lease) {
    auto it = workers_.find(id.value);
    if (it == workers_.end()) return;
    std::vector<std::uint64_t>& leases = it->second.leases;
    if (auto l = std::find(leases.begin(), leases.end(), lease.value); l != leases.end()) leases.erase(l);
    unpark_for(it->second);
}

void WorkerRoster::silent(WorkerId id) {
    if (auto it = workers_.find(id.value); it != workers_.end()) it->second.silent = true;
}

void WorkerRoster::heard(WorkerId id) {
    auto it = workers_.find(id.value);
    if (it == workers_.end() || !it->second.silent) return;
    it->second.silent = false;
    unpark_for(it->second);  // its free slots take parked tasks again
}

void WorkerRoster::update_capacity(PoolId pool, Time now) {
    PoolState& p = pools_[pool];
    p.metrics.accrue(now, p.counters.running, p.capacity);
    p.capacity = remote_pools_[pool].granted;
    p.counters.capacity = p.capacity;
    p.dirty = true;
}

}  // namespace cronoq::core
