#pragma once
// From a run to the figures of one table row, and from rows to text.
#include "sim.hpp"

#include <array>
#include <string>
#include <vector>

namespace cronoq::sim {

/// A percentile of waits, over the tasks that became ready in the first
/// 90 % of the horizon (`measured_until`), so that the last arrivals, which
/// had no time to start, do not blur it. A task of that window never started
/// by the horizon counts with the wait it had so far, a lower bound; a
/// percentile such a task may push up is itself only a lower bound
/// ("> value").
struct Quantile {
    Nanos value = 0;
    bool lower_bound = false;
    bool empty = true;
};

/// A task "starved" if it became ready in the first 1 % of the horizon and
/// had not started by its end: it waited through the whole run, the
/// simulator's stand-in for an unbounded wait.
inline constexpr double starved_before = 0.01;

/// How late a fixed start may be dispatched and still count as on time
/// (TaskSpec::start_tolerance's default).
inline constexpr Nanos start_tolerance = 1'000'000'000;
/// How long before a fixed start the engine keeps a worker free for it
/// (PoolConfig::max_hold's default).
inline constexpr Nanos max_hold = 30'000'000'000;

struct Row {
    Policy policy = Policy::Cronoq;
    std::array<Quantile, priority_count> p50{}, p99{};
    std::size_t deadline_known = 0;  ///< deadline tasks whose deadline is within the horizon
    std::size_t deadline_hit = 0;    ///< ... that succeeded by it
    std::uint64_t contended = 0;
    std::uint64_t contended_best = 0;
    bool judged = false;             ///< adherence was measured
    bool low_started = false;
    Nanos max_low_wait = 0;          ///< over Low tasks that started
    std::size_t low_unstarted = 0;   ///< Low tasks still waiting to start at the horizon
    Nanos oldest_low_unstarted = 0;  ///< the wait so far of the oldest of them
    std::array<bool, priority_count> starved{};  ///< per class, see `starved_before`
    double utilization = 0;          ///< busy worker-time / (workers * horizon)
    std::size_t arrived = 0, ended = 0, running = 0, waiting = 0, rejected = 0;
    std::size_t starts_known = 0;    ///< fixed starts admitted, due by the horizon less the tolerance
    std::size_t starts_hit = 0;      ///< ... dispatched within the tolerance
    /// Of the starts known, those that the workers freed in this run could
    /// not have met without preempting, one start per freed worker
    /// (count_reachable_starts in report.cpp).
    std::size_t starts_unreachable = 0;
    std::size_t starts_hit_reachable = 0;  ///< hits among the other starts
    std::uint64_t retries = 0;
    std::size_t failed = 0, dead_lettered = 0;
};

/// Waits are measured for tasks ready before this time.
Nanos measured_until(const Trace& trace);

Row summarize(const Trace& trace, const RunResult& run);

enum class Format { Text, Markdown };

std::string format_duration(Nanos ns);
std::string format_count(std::size_t n);
std::string format_percent(std::size_t part, std::size_t whole);
/// "-" or the initials of the classes, e.g. "N L".
std::string format_starved(const std::array<bool, priority_count>& starved);

/// The title of a trace's table: workload, load and what the trace holds.
std::string describe(const Trace& trace, const SimConfig& config);
/// One main table: a row per policy.
std::string render_table(const Trace& trace, const SimConfig& config, const std::vector<Row>& rows, Format format);

/// The rows of one variant trace, for the variant tables.
struct VariantRows {
    std::string trace;  ///< "(a) 2.0x", say
    std::size_t tasks = 0;
    std::vector<Row> rows;  ///< one per policy, in `policies` order
};
/// Fixed starts: per trace, each policy's hit rate.
std::string render_fixed_starts(const std::vector<VariantRows>& traces, Format format);
/// Failures and learned durations: per trace and policy.
std::string render_failures(const std::vector<VariantRows>& traces, Format format);

}  // namespace cronoq::sim
