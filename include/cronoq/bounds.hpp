#pragma once
// Caps on queued work and what happens when they are reached (docs/guide/resources-and-bounds.md).
#include <cstddef>
#include <limits>
#include <string_view>

namespace cronoq {

/// A cap on the tasks of a pool (`Pool::bounds`) or of the whole scheduler
/// (`Builder::global_bounds`) that are admitted but not yet running: ready,
/// blocked, scheduled or in retry backoff. The default is unbounded.
/// The bound is checked at admission: a retry of a task already admitted
/// re-enters the queue without a check (refusing it would lose admitted
/// work), so retries can take pending above `max_pending` for a while.
/// An aggregate: `Bounds{100}`. Validated at build: `max_pending >= 1`
/// (a cap of 0 could never admit a task that has to wait).
struct Bounds {
    std::size_t max_pending = std::numeric_limits<std::size_t>::max();

    bool bounded() const { return max_pending != std::numeric_limits<std::size_t>::max(); }
};

/// What a submission does when it would exceed a bound.
///
/// - `Wait` (default): `submit` suspends until space frees; `try_submit`
///   returns `Full`.
/// - `Reject`: the submission fails with `Overloaded`.
/// - `ShedLowest`: evicts the newest pending task of the lowest class that
///   is strictly below the incoming task's class; the victim ends `Shed`.
/// - `ShedOldest`: evicts the oldest pending `Low` task.
///
/// With no victim to evict, the shedding policies fail with `Overloaded`.
/// Starvation note: under `ShedLowest` a steady stream of higher-class work
/// can shed every `Low` task before it runs; that is the policy's purpose.
enum class OverflowPolicy { Wait, Reject, ShedLowest, ShedOldest };

/// Stable lower-case names: "wait", "reject", "shed_lowest", "shed_oldest".
constexpr std::string_view to_string(OverflowPolicy p) {
    switch (p) {
        case OverflowPolicy::Wait: return "wait";
        case OverflowPolicy::Reject: return "reject";
        case OverflowPolicy::ShedLowest: return "shed_lowest";
        case OverflowPolicy::ShedOldest: return "shed_oldest";
    }
    return "unknown";
}

}  // namespace cronoq
