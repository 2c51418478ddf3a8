#pragma once
// A recurring schedule as a store keeps it (docs/guide/durability.md): JSON text the store
// never interprets, holding the schedule, its task template (options,
// pool, kind, key and the payload's encoded bytes) and when it was added.
#include <cronoq/detail/task_request.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace cronoq::detail {

struct StoredSchedule {
    RecurringRequest request;  ///< the template without its payload
    std::string payload;       ///< the template's payload, as `codec<P>` encoded it
    std::chrono::system_clock::time_point added_at;
};

std::string encode_schedule(const RecurringRequest& request, std::string_view payload,
                            std::chrono::system_clock::time_point added_at);

/// Throws std::exception on text it cannot read.
StoredSchedule decode_schedule(std::string_view text);

}  // namespace cronoq::detail
