#pragma once
// Retry policy (docs/guide/ordering.md).
#include <chrono>
#include <cstdint>

namespace cronoq {

/// Delay before attempt n (n >= 2) is
/// `min(initial_backoff * multiplier^(n-2), max_backoff)`; with `jitter` it is
/// drawn uniformly from [0, that] by the engine's seeded generator (full
/// jitter). A `TaskError::retry_after` hint is a floor on the delay.
/// A retryable failure of attempt `max_attempts` dead-letters the task.
struct RetryPolicy {
    std::uint32_t max_attempts = 3;
    std::chrono::nanoseconds initial_backoff = std::chrono::seconds(1);
    double multiplier = 2.0;
    std::chrono::nanoseconds max_backoff = std::chrono::seconds(60);
    bool jitter = true;

    /// One attempt, never retried.
    static constexpr RetryPolicy none() { return RetryPolicy{1, std::chrono::nanoseconds(0), 1.0, std::chrono::nanoseconds(0), false}; }
};

}  // namespace cronoq
