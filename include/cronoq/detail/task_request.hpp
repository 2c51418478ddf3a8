#pragma once
// A task as its typed builder (Task<P>, Recurring<P>) hands it to the driver
// core: the payload type-erased, every option as the user gave it. Free of
// Asio, so that describing a task does not pull in the runtime.
#include <cronoq/core/task_spec.hpp>
#include <cronoq/dep.hpp>
#include <cronoq/detail/erased_value.hpp>
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
    ErasedValue payload;
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
    /// The tenant it counts against (docs/guide/fairness.md); empty: none,
    /// the key "" shared by every task without one.
    std::string fair_key;
};

/// A Task<P>'s state: its payload, pool, kind and priority inline, every
/// other option in a full request made on first use. Applications build
/// tasks by the thousand in vectors: most set no other option, and a task
/// then takes 112 bytes instead of a request's 440 (and its construction and
/// destruction touch as little). Copying a task copies its options.
class TaskState {
public:
    TaskState() = default;
    TaskState(const TaskState& o)
        : payload(o.payload), pool(o.pool), kind(o.kind), priority(o.priority),
          more_(o.more_ ? std::make_unique<TaskRequest>(*o.more_) : nullptr) {}
    TaskState(TaskState&&) noexcept = default;
    TaskState& operator=(const TaskState& o) {
        if (this != &o) *this = TaskState(o);
        return *this;
    }
    TaskState& operator=(TaskState&&) noexcept = default;

    ErasedValue payload;
    std::optional<std::string> pool;
    std::string kind;
    Priority priority = Priority::Normal;

    /// The other options, for a setter: made on first use. (Its payload,
    /// pool, kind and priority are not used: those above are.)
    TaskRequest& more() {
        if (!more_) more_ = std::make_unique<TaskRequest>();
        return *more_;
    }
    bool has_more() const { return more_ != nullptr; }

    /// Moves everything into `r`, whose other options must be the defaults
    /// when this task has none (a request used for tasks without options).
    void move_into(TaskRequest& r) {
        if (more_) r = std::move(*more_);
        r.payload = std::move(payload);
        r.pool = std::move(pool);
        r.kind = std::move(kind);
        r.priority = priority;
    }
    /// The whole request, as the driver takes it.
    operator TaskRequest() && {
        TaskRequest r;
        move_into(r);
        return r;
    }
    /// A copy of the whole request (to inspect a task).
    TaskRequest view() const { return TaskRequest(TaskState(*this)); }

private:
    std::unique_ptr<TaskRequest> more_;
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
