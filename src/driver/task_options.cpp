#include "task_options.hpp"

#include "versioned_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace cronoq::detail {

namespace {

using nlohmann::json;
using Wall = std::chrono::system_clock::time_point;

// Durations as integer nanoseconds, as wall times (wall_ns).
std::int64_t ns(std::chrono::nanoseconds d) { return d.count(); }
std::int64_t ns(Wall t) { return wall_ns(t); }
std::chrono::nanoseconds duration(const json& j) { return std::chrono::nanoseconds(j.get<std::int64_t>()); }
Wall wall_time(const json& j) {
    return Wall(std::chrono::duration_cast<Wall::duration>(std::chrono::nanoseconds(j.get<std::int64_t>())));
}

Wall saturating_add(Wall t, std::chrono::nanoseconds d) {
    const auto base = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    std::int64_t sum = 0;
    if (__builtin_add_overflow(base, d.count(), &sum)) sum = d.count() > 0 ? INT64_MAX : INT64_MIN;
    return Wall(std::chrono::duration_cast<Wall::duration>(std::chrono::nanoseconds(sum)));
}

json encode_ref(const TaskRef& ref) {
    json j = json::object();
    if (ref.id) j["id"] = ref.id->value;
    if (ref.key) j["key"] = *ref.key;
    return j;
}

TaskRef decode_ref(const json& j) {
    if (j.contains("id")) return TaskRef(TaskId{j.at("id").get<std::uint64_t>()});
    return TaskRef(j.at("key").get<std::string>());
}

// The format's version: a reader refuses a newer one rather than guess.
constexpr int format_version = 1;

}  // namespace

std::int64_t wall_ns(Wall t) { return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count(); }

std::string encode_options(const TaskRequest& r, Wall wall) {
    json j = versioned_object(format_version);
    j["priority"] = static_cast<int>(r.priority);
    if (r.deadline_at) j["deadline_at"] = ns(*r.deadline_at);
    if (r.deadline_in) j["deadline_at"] = ns(saturating_add(wall, *r.deadline_in));
    if (r.timeout) j["timeout"] = ns(*r.timeout);
    if (r.retry) {
        j["retry"] = {{"max_attempts", r.retry->max_attempts},
                      {"initial_backoff", ns(r.retry->initial_backoff)},
                      {"multiplier", r.retry->multiplier},
                      {"max_backoff", ns(r.retry->max_backoff)},
                      {"jitter", r.retry->jitter}};
    }
    if (r.duration_hint) j["duration_hint"] = ns(*r.duration_hint);
    if (!r.tags.empty()) j["tags"] = r.tags;
    if (r.traceparent) j["traceparent"] = *r.traceparent;
    if (r.start_at) j["start_at"] = ns(*r.start_at);
    if (r.start_in) j["start_at"] = ns(saturating_add(wall, *r.start_in));
    j["start_tolerance"] = ns(r.start_tolerance);
    j["on_miss"] = static_cast<int>(r.on_miss);
    if (!r.depends_on.empty()) {
        json deps = json::array();
        for (const Dep& d : r.depends_on) deps.push_back({{"kind", static_cast<int>(d.kind)}, {"ref", encode_ref(d.ref)}});
        j["depends_on"] = std::move(deps);
    }
    if (!r.resources.empty()) {
        json uses = json::array();
        for (const auto& u : r.resources) uses.push_back({{"name", u.name}, {"amount", u.amount}});
        j["resources"] = std::move(uses);
    }
    // Optional, so that rows written before labels existed read the same.
    if (!r.labels.empty()) j["labels"] = r.labels;
    return j.dump();
}

TaskRequest decode_options(std::string_view text) {
    const json j = parse_versioned(text, format_version, "task options");
    TaskRequest r;
    const int priority = j.at("priority").get<int>();
    if (priority < 0 || priority >= static_cast<int>(priority_count)) throw std::runtime_error("bad priority");
    r.priority = static_cast<Priority>(priority);
    if (j.contains("deadline_at")) r.deadline_at = wall_time(j.at("deadline_at"));
    if (j.contains("timeout")) r.timeout = duration(j.at("timeout"));
    if (j.contains("retry")) {
        const json& p = j.at("retry");
        RetryPolicy policy;
        policy.max_attempts = p.at("max_attempts").get<std::uint32_t>();
        policy.initial_backoff = duration(p.at("initial_backoff"));
        policy.multiplier = p.at("multiplier").get<double>();
        policy.max_backoff = duration(p.at("max_backoff"));
        policy.jitter = p.at("jitter").get<bool>();
        r.retry = policy;
    }
    if (j.contains("duration_hint")) r.duration_hint = duration(j.at("duration_hint"));
    if (j.contains("tags")) r.tags = j.at("tags").get<std::vector<std::pair<std::string, std::string>>>();
    if (j.contains("traceparent")) r.traceparent = j.at("traceparent").get<std::string>();
    if (j.contains("start_at")) r.start_at = wall_time(j.at("start_at"));
    r.start_tolerance = duration(j.at("start_tolerance"));
    const int miss = j.at("on_miss").get<int>();
    if (miss < 0 || miss > static_cast<int>(MissPolicy::Fail)) throw std::runtime_error("bad on_miss");
    r.on_miss = static_cast<MissPolicy>(miss);
    if (j.contains("depends_on")) {
        for (const json& d : j.at("depends_on")) {
            const int kind = d.at("kind").get<int>();
            if (kind < 0 || kind > static_cast<int>(Dep::Kind::OnComplete)) throw std::runtime_error("bad dependency kind");
            r.depends_on.push_back(Dep{static_cast<Dep::Kind>(kind), decode_ref(d.at("ref"))});
        }
    }
    if (j.contains("resources"))
        for (const json& u : j.at("resources"))
            r.resources.push_back({u.at("name").get<std::string>(), u.at("amount").get<std::uint32_t>()});
    if (j.contains("labels")) r.labels = j.at("labels").get<std::vector<std::pair<std::string, std::string>>>();
    return r;
}

void relative_to_submission(TaskRequest& r, Wall submitted_at) {
    if (r.deadline_at) {
        r.deadline_in = std::max(std::chrono::nanoseconds(0), std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                                  *r.deadline_at - submitted_at));
        r.deadline_at.reset();
    }
    if (r.start_at) {
        const auto in = std::chrono::duration_cast<std::chrono::nanoseconds>(*r.start_at - submitted_at);
        if (in.count() > 0) r.start_in = in;
        r.start_at.reset();
    }
}

}  // namespace cronoq::detail
