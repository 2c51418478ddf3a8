#include "autoscaler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace cronoq::core::detail {

namespace {

// `now + d`, saturating at the end of the time axis.
Time saturating_add(Time now, Duration d) {
    if (d > Time::max() - now) return Time::max();
    return now + d;
}

Duration from_seconds(double seconds) {
    constexpr double max_seconds = static_cast<double>(std::numeric_limits<Duration::rep>::max()) / 1e9;
    if (!(seconds < max_seconds)) return Duration::max();
    return Duration(static_cast<Duration::rep>(std::llround(std::max(seconds, 0.0) * 1e9)));
}

}  // namespace

double default_demand(const AutoscaleConfig& config, const ScalerInput& in) {
    const double service = to_seconds(in.mean_service_time);
    // Steady state: the slots busy on average (Little's law), with headroom.
    double demand = in.arrival_rate * service / config.target_utilization;
    // The backlog worked off within drain_time.
    const std::size_t backlog = std::accumulate(in.pending.begin(), in.pending.end(), std::size_t{0});
    demand = std::max(demand, static_cast<double>(backlog) * service / to_seconds(config.drain_time));
    // Wait objectives: higher classes are served first, so a task of class
    // c waits for the work pending in c and above; that work, spread over
    // the capacity, must start within slo[c].
    std::size_t ahead = 0;
    for (std::size_t c = 0; c < priority_count; ++c) {
        ahead += in.pending[c];
        if (config.slo[c].count() > 0)
            demand = std::max(demand, static_cast<double>(ahead) * service / to_seconds(config.slo[c]));
    }
    return std::max(demand, static_cast<double>(in.reserved));
}

std::size_t slots_for(double demand) {
    if (!(demand >= 0.01)) return 0;  // NaN too
    const double slots = std::ceil(demand - 1e-9);
    if (!(slots < static_cast<double>(std::numeric_limits<std::size_t>::max()))) return std::numeric_limits<std::size_t>::max();
    return static_cast<std::size_t>(slots);
}

Autoscaler::Autoscaler(AutoscaleConfig config, std::size_t min, std::size_t initial, std::size_t max,
                       Duration default_service_time, Time now, bool user_policy)
    : config_(config),
      min_(min),
      max_(max),
      user_policy_(user_policy),
      period_start_(now),
      mean_service_(default_service_time),
      last_change_(now),
      desired_(initial) {
    window_.push_back(Seen{now, initial});
    // A default policy at its minimum has nothing to do until work comes;
    // a user policy is asked once, as it may want something else.
    if (user_policy_ || initial > min_) next_due_ = saturating_add(now, config_.interval);
}

void Autoscaler::record_arrival(Time now, std::uint64_t count) {
    arrivals_ += count;
    // Only a sleeping autoscaler is woken: an awake one counts the arrival
    // and keeps its interval (else a busy pool would be evaluated at every
    // submit, and the per-step bound would no longer bound the rate).
    if (!next_due_) wake(now);
}

void Autoscaler::record_service(Duration run_time) {
    ++services_;
    service_nanos_ += static_cast<double>(std::max(run_time, Duration{}).count());
}

void Autoscaler::wake(Time now) {
    // Asleep, nothing was measured: the measurement period starts now.
    if (!next_due_) period_start_ = now;
    if (!next_due_ || *next_due_ > now) next_due_ = now;
}

void Autoscaler::fold_measurements(Time now) {
    const double alpha = config_.ewma_alpha;
    const double rate = static_cast<double>(arrivals_) / to_seconds(now - period_start_);
    arrival_rate_ += alpha * (rate - arrival_rate_);
    if (services_ > 0) {
        // One sample per period (its mean), not one per attempt: at high
        // throughput a per-attempt EWMA would follow the last few attempts.
        const double sample = service_nanos_ / static_cast<double>(services_);
        const auto previous = static_cast<double>(mean_service_.count());
        const double smoothed = service_seen_ ? previous + alpha * (sample - previous) : sample;
        mean_service_ = Duration(static_cast<Duration::rep>(std::llround(smoothed)));
        service_seen_ = true;
    }
    arrivals_ = 0;
    services_ = 0;
    service_nanos_ = 0;
    period_start_ = now;
}

