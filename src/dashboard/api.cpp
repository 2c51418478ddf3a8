#include "api.hpp"

#include "json_views.hpp"
#include "ui_assets.hpp"

#include <cronoq/prometheus.hpp>
#include <cronoq/snapshot.hpp>
#include <cronoq/submit_error.hpp>

#include <nlohmann/json.hpp>

#include <charconv>
#include <optional>
#include <stdexcept>
#include <vector>

namespace cronoq::dashboard_detail {

namespace {

using nlohmann::json;

/// Schedules list this many next occurrences each.
constexpr std::size_t next_occurrences = 5;
/// A bulk retry retries at most this many dead letters per request; the
/// reply's cursor continues it.
constexpr std::size_t bulk_retry_limit = 1000;

Reply json_reply(int status, const json& body) {
    // Invalid UTF-8 in a payload preview becomes U+FFFD rather than an error.
    return Reply{status, "application/json", body.dump(-1, ' ', false, json::error_handler_t::replace)};
}

Reply error(int status, const std::string& message) { return error_reply(status, message); }

/// The path split at '/', without the empty first segment.
std::vector<std::string_view> segments(std::string_view path) {
    std::vector<std::string_view> out;
    while (!path.empty()) {
        if (path.front() == '/') path.remove_prefix(1);
        const auto slash = path.find('/');
        out.push_back(path.substr(0, slash));
        path = slash == std::string_view::npos ? std::string_view() : path.substr(slash);
    }
    return out;
}

std::optional<TaskId> task_id(std::string_view text) {
    std::uint64_t id = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return TaskId{id};
}

/// Without a store, what a task view lacks (attempts, last error, times,
/// priority) from the scheduler's query: the page that starts at its id.
void complete_from_query(detail::SchedulerCore& core, detail::TaskView& view) {
    TaskQuery q;
    q.cursor = std::to_string(view.task.id.value + 1);
    q.limit = 1;
    TaskPage page = core.query(q);
    if (page.tasks.empty() || page.tasks.front().id != view.task.id) return;
    StoredTask& found = page.tasks.front();
    if (found.payload.empty()) found.payload = std::move(view.task.payload);
    if (!found.output) found.output = std::move(view.task.output);
    view.task = std::move(found);
    view.attempt_known = true;
}

Reply page_of_tasks(detail::SchedulerCore& core, const Parameters& parameters) {
    const TaskPage page = core.query(query_from(parameters));
    json tasks = json::array();
    for (const StoredTask& t : page.tasks) tasks.push_back(task_json(t));
    return json_reply(200, {{"tasks", std::move(tasks)},
                            {"next_cursor", page.next_cursor ? json(*page.next_cursor) : json(nullptr)}});
}

Reply task_action(detail::SchedulerCore& core, TaskId id, std::string_view action) {
    const auto status = core.status(TaskRef(id));
    if (action == "cancel") {
        if (core.cancel(TaskRef(id))) return json_reply(200, {{"id", id.value}, {"cancelled", true}});
        if (!status) return error(404, "task " + std::to_string(id.value) + " is unknown");
        return error(409, "task " + std::to_string(id.value) + " has ended (" + std::string(to_string(*status)) + ")");
    }
    auto retried = core.retry(TaskRef(id));
    if (retried) return json_reply(200, {{"id", id.value}, {"retried_as", retried->id().value}});
    if (!status && !core.task_view(TaskRef(id))) return error(404, "task " + std::to_string(id.value) + " is unknown");
    return error(409, "task " + std::to_string(id.value) +
                          " cannot be retried: only failed, dead-lettered or cancelled tasks can");
}

/// Retries the dead letters a query selects, a page at a time, up to
/// `bulk_retry_limit`; `next_cursor` continues where it stopped.
Reply retry_dead_letters(detail::SchedulerCore& core, const Parameters& parameters) {
    TaskQuery q = query_from(parameters);
    q.statuses = {TaskStatus::DeadLettered};
    q.limit = std::min<std::size_t>(q.limit == 0 ? 1 : q.limit, bulk_retry_limit);
    std::size_t retried = 0, failed = 0;
    std::optional<std::string> cursor = q.cursor;
    while (retried + failed < bulk_retry_limit) {
        q.cursor = cursor;
        q.limit = std::min(q.limit, bulk_retry_limit - retried - failed);
        const TaskPage page = core.query(q);
        for (const StoredTask& t : page.tasks) {
            try {
                if (core.retry(TaskRef(t.id)))
                    ++retried;
                else
                    ++failed;  // retried meanwhile
            } catch (const SubmitException&) {
                ++failed;
            }
        }
        cursor = page.next_cursor;
        if (!cursor) break;
    }
    return json_reply(200, {{"retried", retried}, {"not_retried", failed},
                            {"next_cursor", cursor ? json(*cursor) : json(nullptr)}});
}

}  // namespace

Reply error_reply(int status, const std::string& message) { return json_reply(status, {{"error", message}}); }

bool Api::is_action(std::string_view method, std::string_view path) {
    return method != "GET" && method != "HEAD" && path.starts_with("/api/");
}

Reply Api::handle(std::string_view method, std::string_view path, const Parameters& parameters) const {
    if (is_action(method, path) && read_only_) return error(403, "the dashboard is read-only");
    // The page needs no scheduler.
    if (method == "GET" || method == "HEAD") {
        const std::string_view file = path == "/" ? std::string_view("/index.html") : path;
        for (const UiAsset& asset : ui_assets())
            if (asset.path == file) return Reply{200, std::string(asset.content_type), std::string(asset.bytes)};
    }
    const auto core = core_.lock();
    if (!core) return error(503, "the scheduler is gone");
    try {
        return dispatch(*core, method, path, parameters);
    } catch (const std::invalid_argument& e) {
        return error(400, e.what());
    } catch (const SubmitException& e) {
        return error(409, e.what());
    } catch (const std::exception& e) {
        return error(500, e.what());
    }
}

Reply Api::dispatch(detail::SchedulerCore& core, std::string_view method, std::string_view path,
                    const Parameters& parameters) const {
    const auto parts = segments(path);
    const bool get = method == "GET" || method == "HEAD";
    if (get && path == "/metrics")
        return Reply{200, "text/plain; version=0.0.4; charset=utf-8", prometheus_text(core.snapshot())};
    if (parts.size() < 2 || parts[0] != "api") return error(404, "no route " + std::string(path));
    const std::string_view what = parts[1];
    if (get && parts.size() == 2) {
        if (what == "config") return json_reply(200, {{"read_only", read_only_}});
        if (what == "pools") return json_reply(200, {{"pools", pools_json(core.snapshot())}});
        if (what == "tasks") return page_of_tasks(core, parameters);
        if (what == "recurring") return json_reply(200, {{"recurring", recurring_json(core.recurring_view(next_occurrences))}});
        if (what == "store") {
            const Snapshot snapshot = core.snapshot();
            return json_reply(200, {{"store", snapshot.store ? snapshot.to_json()["store"] : json(nullptr)}});
        }
    }
    if (what == "tasks" && parts.size() >= 3) {
        const auto id = task_id(parts[2]);
        if (!id) return error(404, "\"" + std::string(parts[2]) + "\" is not a task id");
        if (get && parts.size() == 3) {
            auto view = core.task_view(TaskRef(*id));
            if (!view) return error(404, "task " + std::to_string(id->value) + " is unknown");
            if (!view->attempt_known) complete_from_query(core, *view);
            return json_reply(200, task_detail_json(*view));
        }
        if (method == "POST" && parts.size() == 4 && (parts[3] == "retry" || parts[3] == "cancel"))
            return task_action(core, *id, parts[3]);
    }
    if (what == "pools" && parts.size() == 4 && method == "POST" && (parts[3] == "pause" || parts[3] == "resume")) {
        const std::string pool(parts[2]);
        const bool known = core.set_paused(pool, parts[3] == "pause");
        if (!known) return error(404, "pool \"" + pool + "\" is unknown");
        return json_reply(200, {{"pool", pool}, {"paused", parts[3] == "pause"}});
    }
    if (what == "dead_letters" && parts.size() == 3 && parts[2] == "retry" && method == "POST")
        return retry_dead_letters(core, parameters);
    return error(get || method == "POST" ? 404 : 405, "no route " + std::string(method) + " " + std::string(path));
}

}  // namespace cronoq::dashboard_detail
