#pragma once
// What every backend stores alike: times as nanoseconds since the Unix
// epoch, wall clock (engine time is per process and is re-based at
// recovery), and a row as the inspection members return it.
#include <cronoq/store/journal.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace cronoq::store {

std::int64_t to_stored(WallTime time);
/// An id or a count in a signed 64-bit column, saturated at its maximum.
std::int64_t to_int64(std::uint64_t value);
WallTime from_stored(std::int64_t nanoseconds);
/// `now - age`, no earlier than the Unix epoch: an age of `hours::max()`
/// ("keep everything") must not wrap into the future.
WallTime age_cutoff(WallTime now, std::chrono::nanoseconds age);

/// "('succeeded', 'failed', ...)": the terminal statuses, by their stored
/// names, as an SQL list.
const std::string& terminal_status_list();

/// A recovery's report of a task row whose stored status this build does
/// not know; empty for a known status.
std::optional<UnreadableRow> unknown_status(std::int64_t id, std::int64_t attempt, const std::string& status);

/// Whether the newest row holding a key (its stored status, read or not,
/// and when it was last updated) resolves a client's submission of that key
/// to itself: it is live, or ended within `retention` before `now` (none
/// written yet: only live rows hold; docs/store.md, "Clients").
bool key_holds(const std::string& status, WallTime updated_at, std::optional<std::chrono::nanoseconds> retention,
               WallTime now);

/// The priority class in a row's options; Normal when they name none.
Priority priority_of_options(const std::string& options);

/// A row as `Store::get_task`, `Store::list` and `Store::query` return it.
StoredTask to_stored_task(TaskRow row);

}  // namespace cronoq::store
