#pragma once
// Retry delays (docs/guide/ordering.md) and the engine's deterministic random source.
#include <cronoq/core/time.hpp>
#include <cronoq/retry_policy.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace cronoq::core::detail {

/// SplitMix64: small, fast, and the same sequence for the same seed on every
/// platform (std:: distributions are not portable across libraries).
class Rng {
public:
    explicit Rng(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    /// Uniform in [0, 1].
    double unit() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740991.0); }

private:
    std::uint64_t state_;
};

/// The un-jittered delay before attempt `attempt` (>= 2).
Duration backoff_ceiling(const RetryPolicy& policy, std::uint32_t attempt);

/// The delay actually waited: jittered if the policy says so, never below
/// `retry_after`.
Duration retry_delay(const RetryPolicy& policy, std::uint32_t attempt, std::optional<Duration> retry_after, Rng& rng);

/// Why a policy is unusable, or empty if it is fine.
std::optional<std::string> check_retry_policy(const RetryPolicy& policy);

}  // namespace cronoq::core::detail
