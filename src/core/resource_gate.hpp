#pragma once
// Shared resources in the engine (docs/guide/resources-and-bounds.md):
// all-or-nothing acquisition at dispatch; a task short of a resource is
// parked on it, out of its queue, so the tasks behind it go on; releases
// and refills bring back as many parked tasks as the resource can serve.
// Owns the registry, each task's needs, the parked tasks and the armed
// refill wakeups.
#include "engine_types.hpp"
#include "resource_registry.hpp"
#include "ring.hpp"
#include "task_table.hpp"
#include "timer_heap.hpp"

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cronoq::core {

class ResourceGate {
public:
    /// Reads tasks, requeues returned ones into the pools' queues and arms
    /// Refill timers; all three outlive it.
    ResourceGate(const std::vector<Resource>& resources, TaskTable& tasks, std::vector<PoolState>& pools,
                 TimerHeap& timers);

    const detail::ResourceRegistry& registry() const { return registry_; }
    /// Errors as Engine::set_rate; parked tasks re-park at the new rate.
    std::optional<std::string> set_rate(std::string_view bucket, double rate_per_s, Time now);

    /// Whether the registry can serve the resources `spec` asks for (some).
    std::optional<SubmitError> check_needs(const TaskSpec& spec, std::string& why) const;
    /// Records what a new task needs (its spec, which asks for resources,
    /// was checked); sets has_needs.
    void add_needs(TaskSlot& t, const TaskSpec& spec);
    /// Drops an ended task's needs.
    void drop_needs(TaskSlot& t) {
        needs_.erase(t.id.value);
        t.has_needs = false;
    }

    /// Takes every resource the task needs, or parks it on the first short one.
    bool acquire(std::uint32_t s, Time now);
    /// The running attempt of `t` ends: its units go back.
    void release(TaskSlot& t, Time now);
    /// A Refill timer for `r` fired.
    void refilled(detail::ResourceId r, Time now) {
        refill_at_[r] = never;
        unpark(r, now);
    }
    bool refill_live(detail::ResourceId r, Time at) const { return refill_at_[r] == at; }

    /// Some resource may have a parked task.
    bool may_have_parked() const { return parked_tasks_; }
    /// After dispatch: units that a returned task did not take (it parked
    /// on another resource, its pool had no slot, it was cancelled) go to
    /// the next waiters; refill timers with no waiter left are dropped.
    /// True when some task went back to its queue: the caller dispatches
    /// and calls again.
    bool return_parked(Time now);

private:
    /// Moves parked tasks back to their queues, as many as `r` can serve now.
    void unpark(detail::ResourceId r, Time now);
    std::uint32_t need_of(const TaskSlot& t, detail::ResourceId r) const;
    std::size_t parked_count(detail::ResourceId r) const;
    void arm_refill(detail::ResourceId r, Time at) {
        refill_at_[r] = at;
        timers_.push(at, r, 0, TimerKind::Refill);
    }

    detail::ResourceRegistry registry_;
    // Ready tasks short of a resource, per resource and class, in order.
    std::vector<std::array<detail::Ring<detail::QueueRef>, priority_count>> parked_;
    std::vector<Time> refill_at_;  // per resource: the armed Refill timer, or never
    std::unordered_map<std::uint64_t, std::vector<detail::Need>> needs_;  // by task id
    bool parked_tasks_ = false;
    TaskTable& tasks_;
    std::vector<PoolState>& pools_;
    TimerHeap& timers_;
};

}  // namespace cronoq::core
