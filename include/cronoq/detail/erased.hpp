#pragma once
// The type-erased forms in which the typed builders (Task<P>, Pool<P, O>)
// hand work to the driver core, so that the core compiles once.
#include <cronoq/core/task_spec.hpp>
#include <cronoq/dep.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/priority.hpp>
#include <cronoq/result.hpp>
#include <cronoq/retry_policy.hpp>
#include <cronoq/start_policy.hpp>
#include <cronoq/task_context.hpp>
#include <cronoq/task_error.hpp>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace cronoq::detail {

/// What one attempt produced: an output (null for `void`) or an error.
struct AttemptOutput {
    std::shared_ptr<const void> value;
    std::optional<TaskError> error;
};

template <class O>
AttemptOutput erase_result(Result<O>&& r) {
    if (!r.has_value()) return {nullptr, r.error()};
    if constexpr (std::is_void_v<O>)
        return {};
    else
        return {std::make_shared<const O>(std::move(r).value()), std::nullopt};
}

struct ErasedExecutor {
    std::function<asio::awaitable<AttemptOutput>(TaskContext, std::shared_ptr<const void>)> run;
    std::function<void(LeaseId)> abort;  ///< empty when the executor has none
};

struct PoolDefinition {
    core::PoolConfig engine;  ///< name, initial capacity, retry, timeouts
    std::size_t min_workers = 1;
    std::size_t max_workers = 1;
    ErasedExecutor executor;
    std::optional<asio::any_io_executor> run_on;
};

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
