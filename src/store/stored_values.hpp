#pragma once
// What every backend stores alike: times as nanoseconds since the Unix
// epoch, wall clock (engine time is per process and is re-based at
// recovery), and a row as the inspection members return it.
#include <cronoq/store/journal.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

/// Throws std::invalid_argument, naming the row and its status, unless
/// every row's status is one admission gives (`Blocked`, `Scheduled`,
/// `Ready`): what a client may submit (docs/store.md, "Clients").
void check_client_rows(const std::vector<TaskRow>& rows);

/// The priority class in a row's options; Normal when they name none.
Priority priority_of_options(const std::string& options);

/// A paused pool is a row of the `meta` table named "paused:<pool>", its
/// value the time it was paused (docs/store.md, "Paused pools"): no schema
/// change, and a store that an older cronoq opens just runs every pool.
inline constexpr std::string_view paused_row_prefix = "paused:";
inline std::string paused_row_name(std::string_view pool) {
    std::string name(paused_row_prefix);
    name += pool;
    return name;
}
/// The SQL condition that selects those rows (both dialects).
inline constexpr const char* paused_rows_where = "substr(name, 1, 7) = 'paused:'";
static_assert(paused_row_prefix.size() == 7);
/// An inbox entry's `op` column (docs/store.md, "Clients"): "submit",
/// "cancel", or "pause:<pool>" / "resume:<pool>" (the pool in the op's
/// value: no schema change). `pool` is read for `Pause` and `Resume` only.
std::string inbox_op_text(InboxEntry::Op op, std::string_view pool = {});
/// Sets `entry.op` (and `entry.pool`) from the column's text; false for a
/// text that names no op.
bool read_inbox_op(std::string_view text, InboxEntry& entry);
/// SQL (SQLite and PostgreSQL alike) for the pool of the inbox entry `i`
/// joined to its task `t`: the one a pause or resume names, else its
/// task's; what a leader routes the entry by (docs/store.md, "Shards").
std::string inbox_entry_pool_sql();

/// `columns` ("id, key, ...") each qualified by `table`: "t.id, t.key, ...",
/// for a join that reads a task's columns as the row readers expect them.
std::string qualified_columns(std::string_view columns, std::string_view table);

/// Fair weights live in the `meta` table (docs/store.md, "Fair weights"):
/// its name for `pool` and `key`, and the value (the double's bits).
std::string fair_weight_name(std::string_view pool, std::string_view key);
std::int64_t fair_weight_value(double weight);
/// The names of every stored weight start so (an SQL LIKE prefix).
inline constexpr std::string_view fair_weight_prefix = "fair_weight:";
/// A stored weight back; empty for a name that is not one.
std::optional<FairWeightSet> read_fair_weight(std::string_view name, std::int64_t value);

/// A row as `Store::get_task`, `Store::list` and `Store::query` return it.
StoredTask to_stored_task(TaskRow row);

}  // namespace cronoq::store
