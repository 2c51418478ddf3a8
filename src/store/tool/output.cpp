#include "output.hpp"

#include <cctype>
#include <charconv>
#include <ctime>

namespace cronoq::store::tool {

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text) {
    // from_chars would take "-0".
    if (text.empty() || std::isdigit(static_cast<unsigned char>(text.front())) == 0) return std::nullopt;
    std::int64_t count = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (error != std::errc()) return std::nullopt;
    const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
    using namespace std::chrono;
    std::int64_t scale = 0;
    if (unit == "ms") scale = 1'000'000;
    else if (unit == "s") scale = 1'000'000'000;
    else if (unit == "m") scale = 60'000'000'000;
    else if (unit == "h") scale = 3'600'000'000'000;
    else if (unit == "d") scale = 86'400'000'000'000;
    else if (unit == "w") scale = 604'800'000'000'000;
    else return std::nullopt;
    if (count > std::numeric_limits<std::int64_t>::max() / scale) return std::nullopt;
    return nanoseconds(count * scale);
}

std::optional<std::size_t> parse_count(std::string_view text) {
    std::size_t count = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
    return count;
}

std::optional<WallTime> parse_time(std::string_view text) {
    using namespace std::chrono;
    // YYYY-MM-DDTHH:MM:SS, then an optional fraction, then Z.
    if (text.size() < 20 || text.back() != 'Z') return std::nullopt;
    const auto number = [&](std::size_t at, std::size_t digits) -> std::optional<int> {
        int value = 0;
        for (std::size_t i = at; i < at + digits; ++i) {
            if (std::isdigit(static_cast<unsigned char>(text[i])) == 0) return std::nullopt;
            value = value * 10 + (text[i] - '0');
        }
        return value;
    };
    const auto year = number(0, 4), month = number(5, 2), day = number(8, 2);
    const auto hour = number(11, 2), minute = number(14, 2), second = number(17, 2);
    if (!year || !month || !day || !hour || !minute || !second || text[4] != '-' || text[7] != '-' ||
        (text[10] != 'T' && text[10] != 't') || text[13] != ':' || text[16] != ':')
        return std::nullopt;
    const year_month_day date{std::chrono::year(*year), std::chrono::month(static_cast<unsigned>(*month)),
                              std::chrono::day(static_cast<unsigned>(*day))};
    if (!date.ok() || *hour > 23 || *minute > 59 || *second > 59) return std::nullopt;
    std::int64_t fraction_ns = 0;
    const std::string_view rest = text.substr(19, text.size() - 20);
    if (!rest.empty()) {
        if (rest.size() < 2 || rest.size() > 10 || rest.front() != '.') return std::nullopt;
        std::int64_t scale = 100'000'000;
        for (const char c : rest.substr(1)) {
            if (std::isdigit(static_cast<unsigned char>(c)) == 0) return std::nullopt;
            fraction_ns += (c - '0') * scale;
            scale /= 10;
        }
    }
    const auto at = sys_days(date).time_since_epoch() + hours(*hour) + minutes(*minute) + seconds(*second) +
                    nanoseconds(fraction_ns);
    return WallTime(duration_cast<WallTime::duration>(at));
}

std::string dump(const nlohmann::json& value, int indent) {
    return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string format_time(WallTime time) {
    using namespace std::chrono;
    const auto since = duration_cast<milliseconds>(time.time_since_epoch());
    auto seconds_part = floor<seconds>(since);
    const auto millis = (since - seconds_part).count();
    const std::time_t t = static_cast<std::time_t>(seconds_part.count());
    std::tm utc{};
    gmtime_r(&t, &utc);
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                  utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(millis));
    return buffer;
}

nlohmann::json task_json(const TaskRow& row) {
    nlohmann::json task;
    task["id"] = row.id.value;
    task["key"] = row.key ? nlohmann::json(*row.key) : nlohmann::json(nullptr);
    task["fair_key"] = row.fair_key ? nlohmann::json(*row.fair_key) : nlohmann::json(nullptr);
    task["pool"] = row.pool;
    task["kind"] = row.kind;
    task["status"] = std::string(to_string(row.status));
    task["attempt"] = row.attempt;
    task["last_error"] = row.last_error;
    task["submitted_at"] = format_time(row.submitted_at);
    task["updated_at"] = format_time(row.updated_at);
    return task;
}

std::string task_line(const TaskRow& row) {
    std::string line = std::to_string(row.id.value) + "  " + std::string(to_string(row.status)) + "  pool=" + row.pool +
                       "  kind=" + row.kind + "  attempt=" + std::to_string(row.attempt);
    if (row.key) line += "  key=" + *row.key;
    if (row.fair_key) line += "  fair_key=" + *row.fair_key;
    line += "  updated=" + format_time(row.updated_at);
    if (!row.last_error.empty()) line += "  error=" + row.last_error;
    return line;
}