ScalerInput Autoscaler::make_input(Time now, const PoolLoad& load) const {
    ScalerInput in;
    in.now = now.time_since_epoch();
    in.capacity = load.capacity;
    in.min = min_;
    in.max = max_;
    in.busy = load.busy;
    in.pending = load.pending;
    in.arrival_rate = arrival_rate_;
    in.mean_service_time = mean_service_;
    in.oldest_wait = load.oldest_wait;
    std::size_t ahead = 0;
    for (std::size_t c = 0; c < priority_count; ++c) {
        ahead += load.pending[c];
        if (ahead == 0) continue;
        in.expected_wait[c] = load.capacity == 0 ? Duration::max()
                                                 : from_seconds(static_cast<double>(ahead) * to_seconds(mean_service_) /
                                                                static_cast<double>(load.capacity));
    }
    in.reserved = load.reserved;
    return in;
}

std::size_t Autoscaler::stabilized(Time now, std::size_t wanted) {
    while (!window_.empty() && now - window_.front().at >= config_.stabilization_window) window_.pop_front();
    while (!window_.empty() && window_.back().desired <= wanted) window_.pop_back();
    window_.push_back(Seen{now, wanted});
    return window_.front().desired;
}

std::size_t Autoscaler::damped(Time now, std::size_t wanted, std::size_t current) {
    const std::size_t highest = stabilized(now, wanted);
    if (wanted > current) {
        const std::size_t gap = wanted - current;
        const double by_ratio = std::floor(config_.max_step_up_ratio * static_cast<double>(current));
        if (by_ratio >= static_cast<double>(gap)) return wanted;
        const std::size_t step = std::max(static_cast<std::size_t>(by_ratio), config_.max_step_up_abs);
        return current + std::min(step, gap);
    }
    if (highest < current && now - last_change_ >= config_.cooldown)
        return current - std::min(config_.max_step_down, current - highest);
    return current;
}

bool Autoscaler::idle(const PoolLoad& load, double demand, std::size_t target) const {
    const bool no_work = load.busy == 0 && load.reserved == 0 && arrivals_ == 0 &&
                         std::all_of(load.pending.begin(), load.pending.end(), [](std::size_t n) { return n == 0; });
    if (!no_work || target != load.capacity) return false;
    // A user policy that agrees with the capacity of an idle pool is
    // settled; the default policy is settled at its minimum once the
    // smoothed arrival rate has decayed below the 0.01-slot threshold.
    return user_policy_ || (target == min_ && slots_for(demand) == 0);
}

std::optional<std::size_t> Autoscaler::evaluate(Time now, const PoolLoad& load) {
    if (asking_ || !next_due_ || now < *next_due_) return std::nullopt;
    // An evaluation brought forward by a wake-up does not end the
    // measurement period early: rates need a full interval.
    if (now - period_start_ >= config_.interval) fold_measurements(now);
    input_ = make_input(now, load);
    // Due again at the end of the period, unless the answer finds the pool
    // idle, or a wake-up while it is awaited brings that forward.
    next_due_ = saturating_add(period_start_, config_.interval);
    if (user_policy_) {
        asking_ = true;
        return std::nullopt;
    }

    const std::size_t current = load.capacity;
    const double demand = default_demand(config_, input_);
    desired_ = std::clamp(slots_for(demand), min_, max_);
    const std::size_t target = std::clamp(damped(now, desired_, current), min_, max_);
    if (target != current) last_change_ = now;
    if (idle(load, demand, target)) sleep();
    if (target == current) return std::nullopt;
    return target;
}

std::optional<std::size_t> Autoscaler::answer(Time now, std::optional<std::size_t> wanted, const PoolLoad& load) {
    if (!asking_) return std::nullopt;
    asking_ = false;
    // No opinion (the policy threw) keeps the capacity, within [min, max].
    const std::size_t current = load.capacity;
    desired_ = std::clamp(wanted.value_or(current), min_, max_);
    const std::size_t target = desired_;
    if (target != current) last_change_ = now;
    if (idle(load, 0.0, target)) sleep();
    if (target == current) return std::nullopt;
    return target;
}

void Autoscaler::sleep() {
    // Asleep until work arrives; what the smoothed rate still held is
    // under the threshold and would only decay further.
    next_due_.reset();
    arrival_rate_ = 0;
}

}  // namespace cronoq::core::detail
