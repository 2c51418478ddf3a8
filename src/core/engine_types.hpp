#pragma once
// The engine's private data types: task slots, their side records, timers
// and the state of a pool. The components over them are listed in
// engine_state.hpp.
#include <cronoq/config_error.hpp>
#include <cronoq/core/engine.hpp>

#include "autoscaler.hpp"
#include "fair_share.hpp"
#include "pool_metrics.hpp"
#include "ready_queue.hpp"
#include "reservations.hpp"
#include "ring.hpp"

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace cronoq::core {

inline constexpr Time never = Time::max();
inline constexpr std::uint32_t no_slot = std::numeric_limits<std::uint32_t>::max();

// Ids come from process-wide counters so that they are unique across every
// engine in the process, as the public contract promises.
inline std::atomic<std::uint64_t> next_task_id{1};
inline std::atomic<std::uint64_t> next_lease_id{1};

// Makes `counter` hand out ids at or above `at_least` from now on (never
// lowers it: ids already issued stay unique).
inline void raise_counter(std::atomic<std::uint64_t>& counter, std::uint64_t at_least) {
    std::uint64_t current = counter.load(std::memory_order_relaxed);
    while (current < at_least && !counter.compare_exchange_weak(current, at_least, std::memory_order_relaxed)) {
    }
}


// `now + d` for d >= 0, saturating: a time past the end of the axis is
// `never` (e.g. a timeout of Duration::max() means no timeout) instead of a
// signed overflow that wraps into the past and fires at once.
inline Time later(Time now, Duration d) {
    if (now.time_since_epoch().count() > 0 && d > never - now) return never;
    return now + d;
}

// Exponentially weighted mean run time of a (pool, kind); the first sample
// sets it.
struct RunTimeMean {
    double nanos = 0;
    bool seen = false;
    void add(Duration d) {
        const auto x = static_cast<double>(d.count());
        nanos = seen ? nanos + 0.2 * (x - nanos) : x;
        seen = true;
    }
};

// A task, from its admission until it is forgotten (a terminal task keeps
// its slot while it is retained, so that its end changes nothing in
// `by_task`). Every task has one, so it holds only what every task needs
// and fits one cache line: a backlog of a million queued tasks is mostly
// slots, and a dispatch decision reads the slot of each queue head it
// compares. What only some tasks have lives out of line:
// a running attempt's state and the rare spec fields in the TaskTable
// (`run`, `extras`), the shed lists in the BacklogBounds, a fixed start in
// the WaitingRoom and resource needs
// in the ResourceGate (both by task id). Aligned, so that a
// slot is one line and not the end of one and the start of the next.
struct alignas(64) TaskSlot {
    TaskId id;                 // 0 while the slot is free
    std::uint64_t user = 0;    // TaskSpec::user
    Time ready_since{};        // aging origin; once terminal, when it ended (for retention)
    std::uint32_t gen = 0;     // bumped on every transition: stale queue and timer entries
    PoolId pool = 0;
    KindId kind = 0;
    std::uint32_t attempt = 0;
    // When it was admitted (restored: when it came back), for inspection
    // (Engine::scan): here, where admission writes the line anyway; in an
    // array of its own each admission missed cache on it.
    Time admitted{};
    std::uint32_t extras = no_slot;  // its TaskExtras, if it has any (kept until it is forgotten: the key)
    std::uint32_t run = no_slot;     // its AttemptState while Running
    std::uint32_t fair_key = 0;      // its interned fair key (TaskTable::fair_keys); 0: ""
    TaskStatus status = TaskStatus::Ready;
    Priority priority = Priority::Normal;
    bool has_deadline : 1 = false;     // its extras hold the deadline; a flag here so that ranking the others reads no extras
    bool has_start : 1 = false;        // its StartInfo is in the WaitingRoom until it ends
    bool has_needs : 1 = false;        // its needs are in the ResourceGate until it ends
    bool holds_resources : 1 = false;  // the running attempt holds them
    bool has_remote : 1 = false;       // its labels or nacks are in the WorkerRoster until it ends
    bool fair_paid : 1 = false;        // its key paid for its dispatch when the fair order took it, before it parked
};
static_assert(sizeof(TaskSlot) == 64, "a task slot is one cache line");

// The spec fields most tasks leave unset, kept out of line for the tasks
// that set one: a soft deadline, a duration hint, their own timeout or
// retry policy, an idempotency key. A task without any has none.
struct TaskExtras {
    Time deadline{};
    Time latest_start{};               // deadline less the expected duration, while Ready
    Duration duration_hint{};          // 0: none
    std::optional<Duration> timeout;   // else the pool's default_timeout
    std::optional<RetryPolicy> retry;  // else the pool's policy
    const std::string* key = nullptr;  // the one in TaskTable's keys (nodes are stable)
};

// The attempt of a Running task; released when its lease ends.
struct AttemptState {
    LeaseId lease;
    Time started{};
    Time deadline = never;      // its timeout
    Time lease_expiry = never;  // last heartbeat + lease_ttl
    WorkerId worker{};          // the remote worker holding the lease; 0: local
};

// A fixed-start task's start, kept beside its slot (few tasks have one).
struct StartInfo {
    Time start;
    Duration tolerance;
    MissPolicy on_miss;
};

enum class TimerKind : std::uint8_t {
    Attempt,        // timeout or lease expiry of a running attempt
    RetryDone,      // end of a backoff
    ShutdownGrace,  // end of the shutdown grace
    Start,          // a fixed start is due
    MissCheck,      // a due fixed start not dispatched within its tolerance
    AwaitExpiry,    // an awaited dependency key did not appear in time
    Refill,         // a token bucket has tokens for its parked tasks (slot: the resource)
    Autoscale,      // a pool's autoscaler is due (slot: the pool); settle() evaluates it
    Horizon,        // a reservation enters a pool's reservation_horizon: wake its autoscaler
};

struct Timer {
    Time at;
    std::uint32_t slot;
    std::uint32_t gen;
    TimerKind kind;
    // Min-heap order for std::push_heap.
    friend bool operator<(const Timer& a, const Timer& b) { return a.at > b.at; }
};

struct PoolState {
    explicit PoolState(Duration metrics_window) : metrics(metrics_window) {}
    PoolConfig config;
    detail::PoolMetrics metrics;
    std::size_t capacity = 0;
    PoolCounters counters;
    detail::ReadyQueue queue;
    detail::FairShare fair;  // its fair keys' counts, weights and caps
    detail::Ring<detail::QueueRef> due_starts;  // fixed starts that are due: dispatched first
    detail::Reservations reservations;
    std::multiset<Time> held_starts;  // starts of Scheduled tasks: what holds keep slots for
    // Made at the first call that needs it, so that its clock starts at a
    // real `now` (the engine learns time only from calls).
    std::optional<detail::Autoscaler> autoscaler;
    std::optional<AutoscaleConfig> autoscale_config;
    Time autoscale_armed = never;  // the Autoscale timer in the heap
    // Its ready tasks are in BacklogBounds' shed lists. Here rather than
    // there: every task that becomes ready or leaves Ready reads it, and
    // the pool is at hand.
    bool may_shed = false;
    std::vector<RunTimeMean> run_times;  // by kind
    bool dirty = false;                  // may dispatch
    // Paused (docs/guide/operations.md, "Pause and resume"): admits and
    // keeps tasks, dispatches none; its autoscaler holds still.
    bool paused = false;

    /// The pool's autoscaler, if it has one (autoscaling.hpp evaluates it).
    detail::Autoscaler* scaler(Time now) {
        if (!autoscale_config) return nullptr;
        if (!autoscaler)
            autoscaler.emplace(*autoscale_config, config.min_workers, capacity, config.max_workers,
                               config.default_duration, now, config.user_scaler);
        return &*autoscaler;
    }

    /// A parked task goes back to the queue with its ready time: aging and
    /// order kept. Shared by every kind of parking (resources, remote
    /// workers). `latest_start`: its extras' (has_deadline).
    void requeue(const TaskSlot& t, Time latest_start, detail::QueueRef ref) {
        if (t.has_deadline)
            queue.push_deadline(t.priority, latest_start, t.id.value, ref);
        else
            queue.push_returned(t.priority, t.ready_since, t.id.value, ref);
        dirty = true;
    }

    /// Tasks admitted and not yet running: what bounds count.
    std::size_t pending() const { return counters.ready + counters.blocked + counters.scheduled + counters.retrying; }

    /// Whether a dispatch has anything to do: a free slot and a ready task,
    /// in a pool that is not paused.
    bool can_dispatch() const { return counters.running < capacity && counters.ready > 0 && !paused; }

    /// Expected run time of a task of `kind`: its hint, else the learned
    /// mean of the kind, else the pool's default.
    Duration expected_duration(KindId kind, Duration hint) const {
        if (hint.count() > 0) return hint;
        if (kind < run_times.size() && run_times[kind].seen)
            return Duration(static_cast<Duration::rep>(run_times[kind].nanos));
        return config.default_duration;
    }

    /// Starts of Scheduled tasks strictly after `now` and before `until`,
    /// counting at most `cap`: the slots holds keep for them.
    std::size_t held_between(Time now, Time until, std::size_t cap) const {
        std::size_t held = 0;
        for (auto it = held_starts.upper_bound(now); it != held_starts.end() && *it < until && held < cap; ++it) ++held;
        return held;
    }
};

inline std::string describe_pool(const PoolConfig& c) { return "pool \"" + c.name + "\": "; }

inline void check_finite_nonneg(double v, const char* field) {
    if (!std::isfinite(v) || v < 0) throw ConfigError(std::string(field) + " must be a finite number >= 0");
}


}  // namespace cronoq::core
