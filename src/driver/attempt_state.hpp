#pragma once
// What the driver keeps per task and per attempt, shared with TaskContext.
#include <cronoq/detail/cancel_state.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/task_context.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace cronoq::detail {

class SchedulerCore;

/// Immutable after submit; shared by the task's record and its attempts.
struct TaskInfo {
    TaskId id;
    std::shared_ptr<const std::string> pool;  // shared: a context may outlive its scheduler
    std::string kind;
    std::optional<std::string> key;
    Tags tags;
    std::optional<std::chrono::system_clock::time_point> deadline;
    std::optional<std::chrono::nanoseconds> timeout;
    std::optional<std::string> traceparent;
    std::shared_ptr<const void> payload;
};

struct AttemptState {
    std::shared_ptr<const TaskInfo> task;
    LeaseId lease;
    std::uint32_t attempt = 0;
    bool needs_heartbeat = false;
    CancelState cancel;  // tokens alias this state: no allocation of its own
    std::weak_ptr<SchedulerCore> core;
};

}  // namespace cronoq::detail
