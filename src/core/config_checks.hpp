#pragma once
// Validation of the plain configuration structs of resources, bounds and
// autoscaling. Each check returns why the value is unusable, naming the
// field as a user writes it ("autoscale.ewma_alpha must be in (0, 1]"), or
// nothing when it is fine. The caller adds its context (the pool's name)
// and throws ConfigError, so that nothing is half-built.
#include <cronoq/autoscale.hpp>
#include <cronoq/bounds.hpp>
#include <cronoq/fairness.hpp>
#include <cronoq/priority.hpp>
#include <cronoq/resource.hpp>

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cronoq::core::detail {

/// Every field of docs/guide/resources-and-bounds.md's configuration, in declaration order; the first
/// problem found is reported.
std::optional<std::string> check_autoscale(const AutoscaleConfig& config);

/// `field` is how the user wrote the bound: "bounds" or "global_bounds".
std::optional<std::string> check_bounds(const Bounds& bounds, std::string_view field = "bounds");

/// One declaration: a non-empty name, permits / burst >= 1, a finite rate
/// >= 0.
std::optional<std::string> check_resource(const Resource& resource);

/// Every declaration, and that no name is declared twice.
std::optional<std::string> check_resources(std::span<const Resource> resources);

/// `PriorityConfig::min_share`: each share finite and in [0, 1), their sum
/// below 1 (so that the other classes keep a part of every stretch).
std::optional<std::string> check_min_share(const std::array<double, priority_count>& shares);

/// `fairness`: every weight finite and > 0, a cap of at least 1.
std::optional<std::string> check_fairness(const FairnessConfig& fairness);
/// One weight of `key`, as configured or set at run time.
std::optional<std::string> check_fair_weight(std::string_view key, double weight);

/// A token bucket rate given at run time (`Scheduler::set_rate`).
std::optional<std::string> check_rate(double rate_per_s);

}  // namespace cronoq::core::detail
