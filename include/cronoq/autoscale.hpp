#pragma once
// Configuration of the default autoscaling policy (docs/guide/resources-and-bounds.md). A pool with
// `workers(min, initial, max)` and `autoscale(AutoscaleConfig{})` moves its
// capacity within [min, max] from queue pressure; `Pool::scaler(S)` swaps in
// a user policy (see scaler.hpp).
#include <cronoq/priority.hpp>
#include <cronoq/scaler.hpp>

#include <array>
#include <chrono>
#include <cstddef>

namespace cronoq {

/// Every `interval` the default policy computes
///
///     desired = ceil(max(arrival_rate x S / target_utilization,
///                        backlog x S / drain_time,
///                        max over classes c with slo[c] > 0 of
///                            pending(c and above) x S / slo[c],
///                        reserved slots within reservation_horizon))
///
/// where S is the mean service time, and a demand under 0.01 slot counts
/// as 0. Arrival rate and S are EWMA-smoothed (`ewma_alpha`); backlog and
/// pending are read as they are (they are exact state, not noisy samples).
///
/// Scale-up is applied at once, by at most
/// max(floor(max_step_up_ratio x capacity), max_step_up_abs) per
/// evaluation. Scale-down follows the highest desired value seen within
/// `stabilization_window`, by at most `max_step_down` per `cooldown` (counted
/// from the policy's previous change, up or down). The result is clamped to
/// [min, max]. Scaling down never aborts a running attempt: surplus slots
/// retire as attempts finish.
///
/// An idle pool at `min` is not evaluated (no timer); the first arrival
/// triggers an evaluation at once, so a pool scaled to zero gets a slot
/// without waiting an interval.
///
/// Failure mode to know: running attempts are not a demand term. After a
/// lull, a pool whose attempts run long can scale below the number still
/// running; work arriving then waits for those attempts to end (surplus
/// slots retire only as they finish). Keep `min` at the concurrency such
/// work needs, or raise `stabilization_window`.
///
/// An aggregate with a default for every field, in the order docs/guide/resources-and-bounds.md lists
/// them: `AutoscaleConfig{}` or `AutoscaleConfig{std::chrono::seconds(2)}`.
/// Validated at build (a `ConfigError` naming the field, e.g.
/// "autoscale.ewma_alpha must be in (0, 1]").
struct AutoscaleConfig {
    /// How often the policy is evaluated. > 0.
    std::chrono::nanoseconds interval = std::chrono::seconds(1);
    /// The busy share of capacity the arrival-rate term aims at. In (0, 1].
    double target_utilization = 0.8;
    /// The time in which the current backlog should be worked off. > 0.
    std::chrono::nanoseconds drain_time = std::chrono::seconds(10);
    /// Wait-time objective per class (indexed by `index_of(Priority)`);
    /// 0 means no objective for that class. >= 0.
    std::array<std::chrono::nanoseconds, priority_count> slo{};
    /// How far ahead fixed-start reservations count as demand. The default
    /// is twice the default hold (30 s before a start), so that capacity
    /// grown in bounded steps is in place before the hold begins. >= 0.
    std::chrono::nanoseconds reservation_horizon = std::chrono::seconds(60);
    /// Scale-up step bound, relative: at most this share of the current
    /// capacity is added per evaluation (1.0 = may double). Finite, >= 0.
    double max_step_up_ratio = 1.0;
    /// Scale-up step bound, absolute: at least this many slots may be added
    /// per evaluation, whatever the ratio allows (so a pool at 0 or 1 can
    /// grow). >= 1. The defaults (100 % or 4) are those of the Kubernetes
    /// horizontal pod autoscaler.
    std::size_t max_step_up_abs = 4;
    /// Scale-down uses the highest desired value seen within this window.
    /// >= 0 (0: only the current evaluation counts).
    std::chrono::nanoseconds stabilization_window = std::chrono::seconds(30);
    /// At most this many slots are removed per `cooldown`. >= 1.
    std::size_t max_step_down = 1;
    /// Minimum time between the policy's previous change and a scale-down.
    /// >= 0.
    std::chrono::nanoseconds cooldown = std::chrono::seconds(5);
    /// Weight of the newest measurement in the EWMA smoothing. In (0, 1]
    /// (1 = no smoothing).
    double ewma_alpha = 0.3;
};

}  // namespace cronoq
