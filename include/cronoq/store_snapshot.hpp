#pragma once
// StoreSnapshot: a store's commit figures, in `Snapshot::store` (docs/guide/durability.md
// "Store figures") and as a store's journal reports them.
#include <cronoq/seconds_histogram.hpp>

#include <chrono>
#include <cstdint>

namespace cronoq {

/// A scheduler's store (docs/guide/durability.md) at one instant: its commit pipeline
/// since the store opened.
struct StoreSnapshot {
    std::uint64_t commits = 0;            ///< successful transactions
    std::uint64_t failed_commits = 0;     ///< failed attempts (retried)
    std::uint64_t changes_committed = 0;
    double mean_batch_size = 0;           ///< changes per successful transaction
    std::chrono::nanoseconds commit_latency_p50{0}, commit_latency_p99{0};  ///< the last 1024 transactions
    std::uint64_t pending_changes = 0;    ///< written, not yet committed
    bool leading = false;
    std::uint64_t epoch = 0;              ///< the fencing epoch it leads in
    /// Every successful transaction's latency since the store opened.
    SecondsHistogram commit_seconds;
};

}  // namespace cronoq
