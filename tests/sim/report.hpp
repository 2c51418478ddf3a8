#pragma once
// From a run to the figures of one table row, and from rows to text.
#include "sim.hpp"

#include <array>
#include <string>
#include <vector>

namespace cronoq::sim {

/// A percentile of waits, over the tasks that arrived in the first 90 % of
/// the horizon (`measured_until`), so that the last arrivals, which had no
/// time to start, do not blur it. A task of that window never started by the
/// horizon counts with the wait it had so far, a lower bound; a percentile
/// such a task may push up is itself only a lower bound ("> value").
struct Quantile {
    Nanos value = 0;
    bool lower_bound = false;
    bool empty = true;
};

struct Row {
    Policy policy = Policy::Cronoq;
    std::array<Quantile, priority_count> p50{}, p99{};
    std::size_t deadline_known = 0;  ///< deadline tasks whose deadline is within the horizon
    std::size_t deadline_hit = 0;    ///< ... that finished by it
    std::uint64_t contended = 0;
    std::uint64_t contended_best = 0;
    bool low_started = false;
    Nanos max_low_wait = 0;          ///< over Low tasks that started
    std::size_t low_unstarted = 0;   ///< Low tasks still queued at the horizon
    Nanos oldest_low_unstarted = 0;  ///< the wait so far of the oldest of them
    double utilization = 0;          ///< busy worker-time / (workers * horizon)
    std::size_t arrived = 0, finished = 0, running = 0, queued = 0;
};

/// Waits are measured for arrivals before this time.
Nanos measured_until(const Trace& trace);

Row summarize(const Trace& trace, const RunResult& run);

enum class Format { Text, Markdown };

std::string format_duration(Nanos ns);
std::string format_count(std::size_t n);

/// The title of a trace's table: workload, load and what the trace holds.
std::string describe(const Trace& trace, const SimConfig& config);
/// One table: a row per policy.
std::string render_table(const Trace& trace, const SimConfig& config, const std::vector<Row>& rows, Format format);

}  // namespace cronoq::sim
