#pragma once
// A pool's figures over a sliding window (docs/guide/operations.md): counts, wait and run
// time histograms, busy and capacity worker-seconds. Bounded memory: six
// slices of the window, each with two histograms of at most 41 KiB; and the
// fixed-bucket histograms since the start, for Prometheus.
#include "fixed_histogram.hpp"
#include "histogram.hpp"
#include "sliding_window.hpp"

#include <cronoq/core/time.hpp>
#include <cronoq/pool_stats.hpp>
#include <cronoq/priority.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace cronoq::core::detail {

struct MetricsSlice {
    std::uint64_t dispatched = 0;
    std::uint64_t adherent = 0;  // dispatches that took the best-scored ready task
    std::uint64_t succeeded = 0;
    std::uint64_t failed = 0;
    std::uint64_t retried = 0;
    std::uint64_t dead_lettered = 0;
    std::uint64_t shed = 0;
    std::uint64_t starts_on_time = 0;
    std::uint64_t starts_late = 0;
    double busy_seconds = 0;      // running attempts x time
    double capacity_seconds = 0;  // capacity x time
    Histogram wait;               // ready -> dispatch
    Histogram run;                // attempt start -> end, any outcome

    void clear() {
        dispatched = adherent = succeeded = failed = retried = dead_lettered = shed = 0;
        starts_on_time = starts_late = 0;
        busy_seconds = capacity_seconds = 0;
        wait.clear();
        run.clear();
    }
};

class PoolMetrics {
public:
    explicit PoolMetrics(Duration window) : slices_(window, 6) {}

    MetricsSlice& at(Time now) { return slices_.at(now); }

    /// A dispatch's wait, in `slice` (the window) and since the start.
    void record_wait(MetricsSlice& slice, Priority priority, Duration wait) {
        slice.wait.record(wait);
        waits_[index_of(priority)].record(wait);
    }
    /// An attempt's run time, in the window and since the start.
    void record_run(Time now, Duration run) {
        at(now).run.record(run);
        runs_.record(run);
    }

    /// The figures since the start into `out`: the totals from `counters`
    /// and the fixed-bucket histograms.
    void fill_since_start(const PoolCounters& counters, PoolStats& out) const {
        PoolTotals& t = out.totals;
        t.submitted = counters.submitted;
        t.attempts_started = counters.dispatched;
        t.retried = counters.retried;
        t.succeeded = counters.succeeded;
        t.failed = counters.failed;
        t.dead_lettered = counters.dead_lettered;
        t.cancelled = counters.cancelled;
        t.skipped = counters.skipped;
        t.missed = counters.missed;
        t.shed = counters.shed;
        for (std::size_t c = 0; c < priority_count; ++c) out.wait_histogram[c] = waits_[c].read();
        out.run_histogram = runs_.read();
    }

    /// Integrates busy and capacity slots up to `now`; call before either
    /// changes. The elapsed time goes to the slice of `now` (at most one
    /// slice of blur).
    void accrue(Time now, std::size_t running, std::size_t capacity) {
        if (!started_) {
            started_ = true;
            last_ = now;
            return;
        }
        if (now > last_) {
            const double dt = to_seconds(now - last_);
            MetricsSlice& s = at(now);
            s.busy_seconds += dt * static_cast<double>(running);
            s.capacity_seconds += dt * static_cast<double>(capacity);
            last_ = now;
        }
    }

    /// Sums the live slices into `out` (cleared first), adding the time
    /// since the last accrual without recording it.
    void total(Time now, std::size_t running, std::size_t capacity, MetricsSlice& out) const {
        out.clear();
        slices_.for_each_live(now, [&out](const MetricsSlice& s) {
            out.dispatched += s.dispatched;
            out.adherent += s.adherent;
            out.succeeded += s.succeeded;
            out.failed += s.failed;
            out.retried += s.retried;
            out.dead_lettered += s.dead_lettered;
            out.shed += s.shed;
            out.starts_on_time += s.starts_on_time;
            out.starts_late += s.starts_late;
            out.busy_seconds += s.busy_seconds;
            out.capacity_seconds += s.capacity_seconds;
            out.wait.merge(s.wait);
            out.run.merge(s.run);
        });
        if (started_ && now > last_) {
            const double dt = to_seconds(now - last_);
            out.busy_seconds += dt * static_cast<double>(running);
            out.capacity_seconds += dt * static_cast<double>(capacity);
        }
    }

    Duration window() const { return slices_.window(); }

private:
    SlidingWindow<MetricsSlice> slices_;
    std::array<FixedHistogram, priority_count> waits_{};
    FixedHistogram runs_;
    Time last_{};
    bool started_ = false;
};

}  // namespace cronoq::core::detail
