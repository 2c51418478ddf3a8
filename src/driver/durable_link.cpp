// A scheduler's link to its store (durable_link.hpp).
#include "durable_link.hpp"

#include <utility>

namespace cronoq::detail {

namespace {

std::optional<store::WallTime> wall_of(std::optional<core::Time> t, core::Time now, store::WallTime wall) {
    if (!t) return std::nullopt;
    return wall + std::chrono::duration_cast<store::WallTime::duration>(*t - now);
}

}  // namespace

void DurableLink::end_lead(const EngineHeld&) {
    writing_ = false;
    lead_ended_ = true;
    batch_.changes.clear();
}

void DurableLink::write_admission(const EngineHeld&, TaskId id, const TaskRecord& record, TaskStatus status,
                                  const Encoded& encoded) {
    if (!writing_) return;
    store::TaskRow row;
    row.id = id;
    row.key = record.key();
    row.pool = *record.pool;
    row.kind = record.kind;
    row.status = status;
    row.submitted_at = row.updated_at = encoded.wall;
    row.options = encoded.options;
    row.payload = encoded.payload;
    batch_.changes.emplace_back(store::TaskInserted{std::move(row)});
}

void DurableLink::write_status(const EngineHeld&, const core::Status& s, const TaskRecord& record, core::Time now,
                               WallTime wall) {
    if (!writing_) return;
    store::TaskTransition t;
    t.id = s.task;
    t.status = s.status;
    t.attempt = s.attempt;
    t.last_error = s.message;
    t.updated_at = wall + std::chrono::duration_cast<store::WallTime::duration>(s.at - now);
    t.run_at = wall_of(s.until, now, wall);
    if (s.status == TaskStatus::Succeeded && record.output.value)
        t.output = record.output.bytes ? *record.output.bytes : std::string();
    batch_.changes.emplace_back(std::move(t));
}

void DurableLink::write_ended(const EngineHeld&, TaskId id, TaskStatus status, std::uint32_t attempt,
                              std::string message, WallTime wall) {
    store::TaskTransition t;
    t.id = id;
    t.status = status;
    t.attempt = attempt;
    t.last_error = std::move(message);
    t.updated_at = wall;
    batch_.changes.emplace_back(std::move(t));
}

store::Sequence DurableLink::enqueue_step(const EngineHeld& held, const core::Engine& engine) {
    enqueue_now(held, engine);
    if (release_due_ && !release_asked_) {
        release_asked_ = true;
        journal_.release();  // after the step's changes: they commit first
    }
    return enqueued_;
}

store::Sequence DurableLink::enqueue_now(const EngineHeld&, const core::Engine& engine) {
    if (writing_ && !batch_.changes.empty()) {
        const core::NextIds next = engine.next_ids();
        // Ids are reserved ahead in blocks, so that a new leader never hands
        // out one this process may have used.
        if (next.task >= reserved_.task || next.lease >= reserved_.lease) {
            reserved_ = {next.task + id_block, next.lease + id_block};
            batch_.changes.emplace_back(store::HighWaterMarks{reserved_.task, reserved_.lease});
        }
        enqueued_ = journal_.enqueue(std::exchange(batch_, {}));
    }
    batch_.changes.clear();  // nothing is written once the lead is gone
    return enqueued_;
}

}  // namespace cronoq::detail
