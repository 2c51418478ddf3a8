#pragma once
// The soak's accounting: what each handle's result said, what the status
// event stream said, and the checks that the two agree with each other, with
// each task's plan and with the engine's counters.
#include "plan.hpp"

#include <cronoq/cronoq.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

namespace soak {

inline constexpr std::size_t status_count = static_cast<std::size_t>(cronoq::TaskStatus::Shed) + 1;

/// Written concurrently by io threads, each slot by one coroutine; read by
/// the main thread only after those threads have been joined.
struct Ledger {
    explicit Ledger(std::uint32_t tasks) : plans(tasks), ids(tasks), handle_status(tasks, no_status) {
        events.reserve(tasks);
    }

    static constexpr std::uint8_t no_status = 0xFF;

    std::vector<Plan> plans;
    std::vector<cronoq::TaskId> ids;
    std::vector<std::uint8_t> handle_status;     // TaskStatus from result(), by index
    std::atomic<std::uint64_t> wrong_outputs{0};  // a Succeeded result that is not the task's index

    struct EventRecord {
        std::uint32_t terminal_events = 0;
        cronoq::TaskStatus last_terminal = cronoq::TaskStatus::Ready;
    };
    std::unordered_map<std::uint64_t, EventRecord> events;  // by TaskId, from the event stream
    std::uint64_t events_seen = 0;
    std::uint64_t events_dropped = 0;
};

/// Collects violations; prints the first few of each run.
class Violations {
public:
    void add(const std::string& what) {
        if (count_ < shown) std::fprintf(stderr, "violation: %s\n", what.c_str());
        ++count_;
    }
    std::uint64_t count() const { return count_; }

private:
    static constexpr std::uint64_t shown = 20;
    std::uint64_t count_ = 0;
};

inline std::string name_of(cronoq::TaskStatus s) { return std::string(cronoq::to_string(s)); }

/// Every task ended exactly once, as its plan allows, and handle, event
/// stream and engine counters tell the same story. Returns the number of
/// tasks per terminal status.
inline std::array<std::uint64_t, status_count> check_ledger(const Ledger& ledger, const cronoq::core::PoolCounters& counters,
                                                            std::uint32_t max_attempts, Violations& violations) {
    std::array<std::uint64_t, status_count> by_status{};
    std::uint64_t expected_retries = 0;
    for (std::size_t i = 0; i < ledger.plans.size(); ++i) {
        const Plan& plan = ledger.plans[i];
        const std::string task = "task " + std::to_string(i) + " (id " + std::to_string(ledger.ids[i].value) + ", " +
                                 std::string(outcome_names[static_cast<std::size_t>(plan.outcome)]) + ")";
        expected_retries += retries_of(plan.outcome, max_attempts);
        if (ledger.handle_status[i] == Ledger::no_status) {
            violations.add(task + ": its handle never completed");
            continue;
        }
        const auto status = static_cast<cronoq::TaskStatus>(ledger.handle_status[i]);
        ++by_status[static_cast<std::size_t>(status)];
        if (!cronoq::is_terminal(status)) violations.add(task + ": handle completed as " + name_of(status));
        if (!allows(plan.outcome, status)) violations.add(task + ": ended " + name_of(status));
        const auto event = ledger.events.find(ledger.ids[i].value);
        if (event == ledger.events.end()) {
            violations.add(task + ": no terminal status event");
        } else if (event->second.terminal_events != 1) {
            violations.add(task + ": " + std::to_string(event->second.terminal_events) + " terminal status events");
        } else if (event->second.last_terminal != status) {
            violations.add(task + ": event says " + name_of(event->second.last_terminal) + ", handle says " +
                           name_of(status));
        }
    }
    if (ledger.events.size() != ledger.plans.size()) {
        violations.add("terminal events for " + std::to_string(ledger.events.size()) + " distinct ids, " +
                       std::to_string(ledger.plans.size()) + " tasks submitted");
    }
    if (ledger.events_dropped != 0) violations.add(std::to_string(ledger.events_dropped) + " status events dropped");
    if (ledger.wrong_outputs != 0) violations.add(std::to_string(ledger.wrong_outputs.load()) + " wrong outputs");

    using cronoq::TaskStatus;
    const auto expect_counter = [&](const char* name, std::uint64_t engine, std::uint64_t expected) {
        if (engine != expected) {
            violations.add(std::string("counters().") + name + " = " + std::to_string(engine) + ", expected " +
                           std::to_string(expected));
        }
    };
    const auto count = [&](TaskStatus s) { return by_status[static_cast<std::size_t>(s)]; };
    expect_counter("submitted", counters.submitted, ledger.plans.size());
    expect_counter("succeeded", counters.succeeded, count(TaskStatus::Succeeded));
    expect_counter("failed", counters.failed, count(TaskStatus::Failed));
    expect_counter("dead_lettered", counters.dead_lettered, count(TaskStatus::DeadLettered));
    expect_counter("cancelled", counters.cancelled, count(TaskStatus::Cancelled));
    expect_counter("retried", counters.retried, expected_retries);
    expect_counter("running", counters.running, 0);
    expect_counter("ready", counters.ready, 0);
    expect_counter("retrying", counters.retrying, 0);
    std::uint64_t total = 0;
    for (const std::uint64_t n : by_status) total += n;
    if (total != ledger.plans.size()) {
        violations.add("statuses add up to " + std::to_string(total) + ", not " + std::to_string(ledger.plans.size()));
    }
    return by_status;
}

}  // namespace soak
