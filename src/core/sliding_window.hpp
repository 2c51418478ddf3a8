#pragma once
// Figures over a sliding window of time (docs/guide/operations.md's metrics window, 60 s by
// default), in bounded memory: the window is cut into slices that are
// reused in rotation, so memory depends on the number of slices, never on
// the number of samples.
#include "histogram.hpp"

#include <cronoq/core/time.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace cronoq::core::detail {

/// `slices` values of T, one per `window / slices` of time. Time is cut
/// into periods of one slice length from the axis origin; the slice of
/// period p is `slices_[p mod slices]`, emptied when a later period first
/// writes to it. A read at `now` sees the current period and the
/// `slices - 1` before it: a sample is seen for at least
/// `window - window / slices` and less than `window` (with 6 x 10 s: a
/// sample at 9.9 s is forgotten at 60 s). Nothing is done per period that
/// passes unused, so an idle window costs nothing.
///
/// Time never goes backwards: a `now` earlier than the latest period
/// written is read as that period.
template <class T>
class SlidingWindow {
public:
    explicit SlidingWindow(Duration window = std::chrono::seconds(60), std::size_t slices = 6)
        : slices_(std::max<std::size_t>(slices, 1)),
          slice_length_(std::max(window / static_cast<Duration::rep>(slices_.size()), Duration(1))) {}

    Duration window() const { return slice_length_ * static_cast<Duration::rep>(slices_.size()); }

    /// The value of the slice `now` falls in, for writing.
    T& at(Time now) {
        // Still in the period of the last write (every dispatch and end
        // writes several times): no division, and no call, the rest is
        // out of line (docs/PERFORMANCE.md, "Round trip").
        const std::int64_t t = now.time_since_epoch().count();
        if (t >= latest_begin_ && t < latest_end_) [[likely]]
            return slices_[latest_index_].value;
        return move_to(now);
    }

    /// Calls `f(const T&)` for each slice within the window at `now`.
    template <class F>
    void for_each_live(Time now, F&& f) const {
        const std::int64_t p = std::max(period_of(now), latest_);
        const auto n = static_cast<std::int64_t>(slices_.size());
        for (const Slice& s : slices_)
            if (s.period <= p && s.period > p - n) f(s.value);
    }

    /// Calls `f(const T&)` for every slice, in or out of the window (for
    /// accounting of memory).
    template <class F>
    void for_each_stored(F&& f) const {
        for (const Slice& s : slices_) f(s.value);
    }

private:
    static constexpr std::int64_t never_written = std::numeric_limits<std::int64_t>::min();

    struct Slice {
        std::int64_t period = never_written;
        T value{};
    };

    // The slice of a period other than the last written: the latest
    // period moves on to `now`'s (never back), its slice emptied if it
    // last held an older period.
    [[gnu::noinline]] T& move_to(Time now) {
        const std::int64_t p = std::max(period_of(now), latest_);
        latest_ = p;
        latest_index_ = index_of(p);
        // The period's bounds, saturated at the ends of the axis.
        const std::int64_t len = slice_length_.count();
        constexpr std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
        constexpr std::int64_t highest = std::numeric_limits<std::int64_t>::max();
        latest_begin_ = p < lowest / len ? lowest : p * len;
        latest_end_ = latest_begin_ > highest - len ? highest : latest_begin_ + len;
        Slice& s = slices_[latest_index_];
        if (s.period != p) {
            reset(s.value);
            s.period = p;
        }
        return s.value;
    }

    // Floor division, so that times before the origin of the axis fall in
    // their own periods too.
    std::int64_t period_of(Time now) const {
        const std::int64_t t = now.time_since_epoch().count();
        const std::int64_t len = slice_length_.count();
        return t / len - ((t % len) < 0 ? 1 : 0);
    }
    std::size_t index_of(std::int64_t period) const {
        const auto n = static_cast<std::int64_t>(slices_.size());
        return static_cast<std::size_t>(((period % n) + n) % n);
    }
    static void reset(T& value) {
        if constexpr (requires { value.clear(); })
            value.clear();  // keeps a histogram's memory for reuse
        else
            value = T{};
    }

    std::vector<Slice> slices_;
    Duration slice_length_;
    std::int64_t latest_ = never_written;
    // The latest period's times [begin, end) and slice; empty until a write.
    std::int64_t latest_begin_ = 0;
    std::int64_t latest_end_ = 0;
    std::size_t latest_index_ = 0;
};

/// A sum over the window: "dispatched in the last 60 s" with
/// `WindowedSum<std::uint64_t>` (`WindowedCounter`), busy seconds with
/// `WindowedSum<double>`.
template <class V>
class WindowedSum {
public:
    explicit WindowedSum(Duration window = std::chrono::seconds(60), std::size_t slices = 6)
        : window_(window, slices) {}

    void add(Time now, V amount = V{1}) { window_.at(now) += amount; }

    V total(Time now) const {
        V sum{};
        window_.for_each_live(now, [&sum](const V& v) { sum += v; });
        return sum;
    }

    Duration window() const { return window_.window(); }

private:
    SlidingWindow<V> window_;
};

using WindowedCounter = WindowedSum<std::uint64_t>;

/// Latency percentiles over the window. Memory: `slices` histograms of at
/// most 41 KiB each (see Histogram), whatever the number of samples.
class WindowedHistogram {
public:
    explicit WindowedHistogram(Duration window = std::chrono::seconds(60), std::size_t slices = 6)
        : window_(window, slices) {}

    void record(Duration value, Time now) { window_.at(now).record(value); }

    /// Adds the samples within the window at `now` to `out` (cleared by
    /// the caller when it reuses one): a sum of counters per slice, no
    /// per-sample work. Take one snapshot, then read several percentiles.
    void merge_into(Histogram& out, Time now) const {
        window_.for_each_live(now, [&out](const Histogram& h) { out.merge(h); });
    }

    Histogram snapshot(Time now) const {
        Histogram merged;
        merge_into(merged, now);
        return merged;
    }

    std::uint64_t count(Time now) const {
        std::uint64_t n = 0;
        window_.for_each_live(now, [&n](const Histogram& h) { n += h.count(); });
        return n;
    }

    /// Bytes held by the slices' counters, live or not.
    std::size_t memory_bytes() const {
        std::size_t bytes = 0;
        window_.for_each_stored([&bytes](const Histogram& h) { bytes += h.memory_bytes(); });
        return bytes;
    }

    Duration window() const { return window_.window(); }

private:
    SlidingWindow<Histogram> window_;
};

}  // namespace cronoq::core::detail
