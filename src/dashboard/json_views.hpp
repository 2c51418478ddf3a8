#pragma once
// What the JSON routes answer (docs/guide/dashboard.md, "Routes"): tasks,
// schedules and pools as JSON, and a TaskQuery read from query parameters.
#include "api.hpp"

#include <cronoq/detail/inspection.hpp>
#include <cronoq/snapshot.hpp>
#include <cronoq/stored_task.hpp>
#include <cronoq/task_query.hpp>

#include <nlohmann/json.hpp>

#include <vector>

namespace cronoq::dashboard_detail {

/// The most bytes of a payload or output a reply previews.
inline constexpr std::size_t preview_bytes = 4096;

/// A task as a row of the task list; `detail` adds its previews'
/// full size and the dependencies.
nlohmann::json task_json(const StoredTask& task);
nlohmann::json task_detail_json(const detail::TaskView& view);
nlohmann::json recurring_json(const std::vector<detail::RecurringView>& schedules);
/// The snapshot's pools, each with `"remote_workers"` (null for a local pool).
nlohmann::json pools_json(const Snapshot& snapshot);

/// `status` (comma-separated names), `pool`, `kind`, `key_prefix`,
/// `fair_key`, `submitted_after`/`submitted_before` (RFC 3339 UTC or
/// milliseconds since the epoch), `cursor`, `limit`. Throws
/// std::invalid_argument naming a bad parameter.
TaskQuery query_from(const Parameters& parameters);

/// RFC 3339 UTC with milliseconds, `2026-03-29T01:00:00.000Z`.
std::string utc_text(std::chrono::system_clock::time_point t);

}  // namespace cronoq::dashboard_detail
