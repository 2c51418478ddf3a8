#pragma once
// Recurring schedules of the driver (docs/guide/time-and-cron.md): what each occurrence of a
// schedule becomes. No Asio and no locking here: the scheduler core calls
// this under its mutex when an occurrence is due.
#include <cronoq/core/time.hpp>
#include <cronoq/cron_expr.hpp>
#include <cronoq/detail/task_request.hpp>
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
    /// The latest occurrence taken (submitted or not, by the overlap
    /// policy). A store keeps it, so that a new leader fires none twice;
    /// a schedule replaced under its name keeps it too.
    std::optional<std::chrono::system_clock::time_point> last_fired;
    /// With a store: the template's payload as the codec encoded it, once,
    /// off the engine's mutex (the codec is the application's code); every
    /// occurrence's row takes these bytes.
    std::string encoded_payload;
    bool broken = false;                         // QueueOnSuccess after a failure
    std::uint64_t skipped = 0;                   // occurrences not created (Skip, or missed while late)
    // Wall and engine time when the schedule was last looked at: wall time
    // that advanced less than engine time since was stepped back.
    std::optional<std::chrono::system_clock::time_point> seen_wall;
    core::Time seen_at{};
};

/// Notices a wall clock stepped back (NTP, an operator) by at least
/// `step_tolerance` since `s` was last looked at, and brings `next` back
/// to the first occurrence after where the new wall time stood then. A
/// wildcard schedule follows real time, as CronExpr documents; a fixed-time
/// schedule does so only for a step of `clock_reset` or more, so that a
/// shorter step does not run an occurrence it already ran (Vixie cron's
/// rule). Forward steps need nothing here: `take_due` runs one catch-up.
/// Records `wall` and `now` for the next look.
void follow_wall_clock(Schedule& s, std::chrono::system_clock::time_point wall, core::Time now);

/// Smaller steps back are clock drift and jitter between the two clocks'
/// readings, not steps: following them could run an occurrence twice.
inline constexpr std::chrono::seconds step_tolerance{1};
inline constexpr std::chrono::hours clock_reset{3};
/// The longest the recurring timer sleeps. It is armed on engine time, which
/// a step of the wall clock does not move: reading wall time again at least
/// this often notices a step either way within it, not only at an
/// occurrence that may be a day away.
inline constexpr std::chrono::minutes wall_check_interval{1};

/// `2026-03-29T01:00:00Z`: occurrences are whole seconds.
std::string utc_rfc3339(std::chrono::system_clock::time_point t);

/// The latest occurrence due by `now` (earlier ones that were also due are
/// counted in `skipped`: after a long pause a schedule runs once, not once
/// per missed occurrence), and moves `next` past `now`.
std::chrono::system_clock::time_point take_due(Schedule& s, std::chrono::system_clock::time_point now);

/// The key of the occurrence of `at`: "<template key or name>@<UTC time>",
/// so that an occurrence is submitted once however often it is looked at.
std::string occurrence_key(const Schedule& s, std::chrono::system_clock::time_point at);

/// The occurrence task for `at`, given the status of the previous
/// occurrence (empty if none, or forgotten). Empty when the overlap policy
/// creates no occurrence.
std::optional<TaskRequest> occurrence(Schedule& s, std::chrono::system_clock::time_point at,
                                      std::optional<TaskStatus> previous);

}  // namespace cronoq::detail
