#pragma once
// cronoq-store's parsing and printing: durations, times, task objects.
#include "store_stats.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace cronoq::store::tool {

/// "7d", "12h", "30m", "45s", "500ms", "2w"; empty when not a duration:
/// a sign, another unit, trailing characters, or more than nanoseconds hold.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text);

/// Decimal digits only ("0", "100"); empty for a sign, anything else after
/// the digits, or a number past std::size_t.
std::optional<std::size_t> parse_count(std::string_view text);

/// The JSON text the tool prints. Bytes that are not UTF-8 (a key or an
/// error as stored) become U+FFFD, so the output always parses
/// (docs/store.md, cronoq-store).
std::string dump(const nlohmann::json& value, int indent = 2);

/// RFC 3339 in UTC ("2026-12-01T10:38:04Z", "2026-12-01T10:38:04.123Z",
/// up to nanoseconds); empty for anything else, another offset included.
std::optional<WallTime> parse_time(std::string_view text);

/// RFC 3339 in UTC with milliseconds: "2026-12-01T10:38:04.123Z".
std::string format_time(WallTime time);

/// The task object of `list` and `show`: id, key, pool, kind, status,
/// attempt, last_error, submitted_at, updated_at.
nlohmann::json task_json(const TaskRow& row);
/// One line per task for `list` without --json.
std::string task_line(const TaskRow& row);
/// Several lines, payload and output included, for `show` without --json.
std::string task_details(const TaskRow& row);

/// `leader.lease_expires_at` is null when no process holds the lease.
nlohmann::json stats_json(const StoreStats& stats);
std::string stats_text(const StoreStats& stats);

}  // namespace cronoq::store::tool
