#pragma once
// What `Engine::scan` selects and returns: live and retained tasks, newest
// (highest id) first, a page at a time (docs/guide/operations.md, "Queries":
// `Scheduler::query` without a store).
#include <cronoq/core/task_spec.hpp>
#include <cronoq/core/time.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/priority.hpp>
#include <cronoq/task_status.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace cronoq::core {

/// Every filter that is set must hold.
struct TaskFilter {
    /// Bit `1 << static_cast<unsigned>(status)` per status wanted; 0: any.
    std::uint32_t statuses = 0;
    std::optional<PoolId> pool;
    std::optional<std::string> kind;
    /// Tasks whose key starts with it; never a task without a key.
    std::optional<std::string> key_prefix;
    /// Tasks of this fair key; "" selects those without one.
    std::optional<std::string> fair_key;
    /// `admitted_from <= admitted < admitted_until`, engine time.
    Time admitted_from = Time::min();
    Time admitted_until = Time::max();
};

/// One task as the engine knows it.
struct TaskView {
    TaskId id;
    PoolId pool = 0;
    std::string kind;
    TaskStatus status = TaskStatus::Ready;
    std::uint32_t attempt = 0;  ///< attempts started so far
    Priority priority = Priority::Normal;
    std::optional<std::string> key;
    std::optional<std::string> fair_key;  ///< empty for ""
    std::uint64_t user = 0;               ///< TaskSpec::user (0 once released)
    Time admitted{};
    /// Its last transition the engine can date: the end of a terminal task,
    /// the start of a running attempt, when a ready task became ready; else
    /// its admission.
    Time changed{};
};

struct TaskScanPage {
    std::vector<TaskView> tasks;
    /// Set when the scan stopped before the lowest id: pass it as `below`
    /// for the next page. A page may be short (even empty) and still have
    /// one: each scan looks at a bounded number of tasks.
    std::optional<std::uint64_t> next_below;
};

}  // namespace cronoq::core
