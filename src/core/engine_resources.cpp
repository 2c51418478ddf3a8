// Shared resources in the engine (docs/guide/resources-and-bounds.md): all-or-nothing acquisition at
// dispatch; a task short of a resource is parked on it, out of its queue,
// so the tasks behind it go on; releases and refills bring back as many
// parked tasks as the resource can serve.
#include "engine_state.hpp"

namespace cronoq::core {

bool Engine::State::acquire(std::uint32_t s, Time now) {
    TaskSlot& t = slots[s];
    const detail::Acquisition got = registry.try_acquire_all(needs.at(t.id.value), now);
    if (got) {
        t.holds_resources = true;
        return true;
    }
    parked[got.short_of][index_of(t.priority)].push_back({s, t.gen});
    parked_tasks = true;
    // A bucket refills by itself: wake up when it will have enough. A
    // semaphore's units come back with a release (or a rate change for a
    // bucket at rate 0), which unparks.
    if (got.retry_at && *got.retry_at < refill_at[got.short_of]) {
        refill_at[got.short_of] = *got.retry_at;
        push_timer(*got.retry_at, got.short_of, 0, TimerKind::Refill);
    }
    return false;
}

void Engine::State::release_resources(TaskSlot& t, Time now) {
    t.holds_resources = false;
    const std::vector<detail::Need>& n = needs.at(t.id.value);
    registry.release_all(n);
    for (const detail::Need& need : n)
        if (registry.kind(need.resource) == Resource::Kind::Semaphore) unpark(need.resource, now);
}

std::uint32_t Engine::State::need_of(const TaskSlot& t, detail::ResourceId r) const {
    for (const detail::Need& n : needs.at(t.id.value))
        if (n.resource == r) return n.amount;
    return 0;
}

void Engine::State::unpark(detail::ResourceId r, Time now) {
    const std::uint32_t available = registry.available(r, now);
    std::uint32_t budget = available;
    std::optional<std::uint32_t> waiting;  // the need of the first task left parked
    for (auto& queue : parked[r]) {  // best class first
        while (!queue.empty() && !waiting) {
            const detail::QueueRef ref = queue.front();
            const TaskSlot& t = slots[ref.slot];
            if (t.gen != ref.gen) {  // no longer ready: cancelled, shed, ...
                queue.pop_front();
                continue;
            }
            const std::uint32_t amount = need_of(t, r);
            if (amount > budget) {
                waiting = amount;
                break;
            }
            budget -= amount;
            queue.pop_front();
            requeue(ref);
        }
    }
    // Tokens promised to the waiters sent back are not there for the next.
    if (waiting && registry.kind(r) == Resource::Kind::TokenBucket)
        if (auto at = registry.next_available(r, *waiting + (available - budget), now); at && *at < refill_at[r]) {
            refill_at[r] = *at;
            push_timer(*at, r, 0, TimerKind::Refill);
        }
}

void Engine::State::revisit_parked(Time now) {
    // Each round hands units to waiters or stops. Within one call units only
    // go (nothing is released), so rounds end; the cap is only a guard.
    for (int round = 0; round < 1000; ++round) {
        bool any_parked = false, returned = false;
        for (detail::ResourceId r = 0; r < parked.size(); ++r) {
            bool live = false;
            for (auto& queue : parked[r]) {
                while (!queue.empty() && slots[queue.front().slot].gen != queue.front().gen) queue.pop_front();
                live = live || !queue.empty();
            }
            if (!live) {
                refill_at[r] = never;  // its timer, if any, is dead
                continue;
            }
            any_parked = true;
            // A bucket's wakeup is for its current first waiter (an earlier
            // one may have left, with a larger need).
            if (registry.kind(r) == Resource::Kind::TokenBucket) {
                std::uint32_t first = 0;
                for (const auto& queue : parked[r])
                    if (!queue.empty()) {
                        first = need_of(slots[queue.front().slot], r);
                        break;
                    }
                if (auto at = registry.next_available(r, first, now); at && *at > now && *at < refill_at[r]) {
                    refill_at[r] = *at;
                    push_timer(*at, r, 0, TimerKind::Refill);
                }
            }
            if (registry.available(r, now) == 0) continue;
            const std::size_t before = parked_count(r);
            unpark(r, now);
            returned = returned || parked_count(r) < before;
        }
        parked_tasks = any_parked;
        if (!returned) return;
        for (PoolState& p : pools)
            if (p.dirty) dispatch(p, now);
    }
}

// Back in its queue with its ready time: aging and order kept. Shared by
// every kind of parking (resources here, remote workers).
void Engine::State::requeue(detail::QueueRef ref) {
    const TaskSlot& t = slots[ref.slot];
    PoolState& p = pools[t.pool];
    if (t.has_deadline)
        p.queue.push_deadline(t.priority, extras[t.extras].latest_start, t.id.value, ref);
    else
        p.queue.push_returned(t.priority, t.ready_since, t.id.value, ref);
    p.dirty = true;
}

std::size_t Engine::State::parked_count(detail::ResourceId r) const {
    std::size_t n = 0;
    for (const auto& queue : parked[r]) n += queue.size();
    return n;
}

}  // namespace cronoq::core
