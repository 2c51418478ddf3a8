#pragma once
// SecondsHistogram: durations counted in fixed buckets since a scheduler or a store
// started, the shape Prometheus histograms need (docs/guide/operations.md, "Prometheus").
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace cronoq {

/// Durations counted since the start, never reset, in fixed buckets with
/// upper bounds from 100 µs to 1 h. Unlike the window's percentiles these
/// only grow, so a scraper can take rates and quantiles over any interval.
///
/// `buckets[i]` is cumulative as in Prometheus: the samples at or below
/// `bounds_ns[i]`; samples above the last bound count in `count` only (the
/// `+Inf` bucket). `sum` is in seconds.
struct SecondsHistogram {
    static constexpr std::size_t bucket_count = 20;
    /// Upper bounds in nanoseconds: 100 µs, 250 µs, 500 µs, 1 ms ... 1 min, 5 min, 1 h.
    static constexpr std::array<std::int64_t, bucket_count> bounds_ns{
        100'000,       250'000,       500'000,        1'000'000,      2'500'000,
        5'000'000,     10'000'000,    25'000'000,     50'000'000,     100'000'000,
        250'000'000,   500'000'000,   1'000'000'000,  2'500'000'000,  5'000'000'000,
        10'000'000'000, 30'000'000'000, 60'000'000'000, 300'000'000'000, 3'600'000'000'000};

    std::array<std::uint64_t, bucket_count> buckets{};
    std::uint64_t count = 0;
    double sum = 0;

    /// The upper bound of bucket `i` in seconds.
    static constexpr double bound_seconds(std::size_t i) { return static_cast<double>(bounds_ns[i]) / 1e9; }
};

}  // namespace cronoq
