#pragma once
// saturating_ns: how every duration-taking function of the public API turns
// the caller's std::chrono::duration into the nanoseconds it works in.
#include <chrono>
#include <cstdint>
#include <limits>
#include <ratio>
#include <type_traits>

namespace cronoq {

/// `d` in nanoseconds, clamped to the range of `std::chrono::nanoseconds`
/// instead of wrapping. The implicit `std::chrono` conversion wraps:
/// `std::chrono::nanoseconds(std::chrono::hours::max())` is about -1 h, so
/// "start in `hours::max()`", the obvious "never", would be in the past.
/// Here it is `nanoseconds::max()`, about 292 years, which every cronoq
/// function treats as never (times add to it saturating).
///
/// - Integer durations convert exactly when they fit and truncate toward
///   zero like `duration_cast` (1 ps is 0 ns).
/// - Floating-point durations truncate toward zero; infinities clamp to the
///   ends of the range.
/// - NaN becomes `nanoseconds::min()`: not a length of time, so it takes
///   the value that every validating setter rejects as negative (a timeout,
///   a retention, a lease TTL) and that waits (`get_for`, `advance`,
///   shutdown graces) treat as "not at all".
template <class Rep, class Period>
constexpr std::chrono::nanoseconds saturating_ns(std::chrono::duration<Rep, Period> d) noexcept {
    static_assert(std::is_arithmetic_v<Rep>, "saturating_ns takes durations with an arithmetic representation");
    using ns = std::chrono::nanoseconds;
    constexpr auto max = std::numeric_limits<std::int64_t>::max();
    constexpr auto min = std::numeric_limits<std::int64_t>::min();
    if constexpr (std::is_floating_point_v<Rep>) {
        using Wide = std::common_type_t<Rep, double>;
        const Wide x = std::chrono::duration<Wide, std::nano>(d).count();
        if (x != x) return ns::min();  // NaN; std::isnan is not constexpr in C++20
        // Both limits are powers of two or exactly representable, so values
        // that pass these tests convert without overflow.
        if (x >= static_cast<Wide>(max)) return ns::max();
        if (x <= static_cast<Wide>(min)) return ns::min();
        return ns(static_cast<std::int64_t>(x));
    } else {
        static_assert(sizeof(Rep) <= sizeof(std::int64_t), "saturating_ns takes representations of at most 64 bits");
        using R = std::ratio_divide<Period, std::nano>;
        // |count| < 2^64 and num < 2^63: the product fits in 128 bits.
        __extension__ using Wide = __int128;
        const Wide count = static_cast<Wide>(d.count());
        const Wide scaled = count * R::num / R::den;
        if (scaled > max) return ns::max();
        if (scaled < min) return ns::min();
        return ns(static_cast<std::int64_t>(scaled));
    }
}

}  // namespace cronoq
