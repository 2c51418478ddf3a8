#include "backoff.hpp"

#include <cmath>

namespace cronoq::core::detail {

Duration backoff_ceiling(const RetryPolicy& policy, std::uint32_t attempt) {
    const double exponent = attempt >= 2 ? static_cast<double>(attempt - 2) : 0.0;
    const double initial = static_cast<double>(policy.initial_backoff.count());
    const double cap = static_cast<double>(policy.max_backoff.count());
    const double raw = initial * std::pow(policy.multiplier, exponent);
    // pow may overflow to inf for long retry chains; the cap still applies.
    if (!(raw < cap)) return policy.max_backoff;
    return Duration(static_cast<Duration::rep>(raw));
}

Duration retry_delay(const RetryPolicy& policy, std::uint32_t attempt, std::optional<Duration> retry_after, Rng& rng) {
    Duration delay = backoff_ceiling(policy, attempt);
    if (policy.jitter) delay = Duration(static_cast<Duration::rep>(static_cast<double>(delay.count()) * rng.unit()));
    if (retry_after && *retry_after > delay) delay = *retry_after;
    return delay;
}

std::optional<std::string> check_retry_policy(const RetryPolicy& p) {
    if (p.max_attempts == 0) return "max_attempts must be at least 1";
    if (p.initial_backoff.count() < 0) return "initial_backoff must not be negative";
    if (p.max_backoff.count() < 0) return "max_backoff must not be negative";
    if (!std::isfinite(p.multiplier) || p.multiplier < 0) return "multiplier must be a finite number >= 0";
    return std::nullopt;
}

}  // namespace cronoq::core::detail
