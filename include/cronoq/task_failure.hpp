#pragma once
#include <cronoq/task_status.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace cronoq {

/// Thrown by `TaskHandle::result()` and `BlockingHandle::get()` when a task
/// ended other than `Succeeded`. `what()` reads "<status>: <last error>".
class TaskFailure : public std::runtime_error {
public:
    TaskFailure(TaskStatus status, std::uint32_t attempt, std::string message)
        : std::runtime_error(std::string(to_string(status)) + (message.empty() ? "" : ": " + message)),
          status_(status), attempt_(attempt), message_(std::move(message)) {}

    TaskStatus status() const { return status_; }
    /// Attempts started before the task ended (0 if it never ran).
    std::uint32_t attempt() const { return attempt_; }
    const std::string& message() const { return message_; }

private:
    TaskStatus status_;
    std::uint32_t attempt_;
    std::string message_;
};

}  // namespace cronoq
