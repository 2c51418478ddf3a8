// Seeded traces: Poisson arrivals, service times per workload, a class mix
// and soft deadlines, and in the variants fixed starts or failed attempts.
// Generated once per workload x load x variant x seed and shared by every
// policy.
#include "sim.hpp"

#include <cmath>
#include <stdexcept>

namespace cronoq::sim {

std::uint64_t Rng::next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double Rng::exponential(double mean) { return -mean * std::log1p(-uniform()); }

double Workload::mean_service_seconds() const {
    return shape == Shape::Uniform ? (a_seconds + b_seconds) / 2 : a_seconds + b_seconds;
}

double Workload::draw_service_seconds(Rng& rng) const {
    if (shape == Shape::Uniform) return a_seconds + (b_seconds - a_seconds) * rng.uniform();
    return a_seconds + rng.exponential(b_seconds);
}

const std::array<Workload, 3>& workloads() {
    static const std::array<Workload, 3> all{{
        {"a", "microtasks", "uniform 1-11 ms", Workload::Shape::Uniform, 0.001, 0.011},
        {"b", "LLM-like", "0.5 s + exponential (mean 3 s)", Workload::Shape::ShiftedExponential, 0.5, 3.0},
        {"c", "batch", "uniform 10-70 s", Workload::Shape::Uniform, 10.0, 70.0},
    }};
    return all;
}

namespace {

Nanos to_nanos(double seconds) { return static_cast<Nanos>(std::llround(seconds * 1e9)); }

Priority draw_class(Rng& rng, const std::array<double, priority_count>& share) {
    double u = rng.uniform();
    for (std::size_t c = 0; c + 1 < priority_count; ++c) {
        if (u < share[c]) return static_cast<Priority>(c);
        u -= share[c];
    }
    return Priority::Low;
}

}  // namespace

Trace make_trace(const Workload& workload, std::size_t workload_index, double load, std::size_t load_index,
                 const SimConfig& config, Variant variant) {
    if (config.workers == 0) throw std::invalid_argument("workers must be positive");
    // One independent stream per (seed, workload, load, variant); the main
    // traces keep the stream they always had.
    const auto variant_index = static_cast<std::uint64_t>(variant);
    Rng mixer(config.seed * 0x100000001b3ULL + workload_index * 131 + load_index * 7 + 1 + variant_index * 100003);
    Rng rng(mixer.next());

    const double mean = workload.mean_service_seconds();
    const double workers = static_cast<double>(config.workers);
    const double rate = load * workers / mean;  // arrivals per second
    const double horizon_s = config.tasks_at_unit_load * mean / workers;

    Trace trace;
    trace.workload = &workload;
    trace.load = load;
    trace.workers = config.workers;
    trace.horizon = to_nanos(horizon_s);
    trace.variant = variant;
    trace.tasks.reserve(static_cast<std::size_t>(rate * horizon_s * 1.1) + 16);

    double t = 0;
    for (;;) {
        t += rng.exponential(1.0 / rate);
        const Nanos arrival = to_nanos(t);
        if (arrival >= trace.horizon) break;
        TaskRec task;
        task.arrival = arrival;
        task.service = std::max<Nanos>(1, to_nanos(workload.draw_service_seconds(rng)));
        task.priority = draw_class(rng, config.class_share);
        task.has_deadline = rng.uniform() < config.deadline_share;
        if (variant == Variant::FixedStarts && rng.uniform() < config.fixed_start_share) {
            task.start = arrival + to_nanos(1.0 + 59.0 * rng.uniform());
            task.has_deadline = false;  // a start and a deadline would measure each other
        }
        if (task.has_deadline) {
            task.deadline = arrival + to_nanos(config.deadline_factor * static_cast<double>(task.service) / 1e9);
            task.latest_start = task.deadline - task.service;
        }
        if (variant == Variant::Failures) {
            for (AttemptEnd& end : task.attempts) {
                const double u = rng.uniform();
                end = u < config.permanent_share                            ? AttemptEnd::Permanent
                      : u < config.permanent_share + config.retryable_share ? AttemptEnd::Retryable
                                                                            : AttemptEnd::Success;
            }
        }
        trace.tasks.push_back(task);
    }
    return trace;
}

const char* to_string(Policy p) {
    switch (p) {
        case Policy::Cronoq: return "cronoq";
        case Policy::Shares: return "cronoq+shares";
        case Policy::Fifo: return "fifo";
        case Policy::Strict: return "strict";
    }
    return "?";
}

core::EngineConfig engine_config(Policy p, const SimConfig& config) {
    core::EngineConfig engine = config.engine;
    if (p == Policy::Shares) engine.priority.min_share = config.shares;
    return engine;
}

}  // namespace cronoq::sim
