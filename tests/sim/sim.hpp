#pragma once
// cronoq_sim: a discrete-event simulator of one worker pool under virtual
// time. The same seeded trace of arrivals and service times is run through
// the engine (`core::Engine`, with and without guaranteed shares) and
// through two baselines written here (plain FIFO and strict class
// priority), and the scheduling quality of each is tabulated
// (docs/PERFORMANCE.md).
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
/// The loads of the fixed-start and failure variants (indices into `loads`).
inline constexpr std::array<std::size_t, 2> variant_loads{1, 2};

/// What a trace holds beyond the main tables' tasks.
enum class Variant {
    Main,         ///< arrivals, classes, deadlines with exact duration hints
    FixedStarts,  ///< also fixed starts (no deadline on those)
    Failures,     ///< also failed attempts, and deadlines without a duration hint
};

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
    /// The engine of the "cronoq" column: the docs/guide/ordering.md defaults (and the
    /// default window factor).
    core::EngineConfig engine{};
    /// The "cronoq+shares" column: the same engine with these shares.
    std::array<double, priority_count> shares{0.0, 0.0, 0.05, 0.02};
    /// Fixed starts: this share of tasks starts uniformly 1 to 60 s after
    /// arrival (FixedStarts variant).
    double fixed_start_share = 0.10;
    /// Failures variant: each attempt fails retryably or permanently with
    /// these probabilities (the pools' default RetryPolicy: 3 attempts).
    double retryable_share = 0.05;
    double permanent_share = 0.01;
    /// Cross-check the score model against a scan of the ready set (slow).
    bool verify_model = false;
};

/// How one attempt of a task ends.
enum class AttemptEnd : std::uint8_t { Success, Retryable, Permanent };
inline constexpr std::uint32_t max_attempts = 3;  ///< RetryPolicy{}'s, for every policy

struct TaskRec {
    Nanos arrival = 0;
    Nanos service = 0;       ///< of every attempt
    Nanos deadline = 0;      ///< with has_deadline
    Nanos latest_start = 0;  ///< deadline - service (the duration hint is the real service time)
    Nanos start = not_yet;   ///< a fixed start, if any
    Priority priority = Priority::Normal;
    bool has_deadline = false;
    std::array<AttemptEnd, max_attempts> attempts{};  ///< how attempt 1, 2, 3 ends
    bool has_start() const { return start != not_yet; }
    /// When the task becomes ready, as far as the trace knows (its start or
    /// its arrival).
    Nanos ready_at() const { return has_start() ? start : arrival; }
};

/// One workload at one load: arrivals in time order (ties in index order).
struct Trace {
    const Workload* workload = nullptr;
    double load = 0;
    std::size_t workers = 0;
    Nanos horizon = 0;
    Variant variant = Variant::Main;
    std::vector<TaskRec> tasks;
};

Trace make_trace(const Workload& workload, std::size_t workload_index, double load, std::size_t load_index,
                 const SimConfig& config, Variant variant = Variant::Main);

enum class Policy { Cronoq, Shares, Fifo, Strict };
inline constexpr std::array<Policy, 4> policies{Policy::Cronoq, Policy::Shares, Policy::Fifo, Policy::Strict};
const char* to_string(Policy p);
inline bool is_engine(Policy p) { return p == Policy::Cronoq || p == Policy::Shares; }

/// The engine configuration a policy column runs with.
core::EngineConfig engine_config(Policy p, const SimConfig& config);

enum class Ended : std::uint8_t { No, Succeeded, Failed, DeadLettered };

/// What one policy did with one trace, up to the horizon.
struct RunResult {
    Policy policy = Policy::Cronoq;
    std::vector<Nanos> dispatched;  ///< per task, its first attempt; not_yet if never started
    std::vector<Nanos> finished;    ///< per task, when it ended; not_yet if not by the horizon
    std::vector<Ended> ended;       ///< per task, how
    std::vector<bool> rejected;     ///< per task: the engine refused it (ReservationConflict)
    std::uint64_t dispatches = 0;   ///< attempts started
    std::uint64_t retries = 0;      ///< attempts that failed and were scheduled again
    Nanos busy = 0;                 ///< worker time of the attempts, up to the horizon
    std::uint64_t contended = 0;           ///< dispatches with more than one task ready (main traces)
    std::uint64_t contended_best = 0;      ///< ... that took a best-scored ready task
    std::uint64_t head_rule_mismatches = 0;  ///< engine only: not the docs/guide/ordering.md head rule's choice (with shares)
    std::uint64_t model_mismatches = 0;      ///< with verify_model: closed form != scan
    bool judged = false;                     ///< adherence and the head rule were measured (main traces)
    std::vector<Nanos> completions;          ///< when attempts ended (a worker freed), in time order
    /// Per task: when it arrived, a worker was free beyond those that the
    /// fixed starts due within `max_hold` (30 s) may be waiting for.
    std::vector<bool> spare_at_arrival;
    std::size_t waiting_at_horizon = 0;  ///< admitted, not running, not ended
    std::size_t running_at_horizon = 0;
    std::vector<std::string> problems;   ///< inconsistencies seen during the run
};

RunResult run_policy(const Trace& trace, Policy policy, const SimConfig& config);

}  // namespace cronoq::sim
