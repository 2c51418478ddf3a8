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

std::shared_ptr<HandleState> SchedulerCore::State::stored_handle(const store::TaskRow& row) const {
    auto record = std::make_shared<TaskRecord>(row.id, self);
    record->pool = std::make_shared<const std::string>(row.pool);
    record->kind = row.kind;
    if (row.key) record->request().key = row.key;
    std::shared_ptr<const void> output;
    if (row.status == TaskStatus::Succeeded && row.output && durable->codec.decode_output) {
        try {
            output = durable->codec.decode_output(*row.output);
        } catch (const std::exception&) {
            // The task succeeded; only its kept output is unreadable.
        }
    }
    record->finish(row.status, row.attempt, std::string(row.last_error), std::move(output));
    return record;
}

SubmitResult<std::shared_ptr<HandleState>> SchedulerCore::State::resubmit_one(TaskId old, TaskRequest& r) {
    if (shutting_down) return {SubmitError::ShuttingDown, "the scheduler is shutting down"};
    // Its dependencies were met when it ran (a task whose edge broke ends
    // Skipped, which is not retried): the new task waits for none of them.
    r.depends_on.clear();
    std::optional<Encoded> encoded;
    if (durable) {
        auto bytes = encode(r);
        if (!bytes) return {bytes.error(), bytes.message()};
        encoded.emplace(std::move(bytes).value());
    }
    const auto now = clock->now();
    const auto wall = clock->system_now();
    core::TaskSpec spec;
    if (auto failure = to_spec(r, now, wall, spec)) return {failure->first, std::move(failure->second)};
    const bool keyed = r.key.has_value();
    auto record = make_record(spec.pool, std::move(r), wall, encoded ? &encoded->payload : nullptr);
    const TaskRecord* made = record.get();
    spec.user = to_user(record.get());
    // An old task the engine forgot (known from its row) is replaced by a
    // plain submission; its key, if no other task took it, goes along.
    const bool known = engine.status(old).has_value();
    auto id = known ? engine.resubmit(old, spec, now) : engine.submit(spec, now);
    // Its retention may end at `now` with no engine step since: resubmit
    // forgets it first, then refuses it as unknown. Its options are known
    // all the same (a record's, or the row's): submitted like a forgotten one.
    if (known && !id && id.error() == SubmitError::Invalid && !engine.status(old)) id = engine.submit(spec, now);
    if (!id) return {id.error(), id.message()};
    auto handle = admitted(id.value(), std::move(record), encoded ? &*encoded : nullptr);
    if (keyed && handle.get() == made && durable) write(store::TaskKeyReleased{old});
    apply(now);
    return handle;
}

std::shared_ptr<HandleState> SchedulerCore::find(const TaskRef& ref) const {
    store::Sequence pending = 0;  // the commit that carries what the engine knows
    {
        State::Read read(*s_);
        if (const auto task = s_->resolve(ref)) {
            // The engine hands back the record while the driver holds it: for
            // every live task, and for a retained one that has a key.
            if (TaskRecord* record = from_user(s_->engine.user(*task).value_or(0))) return record->engine_ref;
            if (s_->durable && s_->engine.status(*task)) pending = s_->durable->enqueued;
        }
        if (!s_->durable) return nullptr;
    }
    // A task that ended here without a key (the engine retains it, the
    // driver keeps no record of it) may not have its end committed yet:
    // wait for the commit of what was enqueued (about a sync; until the
    // lead is lost if commits keep failing), so that its row tells its end
    // and its output.
    if (pending > 0) {
        std::unique_lock lock(s_->deliver_mu);
        s_->durable->commit_seen.wait(lock, [&] { return s_->durable->committed >= pending || s_->durable->lost; });
    }
    // Off the mutex: a short read of the store. Every task the engine holds
    // a record of was found above, so a row found here is of a task that ended.
    auto row = s_->durable->journal.read_task(ref);
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
            auto handle = s.resubmit_one(*old, r);
            if (!handle) throw SubmitException(handle.error(), handle.message());
            return std::move(handle).value();
        }
        // Without a store, a task the driver keeps no options of (unknown,
        // forgotten, or retained without a key) cannot be submitted again.
        if (!s.durable) return nullptr;
    }
    // Off the mutex: the task's row, and its payload through the codec.
    auto row = s.durable->journal.read_task(ref);
    if (!row || !retryable(row->status)) return nullptr;
    TaskRequest r;
    try {
        r = decode_options(row->options);
        r.payload = s.durable->codec.decode_payload(row->payload);
    } catch (const std::exception& e) {
        throw SubmitException(SubmitError::Invalid, "task " + std::to_string(row->id.value) +
                                                        ": its stored row cannot be decoded: " + e.what());
    }
    relative_to_submission(r, row->submitted_at);
    r.pool = row->pool;
    r.kind = row->kind;
    r.key = row->key;
    State::Step step(s);
    // Retried meanwhile, or never ended here: the engine's word is newer.
    if (const auto status = s.engine.status(row->id); status && !retryable(*status)) return nullptr;
    auto handle = s.resubmit_one(row->id, r);
    if (!handle) throw SubmitException(handle.error(), handle.message());
    return std::move(handle).value();
}

}  // namespace cronoq::detail
