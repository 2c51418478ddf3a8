#pragma once
// The engine's and the store's side of SecondsHistogram (docs/guide/operations.md,
// "Prometheus"): one counter per bucket, so a sample costs one search and one
// increment; made cumulative only when read.
#include <cronoq/seconds_histogram.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace cronoq::core::detail {

class FixedHistogram {
public:
    /// Negative durations count as 0.
    void record(std::chrono::nanoseconds value) {
        const std::int64_t v = std::max<std::int64_t>(value.count(), 0);
        const auto& bounds = SecondsHistogram::bounds_ns;
        // The first bound >= v: "le" buckets include their bound.
        const auto at = static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
        ++counts_[at];
        sum_ += static_cast<double>(v) / 1e9;
    }

    SecondsHistogram read() const {
        SecondsHistogram out;
        std::uint64_t running = 0;
        for (std::size_t i = 0; i < SecondsHistogram::bucket_count; ++i) {
            running += counts_[i];
            out.buckets[i] = running;
        }
        out.count = running + counts_[SecondsHistogram::bucket_count];
        out.sum = sum_;
        return out;
    }

private:
    // The last counter holds the samples above every bound.
    std::array<std::uint64_t, SecondsHistogram::bucket_count + 1> counts_{};
    double sum_ = 0;
};

}  // namespace cronoq::core::detail
