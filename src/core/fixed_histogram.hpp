#pragma once
// The engine's and the store's side of SecondsHistogram (docs/guide/operations.md,
// "Prometheus"): one counter per bucket, so a sample costs one search and one
// increment; made cumulative only when read.
#include <cronoq/seconds_histogram.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace cronoq::core::detail {

class FixedHistogram {
public:
    /// Negative durations count as 0.
    void record(std::chrono::nanoseconds value) {
        const std::int64_t v = std::max<std::int64_t>(value.count(), 0);
        ++counts_[bucket_of(v)];
        // Whole nanoseconds, made seconds when read: no division per
        // sample. Folded into seconds long before the count could wrap
        // (a sample is below 2^63, the count below 2^62 before it).
        sum_ns_ += static_cast<std::uint64_t>(v);
        if (sum_ns_ >= fold_at_ns) {
            sum_ += static_cast<double>(sum_ns_) / 1e9;
            sum_ns_ = 0;
        }
    }

    /// The index of the first bound >= `v` ("le" buckets include their
    /// bound), `bucket_count` when none is. Every dispatch and every end
    /// records a sample: a search of five fixed steps, which the compiler
    /// unrolls (partly into conditional moves), instead of std::lower_bound's
    /// loop (docs/PERFORMANCE.md, "Round trip").
    static std::size_t bucket_of(std::int64_t v) {
        const auto& bounds = SecondsHistogram::bounds_ns;
        static_assert(SecondsHistogram::bucket_count < 32, "five steps search at most 31 bounds");
        std::size_t below = 0;  // bounds [0, below) are all < v
        for (std::size_t step = 16; step > 0; step /= 2)
            if (below + step <= bounds.size() && bounds[below + step - 1] < v) below += step;
        return below;
    }

    SecondsHistogram read() const {
        SecondsHistogram out;
        std::uint64_t running = 0;
        for (std::size_t i = 0; i < SecondsHistogram::bucket_count; ++i) {
            running += counts_[i];
            out.buckets[i] = running;
        }
        out.count = running + counts_[SecondsHistogram::bucket_count];
        out.sum = sum_ + static_cast<double>(sum_ns_) / 1e9;
        return out;
    }

private:
    // The last counter holds the samples above every bound.
    std::array<std::uint64_t, SecondsHistogram::bucket_count + 1> counts_{};
    static constexpr std::uint64_t fold_at_ns = std::uint64_t{1} << 62;
    std::uint64_t sum_ns_ = 0;  // since the last fold
    double sum_ = 0;            // seconds, folded
};

}  // namespace cronoq::core::detail
