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

}  // namespace cronoq::core
