#pragma once
// AttemptObserver: hooks for each attempt's start and end, e.g. to turn
// them into tracing spans (docs/guide/operations.md, "Tracing";
// `Builder::observer`).
#include <cronoq/ids.hpp>
#include <cronoq/task_status.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace cronoq {

/// An attempt that starts: a local executor is about to run it, or its
/// lease is about to go to a remote worker.
struct AttemptStart {
    TaskId task;
    std::uint32_t attempt = 0;  ///< 1 for the first
    LeaseId lease;
    std::string pool, kind;
    std::optional<std::string> key, fair_key;
    /// The submitter's W3C trace context (`Task::traceparent`, else its
    /// "traceparent" tag): the same on every attempt of the task, so that a
    /// tracer links retries to the first attempt's trace.
    std::optional<std::string> traceparent;
    std::chrono::system_clock::time_point at;
};

/// How that attempt ended.
struct AttemptEnd {
    AttemptStart start;
    /// The status the attempt led to: `Succeeded`, `Retrying`, `Failed`,
    /// `DeadLettered`, `Cancelled`; `Ready` for a remote lease its worker
    /// gave back (nacked); `Running` for an attempt a store-backed
    /// shutdown or a lost lead left to the next leader.
    TaskStatus outcome = TaskStatus::Running;
    /// Why, when it did not succeed (the error's message, "timeout", ...).
    std::string message;
    /// From `start.at` to the end, on the scheduler's clock.
    std::chrono::nanoseconds duration{0};
};

/// Either function may be empty. Each start is followed by exactly one
/// end, aborts and abandons included, never the other way round. They are
/// called outside the engine's lock, in the scheduler's order of events,
/// on the thread that starts or ends the attempt; they must not call into
/// the scheduler (that thread still delivers the scheduler's results: a
/// call that waits for the scheduler would wait for itself). What they
/// throw is logged and ignored.
struct AttemptObserver {
    std::function<void(const AttemptStart&)> on_start;
    std::function<void(const AttemptEnd&)> on_end;
};

}  // namespace cronoq
