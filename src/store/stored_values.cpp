#include "stored_values.hpp"

#include <nlohmann/json.hpp>

#include <limits>

namespace cronoq::store {

std::int64_t to_int64(std::uint64_t value) {
    return value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
               ? std::numeric_limits<std::int64_t>::max()
               : static_cast<std::int64_t>(value);
}

std::int64_t to_stored(WallTime time) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch()).count();
}

WallTime from_stored(std::int64_t nanoseconds) {
    return WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::nanoseconds(nanoseconds)));
}

WallTime age_cutoff(WallTime now, std::chrono::nanoseconds age) {
    const std::int64_t stored = to_stored(now);
    if (age.count() >= stored) return WallTime{};
    return from_stored(stored - age.count());
}

const std::string& terminal_status_list() {
    static const std::string list = [] {
        std::string out = "(";
        for (int s = static_cast<int>(TaskStatus::Succeeded); s <= static_cast<int>(TaskStatus::Shed); ++s) {
            if (out.size() > 1) out += ", ";
            // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a
            // false positive) on "'" + std::string(...).
            out += '\'';
            out += to_string(static_cast<TaskStatus>(s));
            out += '\'';
        }
        out += ")";
        return out;
    }();
    return list;
}

std::optional<UnreadableRow> unknown_status(std::int64_t id, std::int64_t attempt, const std::string& status) {
    if (status_from_string(status)) return std::nullopt;
    std::string why = "unknown status \"";
    why += status;
    why += '"';
    return UnreadableRow{TaskId{static_cast<std::uint64_t>(id)}, static_cast<std::uint32_t>(attempt), std::move(why)};
}

bool key_holds(const std::string& status, WallTime updated_at, std::optional<std::chrono::nanoseconds> retention,
               WallTime now) {
    const auto parsed = status_from_string(status);
    // A status this build does not know is live to it: the leader fails it
    // at recovery, and only then it has ended.
    if (!parsed || !is_terminal(*parsed)) return true;
    return retention && updated_at >= age_cutoff(now, *retention);
}

Priority priority_of_options(const std::string& options) {
    // The scheduler writes {"priority": <class index>, ...}
    // (src/driver/task_options.cpp); anything else reads as Normal, as a
    // task submitted without a priority would be.
    const auto j = nlohmann::json::parse(options, nullptr, false);
    if (!j.is_object()) return Priority::Normal;
    const auto found = j.find("priority");
    if (found == j.end() || !found->is_number_integer()) return Priority::Normal;
    const auto index = found->get<std::int64_t>();
    if (index < 0 || index >= static_cast<std::int64_t>(priority_count)) return Priority::Normal;
    return static_cast<Priority>(index);
}

StoredTask to_stored_task(TaskRow row) {
    StoredTask task;
    task.id = row.id;
    task.key = std::move(row.key);
    task.pool = std::move(row.pool);
    task.kind = std::move(row.kind);
    task.status = row.status;
    task.attempt = row.attempt;
    task.last_error = std::move(row.last_error);
    task.submitted_at = row.submitted_at;
    task.updated_at = row.updated_at;
    task.payload = std::move(row.payload);
    task.output = std::move(row.output);
    task.priority = priority_of_options(row.options);
    task.fair_key = std::move(row.fair_key);
    return task;
}

}  // namespace cronoq::store
