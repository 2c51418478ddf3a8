#pragma once
// A pool's autoscaling policy (docs/guide/resources-and-bounds.md): turns measurements of its load into
// a capacity, once per `interval`. Sans-IO like the engine that owns it:
// every call takes `now`; the engine makes `next_evaluation()` a wakeup and
// applies what `evaluate` (or, for a user policy, `answer`) returns as the
// pool's capacity (and a `ScaleTo`). A user policy is the owner's code, so
// the autoscaler never calls it: it asks a question (its input) that the
// owner answers later, outside whatever lock it holds the engine under.
#include <cronoq/autoscale.hpp>
#include <cronoq/core/time.hpp>
#include <cronoq/priority.hpp>
#include <cronoq/scaler.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

namespace cronoq::core::detail {

/// What the engine reads from a pool at an evaluation: exact state, taken
/// as is (only rates and service times, which are samples, are smoothed).
struct PoolLoad {
    std::size_t capacity = 0;  ///< as the engine has it now
    std::size_t busy = 0;      ///< attempts running
    std::array<std::size_t, priority_count> pending{};  ///< ready, waiting for a slot, per class
    std::array<Duration, priority_count> oldest_wait{};
    /// Slots held by fixed-start reservations at the busiest instant of
    /// [now, now + reservation_horizon].
    std::size_t reserved = 0;
};

/// The default formula of docs/guide/resources-and-bounds.md (see AutoscaleConfig): the demand in
/// slots, before rounding and clamping. Exposed for tests and for user
/// scalers that want to start from it.
double default_demand(const AutoscaleConfig& config, const ScalerInput& input);

/// `demand` rounded up to whole slots; under 0.01 slot it is 0, and within
/// 1e-9 above a whole number it is that number (floating-point noise, such
/// as 7 x 0.1 / 0.7, must not cost a slot).
std::size_t slots_for(double demand);

class Autoscaler {
public:
    /// Preconditions: `config` passed check_autoscale, `min <= initial <=
    /// max`. `default_service_time` stands for the mean run time until an
    /// attempt has ended (the pool's `default_duration`). The initial
    /// capacity counts as desired at `now` (so the pool keeps it for a
    /// stabilization window) and as a change at `now` (cooldown). With
    /// `user_policy`, the owner's answers (`answer`) replace the default
    /// policy (see scaler.hpp: clamped to [min, max], no step bounds, no
    /// stabilization).
    Autoscaler(AutoscaleConfig config, std::size_t min, std::size_t initial, std::size_t max,
               Duration default_service_time, Time now, bool user_policy = false);

    /// Work joined the pool's queue (a submit, a fixed start due, a retry
    /// out of backoff). Wakes a sleeping autoscaler: it asks to be
    /// evaluated at `now`, so a pool scaled to zero gets a slot at once.
    void record_arrival(Time now, std::uint64_t count = 1);

    /// An attempt ended after running `run_time` (any outcome).
    void record_service(Duration run_time);

    /// Something the autoscaler cannot see changed (a reservation entered
    /// the horizon, the capacity was set from outside): evaluate at `now`.
    void wake(Time now);

    /// When `evaluate` next has work; empty while the pool is idle at its
    /// minimum and nothing needs measuring (an idle scheduler keeps no
    /// timer, docs/guide/README.md).
    std::optional<Time> next_evaluation() const { return next_due_; }

    /// Runs the policy if it is due at `now` and no question is open (else
    /// does nothing). The default policy answers at once: the new capacity,
    /// or nothing if it stays `load.capacity`. A user policy is asked
    /// instead: `asking()` turns true, `last_input()` is the question, and
    /// nothing changes until `answer`; no evaluation is due meanwhile.
    std::optional<std::size_t> evaluate(Time now, const PoolLoad& load);

    /// Whether a question to the user policy is open.
    bool asking() const { return asking_; }

    /// The user policy's answer to the open question: the capacity it
    /// wants, or empty when it had no opinion (it threw), which keeps the
    /// capacity. `load` is the pool as it is now: the pool sleeps only if
    /// it is idle when the answer comes. Returns the new capacity,
    /// or nothing if it stays `load.capacity` (also when no question is
    /// open: nothing changes then).
    std::optional<std::size_t> answer(Time now, std::optional<std::size_t> wanted, const PoolLoad& load);

    /// The last evaluation's desired capacity, clamped to [min, max]: the
    /// `desired` figure of a snapshot.
    std::size_t desired() const { return desired_; }
    /// Smoothed measurements, as the last evaluation saw them.
    double arrival_rate() const { return arrival_rate_; }
    Duration mean_service_time() const { return mean_service_; }
    /// The input of the last evaluation (for a user policy, its question).
    const ScalerInput& last_input() const { return input_; }
    const AutoscaleConfig& config() const { return config_; }

private:
    struct Seen {
        Time at;
        std::size_t desired;
    };

    void fold_measurements(Time now);
    ScalerInput make_input(Time now, const PoolLoad& load) const;
    std::size_t damped(Time now, std::size_t wanted, std::size_t current);
    std::size_t stabilized(Time now, std::size_t wanted);
    bool idle(const PoolLoad& load, double demand, std::size_t target) const;
    void sleep();

    AutoscaleConfig config_;
    std::size_t min_;
    std::size_t max_;
    bool user_policy_;
    bool asking_ = false;

    // Measurements of the current period (since period_start_).
    Time period_start_;
    std::uint64_t arrivals_ = 0;
    std::uint64_t services_ = 0;
    double service_nanos_ = 0;  // their total

    double arrival_rate_ = 0;  // per second, smoothed
    Duration mean_service_;    // smoothed
    bool service_seen_ = false;

    // Desired values of the stabilization window, decreasing from the
    // front, so the front is the window's highest (a monotonic queue:
    // amortised O(1) per evaluation).
    std::deque<Seen> window_;
    Time last_change_;
    std::optional<Time> next_due_;
    std::size_t desired_;
    ScalerInput input_;
};

}  // namespace cronoq::core::detail
