#pragma once
// Recurring schedules of the driver (SPEC §6): what each occurrence of a
// schedule becomes. No Asio and no locking here: the scheduler core calls
// this under its mutex when an occurrence is due.
#include <cronoq/cron_expr.hpp>
#include <cronoq/detail/erased.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/task_status.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace cronoq::detail {

struct Schedule {
    RecurringRequest request;
    CronExpr expr;
    std::chrono::system_clock::time_point next;  // the next occurrence
    std::optional<TaskId> last;                  // the latest occurrence submitted
    bool broken = false;                         // QueueOnSuccess after a failure
    std::uint64_t skipped = 0;                   // occurrences not created (Skip, or missed while late)
};

/// `2026-03-29T01:00:00Z`: occurrences are whole seconds.
std::string utc_rfc3339(std::chrono::system_clock::time_point t);

/// The latest occurrence due by `now` (earlier ones that were also due are
/// counted in `skipped`: after a long pause a schedule runs once, not once
/// per missed occurrence), and moves `next` past `now`.
std::chrono::system_clock::time_point take_due(Schedule& s, std::chrono::system_clock::time_point now);

/// The occurrence task for `at`, given the status of the previous
/// occurrence (empty if none, or forgotten). Empty when the overlap policy
/// creates no occurrence.
std::optional<TaskRequest> occurrence(Schedule& s, std::chrono::system_clock::time_point at,
                                      std::optional<TaskStatus> previous);

}  // namespace cronoq::detail
