#include "json_views.hpp"

#include <cronoq/priority.hpp>
#include <cronoq/task_status.hpp>

#include <charconv>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace cronoq::dashboard_detail {

namespace {

using nlohmann::json;

json optional_text(const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); }

/// Bytes as a preview: the first `preview_bytes`, as text. Invalid UTF-8
/// is replaced when the reply is written (Api::handle); the page shows it
/// as text, never as markup.
json preview(const std::string& bytes) { return bytes.substr(0, preview_bytes); }

std::chrono::system_clock::time_point time_parameter(const std::string& name, const std::string& text) {
    std::int64_t ms = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
    if (ec == std::errc() && end == text.data() + text.size())
        return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
    std::tm tm{};
    int fraction_end = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                    &tm.tm_min, &tm.tm_sec, &fraction_end) == 6) {
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        const std::string rest = text.substr(static_cast<std::size_t>(fraction_end));
        if (rest == "Z" || rest.empty()) return std::chrono::system_clock::from_time_t(timegm(&tm));
    }
    throw std::invalid_argument(name + ": \"" + text + "\" is neither RFC 3339 UTC (2026-03-29T01:00:00Z) nor milliseconds");
}

}  // namespace

std::string utc_text(std::chrono::system_clock::time_point t) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    const std::time_t seconds = static_cast<std::time_t>(ms / 1000 - (ms % 1000 < 0 ? 1 : 0));
    const long long millis = ((ms % 1000) + 1000) % 1000;
    std::tm tm{};
    gmtime_r(&seconds, &tm);
    char out[96];
    std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
    return out;
}

json task_json(const StoredTask& t) {
    return {{"id", t.id.value},
            {"key", optional_text(t.key)},
            {"pool", t.pool},
            {"kind", t.kind},
            {"status", std::string(to_string(t.status))},
            {"attempt", t.attempt},
            {"last_error", t.last_error},
            {"submitted_at", t.submitted_at.time_since_epoch().count() ? json(utc_text(t.submitted_at)) : json(nullptr)},
            {"updated_at", t.updated_at.time_since_epoch().count() ? json(utc_text(t.updated_at)) : json(nullptr)},
            {"priority", to_string(t.priority)},
            {"fair_key", optional_text(t.fair_key)},
            {"payload_bytes", t.payload.size()},
            {"output_bytes", t.output ? json(t.output->size()) : json(nullptr)}};
}

json task_detail_json(const detail::TaskView& view) {
    json out = task_json(view.task);
    if (!view.attempt_known) out["attempt"] = nullptr;
    out["payload_preview"] = preview(view.task.payload);
    out["output_preview"] = view.task.output ? preview(*view.task.output) : json(nullptr);
    json deps = json::array();
    for (const detail::DependencyView& d : view.depends_on)
        deps.push_back({{"id", d.id ? json(d.id->value) : json(nullptr)}, {"key", optional_text(d.key)}, {"when", d.when}});
    out["depends_on"] = std::move(deps);
    return out;
}

json recurring_json(const std::vector<detail::RecurringView>& schedules) {
    json out = json::array();
    for (const detail::RecurringView& s : schedules) {
        json next = json::array();
        for (const auto& at : s.next) next.push_back(utc_text(at));
        out.push_back({{"name", s.name},
                       {"cron", s.cron},
                       {"tz", s.tz},
                       {"pool", s.pool},
                       {"kind", s.kind},
                       {"next", std::move(next)},
                       {"last_fired", s.last_fired ? json(utc_text(*s.last_fired)) : json(nullptr)},
                       {"last_task", s.last ? json(s.last->value) : json(nullptr)},
                       {"skipped", s.skipped}});
    }
    return out;
}

json pools_json(const Snapshot& snapshot) {
    json pools = snapshot.to_json()["pools"];
    for (json& p : pools) {
        if (!p.contains("remote_workers")) p["remote_workers"] = nullptr;
    }
    return pools;
}

TaskQuery query_from(const Parameters& parameters) {
    TaskQuery q;
    for (const auto& [name, value] : parameters) {
        if (name == "status") {
            std::string_view rest = value;
            while (!rest.empty()) {
                const auto comma = rest.find(',');
                const std::string_view one = rest.substr(0, comma);
                rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
                if (one.empty()) continue;
                const auto status = status_from_string(one);
                if (!status) throw std::invalid_argument("status: unknown status \"" + std::string(one) + "\"");
                q.statuses.push_back(*status);
            }
        } else if (name == "pool") {
            q.pool = value;
        } else if (name == "kind") {
            q.kind = value;
        } else if (name == "key_prefix") {
            q.key_prefix = value;
        } else if (name == "fair_key") {
            q.fair_key = value;
        } else if (name == "submitted_after") {
            q.submitted_after = time_parameter(name, value);
        } else if (name == "submitted_before") {
            q.submitted_before = time_parameter(name, value);
        } else if (name == "cursor") {
            if (!value.empty()) q.cursor = value;
        } else if (name == "limit") {
            std::size_t limit = 0;
            const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), limit);
            if (ec != std::errc() || end != value.data() + value.size())
                throw std::invalid_argument("limit: \"" + value + "\" is not a number");
            q.limit = limit;
        } else {
            throw std::invalid_argument("unknown parameter \"" + name + "\"");
        }
    }
    return q;
}

}  // namespace cronoq::dashboard_detail
