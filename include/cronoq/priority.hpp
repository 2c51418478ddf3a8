#pragma once
// Priority classes and the constants of the dispatch score (docs/guide/ordering.md).
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
/// finite and >= 0; `min_share` as documented there.
///
/// Failure mode of the score alone: under sustained overload a class whose
/// tasks never outscore the others' (Low behind a Normal backlog older than
/// the age cap) never starts at all. `min_share` bounds that.
struct PriorityConfig {
    std::array<double, priority_count> base{10000.0, 1000.0, 100.0, 10.0};
    double aging_rate = 2.0;  ///< points per second of waiting, every class
    double age_cap = 800.0;   ///< the most aging can add
    /// Guaranteed shares of a pool's dispatches, one fraction per class
    /// (default all 0: pure score order). While at least two classes have
    /// ready work that may take the free slot, each of them earns its share
    /// in credit per dispatch; a class whose credit reaches 1 takes the next
    /// dispatch whatever the scores (the class with the most credit first)
    /// with its longest-waiting task, and pays 1. A dispatch won by score
    /// pays 1 too (down to 0) when it takes the class's longest-waiting
    /// task, but not when it takes a younger one (an urgent deadline), so a
    /// class's urgent work does not use up the share meant for its oldest.
    /// Credit is dropped when a class has no ready task left: nothing is
    /// banked for later. Over any stretch of contention a class with ready
    /// work therefore receives at least its share of the dispatches, short
    /// by at most a few, and they go to its oldest work: no task of a class
    /// with a share waits forever.
    ///
    /// What it costs the others: those dispatches are taken from the
    /// best-scored tasks, so under overload the other classes (Critical
    /// included) wait longer, and by up to the sum of the shares of
    /// throughput; a share's task may run ahead of an urgent deadline of
    /// another class. Shares are counted over dispatches, not worker time:
    /// a class of long tasks holds more of the workers than its share says.
    /// Classes with share 0 get no guarantee and can still starve.
    ///
    /// Validation: each share finite and in [0, 1), and their sum below 1
    /// (otherwise ConfigError naming `priority.min_share`).
    std::array<double, priority_count> min_share{0.0, 0.0, 0.0, 0.0};
};

/// Deadline urgency: 0 until the window before a task's latest start,
/// rising linearly to `max` at the latest start, then `overdue_rate` points
/// per second past it, up to `max + overdue_cap`. The window is
/// `max(window, window_factor x expected duration)`, with the expected
/// duration that set the latest start (the hint, else the learned mean of
/// the task's pool and kind, else the pool's default), fixed when the task
/// became ready.
///
/// Failure mode: a fixed window shorter than the gap between two free
/// workers (long tasks in a small pool) lets deadline tasks rise too late
/// to find a worker; `window_factor` scales the window with the task so
/// that it does not. A large factor makes long tasks with distant
/// deadlines outrank fresh work of their class, and a Low task outrank
/// fresh High work, long before they are due.
struct UrgencyConfig {
    std::chrono::nanoseconds window = std::chrono::seconds(5);
    double max = 5000.0;
    double overdue_rate = 100.0;  ///< points per second past the latest start
    double overdue_cap = 2000.0;
    /// Multiplies the expected duration into a per-task window; finite and
    /// >= 0 (0: always `window`). The default 1.0 leaves tasks of up to
    /// `window` (5 s) unchanged (docs/decisions.md gives the evidence).
    double window_factor = 1.0;
};

}  // namespace cronoq
