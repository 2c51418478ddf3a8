#pragma once
// Engine time: nanoseconds on a monotonic axis the caller chooses. The engine
// never reads a clock; every call is told `now`, which never goes backwards.
#include <chrono>
#include <cstdint>

namespace cronoq::core {

using Duration = std::chrono::nanoseconds;

/// A tag clock: it only names the time axis. It has no `now()` on purpose.
struct EngineClock {
    using rep = std::int64_t;
    using period = std::nano;
    using duration = Duration;
    using time_point = std::chrono::time_point<EngineClock, Duration>;
    static constexpr bool is_steady = true;
};

using Time = EngineClock::time_point;

constexpr double to_seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

/// `a + b` in nanoseconds, clamped to the representable range instead of
/// overflowing: far-off deadlines and starts given by callers stay far off.
constexpr std::int64_t add_saturated(std::int64_t a, std::int64_t b) {
    std::int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out)) return b > 0 ? INT64_MAX : INT64_MIN;
    return out;
}
constexpr std::int64_t sub_saturated(std::int64_t a, std::int64_t b) {
    std::int64_t out = 0;
    if (__builtin_sub_overflow(a, b, &out)) return b < 0 ? INT64_MAX : INT64_MIN;
    return out;
}
constexpr Time add_saturated(Time t, Duration d) {
    return Time(Duration(add_saturated(t.time_since_epoch().count(), d.count())));
}
/// `a - b`, clamped.
constexpr Duration diff_saturated(Time a, Time b) {
    return Duration(sub_saturated(a.time_since_epoch().count(), b.time_since_epoch().count()));
}

}  // namespace cronoq::core
