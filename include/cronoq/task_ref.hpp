#pragma once
// TaskRef: a task named by id or by idempotency key.
#include <cronoq/ids.hpp>

#include <optional>
#include <string>
#include <utility>

namespace cronoq {

/// Names a task by its id or by its key. A key names the live or retained
/// task that holds it.
struct TaskRef {
    TaskRef(TaskId task) : id(task) {}
    TaskRef(std::string k) : key(std::move(k)) {}
    TaskRef(const char* k) : key(k) {}
    std::optional<TaskId> id;
    std::optional<std::string> key;
};

}  // namespace cronoq
