#include "histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace cronoq::core::detail {

namespace {

// Chunk c >= 1 holds the values [2^(c+6), 2^(c+7)) in buckets 2^(c-1) wide;
// chunk 0 holds [0, 128) one nanosecond apiece (as does chunk 1).
constexpr int bucket_shift(std::size_t chunk) { return chunk == 0 ? 0 : static_cast<int>(chunk) - 1; }

}  // namespace

Duration Histogram::bucket_lower(std::size_t bucket) {
    const int shift = bucket_shift(bucket / chunk_size);
    const std::size_t top_bits = bucket - static_cast<std::size_t>(shift) * chunk_size;
    return Duration(static_cast<Duration::rep>(top_bits) << shift);
}

Duration Histogram::bucket_upper(std::size_t bucket) {
    const int shift = bucket_shift(bucket / chunk_size);
    return bucket_lower(bucket) + Duration((Duration::rep{1} << shift) - 1);
}

void Histogram::add_chunk(std::size_t c) {
    offset_[c] = static_cast<std::uint8_t>(counts_.size() / chunk_size);
    // Grow by exactly one chunk: the bound on memory is then the chunks
    // used, not twice that after a vector doubling.
    counts_.reserve(counts_.size() + chunk_size);
    counts_.resize(counts_.size() + chunk_size, 0);
}

Duration Histogram::mean() const {
    if (count_ == 0) return Duration{};
    return Duration(static_cast<Duration::rep>(std::llround(sum_seconds_ / static_cast<double>(count_) * 1e9)));
}

Duration Histogram::percentile(double q) const {
    if (count_ == 0) return Duration{};
    if (!(q > 0)) q = 0;  // NaN reads as 0
    q = std::min(q, 1.0);
    const auto wanted = std::clamp<std::uint64_t>(
        static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))), 1, count_);
    // The extreme ranks are known exactly; no need to read a bucket.
    if (wanted == 1) return min_;
    if (wanted == count_) return max_;
    std::uint64_t seen = 0;
    for (std::size_t c = 0; c < chunk_count; ++c) {
        if (offset_[c] == unallocated) continue;
        const std::uint64_t* counts = counts_.data() + static_cast<std::size_t>(offset_[c]) * chunk_size;
        for (std::size_t k = 0; k < chunk_size; ++k) {
            seen += counts[k];
            if (seen < wanted) continue;
            const std::size_t bucket = c * chunk_size + k;
            const Duration lower = bucket_lower(bucket);
            const Duration middle = lower + (bucket_upper(bucket) - lower) / 2;
            return std::clamp(middle, min_, max_);
        }
    }
    return max_;  // unreachable while the counters add up to count_
}

void Histogram::merge(const Histogram& other) {
    if (other.count_ == 0) return;
    for (std::size_t c = 0; c < chunk_count; ++c) {
        if (other.offset_[c] == unallocated) continue;
        const std::uint64_t* from = other.counts_.data() + static_cast<std::size_t>(other.offset_[c]) * chunk_size;
        std::uint64_t* to = chunk(c);
        for (std::size_t k = 0; k < chunk_size; ++k) to[k] += from[k];
    }
    min_ = count_ ? std::min(min_, other.min_) : other.min_;
    max_ = count_ ? std::max(max_, other.max_) : other.max_;
    count_ += other.count_;
    sum_seconds_ += other.sum_seconds_;
}

void Histogram::clear() {
    std::fill(counts_.begin(), counts_.end(), 0);
    count_ = 0;
    sum_seconds_ = 0;
    min_ = max_ = Duration{};
}

}  // namespace cronoq::core::detail
