#pragma once
// StoredTask: what a store knows of one task, as `Store::get_task`, `Store::list` and
// `Store::query` return it (docs/store.md).
#include <cronoq/ids.hpp>
#include <cronoq/priority.hpp>
#include <cronoq/task_status.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace cronoq {

/// What a store knows of one task.
struct StoredTask {
    TaskId id;
    std::optional<std::string> key;
    std::string pool, kind;
    TaskStatus status = TaskStatus::Ready;
    std::uint32_t attempt = 0;  ///< attempts started so far
    std::string last_error;
    std::chrono::system_clock::time_point submitted_at, updated_at;
    std::string payload;                ///< encoded bytes (`codec<P>`)
    std::optional<std::string> output;  ///< encoded bytes (`codec<O>`), after a success
    Priority priority = Priority::Normal;
    /// The tenant the task was submitted for. Fair keys are not written yet
    /// (docs/store.md, "Queries"): empty for every task until they are.
    std::optional<std::string> fair_key;
};

}  // namespace cronoq
