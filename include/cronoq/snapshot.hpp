#pragma once
// Snapshot: every pool's figures over the metrics window (SPEC §10), from
// `Scheduler::snapshot()`, serializable with nlohmann_json.
#include <cronoq/priority.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cronoq {

/// One pool at one instant. Counts and percentiles cover the metrics window
/// (default 60 s, `Builder::metrics_window`); the gauges (capacity, busy,
/// held, desired, pending) are as of now.
struct PoolSnapshot {
    std::string name;
    std::chrono::nanoseconds window{};
    std::size_t capacity = 0;  ///< concurrent attempts allowed
    std::size_t busy = 0;      ///< attempts running
    std::size_t held = 0;      ///< free slots kept for fixed starts
    std::size_t desired = 0;   ///< the autoscaler's wish (the capacity without one)
    std::array<std::size_t, priority_count> pending{};  ///< ready tasks, by class
    std::size_t blocked = 0;    ///< waiting on dependencies
    std::size_t scheduled = 0;  ///< waiting for a fixed start
    std::size_t retrying = 0;   ///< in backoff
    std::uint64_t dispatched = 0;
    std::uint64_t succeeded = 0;
    std::uint64_t failed = 0;
    std::uint64_t retried = 0;
    std::uint64_t dead_lettered = 0;
    std::uint64_t shed = 0;
    std::chrono::nanoseconds wait_p50{}, wait_p90{}, wait_p99{};  ///< ready to dispatch
    std::chrono::nanoseconds run_p50{}, run_p99{};                ///< attempt run time
    double utilization = 0.0;     ///< busy share of the capacity over the window
    double worker_seconds = 0.0;  ///< busy slots x seconds over the window
    /// Share of dispatches that took the best-scored ready task; empty
    /// (JSON null) without dispatches in the window.
    std::optional<double> priority_adherence;
    /// Share of fixed starts dispatched within their tolerance; empty (JSON
    /// null) without fixed starts in the window.
    std::optional<double> fixed_start_hit_rate;
};

struct Snapshot {
    std::vector<PoolSnapshot> pools;

    /// `{"pools": [{"name": ..., "capacity": ..., "pending": {"critical": ...},
    /// "wait_ms": {"p50": ..., "p90": ..., "p99": ...}, "run_ms": {...},
    /// ...}]}`; durations in milliseconds, the window in seconds.
    nlohmann::json to_json() const;
};

}  // namespace cronoq
