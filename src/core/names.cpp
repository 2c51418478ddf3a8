// Stable names of the public enums.
#include <cronoq/core/action.hpp>
#include <cronoq/priority.hpp>
#include <cronoq/start_policy.hpp>
#include <cronoq/submit_error.hpp>
#include <cronoq/task_status.hpp>

#include <array>
#include <string>

namespace cronoq {

namespace {
constexpr std::array<std::string_view, 12> status_names{
    "blocked", "scheduled", "ready",   "running", "retrying", "succeeded",
    "failed",  "dead_lettered", "cancelled", "skipped", "missed",   "shed"};
}  // namespace

const char* to_string(Priority p) {
    switch (p) {
        case Priority::Critical: return "critical";
        case Priority::High: return "high";
        case Priority::Normal: return "normal";
        case Priority::Low: return "low";
    }
    return "unknown";
}

std::string_view to_string(TaskStatus s) {
    const auto i = static_cast<std::size_t>(s);
    return i < status_names.size() ? status_names[i] : std::string_view("unknown");
}

std::optional<TaskStatus> status_from_string(std::string_view name) {
    for (std::size_t i = 0; i < status_names.size(); ++i)
        if (status_names[i] == name) return static_cast<TaskStatus>(i);
    return std::nullopt;
}

std::string_view to_string(SubmitError e) {
    switch (e) {
        case SubmitError::UnknownPool: return "unknown_pool";
        case SubmitError::UnknownResource: return "unknown_resource";
        case SubmitError::ResourceExceedsCapacity: return "resource_exceeds_capacity";
        case SubmitError::ReservationConflict: return "reservation_conflict";
        case SubmitError::Cycle: return "cycle";
        case SubmitError::UnknownDependency: return "unknown_dependency";
        case SubmitError::DuplicateKeyInBatch: return "duplicate_key_in_batch";
        case SubmitError::Full: return "full";
        case SubmitError::Overloaded: return "overloaded";
        case SubmitError::ShuttingDown: return "shutting_down";
        case SubmitError::Invalid: return "invalid";
        case SubmitError::StoreFailed: return "store_failed";
    }
    return "unknown";
}

SubmitException::SubmitException(SubmitError error, const std::string& message)
    : std::runtime_error(std::string(to_string(error)) + (message.empty() ? "" : ": " + message)), error_(error) {}

std::string_view to_string(MissPolicy p) {
    switch (p) {
        case MissPolicy::RunLate: return "run_late";
        case MissPolicy::Skip: return "skip";
        case MissPolicy::Fail: return "fail";
    }
    return "unknown";
}

std::string_view to_string(OverlapPolicy p) {
    switch (p) {
        case OverlapPolicy::Skip: return "skip";
        case OverlapPolicy::Allow: return "allow";
        case OverlapPolicy::Queue: return "queue";
        case OverlapPolicy::QueueOnSuccess: return "queue_on_success";
    }
    return "unknown";
}

namespace core {
std::string_view to_string(AbortReason r) {
    switch (r) {
        case AbortReason::Cancelled: return "cancelled";
        case AbortReason::Timeout: return "timeout";
        case AbortReason::LeaseExpired: return "lease expired";
        case AbortReason::Shutdown: return "shutdown";
        case AbortReason::WorkerLost: return "worker disconnected";
    }
    return "unknown";
}
}  // namespace core

}  // namespace cronoq
