#include "token_bucket.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace cronoq::core::detail {

namespace {

constexpr double nanos_per_second = 1e9;

// Past this much time since the reference, the reference moves forward, so
// that the products in `accrued` stay far below 2^53, where a double stops
// counting exactly (2^40 ns is about 18 minutes).
constexpr Duration rebase_after{std::int64_t{1} << 40};

}  // namespace

TokenBucket::TokenBucket(double rate_per_s, std::uint32_t burst, Time now)
    : rate_(rate_per_s), burst_(burst), ref_(now), base_(burst) {}

double TokenBucket::accrued(Duration elapsed) const {
    // Whole seconds and the rest apart: for a whole-number rate, both
    // products are whole numbers a double holds exactly, and the division
    // is exact whenever the true result is a whole number (rate 2 x
    // 500 000 000 ns / 1e9 is exactly 1), so tokens land on the exact
    // nanosecond however long the bucket runs.
    const std::int64_t ns = std::max(elapsed, Duration{}).count();
    const std::int64_t seconds = ns / 1'000'000'000;
    const std::int64_t rest = ns % 1'000'000'000;
    return rate_ * static_cast<double>(seconds) + rate_ * static_cast<double>(rest) / nanos_per_second;
}

double TokenBucket::uncapped(Time now) const {
    // From the reference, never a running sum of small refills.
    return (base_ - static_cast<double>(taken_)) + accrued(clamp(now) - ref_);
}

double TokenBucket::tokens_at(Time now) const {
    return std::clamp(uncapped(now), 0.0, static_cast<double>(burst_));
}

void TokenBucket::rebase(Time now) {
    now = clamp(now);
    const double level = uncapped(now);
    if (level >= burst_) {
        // Full: what accrued beyond the burst is lost, and the level is
        // known exactly.
        ref_ = now;
        base_ = burst_;
        taken_ = 0;
    } else if (now - ref_ >= rebase_after) {
        // Move the reference by whole seconds: the level is the same
        // function of time afterwards, and for a whole-number rate the new
        // base is computed exactly.
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - ref_);
        base_ = (base_ - static_cast<double>(taken_)) + accrued(seconds);
        ref_ += seconds;
        taken_ = 0;
    }
}

bool TokenBucket::try_take(std::uint32_t n, Time now) {
    if (n == 0) return true;
    rebase(now);
    if (uncapped(now) < n) return false;
    taken_ += n;
    return true;
}

std::optional<Time> TokenBucket::next_available(std::uint32_t n, Time now) const {
    const Time from = clamp(now);
    if (n == 0) return from;
    // Before reading the level: `uncapped` may exceed the burst, and more
    // than the burst can never be taken.
    if (n > burst_) return std::nullopt;
    if (uncapped(from) >= n) return from;
    if (rate_ <= 0) return std::nullopt;

    // Solve base - taken + rate x elapsed / 1e9 >= n for the elapsed
    // nanoseconds since the reference, then correct the rounding of that
    // division against `uncapped` itself, so that `try_take(n, t)` succeeds
    // at the returned t and fails one nanosecond earlier.
    const double missing = static_cast<double>(n) + static_cast<double>(taken_) - base_;
    const double elapsed = std::ceil(missing * nanos_per_second / rate_);
    const double room = static_cast<double>(Time::max().time_since_epoch().count() - ref_.time_since_epoch().count());
    if (!(elapsed < room - 1024)) return std::nullopt;  // beyond the end of the time axis

    Time at = ref_ + Duration(static_cast<Duration::rep>(elapsed));
    constexpr Duration one_ns{1};
    while (uncapped(at) < n) at += one_ns;
    while (at > from && uncapped(at - one_ns) >= n) at -= one_ns;
    return std::max(at, from);
}

void TokenBucket::set_rate(double rate_per_s, Time now) {
    now = clamp(now);
    // Accrue at the old rate up to `now`, then start over from there.
    base_ = tokens_at(now);
    ref_ = now;
    taken_ = 0;
    rate_ = rate_per_s;
}

}  // namespace cronoq::core::detail
