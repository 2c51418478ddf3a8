#pragma once
// A task as its typed builder (Task<P>, Recurring<P>) hands it to the driver
// core: the payload type-erased, every option as the user gave it. Free of
// Asio, so that describing a task does not pull in the runtime.
#include <cronoq/core/task_spec.hpp>
#include <cronoq/dep.hpp>
#include <cronoq/priority.hpp>
#include <cronoq/retry_policy.hpp>
#include <cronoq/start_policy.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cronoq::detail {

struct TaskRequest {
    std::shared_ptr<const void> payload;
    std::optional<std::string> pool;  ///< empty: the first pool declared
    std::string kind;
    Priority priority = Priority::Normal;
    std::optional<std::string> key;
    std::optional<std::chrono::system_clock::time_point> deadline_at;
    std::optional<std::chrono::nanoseconds> deadline_in;
    std::optional<std::chrono::nanoseconds> timeout;
    std::optional<RetryPolicy> retry;
    std::optional<std::chrono::nanoseconds> duration_hint;
    std::vector<std::pair<std::string, std::string>> tags;
    std::optional<std::string> traceparent;
    std::optional<std::chrono::system_clock::time_point> start_at;
    std::optional<std::chrono::nanoseconds> start_in;
    std::chrono::nanoseconds start_tolerance = std::chrono::seconds(1);
    MissPolicy on_miss = MissPolicy::RunLate;
    std::vector<Dep> depends_on;
    std::vector<core::ResourceUse> resources;
    /// Remote pools: a worker must be registered with each (name, value).
    std::vector<std::pair<std::string, std::string>> labels;
};

struct RecurringRequest {
    std::string name;
    std::string cron;
    std::string tz = "UTC";
    OverlapPolicy overlap = OverlapPolicy::Skip;
    std::optional<std::chrono::nanoseconds> deadline_after;
    TaskRequest task;  ///< the template of every occurrence
};

}  // namespace cronoq::detail