namespace {

/// Bytes shown as text when printable, else as a size.
std::string show_bytes(const std::string& bytes) {
    for (const char c : bytes) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 && c != '\n' && c != '\t') {
            // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a
            // false positive) on "<" + std::string(...).
            std::string out = "<";
            out += std::to_string(bytes.size());
            out += " bytes>";
            return out;
        }
    }
    return bytes;
}

}  // namespace

std::string task_details(const TaskRow& row) {
    std::string out;
    const auto field = [&out](std::string_view name, const std::string& value) {
        out += std::string(name) + ": " + value + "\n";
    };
    field("id", std::to_string(row.id.value));
    field("key", row.key.value_or("(none)"));
    field("fair_key", row.fair_key.value_or("(none)"));
    field("pool", row.pool);
    field("kind", row.kind);
    field("status", std::string(to_string(row.status)));
    field("attempt", std::to_string(row.attempt));
    field("last_error", row.last_error);
    field("submitted_at", format_time(row.submitted_at));
    field("updated_at", format_time(row.updated_at));
    if (row.run_at) field("run_at", format_time(*row.run_at));
    field("payload", show_bytes(row.payload));
    if (row.output) field("output", show_bytes(*row.output));
    return out;
}

nlohmann::json stats_json(const StoreStats& stats) {
    nlohmann::json out;
    out["schema_version"] = stats.schema_version;
    out["tasks"] = stats.tasks;
    out["tasks_by_status"] = nlohmann::json::object();
    for (const auto& [status, count] : stats.tasks_by_status) out["tasks_by_status"][status] = count;
    out["recurring"] = stats.recurring;
    out["paused_pools"] = stats.paused_pools;
    out["next_task_id"] = stats.marks.next_task_id;
    out["next_lease_id"] = stats.marks.next_lease_id;
    out["leader"] = {{"holder", stats.leader.holder ? nlohmann::json(*stats.leader.holder) : nlohmann::json(nullptr)},
                     {"epoch", stats.leader.epoch},
                     {"lease_expires_at", stats.leader.holder ? nlohmann::json(format_time(stats.leader.expires_at))
                                                              : nlohmann::json(nullptr)}};
    // Every shard with its lease and pools (docs/store.md, "Shards").
    out["shards"] = nlohmann::json::array();
    for (const auto& lease : stats.shards.leases) {
        nlohmann::json pools = nlohmann::json::array();
        for (const auto& [pool, shard] : stats.shards.pools)
            if (shard == lease.shard) pools.push_back(pool);
        out["shards"].push_back({{"shard", lease.shard},
                                 {"epoch", lease.lease.epoch},
                                 {"led", lease.lease.held},
                                 {"holder", lease.lease.held && lease.holder ? nlohmann::json(*lease.holder)
                                                                              : nlohmann::json(nullptr)},
                                 {"pools", std::move(pools)}});
    }
    return out;
}

std::string stats_text(const StoreStats& stats) {
    std::string out = "schema version: " + std::to_string(stats.schema_version) + "\n";
    out += "tasks: " + std::to_string(stats.tasks) + "\n";
    for (const auto& [status, count] : stats.tasks_by_status) out += "  " + status + ": " + std::to_string(count) + "\n";
    out += "recurring schedules: " + std::to_string(stats.recurring) + "\n";
    if (!stats.paused_pools.empty()) {
        out += "paused pools:";
        for (const std::string& pool : stats.paused_pools) out += " " + pool;
        out += "\n";
    }
    out += "next task id: " + std::to_string(stats.marks.next_task_id) + "\n";
    out += "leader: " + stats.leader.holder.value_or("none") + " (epoch " + std::to_string(stats.leader.epoch);
    if (stats.leader.holder) out += ", lease until " + format_time(stats.leader.expires_at);
    out += ")\n";
    if (stats.shards.leases.size() > 1 || !stats.shards.pools.empty()) {
        out += "shards:\n";
        for (const auto& lease : stats.shards.leases) {
            out += "  " + lease.shard + ": ";
            out += lease.lease.held ? "led by " + lease.holder.value_or("?") : std::string("no leader");
            out += " (epoch " + std::to_string(lease.lease.epoch) + ")";
            std::string pools;
            for (const auto& [pool, shard] : stats.shards.pools)
                if (shard == lease.shard) pools += (pools.empty() ? "" : ", ") + pool;
            if (!pools.empty()) out += "; pools " + pools;
            out += "\n";
        }
    }
    return out;
}

}  // namespace cronoq::store::tool
