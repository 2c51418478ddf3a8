#include "config_checks.hpp"
#include "text.hpp"

#include <cmath>
#include <unordered_set>

namespace cronoq::core::detail {

namespace {

bool negative(std::chrono::nanoseconds d) { return d.count() < 0; }

}  // namespace

std::optional<std::string> check_autoscale(const AutoscaleConfig& c) {
    // `!(x > 0)` rather than `x <= 0`, so that NaN is caught too.
    if (c.interval.count() <= 0) return "autoscale.interval must be positive";
    if (!(c.target_utilization > 0) || !(c.target_utilization <= 1))
        return "autoscale.target_utilization must be in (0, 1]";
    if (c.drain_time.count() <= 0) return "autoscale.drain_time must be positive";
    for (std::size_t i = 0; i < c.slo.size(); ++i)
        if (negative(c.slo[i]))
            return cat({"autoscale.slo[", std::to_string(i), "] (", to_string(static_cast<Priority>(i)),
                        ") must not be negative"});
    if (negative(c.reservation_horizon)) return "autoscale.reservation_horizon must not be negative";
    if (!std::isfinite(c.max_step_up_ratio) || c.max_step_up_ratio < 0)
        return "autoscale.max_step_up_ratio must be a finite number >= 0";
    // Without an absolute step, a pool at capacity 0 could never grow.
    if (c.max_step_up_abs < 1) return "autoscale.max_step_up_abs must be at least 1";
    if (negative(c.stabilization_window)) return "autoscale.stabilization_window must not be negative";
    if (c.max_step_down < 1) return "autoscale.max_step_down must be at least 1";
    if (negative(c.cooldown)) return "autoscale.cooldown must not be negative";
    if (!(c.ewma_alpha > 0) || !(c.ewma_alpha <= 1)) return "autoscale.ewma_alpha must be in (0, 1]";
    return std::nullopt;
}

std::optional<std::string> check_bounds(const Bounds& bounds, std::string_view field) {
    if (bounds.max_pending < 1) return cat({field, ".max_pending must be at least 1"});
    return std::nullopt;
}

std::optional<std::string> check_resource(const Resource& r) {
    if (r.name.empty()) return "resource name must not be empty";
    const std::string prefix = cat({"resource ", quoted(r.name), ": "});
    switch (r.kind) {
        case Resource::Kind::Semaphore:
            if (r.permits < 1) return cat({prefix, "permits must be at least 1"});
            break;
        case Resource::Kind::TokenBucket:
            if (auto problem = check_rate(r.rate_per_s)) return cat({prefix, *problem});
            if (r.burst < 1) return cat({prefix, "burst must be at least 1"});
            break;
        default: return cat({prefix, "unknown kind"});
    }
    return std::nullopt;
}

std::optional<std::string> check_resources(std::span<const Resource> resources) {
    std::unordered_set<std::string_view> seen;
    for (const Resource& r : resources) {
        if (auto problem = check_resource(r)) return problem;
        if (!seen.insert(r.name).second) return cat({"resource ", quoted(r.name), ": declared twice"});
    }
    return std::nullopt;
}

std::optional<std::string> check_min_share(const std::array<double, priority_count>& shares) {
    double sum = 0;
    for (std::size_t i = 0; i < shares.size(); ++i) {
        // `!(x >= 0)` rather than `x < 0`, so that NaN is caught too.
        if (!(shares[i] >= 0) || !(shares[i] < 1))
            return cat({"priority.min_share[", std::to_string(i), "] (", to_string(static_cast<Priority>(i)),
                        ") must be in [0, 1)"});
        sum += shares[i];
    }
    if (!(sum < 1)) return cat({"priority.min_share must sum to less than 1 (the sum is ", std::to_string(sum), ")"});
    return std::nullopt;
}

std::optional<std::string> check_rate(double rate_per_s) {
    if (!std::isfinite(rate_per_s) || rate_per_s < 0) return "rate_per_s must be a finite number >= 0";
    return std::nullopt;
}

std::optional<std::string> check_fair_weight(std::string_view key, double weight) {
    if (std::isfinite(weight) && weight > 0) return std::nullopt;
    return "fairness.weights[\"" + std::string(key) + "\"] must be a finite number > 0";
}

std::optional<std::string> check_fairness(const FairnessConfig& fairness) {
    for (const auto& [key, weight] : fairness.weights)
        if (auto problem = check_fair_weight(key, weight)) return problem;
    if (fairness.per_key_concurrency && *fairness.per_key_concurrency == 0)
        return "fairness.per_key_concurrency must be at least 1";
    return std::nullopt;
}

}  // namespace cronoq::core::detail
