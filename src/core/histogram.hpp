#pragma once
// A latency histogram of bounded memory (docs/guide/operations.md's wait and run
// percentiles): log-linear buckets in the manner of HdrHistogram.
#include <cronoq/core/time.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cronoq::core::detail {

/// Durations in nanoseconds, from 0 to `max_trackable` (about 39 hours;
/// longer samples count in the top bucket, and in the sum at full value).
///
/// Buckets: exact below 256 ns; above, each power of two is split into 128
/// equal buckets, so a bucket is at most 1/128 of its values wide and a
/// percentile, read at the bucket's middle, is off by at most 0.4 %
/// (HdrHistogram's scheme with 7 sub-bucket bits).
///
/// Memory is allocated per power of two actually used, 128 counters
/// (1 KiB) at a time, at most 41 of them (41 KiB): it depends on the spread
/// of the values, never on their number. `clear()` keeps the allocation,
/// so a histogram reused for every window slice reaches a steady size.
class Histogram {
public:
    static constexpr int sub_bucket_bits = 7;
    static constexpr std::size_t chunk_size = std::size_t{1} << sub_bucket_bits;  // counters per chunk
    static constexpr std::size_t chunk_count = 41;
    /// The largest value told apart from larger ones: 2^47 - 1 ns.
    static constexpr Duration max_trackable{(std::int64_t{1} << 47) - 1};

    /// Negative durations count as 0. Inline: every dispatch and every end
    /// records one.
    void record(Duration value, std::uint64_t times = 1) {
        if (times == 0) return;
        value = std::max(value, Duration{});
        const std::size_t bucket = bucket_of(value);
        chunk(bucket / chunk_size)[bucket % chunk_size] += times;
        min_ = count_ ? std::min(min_, value) : value;
        max_ = count_ ? std::max(max_, value) : value;
        count_ += times;
        sum_seconds_ += to_seconds(value) * static_cast<double>(times);
    }

    std::uint64_t count() const { return count_; }
    /// Sum of the recorded values in seconds (a double: exact enough for a
    /// mean, and it cannot overflow as a 64-bit nanosecond count could).
    double sum_seconds() const { return sum_seconds_; }
    /// 0 when empty.
    Duration mean() const;
    /// Exact smallest and largest values recorded; 0 when empty.
    Duration min() const { return count_ ? min_ : Duration{}; }
    Duration max() const { return count_ ? max_ : Duration{}; }

    /// The value below or at which a share `q` (in [0, 1], clamped) of the
    /// samples lie, by nearest rank: the sample of rank ceil(q x count),
    /// read as the middle of its bucket and kept within [min, max] (the
    /// first and last ranks are the exact min and max). 0 when empty.
    Duration percentile(double q) const;

    /// Adds another histogram's samples: chunk by chunk, no per-sample work.
    void merge(const Histogram& other);

    /// Forgets every sample; keeps the memory for reuse.
    void clear();

    /// Bytes held by the counters (for tests and the metrics of metrics).
    std::size_t memory_bytes() const { return counts_.capacity() * sizeof(std::uint64_t); }

    /// The bucket index of a value and the range [lower, upper] it covers;
    /// exposed so that tests can check the error bound.
    static std::size_t bucket_of(Duration value) {
        const auto v = static_cast<std::uint64_t>(std::clamp(value, Duration{}, max_trackable).count());
        if (v < 2 * chunk_size) return static_cast<std::size_t>(v);  // one bucket per nanosecond
        // v in [2^(shift+7), 2^(shift+8)): its top 8 bits pick the bucket.
        const int shift = static_cast<int>(std::bit_width(v)) - (sub_bucket_bits + 1);
        return static_cast<std::size_t>(shift) * chunk_size + static_cast<std::size_t>(v >> shift);
    }
    static Duration bucket_lower(std::size_t bucket);
    static Duration bucket_upper(std::size_t bucket);

private:
    static constexpr std::uint8_t unallocated = 0xFF;

    std::uint64_t* chunk(std::size_t c) {
        if (offset_[c] == unallocated) add_chunk(c);
        return counts_.data() + static_cast<std::size_t>(offset_[c]) * chunk_size;
    }
    void add_chunk(std::size_t c);

    // Where each chunk's counters start in `counts_` (in chunks), or
    // `unallocated`. Chunks are appended as first used, so `counts_` is
    // not in value order; `percentile` walks `offset_` in value order.
    std::array<std::uint8_t, chunk_count> offset_ = filled_offsets();
    std::vector<std::uint64_t> counts_;
    std::uint64_t count_ = 0;
    double sum_seconds_ = 0;
    Duration min_{};
    Duration max_{};

    static constexpr std::array<std::uint8_t, chunk_count> filled_offsets() {
        std::array<std::uint8_t, chunk_count> a{};
        for (auto& o : a) o = unallocated;
        return a;
    }
};

}  // namespace cronoq::core::detail
