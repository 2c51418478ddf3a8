#pragma once
// Priority classes and the constants of the dispatch score (SPEC §3).
#include <array>
#include <chrono>
#include <cstdint>

namespace cronoq {

/// The four priority classes, best first. Their indices (0..3) select
/// `PriorityConfig::base`.
enum class Priority : std::uint8_t { Critical, High, Normal, Low };

inline constexpr std::size_t priority_count = 4;

constexpr std::size_t index_of(Priority p) { return static_cast<std::size_t>(p); }
const char* to_string(Priority p);

/// score = base[class] + min(aging_rate * wait_seconds, age_cap) + urgency.
/// With the defaults, aging lifts a class by at most 800 points, so it never
/// crosses the 900-point gap above it: Low and Normal never outrank fresh
/// High or Critical work, yet a Low task overtakes fresh Normal work after
/// waiting 45 s longer. Validated when a scheduler is built: every value
/// finite and >= 0.
struct PriorityConfig {
    std::array<double, priority_count> base{10000.0, 1000.0, 100.0, 10.0};
    double aging_rate = 2.0;  ///< points per second of waiting, every class
    double age_cap = 800.0;   ///< the most aging can add
};

/// Deadline urgency: 0 until `window` before a task's latest start, rising
/// linearly to `max` at the latest start, then `overdue_rate` points per
/// second past it, up to `max + overdue_cap`.
struct UrgencyConfig {
    std::chrono::nanoseconds window = std::chrono::seconds(5);
    double max = 5000.0;
    double overdue_rate = 100.0;  ///< points per second past the latest start
    double overdue_cap = 2000.0;
};

}  // namespace cronoq
