// Remote workers in the engine (docs/remote.md). A remote pool's capacity is the
// sum of the slots granted to its connected workers; each dispatch picks
// the worker that takes the lease. A task that no worker can take now
// (labels, slots, nacks) is parked out of the queue, as a task short of a
// resource is (engine_resources.cpp), and goes back to the queue when a
// worker that could take it has a free slot: a connection, more slots, or
// one of its leases ending.
#include "engine_state.hpp"

#include <limits>

namespace cronoq::core {

detail::RemoteTask& Engine::State::remote_of(TaskSlot& t) {
    t.has_remote = true;
    return remote_tasks[t.id.value];
}

void Engine::State::set_labels(TaskSlot& t, const Labels& labels) {
    std::vector<detail::LabelGroup>& groups = remote_pools[t.pool].groups;
    std::size_t g = 0;
    while (g < groups.size() && groups[g].labels != labels) ++g;
    if (g == groups.size()) groups.push_back(detail::LabelGroup{labels, {}});
    remote_of(t).group = static_cast<std::uint32_t>(g);
}

bool Engine::State::may_take(const detail::RemoteWorker& w, const TaskSlot& t) const {
    if (!t.has_remote) return true;  // no labels, never nacked
    const detail::RemoteTask& rt = remote_tasks.at(t.id.value);
    return !rt.excludes(w.id) && detail::labels_cover(w.labels, remote_pools[t.pool].groups[rt.group].labels);
}

// The least specialised worker first, so that workers with labels stay
// free for the tasks that need them; then the one with the most free slots
// (the load spreads); then the first connected. Deterministic.
WorkerId Engine::State::pick_worker(std::uint32_t s) const {
    const TaskSlot& t = slots[s];
    const detail::RemoteWorker* best = nullptr;
    for (WorkerId id : remote_pools[t.pool].workers) {
        const detail::RemoteWorker& w = workers.at(id.value);
        if (w.free() == 0 || !may_take(w, t)) continue;
        if (!best || w.labels.size() < best->labels.size() ||
            (w.labels.size() == best->labels.size() && w.free() > best->free()))
            best = &w;
    }
    return best ? best->id : WorkerId{};
}

bool Engine::State::worker_could_take(std::uint32_t s) const {
    const TaskSlot& t = slots[s];
    for (WorkerId id : remote_pools[t.pool].workers)
        if (may_take(workers.at(id.value), t)) return true;
    return false;
}

void Engine::State::park_for_worker(std::uint32_t s) {
    const TaskSlot& t = slots[s];
    detail::RemotePool& rp = remote_pools[t.pool];
    const detail::RemoteTask* rt = t.has_remote ? &remote_tasks.at(t.id.value) : nullptr;
    if (rt && !rt->nacked_by.empty())
        rp.after_nack.push_back({s, t.gen});
    else
        rp.groups[rt ? rt->group : 0].parked[index_of(t.priority)].push_back({s, t.gen});
}

// At most as many tasks as `w` has free slots go back: the dispatch that
// follows gives the slots to the best-ranked tasks, and a returned task
// that loses parks again. Tasks after a nack first (they already waited a
// whole attempt), then by class, and within a class the group whose first
// task has waited longest.
void Engine::State::unpark_for_worker(detail::RemoteWorker& w, Time now) {
    (void)now;
    std::size_t budget = w.free();
    if (budget == 0) return;
    detail::RemotePool& rp = remote_pools[w.pool];
    const auto live = [this](detail::QueueRef r) { return slots[r.slot].gen == r.gen; };
    std::erase_if(rp.after_nack, [&](detail::QueueRef r) {
        if (!live(r)) return true;
        if (budget == 0 || !may_take(w, slots[r.slot])) return false;
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
                while (!ring.empty() && !live(ring.front())) ring.pop_front();
                if (ring.empty()) continue;
                const Time ready = slots[ring.front().slot].ready_since;
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

void Engine::State::worker_lease_ended(WorkerId id, LeaseId lease, Time now) {
    auto it = workers.find(id.value);
    if (it == workers.end()) return;
    std::vector<std::uint64_t>& leases = it->second.leases;
    if (auto l = std::find(leases.begin(), leases.end(), lease.value); l != leases.end()) leases.erase(l);
    unpark_for_worker(it->second, now);
}

void Engine::State::worker_silent(WorkerId id) {
    if (auto it = workers.find(id.value); it != workers.end()) it->second.silent = true;
}

void Engine::State::worker_heard(WorkerId id, Time now) {
    auto it = workers.find(id.value);
    if (it == workers.end() || !it->second.silent) return;
    it->second.silent = false;
    unpark_for_worker(it->second, now);  // its free slots take parked tasks again
}

void Engine::State::set_remote_capacity(PoolId pool, Time now) {
    PoolState& p = pools[pool];
    p.metrics.accrue(now, p.counters.running, p.capacity);
    p.capacity = remote_pools[pool].granted;
    p.counters.capacity = p.capacity;
    p.dirty = true;
}

// A nacked attempt waits only while some connected worker could take it;
// once none can, it fails as the nack would have had none been there.
void Engine::State::recheck_after_nack(PoolId pool, Time now) {
    std::vector<std::uint32_t> stranded;
    for (const auto& [id, rt] : remote_tasks) {
        if (rt.nacked_by.empty()) continue;
        const auto s = live_slot(TaskId{id});
        if (s && slots[*s].pool == pool && slots[*s].status == TaskStatus::Ready && !worker_could_take(*s))
            stranded.push_back(*s);
    }
    std::sort(stranded.begin(), stranded.end(), [this](std::uint32_t a, std::uint32_t b) {
        return slots[a].id < slots[b].id;  // map order is not deterministic across builds
    });
    for (std::uint32_t s : stranded) {
        TaskSlot& t = slots[s];
        leave(t);
        // As at the nack: the attempt counts after all, and fails from
        // Running (whose count leave() does not keep).
        t.status = TaskStatus::Running;
        ++t.attempt;
        fail_retryable(s, "nacked, and no other connected worker can take it", std::nullopt, now);
    }
}

// ---- public API ------------------------------------------------------------------

WorkerId Engine::connect_worker(PoolId pool, std::size_t slots, Labels labels, Time now) {
    State& s = *s_;
    if (pool >= s.pools.size() || !s.pools[pool].config.remote || s.shutting_down) return {};
    s.run_due_timers(now);
    std::sort(labels.begin(), labels.end());
    labels.erase(std::unique(labels.begin(), labels.end(),
                             [](const auto& a, const auto& b) { return a.first == b.first; }),
                 labels.end());
    detail::RemotePool& rp = s.remote_pools[pool];
    const std::size_t cap = s.pools[pool].config.max_workers;
    const std::size_t room = cap > 0 ? cap - std::min(cap, rp.granted) : std::numeric_limits<std::size_t>::max();
    const WorkerId id{detail::next_worker_id.fetch_add(1, std::memory_order_relaxed)};
    detail::RemoteWorker& w = s.workers[id.value];
    w.id = id;
    w.pool = pool;
    w.granted = std::min(slots, room);
    w.labels = std::move(labels);
    rp.workers.push_back(id);
    rp.granted += w.granted;
    s.set_remote_capacity(pool, now);
    s.unpark_for_worker(w, now);
    s.settle(now);
    return id;
}

std::size_t Engine::set_worker_slots(WorkerId worker, std::size_t slots, Time now) {
    State& s = *s_;
    s.run_due_timers(now);
    auto it = s.workers.find(worker.value);
    if (it == s.workers.end()) {
        s.settle(now);
        return 0;
    }
    detail::RemoteWorker& w = it->second;
    detail::RemotePool& rp = s.remote_pools[w.pool];
    const std::size_t others = rp.granted - w.granted;
    const std::size_t cap = s.pools[w.pool].config.max_workers;
    const std::size_t room = cap > 0 ? cap - std::min(cap, others) : std::numeric_limits<std::size_t>::max();
    w.granted = std::min(slots, room);
    rp.granted = others + w.granted;
    s.set_remote_capacity(w.pool, now);
    s.unpark_for_worker(w, now);
    s.settle(now);
    return w.granted;
}

void Engine::disconnect_worker(WorkerId worker, Time now) {
    State& s = *s_;
    s.run_due_timers(now);
    auto it = s.workers.find(worker.value);
    if (it == s.workers.end()) return s.settle(now);
    detail::RemoteWorker& w = it->second;
    const PoolId pool = w.pool;
    detail::RemotePool& rp = s.remote_pools[pool];
    // No slot of its own any more: ending its leases returns nothing to it.
    rp.granted -= w.granted;
    w.granted = 0;
    const std::vector<std::uint64_t> leases = w.leases;
    for (std::uint64_t lease : leases)
        if (const std::uint32_t* slot = s.by_lease.find(lease)) s.abandon_attempt(*slot, AbortReason::WorkerLost, now);
    std::erase(rp.workers, worker);
    s.workers.erase(it);
    s.set_remote_capacity(pool, now);
    s.recheck_after_nack(pool, now);
    s.settle(now);
}

bool Engine::nack(LeaseId lease, std::string_view reason, Time now, WorkerId from) {
    State& s = *s_;
    const auto found = s.live_lease(lease, now, from);
    if (!found) return false;
    const std::uint32_t slot = *found;
    TaskSlot& t = s.slots[slot];
    const WorkerId by = s.attempts[t.run].worker;
    if (!by) {  // a local attempt cannot be given back
        ++s.late;
        s.settle(now);
        return false;
    }
    s.end_lease(t, now);
    s.remote_of(t).nacked_by.push_back(by);
    if (s.worker_could_take(slot)) {
        --t.attempt;  // given back: it never ran
        s.make_ready(slot, now);
    } else {
        std::string message = "nacked";
        if (!reason.empty()) message.append(": ").append(reason);
        message.append("; no other connected worker can take it");
        s.fail_retryable(slot, std::move(message), std::nullopt, now);
    }
    s.settle(now);
    return true;
}

std::size_t Engine::worker_slots(WorkerId worker) const {
    auto it = s_->workers.find(worker.value);
    return it == s_->workers.end() ? 0 : it->second.granted;
}

std::size_t Engine::worker_leases(WorkerId worker) const {
    auto it = s_->workers.find(worker.value);
    return it == s_->workers.end() ? 0 : it->second.leases.size();
}

std::size_t Engine::connected_workers(PoolId pool) const {
    return pool < s_->remote_pools.size() ? s_->remote_pools[pool].workers.size() : 0;
}

}  // namespace cronoq::core
