#include "dispatcher.hpp"

#include <algorithm>

namespace cronoq::core {

double Dispatcher::urgency(const TaskExtras& e, Time now) const {
    const UrgencyConfig& u = urgency_;
    const double until = to_seconds(diff_saturated(e.latest_start, now));
    // The latest start is the deadline less the expected duration, so
    // their difference gives that duration back without another field.
    const double expected = to_seconds(diff_saturated(e.deadline, e.latest_start));
    const double window = std::max(to_seconds(u.window), u.window_factor * expected);
    if (until > window) return 0.0;
    if (until >= 0) return window > 0 ? u.max * (1.0 - until / window) : u.max;
    return u.max + std::min(u.overdue_rate * -until, u.overdue_cap);
}

// A task may use a free slot if, after it, enough stay free for the starts
// that fall within its expected duration (and within `max_hold`). A head
// that does not fit is passed over for the other classes' heads, never
// scanned past: O(classes) per decision.
void Dispatcher::dispatch(PoolState& p, Time now) {
    p.dirty = false;
    if (life_.handing_over()) return;  // what is queued stays for the next leader
    // The lambdas below run for every queue head compared: they capture
    // the table itself, not `this`, to spare a load per call.
    const TaskTable& tasks = tasks_;
    const auto live = [&tasks](detail::QueueRef r) { return tasks.live(r); };
    bool passed_over = false;  // a better task was parked on a resource
    // No task ready: what the queues still hold is stale (dropped by a later
    // pop). The dispatch after a completion in an idle pool ends here,
    // without a look at every class's heads.
    while (p.can_dispatch()) {
        std::optional<std::uint32_t> s;
        bool took_best = true;  // a due start is where it must be
        bool outside_fair_order = true;  // a due start pays its key too
        while (!s && !p.due_starts.empty()) {
            if (live(p.due_starts.front())) s = p.due_starts.front().slot;
            p.due_starts.pop_front();
        }
        if (!s) {
            const std::size_t free = p.capacity - p.counters.running;
            unsigned classes = 0;  // those with ready tasks: most pools use one or two
            for (std::size_t c = 0; c < priority_count; ++c)
                if (p.counters.ready_by_class[c] > 0) classes |= 1u << c;
            s = p.queue.pop_best(live, [this, &tasks, now](std::uint32_t slot) { return rank(tasks, slot, now); },
                                 [this, &tasks, &p, now, free](std::uint32_t slot) {
                                     if (p.held_starts.empty()) return true;
                                     const Duration d =
                                         std::min(life_.expected_duration(tasks[slot]), p.config.max_hold);
                                     return p.held_between(now, later(now, d), free) < free;
                                 },
                                 took_best, classes);
            outside_fair_order = p.queue.took_outside();
        }
        if (!s) break;
        // A key at its cap: the task waits for it (only one that won on
        // score gets here; its key's others are parked in the fair order).
        if (p.fair.capped() && p.fair.at_cap(tasks[*s].fair_key, p.counters.running)) {
            p.fair.park(tasks[*s].fair_key, {*s, tasks[*s].gen});
            passed_over = true;
            continue;
        }
        // In a remote pool, a worker must take it: a free slot (there is
        // one, since the capacity is the slots granted), its labels, not
        // one that nacked it. Else it waits parked, as for a resource.
        WorkerId worker{};
        if (p.config.remote && !(worker = workers_.pick(*s))) {
            paid_when_parked(*s, outside_fair_order);
            workers_.park(*s);
            passed_over = true;
            continue;
        }
        if (tasks[*s].has_needs && !resources_.acquire(*s, now)) {
            paid_when_parked(*s, outside_fair_order);
            passed_over = true;
            continue;  // parked: try the next
        }
        // Once per dispatch: a task the fair order took before it parked
        // comes back outside it, and its key has paid already.
        if (outside_fair_order && !tasks[*s].fair_paid) p.queue.charge(tasks[*s].priority, tasks[*s].fair_key);
        tasks_[*s].fair_paid = false;
        life_.start_attempt(*s, now, worker, took_best && !passed_over);
        // The head behind the one taken was queued long ago: with a
        // large backlog its slot is out of cache, and the next decision
        // reads it. Start loading it now.
        p.queue.for_each_head([&tasks](std::uint32_t slot) { tasks.prefetch(slot); });
    }
}

}  // namespace cronoq::core
