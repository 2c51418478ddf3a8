#include "stored_values.hpp"

#include <nlohmann/json.hpp>

#include <bit>
#include <limits>
#include <stdexcept>

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

void check_client_rows(const std::vector<TaskRow>& rows) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const TaskStatus s = rows[i].status;
        if (s == TaskStatus::Blocked || s == TaskStatus::Scheduled || s == TaskStatus::Ready) continue;
        throw std::invalid_argument("ClientAccess::submit: row " + std::to_string(i) + " has status " +
                                    std::string(to_string(s)) +
                                    ", not one admission gives (blocked, scheduled or ready)");
    }
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

namespace {
constexpr std::string_view pause_op_prefix = "pause:";
constexpr std::string_view resume_op_prefix = "resume:";
}  // namespace

std::string inbox_op_text(InboxEntry::Op op, std::string_view pool) {
    switch (op) {
        case InboxEntry::Op::Submit: return "submit";
        case InboxEntry::Op::Cancel: return "cancel";
        case InboxEntry::Op::Pause: return std::string(pause_op_prefix) + std::string(pool);
        case InboxEntry::Op::Resume: return std::string(resume_op_prefix) + std::string(pool);
    }
    return {};
}

std::string inbox_entry_pool_sql() {
    auto after = [](std::string_view prefix) {
        const std::string p(prefix);
        return "WHEN i.op LIKE '" + p + "%' THEN substr(i.op, " + std::to_string(p.size() + 1) + ") ";
    };
    return "(CASE " + after(pause_op_prefix) + after(resume_op_prefix) + "ELSE t.pool END)";
}

bool read_inbox_op(std::string_view text, InboxEntry& entry) {
    if (text == "submit") {
        entry.op = InboxEntry::Op::Submit;
    } else if (text == "cancel") {
        entry.op = InboxEntry::Op::Cancel;
    } else if (text.starts_with(pause_op_prefix) && text.size() > pause_op_prefix.size()) {
        entry.op = InboxEntry::Op::Pause;
        entry.pool = text.substr(pause_op_prefix.size());
    } else if (text.starts_with(resume_op_prefix) && text.size() > resume_op_prefix.size()) {
        entry.op = InboxEntry::Op::Resume;
        entry.pool = text.substr(resume_op_prefix.size());
    } else {
        return false;
    }
    return true;
}

// "fair_weight:<bytes of the pool name>:<pool><key>": the length keeps any
// pool and key apart without escaping. The value is the double's bits, so
// that a weight comes back exactly as set.
std::string qualified_columns(std::string_view columns, std::string_view table) {
    std::string out;
    for (std::size_t from = 0;;) {
        const std::size_t to = columns.find(", ", from);
        if (from != 0) out += ", ";
        out += table;
        out += '.';
        out += columns.substr(from, to == std::string_view::npos ? std::string_view::npos : to - from);
        if (to == std::string_view::npos) return out;
        from = to + 2;
    }
}

std::string fair_weight_name(std::string_view pool, std::string_view key) {
    std::string name(fair_weight_prefix);
    name += std::to_string(pool.size());
    name += ':';
    name += pool;
    name += key;
    return name;
}

std::int64_t fair_weight_value(double weight) { return std::bit_cast<std::int64_t>(weight); }

std::optional<FairWeightSet> read_fair_weight(std::string_view name, std::int64_t value) {
    if (!name.starts_with(fair_weight_prefix)) return std::nullopt;
    name.remove_prefix(fair_weight_prefix.size());
    const auto colon = name.find(':');
    if (colon == std::string_view::npos || colon == 0) return std::nullopt;
    std::size_t pool_bytes = 0;
    for (const char c : name.substr(0, colon)) {
        if (c < '0' || c > '9') return std::nullopt;
        pool_bytes = pool_bytes * 10 + static_cast<std::size_t>(c - '0');
        if (pool_bytes > name.size()) return std::nullopt;
    }
    name.remove_prefix(colon + 1);
    if (pool_bytes > name.size()) return std::nullopt;
    return FairWeightSet{std::string(name.substr(0, pool_bytes)), std::string(name.substr(pool_bytes)),
                         std::bit_cast<double>(value)};
}

}  // namespace cronoq::store
