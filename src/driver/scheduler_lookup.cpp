// Tasks by reference (docs/guide/durability.md): `find` and `retry` see what the engine
// holds and, with a store, every task whose row the store still holds.
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/submit_error.hpp>

#include "scheduler_state.hpp"
#include "task_options.hpp"

namespace cronoq::detail {

namespace {

bool retryable(TaskStatus s) {
    return s == TaskStatus::Failed || s == TaskStatus::DeadLettered || s == TaskStatus::Cancelled;
}

}  // namespace

std::shared_ptr<HandleState> SchedulerCore::find(const TaskRef& ref) const {
    store::Sequence pending = 0;  // the commit that carries what the engine knows
    {
        State::Read read(*s_);
        if (const auto task = s_->resolve(ref)) {
            // The engine hands back the record while the driver holds it: for
            // every live task, and for a retained one that has a key.
            if (TaskRecord* record = from_user(s_->engine.user(*task).value_or(0))) return record->engine_ref;
            if (s_->durable && s_->engine.status(*task)) pending = s_->durable->enqueued(s_->held());
        }
        if (!s_->durable) return nullptr;
    }
    // A task that ended here without a key (the engine retains it, the
    // driver keeps no record of it) may not have its end committed yet:
    // wait for the commit of what was enqueued (about a sync; until the
    // lead is lost if commits keep failing), so that its row tells its end
    // and its output.
    if (pending > 0) {
        s_->delivery.block_until_committed(pending);
    }
    // Off the mutex: a short read of the store. Every task the engine holds
    // a record of was found above, so a row found here is of a task that ended.
    auto row = s_->durable->journal().read_task(ref);
    if (!row || !is_terminal(row->status)) return nullptr;
    return s_->stored_handle(*row);
}

std::shared_ptr<HandleState> SchedulerCore::retry(const TaskRef& ref) {
    State& s = *s_;
    {
        State::Step step(s);
        const auto old = s.resolve(ref);
        const auto status = old ? s.engine.status(*old) : std::nullopt;
        if (status && !retryable(*status)) return nullptr;
        TaskRecord* record = status ? from_user(s.engine.user(*old).value_or(0)) : nullptr;
        if (record && record->keyed()) {
            TaskRequest r = *record->more;
            r.payload = record->payload;
            r.pool = *record->pool;
            r.kind = record->kind;
            return s.resubmit(*old, std::move(r));
        }
        // Without a store, a task the driver keeps no options of (unknown,
        // forgotten, or retained without a key) cannot be submitted again.
        if (!s.durable) return nullptr;
    }
    // Off the mutex: the task's row, and its payload through the codec.
    auto row = s.durable->journal().read_task(ref);
    if (!row || !retryable(row->status)) return nullptr;
    TaskRequest r;
    try {
        r = s.encoder.decode(*row);
    } catch (const std::exception& e) {
        throw SubmitException(SubmitError::Invalid, "task " + std::to_string(row->id.value) +
                                                        ": its stored row cannot be decoded: " + e.what());
    }
    relative_to_submission(r, row->submitted_at);
    State::Step step(s);
    // Retried meanwhile, or never ended here: the engine's word is newer.
    if (const auto status = s.engine.status(row->id); status && !retryable(*status)) return nullptr;
    return s.resubmit(row->id, std::move(r));
}

}  // namespace cronoq::detail
