#include "resource_gate.hpp"

namespace cronoq::core {

namespace {

std::vector<detail::ResourceRequest> requests_of(const TaskSpec& spec) {
    std::vector<detail::ResourceRequest> out;
    out.reserve(spec.resources.size());
    for (const ResourceUse& use : spec.resources) out.push_back({use.name, use.amount});
    return out;
}

}  // namespace

ResourceGate::ResourceGate(const std::vector<Resource>& resources, TaskTable& tasks, std::vector<PoolState>& pools,
                           TimerHeap& timers)
    : tasks_(tasks), pools_(pools), timers_(timers) {
    for (const Resource& r : resources) registry_.add(r, Time{});  // buckets start full
    parked_.resize(registry_.size());
    refill_at_.assign(registry_.size(), never);
}

std::optional<std::string> ResourceGate::set_rate(std::string_view bucket, double rate_per_s, Time now) {
    const auto id = registry_.find(bucket);
    if (!id) return "unknown resource \"" + std::string(bucket) + "\"";
    auto problem = registry_.set_rate(*id, rate_per_s, now);
    if (!problem) unpark(*id, now);
    return problem;
}

std::optional<SubmitError> ResourceGate::check_needs(const TaskSpec& spec, std::string& why) const {
    auto resolved = registry_.resolve(requests_of(spec));
    if (resolved) return std::nullopt;
    why = resolved.message();
    return resolved.error();
}

void ResourceGate::add_needs(TaskSlot& t, const TaskSpec& spec) {
    std::vector<detail::Need> n = std::move(registry_.resolve(requests_of(spec))).value();  // checked
    if (n.empty()) return;
    needs_.emplace(t.id.value, std::move(n));
    t.has_needs = true;
}

bool ResourceGate::acquire(std::uint32_t s, Time now) {
    TaskSlot& t = tasks_[s];
    const detail::Acquisition got = registry_.try_acquire_all(needs_.at(t.id.value), now);
    if (got) {
        t.holds_resources = true;
        return true;
    }
    parked_[got.short_of][index_of(t.priority)].push_back({s, t.gen});
    parked_tasks_ = true;
    // A bucket refills by itself: wake up when it will have enough. A
    // semaphore's units come back with a release (or a rate change for a
    // bucket at rate 0), which unparks.
    if (got.retry_at && *got.retry_at < refill_at_[got.short_of]) arm_refill(got.short_of, *got.retry_at);
    return false;
}

void ResourceGate::release(TaskSlot& t, Time now) {
    t.holds_resources = false;
    const std::vector<detail::Need>& n = needs_.at(t.id.value);
    registry_.release_all(n);
    for (const detail::Need& need : n)
        if (registry_.kind(need.resource) == Resource::Kind::Semaphore) unpark(need.resource, now);
}

std::uint32_t ResourceGate::need_of(const TaskSlot& t, detail::ResourceId r) const {
    for (const detail::Need& n : needs_.at(t.id.value))
        if (n.resource == r) return n.amount;
    return 0;
}

void ResourceGate::unpark(detail::ResourceId r, Time now) {
    const std::uint32_t available = registry_.available(r, now);
    std::uint32_t budget = available;
    std::optional<std::uint32_t> waiting;  // the need of the first task left parked
    for (auto& queue : parked_[r]) {  // best class first
        while (!queue.empty() && !waiting) {
            const detail::QueueRef ref = queue.front();
            const TaskSlot& t = tasks_[ref.slot];
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
            pools_[t.pool].requeue(t, t.has_deadline ? tasks_.extras(t).latest_start : Time{}, ref);
        }
    }
    // Tokens promised to the waiters sent back are not there for the next.
    if (waiting && registry_.kind(r) == Resource::Kind::TokenBucket)
        if (auto at = registry_.next_available(r, *waiting + (available - budget), now); at && *at < refill_at_[r])
            arm_refill(r, *at);
}

bool ResourceGate::return_parked(Time now) {
    bool any_parked = false, returned = false;
    for (detail::ResourceId r = 0; r < parked_.size(); ++r) {
        bool live = false;
        for (auto& queue : parked_[r]) {
            while (!queue.empty() && !tasks_.live(queue.front())) queue.pop_front();
            live = live || !queue.empty();
        }
        if (!live) {
            refill_at_[r] = never;  // its timer, if any, is dead
            continue;
        }
        any_parked = true;
        // A bucket's wakeup is for its current first waiter (an earlier
        // one may have left, with a larger need).
        if (registry_.kind(r) == Resource::Kind::TokenBucket) {
            std::uint32_t first = 0;
            for (const auto& queue : parked_[r])
                if (!queue.empty()) {
                    first = need_of(tasks_[queue.front().slot], r);
                    break;
                }
            if (auto at = registry_.next_available(r, first, now); at && *at > now && *at < refill_at_[r])
                arm_refill(r, *at);
        }
        if (registry_.available(r, now) == 0) continue;
        const std::size_t before = parked_count(r);
        unpark(r, now);
        returned = returned || parked_count(r) < before;
    }
    parked_tasks_ = any_parked;
    return returned;
}

std::size_t ResourceGate::parked_count(detail::ResourceId r) const {
    std::size_t n = 0;
    for (const auto& queue : parked_[r]) n += queue.size();
    return n;
}

}  // namespace cronoq::core
