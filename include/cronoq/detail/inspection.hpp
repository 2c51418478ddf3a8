#pragma once
// What the dashboard reads of a scheduler beyond its public interface
// (docs/guide/dashboard.md): the recurring schedules with their next
// occurrences, and one task with its dependencies. Not for applications.
#include <cronoq/ids.hpp>
#include <cronoq/stored_task.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cronoq::detail {

/// One recurring schedule as registered.
struct RecurringView {
    std::string name, cron, tz, pool, kind;
    /// The next occurrences, earliest first (as many as asked for, fewer if
    /// the expression has no more).
    std::vector<std::chrono::system_clock::time_point> next;
    std::optional<std::chrono::system_clock::time_point> last_fired;
    std::optional<TaskId> last;  ///< the latest occurrence submitted
    std::uint64_t skipped = 0;   ///< occurrences not created
};

/// A task dependency as submitted: the parent by id or key, and when it counts.
struct DependencyView {
    std::optional<TaskId> id;
    std::optional<std::string> key;
    std::string when;  ///< "success", "failure" or "complete"
};

/// One task: what a store keeps of it (read from the store, or made from
/// what the scheduler holds without one) and what it waits for.
struct TaskView {
    StoredTask task;
    std::vector<DependencyView> depends_on;
    /// Without a store the driver keeps no attempt count: unknown then.
    bool attempt_known = true;
};

}  // namespace cronoq::detail
