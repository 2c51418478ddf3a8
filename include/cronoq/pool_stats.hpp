#pragma once
// The engine's per-pool figures (docs/guide/operations.md): cumulative counters and the
// figures over the metrics window. Declared apart from <cronoq/core/engine.hpp>
// because the driver's public types show them (`PoolSnapshot` derives from
// `core::PoolStats`, <cronoq/diagnostics.hpp> returns `core::PoolCounters`)
// and the driver's headers must not pull in the engine.
#include <cronoq/core/time.hpp>
#include <cronoq/fairness.hpp>
#include <cronoq/priority.hpp>
#include <cronoq/seconds_histogram.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace cronoq::core {

/// Per-pool figures since the engine started.
struct PoolCounters {
    std::size_t capacity = 0;
    std::size_t running = 0;   ///< attempts holding a live lease
    std::size_t ready = 0;     ///< queued for a slot
    std::size_t retrying = 0;  ///< in backoff
    std::size_t blocked = 0;   ///< waiting on dependencies
    std::size_t scheduled = 0; ///< waiting for a fixed start
    std::array<std::size_t, priority_count> ready_by_class{};  ///< `ready`, per class
    std::size_t desired = 0;   ///< the autoscaler's last desired capacity (else the capacity)
    std::uint64_t submitted = 0;
    std::uint64_t dispatched = 0;
    std::uint64_t succeeded = 0;
    std::uint64_t failed = 0;
    std::uint64_t dead_lettered = 0;
    std::uint64_t cancelled = 0;
    std::uint64_t retried = 0;
    std::uint64_t timed_out = 0;
    std::uint64_t lease_expired = 0;
    std::uint64_t skipped = 0;         ///< a dependency could not be met
    std::uint64_t missed = 0;          ///< ended `Missed` (MissPolicy::Skip)
    std::uint64_t shed = 0;            ///< evicted by an overflow policy
    std::uint64_t starts_on_time = 0;  ///< fixed starts dispatched within their tolerance
    std::uint64_t starts_late = 0;     ///< dispatched later (RunLate) or missed
};

/// A pool's counts since the engine started: they never go down, so they
/// make Prometheus counters (docs/guide/operations.md, "Prometheus").
struct PoolTotals {
    std::uint64_t submitted = 0;         ///< tasks admitted (recovered ones too)
    std::uint64_t attempts_started = 0;  ///< attempts dispatched
    std::uint64_t retried = 0;           ///< failed attempts followed by a retry
    // Tasks that ended, by terminal status:
    std::uint64_t succeeded = 0;
    std::uint64_t failed = 0;
    std::uint64_t dead_lettered = 0;
    std::uint64_t cancelled = 0;
    std::uint64_t skipped = 0;
    std::uint64_t missed = 0;
    std::uint64_t shed = 0;
};

/// A pool's figures over the metrics window (docs/guide/operations.md), at one instant.
struct PoolStats {
    Duration window{};
    std::size_t capacity = 0;
    std::size_t busy = 0;     ///< attempts running
    std::size_t held = 0;     ///< free slots kept for fixed starts within max_hold
    std::size_t desired = 0;  ///< the autoscaler's wish (else the capacity)
    std::array<std::size_t, priority_count> pending{};  ///< ready, per class
    std::size_t blocked = 0;
    std::size_t scheduled = 0;
    std::size_t retrying = 0;
    /// Paused: admits and keeps tasks, dispatches none (`Scheduler::pause`).
    bool paused = false;
    // Within the window:
    std::uint64_t dispatched = 0;
    std::uint64_t succeeded = 0;
    std::uint64_t failed = 0;
    std::uint64_t retried = 0;
    std::uint64_t dead_lettered = 0;
    std::uint64_t shed = 0;
    std::uint64_t waits = 0;  ///< samples behind the wait percentiles
    std::uint64_t runs = 0;   ///< samples behind the run percentiles
    Duration wait_p50{}, wait_p90{}, wait_p99{};  ///< ready -> dispatch
    Duration run_p50{}, run_p99{};                ///< attempt start -> end
    double worker_seconds = 0;  ///< busy slots x seconds
    double utilization = 0;     ///< worker_seconds / (capacity x seconds)
    /// Share of dispatches that took the best-scored ready task; empty
    /// without dispatches.
    std::optional<double> priority_adherence;
    /// Share of fixed starts dispatched within their tolerance; empty
    /// without fixed starts.
    std::optional<double> fixed_start_hit_rate;
    // Since the engine started (not the window):
    PoolTotals totals;
    /// Ready -> dispatch, per priority class (indexed by `index_of(Priority)`).
    std::array<SecondsHistogram, priority_count> wait_histogram{};
    /// Attempt start -> end, any outcome.
    SecondsHistogram run_histogram;
    /// Fair keys with a ready task or a running attempt (the key "" too).
    std::size_t active_keys = 0;
    /// Up to 10 of them, the most ready first (then the most running, then
    /// by name).
    std::vector<FairKeyLoad> top_keys;
};

}  // namespace cronoq::core
