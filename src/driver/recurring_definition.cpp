#include "recurring_definition.hpp"

#include "task_options.hpp"
#include "versioned_json.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>

namespace cronoq::detail {

namespace {

using nlohmann::json;
using Wall = std::chrono::system_clock::time_point;

// The format's version: a reader refuses a newer one rather than guess.
constexpr int schedule_format_version = 1;

// Payload bytes in JSON text: hex, since they need not be UTF-8.
std::string to_hex(std::string_view bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        out += digits[b >> 4];
        out += digits[b & 0xF];
    }
    return out;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw std::runtime_error("bad hex digit in a schedule's payload");
}

std::string from_hex(std::string_view hex) {
    if (hex.size() % 2 != 0) throw std::runtime_error("odd hex length in a schedule's payload");
    std::string out;
    out.reserve(hex.size() / 2);
    for (std::size_t i = 0; i < hex.size(); i += 2)
        out += static_cast<char>(hex_digit(hex[i]) * 16 + hex_digit(hex[i + 1]));
    return out;
}

}  // namespace

std::string encode_schedule(const RecurringRequest& request, std::string_view payload, Wall added_at) {
    const TaskRequest& task = request.task;
    json j = versioned_object(schedule_format_version);
    j["cron"] = request.cron;
    j["tz"] = request.tz;
    j["overlap"] = static_cast<int>(request.overlap);
    if (request.deadline_after) j["deadline_after"] = request.deadline_after->count();
    j["added_at"] = wall_ns(added_at);
    // The template's relative deadline stays relative: each occurrence's
    // runs from its own submission (its start is set per occurrence).
    TaskRequest absolute = task;
    absolute.deadline_in.reset();
    absolute.start_in.reset();
    j["options"] = encode_options(absolute, Wall{});
    if (task.deadline_in) j["deadline_in"] = task.deadline_in->count();
    if (task.pool) j["pool"] = *task.pool;
    j["kind"] = task.kind;
    if (task.key) j["key"] = *task.key;
    j["payload"] = to_hex(payload);
    return j.dump();
}

StoredSchedule decode_schedule(std::string_view text) {
    const json j = parse_versioned(text, schedule_format_version, "a schedule");
    StoredSchedule s;
    RecurringRequest& r = s.request;
    r.cron = j.at("cron").get<std::string>();
    r.tz = j.at("tz").get<std::string>();
    const int overlap = j.at("overlap").get<int>();
    if (overlap < 0 || overlap > static_cast<int>(OverlapPolicy::QueueOnSuccess))
        throw std::runtime_error("bad overlap policy");
    r.overlap = static_cast<OverlapPolicy>(overlap);
    if (j.contains("deadline_after")) r.deadline_after = std::chrono::nanoseconds(j.at("deadline_after").get<std::int64_t>());
    s.added_at = Wall(std::chrono::duration_cast<Wall::duration>(std::chrono::nanoseconds(j.at("added_at").get<std::int64_t>())));
    r.task = decode_options(j.at("options").get<std::string>());
    if (j.contains("deadline_in")) r.task.deadline_in = std::chrono::nanoseconds(j.at("deadline_in").get<std::int64_t>());
    if (j.contains("pool")) r.task.pool = j.at("pool").get<std::string>();
    r.task.kind = j.at("kind").get<std::string>();
    if (j.contains("key")) r.task.key = j.at("key").get<std::string>();
    s.payload = from_hex(j.at("payload").get<std::string>());
    return s;
}

}  // namespace cronoq::detail
