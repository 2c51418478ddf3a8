#pragma once
// Task statuses (docs/guide/ordering.md).
#include <cstdint>
#include <optional>
#include <string_view>

namespace cronoq {

/// One byte, so that the engine's task slot keeps to a cache line.
enum class TaskStatus : std::uint8_t {
    Blocked,       ///< waiting on dependencies
    Scheduled,     ///< waiting for a fixed start
    Ready,         ///< queued for a worker slot
    Running,       ///< an attempt holds a live lease
    Retrying,      ///< in backoff before the next attempt
    Succeeded,     ///< terminal
    Failed,        ///< terminal: permanent failure or a missed start under MissPolicy::Fail
    DeadLettered,  ///< terminal: retryable attempts exhausted
    Cancelled,     ///< terminal
    Skipped,       ///< terminal: a dependency edge can no longer be met
    Missed,        ///< terminal: a missed start under MissPolicy::Skip
    Shed,          ///< terminal: evicted by an overflow policy
};

constexpr bool is_terminal(TaskStatus s) { return s >= TaskStatus::Succeeded; }

/// Stable lower-case names ("ready", "dead_lettered", ...).
std::string_view to_string(TaskStatus s);
std::optional<TaskStatus> status_from_string(std::string_view name);

}  // namespace cronoq
