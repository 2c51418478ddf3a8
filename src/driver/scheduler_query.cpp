// Scheduler::query (docs/guide/operations.md, "Queries"): with a store, the
// store's; without one, the engine's live and retained tasks (Engine::scan),
// with what the driver's records still hold of each.
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/task_failure.hpp>

#include "scheduler_state.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace cronoq::detail {

namespace {

// The store's cursor: the last id seen, in digits (docs/store.md, "Queries").
std::uint64_t parse_cursor(const std::string& cursor) {
    const bool digits = !cursor.empty() && cursor.size() <= 19 && cursor.find_first_not_of("0123456789") == std::string::npos;
    const std::uint64_t id = digits ? std::stoull(cursor) : 0;
    if (id == 0)
        throw std::invalid_argument("TaskQuery::cursor: \"" + cursor + "\" is not a cursor (pass a TaskPage::next_cursor)");
    return id;
}

// The application's codec may throw: the query shows what it can.
bool contained_encode(std::string& out, const std::function<std::string(const void*)>& encode, const void* value) {
    try {
        out = encode(value);
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

}  // namespace

TaskPage SchedulerCore::query(const TaskQuery& q) const {
    if (s_->options.store) return s_->options.store->query(q);
    TaskPage out;
    const std::uint64_t below = q.cursor ? parse_cursor(*q.cursor) : std::numeric_limits<std::uint64_t>::max();
    const std::size_t limit = std::clamp<std::size_t>(q.limit, 1, 1000);
    core::TaskFilter filter;
    for (const TaskStatus status : q.statuses) filter.statuses |= 1u << static_cast<unsigned>(status);
    filter.kind = q.kind;
    filter.key_prefix = q.key_prefix;
    filter.fair_key = q.fair_key;
    // Wall times to engine time, at one instant (the clock's two faces).
    const auto now = s_->clock->now();
    const auto wall = s_->clock->system_now();
    const auto to_engine = [&](std::chrono::system_clock::time_point t) {
        return now + std::chrono::duration_cast<core::Duration>(t - wall);
    };
    if (q.submitted_after) filter.admitted_from = to_engine(*q.submitted_after);
    if (q.submitted_before) filter.admitted_until = to_engine(*q.submitted_before);
    core::TaskScanPage scanned;
    std::vector<std::shared_ptr<TaskRecord>> records;
    std::vector<std::string> pool_names;
    {
        State::Read read(*s_);
        if (q.pool) {
            filter.pool = s_->engine.find_pool(*q.pool);
            if (!filter.pool) return out;  // no such pool: no task
        }
        scanned = s_->engine.scan(filter, below, limit);
        records.reserve(scanned.tasks.size());
        for (const core::TaskView& v : scanned.tasks)
            records.push_back(v.user ? from_user(v.user)->engine_ref : nullptr);
        for (std::size_t p = 0; p < s_->engine.pool_count(); ++p)
            pool_names.push_back(s_->engine.pool_config(static_cast<core::PoolId>(p)).name);
    }
    for (std::size_t i = 0; i < scanned.tasks.size(); ++i) {
        core::TaskView& v = scanned.tasks[i];
        StoredTask& t = out.tasks.emplace_back();
        t.id = v.id;
        t.key = std::move(v.key);
        t.pool = pool_names.at(v.pool);
        t.kind = std::move(v.kind);
        t.status = v.status;
        t.attempt = v.attempt;
        t.priority = v.priority;
        t.fair_key = std::move(v.fair_key);
        t.submitted_at = wall + std::chrono::duration_cast<std::chrono::system_clock::duration>(v.admitted - now);
        t.updated_at = wall + std::chrono::duration_cast<std::chrono::system_clock::duration>(v.changed - now);
        const std::shared_ptr<TaskRecord>& record = records[i];
        if (!record) continue;
        // Bytes only where the pool has a codec (a remote pool): a local
        // pool's types need none (docs/guide/operations.md, "Queries").
        const ErasedCodec& codec = s_->pools.at(v.pool).def.codec;
        if (codec.encode_payload && record->payload) contained_encode(t.payload, codec.encode_payload, record->payload.get());
        if (!is_terminal(v.status) || !record->finished()) continue;
        std::shared_ptr<HandleState> state = record;
        try {
            const std::shared_ptr<const void> output = HandleState::outcome(state);
            std::string bytes;
            if (output && codec.encode_output && contained_encode(bytes, codec.encode_output, output.get()))
                t.output = std::move(bytes);
        } catch (const TaskFailure& failure) {
            t.last_error = failure.message();
        }
    }
    if (scanned.next_below) out.next_cursor = std::to_string(*scanned.next_below);
    return out;
}

}  // namespace cronoq::detail
