#pragma once
// Diagnostics: the engine's raw figures and the driver's cost counters, for
// tests, benchmarks and debugging (docs/guide/operations.md, "Diagnostics").
// Kept off `Scheduler` so that its interface is what an application uses;
// `snapshot()` is the supported view of a running scheduler.
#include <cronoq/detail/access.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/pool_stats.hpp>
#include <cronoq/scheduler.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace cronoq::diagnostics {

/// The engine's counters for one pool since the scheduler started (not
/// windowed, unlike `snapshot()`); empty for an unknown pool name.
/// Thread-safe: takes the engine's lock once.
template <class P, class O>
std::optional<core::PoolCounters> counters(const Scheduler<P, O>& scheduler, std::string_view pool) {
    return detail::Access::core(scheduler)->counters(pool);
}

/// How often the engine's lock has been taken so far: divided by the tasks
/// run, the driver's cost per task in a figure noise cannot move (the
/// benchmarks' `locks_per_task`). Reading it takes the lock once more.
template <class P, class O>
std::uint64_t lock_acquisitions(const Scheduler<P, O>& scheduler) {
    return detail::Access::core(scheduler)->lock_acquisitions();
}

}  // namespace cronoq::diagnostics
