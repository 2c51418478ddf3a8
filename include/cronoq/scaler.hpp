#pragma once
// The pluggable autoscaling policy (docs/guide/resources-and-bounds.md): what a pool's scaler is shown
// at each evaluation, and the concept a user policy satisfies.
#include <cronoq/priority.hpp>

#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>

namespace cronoq {

/// The measurements of one pool at one autoscaling evaluation (every
/// `AutoscaleConfig::interval`). Per-class arrays are indexed by
/// `index_of(Priority)`.
///
/// Times: `now` is the scheduler's monotonic time axis, in nanoseconds
/// since an origin the scheduler chooses (virtual under a `ManualClock`);
/// only differences between two `now`s are meaningful. It is a duration,
/// not a `time_point`, because the scheduler's axis is neither
/// `system_clock` nor necessarily `steady_clock`.
struct ScalerInput {
    std::chrono::nanoseconds now{};
    std::size_t capacity = 0;  ///< concurrent attempts allowed now
    std::size_t min = 0;       ///< the pool's `workers(min, ...)`
    std::size_t max = 0;       ///< the pool's `workers(..., max)`
    std::size_t busy = 0;      ///< attempts running now
    /// Tasks ready to run and waiting for a slot, per class.
    std::array<std::size_t, priority_count> pending{};
    /// Tasks joining the pool's queue per second, EWMA-smoothed over
    /// evaluations (`AutoscaleConfig::ewma_alpha`).
    double arrival_rate = 0.0;
    /// Mean run time of an attempt, EWMA-smoothed over evaluations; the
    /// pool's `default_duration` until the first attempt has ended.
    std::chrono::nanoseconds mean_service_time{};
    /// How long the longest-waiting ready task of each class has waited
    /// (0 when none waits).
    std::array<std::chrono::nanoseconds, priority_count> oldest_wait{};
    /// The wait a task of each class joining now can expect at the current
    /// capacity: (pending in its class and the classes above it) x
    /// mean_service_time / capacity; `nanoseconds::max()` when capacity is
    /// 0 and work is pending.
    std::array<std::chrono::nanoseconds, priority_count> expected_wait{};
    /// Worker slots that fixed-start tasks have reserved within
    /// `AutoscaleConfig::reservation_horizon` from now (the most at any
    /// instant of it).
    std::size_t reserved = 0;
};

/// A user autoscaling policy: `desired(input)` returns the capacity it wants
/// for the pool. The name matches the `desired` figure of a pool snapshot.
/// The scheduler clamps the answer to [min, max] and applies it as is: the
/// default policy's step bounds, stabilization window and cooldown do not
/// apply to a user scaler (it sees everything it needs to damp itself).
/// Called about once per `interval` (not while the pool sleeps idle at a
/// capacity the scaler agreed to), on the scheduler's executor and outside
/// the scheduler's locks: it may call back into the scheduler (`snapshot`,
/// `try_submit`, ...), but it runs on an io_context thread, so it must not
/// block. The scheduler's capacity stays as it is from the evaluation until
/// the answer is applied, and calls for one pool never overlap: each comes
/// after the previous answer was applied, so it may keep state (it is
/// called through a non-const reference) without a lock of its own. An
/// exception from it keeps the current capacity (a warning is logged when
/// it starts throwing). It must be movable (the pool takes it by value).
template <class S>
concept Scaler = std::move_constructible<S> && requires(S& scaler, const ScalerInput& input) {
    { scaler.desired(input) } -> std::convertible_to<std::size_t>;
};

}  // namespace cronoq
