// A client's task as a row (client_rows.hpp).
#include "client_rows.hpp"

#include <cstdint>
#include <utility>

namespace cronoq::detail {

ClientRows::ClientRows(ErasedCodec codec, std::size_t max_value_bytes)
    : clock_(Clock::steady()), encoder_(no_pools_, *clock_, true, std::move(codec), max_value_bytes) {}

std::optional<std::pair<SubmitError, std::string>> ClientRows::check(const TaskRequest& r, const KnownConfig& known) {
    if (!r.pool || r.pool->empty())
        return std::pair{SubmitError::Invalid, std::string("a client has no default pool: name one with Task::pool")};
    if (!known.any || !known.complete) return std::nullopt;
    if (!known.pools.count(*r.pool))
        return std::pair{SubmitError::UnknownPool, "no leader declares the pool \"" + *r.pool + "\" (declared: " +
                                                       known.pool_names() + ")"};
    for (const auto& use : r.resources) {
        auto it = known.resources.find(use.name);
        if (it == known.resources.end())
            return std::pair{SubmitError::UnknownResource, "no leader declares the resource \"" + use.name + "\""};
        if (it->second && use.amount > *it->second)
            return std::pair{SubmitError::ResourceExceedsCapacity,
                             "the resource \"" + use.name + "\" grants at most " + std::to_string(*it->second) +
                                 " units, the task asks for " + std::to_string(use.amount)};
    }
    return std::nullopt;
}

SubmitResult<store::TaskRow> ClientRows::row(const TaskRequest& r) const {
    auto bytes = encoder_.encode(r);
    if (!bytes) return {bytes.error(), bytes.message()};
    return row_of(std::move(bytes).value(), r);
}

store::TaskRow ClientRows::row(std::string payload, const TaskRequest& r) const {
    return row_of(encoder_.with_payload(std::move(payload), r, clock_->system_now()), r);
}

// The status admission would give the task (the leader decides again at
// ingestion): Blocked while it has dependencies, Scheduled until a start
// in the future, Ready otherwise.
store::TaskRow ClientRows::row_of(Encoded&& bytes, const TaskRequest& r) const {
    store::TaskRow row;
    row.key = r.key;
    row.pool = *r.pool;
    row.kind = r.kind;
    row.submitted_at = row.updated_at = bytes.wall;
    std::optional<std::chrono::system_clock::time_point> start;
    if (r.start_at) start = *r.start_at;
    if (r.start_in) {
        // Saturated, as encode_options resolves it: a start too far to express never comes.
        std::int64_t at = 0;
        if (__builtin_add_overflow(std::chrono::duration_cast<std::chrono::nanoseconds>(bytes.wall.time_since_epoch()).count(),
                                   r.start_in->count(), &at))
            at = INT64_MAX;
        start = std::chrono::system_clock::time_point(
            std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(at)));
    }
    if (!r.depends_on.empty()) {
        row.status = TaskStatus::Blocked;
    } else if (start && *start > bytes.wall) {
        row.status = TaskStatus::Scheduled;
        row.run_at = start;
    } else {
        row.status = TaskStatus::Ready;
    }
    row.options = std::move(bytes.options);
    row.payload = std::move(bytes.payload);
    return row;
}

}  // namespace cronoq::detail
