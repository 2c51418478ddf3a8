#pragma once
// cronoq_sim: a discrete-event simulator of one worker pool under virtual
// time. The same seeded trace of arrivals and service times is run through
// the engine (`core::Engine`) and through two baselines written here (plain
// FIFO and strict class priority), and the scheduling quality of each is
// tabulated (docs/PERFORMANCE.md).
#include <cronoq/core/engine.hpp>
#include <cronoq/priority.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cronoq::sim {

/// Simulated time: nanoseconds from the start of the run, as `core::Time`.
using Nanos = std::int64_t;
inline constexpr Nanos not_yet = -1;
inline constexpr Nanos nanos_per_second = 1000000000;

/// SplitMix64: small, fast and fully specified, so a seed gives the same
/// trace with any standard library.
class Rng {
public:
    explicit Rng(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next();
    /// Uniform in [0, 1), 53 bits.
    double uniform();
    /// Exponential with the given mean.
    double exponential(double mean);

private:
    std::uint64_t state_;
};

/// How long a task of a workload runs.
struct Workload {
    const char* key;          ///< "a", "b", "c"
    const char* name;         ///< for the table titles
    const char* service_text; ///< the distribution, in words
    enum class Shape { Uniform, ShiftedExponential } shape;
    double a_seconds;  ///< Uniform: min; ShiftedExponential: shift
    double b_seconds;  ///< Uniform: max; ShiftedExponential: mean of the exponential part
    double mean_service_seconds() const;
    double draw_service_seconds(Rng& rng) const;
};

/// The three workloads of the report.
const std::array<Workload, 3>& workloads();
inline constexpr std::array<double, 3> loads{0.7, 1.0, 2.0};

struct SimConfig {
    std::uint64_t seed = 1;
    std::size_t workers = 16;
    /// Sets the horizon: the number of arrivals expected at 1.0x load
    /// (horizon = this * mean service / workers).
    double tasks_at_unit_load = 100000;
    /// Critical, High, Normal, Low shares of the arrivals.
    std::array<double, priority_count> class_share{0.05, 0.15, 0.50, 0.30};
    double deadline_share = 0.30;  ///< tasks that carry a deadline
    double deadline_factor = 3.0;  ///< deadline = arrival + factor * service
    core::EngineConfig engine{};   ///< default SPEC §3 constants
    /// Cross-check the score model against a scan of the ready set (slow).
    bool verify_model = false;
};

struct TaskRec {
    Nanos arrival = 0;
    Nanos service = 0;
    Nanos deadline = 0;      ///< with has_deadline
    Nanos latest_start = 0;  ///< deadline - service (the duration hint is the real service time)
    Priority priority = Priority::Normal;
    bool has_deadline = false;
};

/// One workload at one load: arrivals in time order (ties in index order).
struct Trace {
    const Workload* workload = nullptr;
    double load = 0;
    std::size_t workers = 0;
    Nanos horizon = 0;
    std::vector<TaskRec> tasks;
};

Trace make_trace(const Workload& workload, std::size_t workload_index, double load, std::size_t load_index,
                 const SimConfig& config);

enum class Policy { Cronoq, Fifo, Strict };
inline constexpr std::array<Policy, 3> policies{Policy::Cronoq, Policy::Fifo, Policy::Strict};
const char* to_string(Policy p);

/// What one policy did with one trace, up to the horizon.
struct RunResult {
    Policy policy = Policy::Cronoq;
    std::vector<Nanos> dispatched;  ///< per task; not_yet if never started
    std::vector<Nanos> finished;    ///< per task; not_yet if not done by the horizon
    std::uint64_t dispatches = 0;
    std::uint64_t contended = 0;           ///< dispatches with more than one task ready
    std::uint64_t contended_best = 0;      ///< ... that took a best-scored ready task
    std::uint64_t head_rule_mismatches = 0;  ///< cronoq only: not the SPEC §3 head-comparison choice
    std::uint64_t model_mismatches = 0;      ///< with verify_model: closed form != scan
    std::size_t queued_at_horizon = 0;   ///< per the policy (engine counters for cronoq)
    std::size_t running_at_horizon = 0;
    std::vector<std::string> problems;   ///< inconsistencies seen during the run
};

RunResult run_policy(const Trace& trace, Policy policy, const SimConfig& config);

}  // namespace cronoq::sim
