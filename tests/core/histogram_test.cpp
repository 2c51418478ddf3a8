// Latency histograms and sliding windows (docs/guide/operations.md's wait/run percentiles
// and "in the last 60 s" figures), under virtual time.
#include "core/histogram.hpp"
#include "core/sliding_window.hpp"

#include "core/backoff.hpp"  // detail::Rng: the same samples on every platform

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>
#include <vector>

namespace cronoq::core::detail::histogram_test {
namespace {

using namespace std::chrono_literals;

constexpr Time t0{};

// The exact nearest-rank percentile, the definition Histogram follows.
Duration exact_percentile(std::vector<Duration> sorted, double q) {
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

void expect_percentiles_close(std::vector<Duration> samples, double tolerance) {
    Histogram h;
    for (Duration d : samples) h.record(d);
    std::sort(samples.begin(), samples.end());
    for (double q : {0.5, 0.9, 0.99, 0.999}) {
        const auto exact = static_cast<double>(exact_percentile(samples, q).count());
        const auto estimate = static_cast<double>(h.percentile(q).count());
        EXPECT_NEAR(estimate / exact, 1.0, tolerance) << "q = " << q << ": " << estimate << " vs " << exact;
    }
    EXPECT_EQ(h.percentile(0.0), samples.front());  // read within [min, max]
    EXPECT_EQ(h.percentile(1.0), samples.back());
}

TEST(Histogram, PercentilesOfUniformSamplesWithin2Percent) {
    Rng rng(42);
    std::vector<Duration> samples;
    for (int i = 0; i < 100'000; ++i)  // uniform in [1 us, 1 s]
        samples.emplace_back(1'000 + static_cast<Duration::rep>(rng.unit() * 999'999'000.0));
    expect_percentiles_close(samples, 0.02);
    // The bucket scheme promises far better: half a bucket, under 0.4 %.
    expect_percentiles_close(samples, 0.004);
}

TEST(Histogram, PercentilesOfLogNormalSamplesWithin2Percent) {
    Rng rng(7);
    std::vector<Duration> samples;
    for (int i = 0; i < 100'000; ++i) {
        // Box-Muller: a standard normal from two uniforms; e^(ln 5 ms + 1.5 z)
        // spans microseconds to tens of seconds, like real latencies.
        const double u1 = std::max(rng.unit(), 1e-300);
        const double u2 = rng.unit();
        const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
        samples.emplace_back(static_cast<Duration::rep>(5e6 * std::exp(1.5 * z)));
    }
    expect_percentiles_close(samples, 0.02);
    expect_percentiles_close(samples, 0.004);
}

TEST(Histogram, EveryBucketIsAtMostA128thOfItsValues) {
    for (std::int64_t v = 1; v < Histogram::max_trackable.count(); v = v * 17 / 16 + 1) {
        const std::size_t b = Histogram::bucket_of(Duration(v));
        const Duration lower = Histogram::bucket_lower(b);
        const Duration upper = Histogram::bucket_upper(b);
        ASSERT_LE(lower.count(), v);
        ASSERT_GE(upper.count(), v);
        ASSERT_LE(static_cast<double>((upper - lower).count()) / static_cast<double>(lower.count()), 1.0 / 128)
            << "value " << v;
        ASSERT_LT(b, Histogram::chunk_count * Histogram::chunk_size);
    }
    EXPECT_EQ(Histogram::bucket_of(Duration(255)), 255u);  // exact below 256 ns
    EXPECT_EQ(Histogram::bucket_of(Duration(-5)), 0u);
    EXPECT_EQ(Histogram::bucket_of(Duration::max()), Histogram::bucket_of(Histogram::max_trackable));
}

TEST(Histogram, CountsSumMeanMinMax) {
    Histogram h;
    EXPECT_EQ(h.count(), 0u);
    EXPECT_EQ(h.percentile(0.5), 0ns);  // empty reads as 0
    EXPECT_EQ(h.mean(), 0ns);
    h.record(1ms);
    h.record(3ms);
    h.record(-1s);  // counts as 0
    h.record(2ms, 3);
    EXPECT_EQ(h.count(), 6u);
    EXPECT_DOUBLE_EQ(h.sum_seconds(), 0.010);
    EXPECT_EQ(h.mean(), Duration(1'666'667));
    EXPECT_EQ(h.min(), 0ns);
    EXPECT_EQ(h.max(), 3ms);
    const Duration median = h.percentile(0.5);  // rank 3: a 2 ms sample
    EXPECT_NEAR(static_cast<double>(median.count()), 2e6, 2e6 / 256);
}

TEST(Histogram, MergeEqualsRecordingEverythingInOne) {
    Rng rng(3);
    Histogram a, b, all;
    for (int i = 0; i < 10'000; ++i) {
        const Duration d(static_cast<Duration::rep>(rng.unit() * 1e10));
        (i % 3 == 0 ? a : b).record(d);
        all.record(d);
    }
    Histogram merged;
    merged.merge(a);
    merged.merge(b);
    EXPECT_EQ(merged.count(), all.count());
    EXPECT_EQ(merged.min(), all.min());
    EXPECT_EQ(merged.max(), all.max());
    EXPECT_NEAR(merged.sum_seconds(), all.sum_seconds(), 1e-6);
    for (double q : {0.1, 0.5, 0.9, 0.99}) EXPECT_EQ(merged.percentile(q), all.percentile(q)) << q;
}

TEST(Histogram, MemoryDoesNotGrowWithSamples) {
    Rng rng(11);
    Histogram h;
    // Spread over the whole range at once, so every chunk is in use.
    for (int i = 0; i < 100'000; ++i) h.record(Duration(static_cast<Duration::rep>(std::exp2(rng.unit() * 47.0))));
    const std::size_t full = h.memory_bytes();
    EXPECT_LE(full, Histogram::chunk_count * Histogram::chunk_size * sizeof(std::uint64_t));
    for (int i = 0; i < 1'000'000; ++i) h.record(Duration(static_cast<Duration::rep>(std::exp2(rng.unit() * 47.0))));
    EXPECT_EQ(h.memory_bytes(), full);
    EXPECT_EQ(h.count(), 1'100'000u);

    // Memory follows the spread of the values, not their number: latencies
    // between 1 ms and 2 s touch 12 powers of two.
    Histogram narrow;
    for (int i = 0; i < 100'000; ++i) narrow.record(1ms + Duration(static_cast<Duration::rep>(rng.unit() * 2e9)));
    EXPECT_LE(narrow.memory_bytes(), 13 * Histogram::chunk_size * sizeof(std::uint64_t));

    // Cleared, it keeps its memory for the next window slice.
    narrow.clear();
    EXPECT_EQ(narrow.count(), 0u);
    EXPECT_GT(narrow.memory_bytes(), 0u);
}

TEST(WindowedHistogram, ForgetsSamplesOlderThanTheWindow) {
    WindowedHistogram h(60s, 6);
    for (int i = 0; i < 100; ++i) h.record(1ms, t0);
    for (int i = 0; i < 100; ++i) h.record(10ms, t0 + 30s);
    EXPECT_EQ(h.count(t0 + 30s), 200u);
    EXPECT_EQ(h.count(t0 + 60s - 1ns), 200u);
    // The slice of [0, 10 s) leaves the window at 60 s.
    EXPECT_EQ(h.count(t0 + 60s), 100u);
    const Histogram last_minute = h.snapshot(t0 + 60s);
    EXPECT_EQ(last_minute.percentile(0.5), 10ms);
    EXPECT_EQ(h.count(t0 + 90s), 0u);

    // A slice reused after a long gap starts empty.
    h.record(5ms, t0 + 1h);
    const Histogram later = h.snapshot(t0 + 1h);
    EXPECT_EQ(later.count(), 1u);
    EXPECT_EQ(later.max(), 5ms);
}

TEST(WindowedHistogram, ASampleLivesBetweenFiftyAndSixtySeconds) {
    WindowedHistogram h(60s, 6);
    h.record(1ms, t0 + 9999ms);  // late in the slice [0, 10 s)
    EXPECT_EQ(h.count(t0 + 59999ms), 1u);
    EXPECT_EQ(h.count(t0 + 60s), 0u);  // 50.001 s after it was recorded
    EXPECT_EQ(h.window(), 60s);
}

TEST(WindowedHistogram, MemoryIsBoundedWhateverTheSampleCount) {
    Rng rng(5);
    WindowedHistogram h(60s, 6);
    Time now = t0;
    std::size_t after_first_window = 0;
    // Ten minutes at 1 000 samples per virtual second.
    for (int second = 0; second < 600; ++second, now += 1s) {
        for (int i = 0; i < 1000; ++i) h.record(Duration(static_cast<Duration::rep>(std::exp2(rng.unit() * 47.0))), now);
        if (second == 60) after_first_window = h.memory_bytes();
    }
    EXPECT_EQ(h.memory_bytes(), after_first_window);
    EXPECT_LE(h.memory_bytes(), 6 * Histogram::chunk_count * Histogram::chunk_size * sizeof(std::uint64_t));
    // The window holds 51 to 60 seconds of samples: here the last 60.
    EXPECT_EQ(h.count(now - 1s), 60'000u);
}

TEST(WindowedCounter, CountsTheLastWindowOnly) {
    WindowedCounter dispatched(60s, 6);
    for (int second = 0; second < 120; ++second) dispatched.add(t0 + second * 1s);
    // At 119 s the window holds the slices from 60 s: 60 adds.
    EXPECT_EQ(dispatched.total(t0 + 119s), 60u);
    EXPECT_EQ(dispatched.total(t0 + 170s), 0u);
    dispatched.add(t0 + 170s, 5);
    EXPECT_EQ(dispatched.total(t0 + 170s), 5u);

    WindowedSum<double> busy_seconds(60s, 6);
    busy_seconds.add(t0 + 1s, 0.5);
    busy_seconds.add(t0 + 2s, 1.25);
    EXPECT_DOUBLE_EQ(busy_seconds.total(t0 + 2s), 1.75);
}

TEST(SlidingWindow, TimeBeforeTheOriginAndOutOfOrderReads) {
    WindowedCounter c(10s, 2);  // slices of 5 s
    c.add(t0 - 1ns);            // period -1, not 0
    c.add(t0);
    EXPECT_EQ(c.total(t0), 2u);
    EXPECT_EQ(c.total(t0 + 5s), 1u);
    // A read with an earlier `now` than the latest write is read at the
    // latest write: time never goes backwards.
    c.add(t0 + 20s);
    EXPECT_EQ(c.total(t0), 1u);
}

}  // namespace
}  // namespace cronoq::core::detail::histogram_test
