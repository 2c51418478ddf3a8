#pragma once
// Snapshot: every pool's figures over the metrics window (docs/guide/operations.md), from
// `Scheduler::snapshot()`, serializable with nlohmann_json.
#include <cronoq/pool_stats.hpp>
#include <cronoq/store_snapshot.hpp>

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cronoq {

/// One pool at one instant: the engine's figures (`core::PoolStats`, one
/// struct for both) and the pool's name. Counts and percentiles cover the
/// metrics window (default 60 s, `Builder::metrics_window`); the gauges
/// (capacity, busy, held, desired, pending) are as of now.
struct PoolSnapshot : core::PoolStats {
    std::string name;
    /// A remote pool's connected workers (docs/remote.md; its `capacity` is the
    /// slots granted to them); empty for a local pool.
    std::optional<std::size_t> remote_workers;
};

struct Snapshot {
    std::vector<PoolSnapshot> pools;
    /// Empty without a store.
    std::optional<StoreSnapshot> store;

    /// `{"pools": [{"name": ..., "capacity": ..., "pending": {"critical": ...},
    /// "paused": false, "wait_ms": {"p50": ..., "p90": ..., "p99": ...}, "run_ms": {...},
    /// ..., "totals": {"submitted": ..., "attempts_started": ..., "retried":
    /// ..., "succeeded": ..., ...}, "wait_seconds": {"critical": <histogram>,
    /// ...}, "run_seconds": <histogram>, "active_keys": n, "top_keys": [{"key": ..., "ready": n,
    /// "running": n}, ...]}]}`, and with a store `"store":
    /// {"commits": ..., "failed_commits": ..., "changes_committed": ...,
    /// "mean_batch_size": ..., "commit_latency_ms": {"p50": ..., "p99": ...},
    /// "pending_changes": ..., "leading": ..., "epoch": ..., "commit_seconds":
    /// <histogram>}`; a histogram is `{"buckets": [[le, count], ...], "sum":
    /// s, "count": n}` with cumulative counts and bounds in seconds. Window
    /// durations in milliseconds, the window in seconds. A remote pool also has `"remote_workers": n`. Include
    /// <nlohmann/json.hpp> to use the result (this header declares the type
    /// only), or take the text from `to_json_string`.
    nlohmann::json to_json() const;
    /// `to_json()` as text: compact, or pretty-printed with `indent` spaces
    /// per level when `indent` >= 0. Needs no JSON header.
    std::string to_json_string(int indent = -1) const;
};

}  // namespace cronoq
