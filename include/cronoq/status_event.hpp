#pragma once
#include <cronoq/ids.hpp>
#include <cronoq/task_status.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace cronoq {

/// One status transition of one task (docs/guide/operations.md).
struct StatusEvent {
    TaskId id;
    std::optional<std::string> key;
    std::string pool;
    std::string kind;
    TaskStatus status = TaskStatus::Ready;
    std::uint32_t attempt = 0;  ///< attempts started so far
    std::chrono::system_clock::time_point at;
    std::string message;  ///< the last error, for failures and retries
    std::string fair_key;  ///< the task's fair key (docs/guide/fairness.md); "" without one
};

}  // namespace cronoq
