// A scheduler with a store (docs/guide/durability.md): each step's changes go to the store's
// commit queue, what acknowledges waits for its commit, and the store's
// reports (leading, commits, the end of the lead) come back here.
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/logging.hpp>
#include <cronoq/task_failure.hpp>

#include "recurring_definition.hpp"
#include "scheduler_state.hpp"
#include "task_options.hpp"

#include <asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

namespace cronoq::detail {

namespace {

std::optional<store::WallTime> wall_of(std::optional<core::Time> t, core::Time now, store::WallTime wall) {
    if (!t) return std::nullopt;
    return wall + std::chrono::duration_cast<store::WallTime::duration>(*t - now);
}

}  // namespace

// ---- writing (mutex held unless said) ---------------------------------------------------

// Off the mutex: the codec is the application's code.
// With a store, or for a remote pool (whose leases carry these bytes): both
// use codec<P>, so one encoding serves both.
SubmitResult<Encoded> SchedulerCore::State::encode(const TaskRequest& r) const {
    Encoded e;
    const PoolRuntime* remote = remote_pool_of(r);
    if (durable) e.wall = clock->system_now();
    try {
        e.payload = durable ? durable->codec.encode_payload(r.payload.get()) : remote->def.codec.encode_payload(r.payload.get());
    } catch (const std::exception& ex) {
        return {SubmitError::Invalid, std::string("payload: the codec cannot encode it: ") + ex.what()};
    }
    if (durable && e.payload.size() > durable->max_value_bytes)
        return {SubmitError::Invalid, "payload: " + std::to_string(e.payload.size()) +
                                          " bytes encoded, more than the store accepts (" +
                                          std::to_string(durable->max_value_bytes) + ")"};
    if (remote)
        if (auto problem = lease_too_large(r, *remote, e.payload.size()); !problem.empty())
            return {SubmitError::Invalid, std::move(problem)};
    if (durable) e.options = encode_options(r, e.wall);
    return e;
}

void SchedulerCore::State::write_admission(TaskId id, const TaskRecord& record, const Encoded& encoded) {
    if (!durable->writing) return;
    store::TaskRow row;
    row.id = id;
    row.key = record.key();
    row.pool = *record.pool;
    row.kind = record.kind;
    row.status = engine.status(id).value_or(TaskStatus::Ready);
    row.submitted_at = row.updated_at = encoded.wall;
    row.options = encoded.options;
    row.payload = encoded.payload;
    durable->batch.changes.emplace_back(store::TaskInserted{std::move(row)});
}

void SchedulerCore::State::write_status(const core::Status& s, TaskRecord& record, core::Time now,
                                        std::chrono::system_clock::time_point wall) {
    if (!durable->writing) return;
    store::TaskTransition t;
    t.id = s.task;
    t.status = s.status;
    t.attempt = s.attempt;
    t.last_error = s.message;
    t.updated_at = wall + std::chrono::duration_cast<store::WallTime::duration>(s.at - now);
    t.run_at = wall_of(s.until, now, wall);
    if (s.status == TaskStatus::Succeeded && record.output) t.output = record.encoded_output ? *record.encoded_output : std::string();
    durable->batch.changes.emplace_back(std::move(t));
}

void SchedulerCore::State::write(store::Change change) {
    if (durable->writing) durable->batch.changes.push_back(std::move(change));
}

store::Sequence SchedulerCore::State::enqueue_step() {
    if (durable->writing && !durable->batch.changes.empty()) {
        const auto marks = engine.next_ids();
        // Ids are reserved ahead in blocks, so that a new leader never hands
        // out one this process may have used.
        auto& reserved = durable->reserved;
        if (marks.task >= reserved.task || marks.lease >= reserved.lease) {
            reserved = {marks.task + Durable::id_block, marks.lease + Durable::id_block};
            durable->batch.changes.emplace_back(store::HighWaterMarks{reserved.task, reserved.lease});
        }
        durable->enqueued = durable->journal.enqueue(std::exchange(durable->batch, {}));
    }
    durable->batch.changes.clear();  // nothing is written once the lead is gone
    if (durable->release_due && !durable->release_asked) {
        durable->release_asked = true;
        durable->journal.release();  // after the step's changes: they commit first
    }
    return durable->enqueued;
}

void SchedulerCore::State::wait_commit(store::Sequence seq, std::shared_ptr<WaitList> done) {
    std::lock_guard lock(deliver_mu);
    if (seq <= durable->committed || durable->lost)
        done->set();
    else
        durable->held.emplace(seq, Ack{std::move(done)});
}

void SchedulerCore::State::fail_uncommitted(Deferred& d) {
    if (auto* f = std::get_if<Finish>(&d)) {
        // Its end was never committed: the store holds it as it was before.
        const TaskStatus last = is_terminal(f->status) ? TaskStatus::Running : f->status;
        f->record->finish(last, f->attempt, "leadership lost before this result was committed: " + *durable->lost,
                          nullptr);
    } else if (auto* ack = std::get_if<Ack>(&d)) {
        ack->done->set();  // the waiter sees that its sequence was not committed
    }
}

// ---- the store's reports (its thread) -----------------------------------------------------

void SchedulerCore::State::on_commit(const store::CommitReport& report) {
    if (report.error) logger()->warn("store: commit failed (retried): {}", report.error->what());
    std::lock_guard lock(deliver_mu);
    if (report.committed <= durable->committed) return;
    durable->committed = report.committed;
    durable->commit_seen.notify_all();
    while (!durable->held.empty() && durable->held.begin()->first <= durable->committed) {
        auto node = durable->held.extract(durable->held.begin());
        deliver_one(node.mapped());
    }
}

void SchedulerCore::State::on_lost(const store::LeadershipLost& lost) {
    {
        Step step(*this);
        durable->writing = false;
        durable->lead_ended = true;
        durable->batch.changes.clear();
        if (!shutting_down) {
            // Fenced or failing: stop at once; what the store holds is for the
            // next leader. Running attempts are aborted without a change.
            shutting_down = true;
            if (recurring_timer) recurring_timer->disarm();
            for (PoolRuntime& p : pools)
                while (!p.waiting_submits.empty()) wake_next_submit(p);
            const auto now = clock->now();
            engine.hand_over(now, now);
            apply(now);
            log([message = lost.message] { logger()->error("store: leadership lost: {}; this scheduler stops", message); });
        }
    }
    std::vector<std::shared_ptr<TaskRecord>> unfinished;
    {
        Step step(*this);
        for (RecordLink* l = held_records.next; l != &held_records; l = l->next) {
            auto& record = static_cast<TaskRecord&>(*l);
            if (!is_terminal(record.status())) unfinished.push_back(record.engine_ref);
        }
    }
    std::vector<Deferred> held;
    {
        std::lock_guard lock(deliver_mu);
        durable->lost = lost.message;
        durable->commit_seen.notify_all();
        for (auto& [seq, d] : durable->held) held.push_back(std::move(d));
        durable->held.clear();
        for (Deferred& d : held) fail_uncommitted(d);
        if (!durable->open_error && lost.recovery_error)
            durable->open_error.emplace(*lost.recovery_error, lost.message);
        else if (!durable->open_error && lost.reason != store::LostReason::Released)
            durable->open_error.emplace(StoreErrorKind::Fenced, "leadership lost: " + lost.message);
    }
    const std::string why = lost.reason == store::LostReason::Released
                                ? "the scheduler shut down; the task stays in the store for the next leader"
                                : "leadership lost: " + lost.message + "; the task stays in the store for the next leader";
    for (auto& record : unfinished) record->finish(record->status(), 0, std::string(why), nullptr);
    durable->leading->set();  // an open() still waiting learns it will not lead
    durable->lost_waits->set();
    Step step(*this);
    check_drained();  // a shutdown that waited for the hand-over ends now
}

void SchedulerCore::State::on_leading(store::Recovered recovered) {
    {
        Step step(*this);
        durable->writing = true;
        const auto now = clock->now();
        recover(recovered, now, clock->system_now());
        recover_schedules(recovered.recurring);
        apply(now);
        rearm_recurring();
    }
    durable->leading->set();
}

void SchedulerCore::State::recover(store::Recovered& recovered, core::Time now, std::chrono::system_clock::time_point wall) {
    start_fresh_engine(recovered.marks);
    std::vector<core::RestoredTask> tasks;
    std::vector<std::shared_ptr<TaskRecord>> records;
    for (const store::UnreadableRow& row : recovered.unreadable)
        fail_recovered(row.id, row.attempt, "decode: " + row.why, wall);
    for (store::TaskRow& row : recovered.tasks) rebuild_recovered(row, now, wall, tasks, records);
    const std::size_t restored = restore_recovered(tasks, records, now);
    log([n = restored, marks = recovered.marks, epoch = recovered.epoch] {
        logger()->info("store: leading (epoch {}); recovered {} task(s); ids from {}", epoch, n, marks.next_task_id);
    });
}

void SchedulerCore::State::start_fresh_engine(const store::HighWaterMarks& marks) {
    // A fresh engine whose ids start above every id a previous leader may
    // have handed out. Nothing was submitted yet: open() has not returned.
    core::EngineConfig config = options.engine;
    config.first_task_id = std::max<std::uint64_t>(marks.next_task_id, 1);
    config.first_lease_id = std::max<std::uint64_t>(marks.next_lease_id, 1);
    core::Engine fresh(config);
    for (const PoolRuntime& p : pools) fresh.add_pool(p.def.engine);
    engine = std::move(fresh);
    set_engine_modes();
    durable->reserved = {0, 0};  // the first commit reserves a block above them
}

void SchedulerCore::State::fail_recovered(TaskId id, std::uint32_t attempt, std::string message,
                                          std::chrono::system_clock::time_point wall) {
    log([id, message] { logger()->warn("recovery: task {} ends failed: {}", id.value, message); });
    store::TaskTransition t;
    t.id = id;
    t.status = TaskStatus::Failed;
    t.attempt = attempt;
    t.last_error = std::move(message);
    t.updated_at = wall;
    durable->batch.changes.emplace_back(std::move(t));
}

void SchedulerCore::State::rebuild_recovered(store::TaskRow& row, core::Time now,
                                             std::chrono::system_clock::time_point wall,
                                             std::vector<core::RestoredTask>& tasks,
                                             std::vector<std::shared_ptr<TaskRecord>>& records) {
    const auto engine_time = [&](std::optional<store::WallTime> t) -> std::optional<core::Time> {
        if (!t) return std::nullopt;
        return core::add_saturated(now, std::chrono::duration_cast<core::Duration>(*t - wall));
    };
    TaskRequest r;
    try {
        r = decode_options(row.options);
        r.payload = durable->codec.decode_payload(row.payload);
    } catch (const std::exception& e) {
        if (!is_terminal(row.status)) fail_recovered(row.id, row.attempt, std::string("decode: ") + e.what(), wall);
        return;
    }
    r.pool = row.pool;
    r.kind = row.kind;
    r.key = row.key;
    core::TaskSpec spec;
    if (auto failure = to_spec(r, now, wall, spec)) {
        if (!is_terminal(row.status))
            fail_recovered(row.id, row.attempt,
                           failure->first == SubmitError::UnknownPool ? "unknown pool after restart: " + row.pool
                                                                      : failure->second,
                           wall);
        return;
    }
    std::shared_ptr<const void> output;
    if (row.status == TaskStatus::Succeeded && row.output && durable->codec.decode_output) {
        try {
            output = durable->codec.decode_output(*row.output);
        } catch (const std::exception&) {
            // The task succeeded; only its kept output is unreadable.
        }
    }
    // A remote pool's leases carry the same codec<P> bytes as the row.
    auto record = make_record(spec.pool, std::move(r), wall, &row.payload);
    if (record->keyed()) relative_to_submission(*record->more, row.submitted_at);  // for a retry
    record->assign_id(row.id);
    record->set_status(row.status);
    if (is_terminal(row.status)) record->finish(row.status, row.attempt, std::string(row.last_error), std::move(output));
    spec.user = to_user(record.get());
    tasks.push_back(core::RestoredTask{row.id, std::move(spec), row.status, row.attempt, engine_time(row.run_at),
                                       row.last_error});
    records.push_back(std::move(record));
}

std::size_t SchedulerCore::State::restore_recovered(const std::vector<core::RestoredTask>& tasks,
                                                    std::vector<std::shared_ptr<TaskRecord>>& records, core::Time now) {
    auto results = engine.restore(tasks, now);
    for (std::size_t i = 0; i < results.size(); ++i) {
        if (!results[i]) {
            log([id = tasks[i].id, message = results[i].message()] {
                logger()->warn("recovery: task {} could not come back: {}", id.value, message);
            });
            continue;
        }
        hold(records[i]);
        // As for a task that ends here: a finished one without a key keeps no record.
        if (is_terminal(tasks[i].status) && !records[i]->keyed()) {
            engine.release_user(tasks[i].id);
            release(*records[i]);
        }
    }
    return results.size();
}

void SchedulerCore::State::recover_schedules(std::vector<store::RecurringRow>& rows) {
    for (store::RecurringRow& row : rows) {
        // A schedule that cannot come back stays in the store, untouched:
        // a process that declares its pool, or reads its format, may lead
        // later. It is named in the log.
        const auto skip = [&](const std::string& why) {
            log([name = row.name, why] { logger()->warn("recovery: recurring \"{}\" not resumed: {}", name, why); });
        };
        try {
            StoredSchedule stored = decode_schedule(row.definition);
            RecurringRequest& r = stored.request;
            r.name = row.name;
            if (r.task.pool && !engine.find_pool(*r.task.pool)) {
                skip("unknown pool after restart: " + *r.task.pool);
                continue;
            }
            r.task.payload = durable->codec.decode_payload(stored.payload);
            CronExpr expr = CronExpr::parse(r.cron);
            // From its last occurrence: one missed while no process led is
            // due at once (and fires once), none fires twice.
            const auto from = row.last_fired.value_or(stored.added_at);
            const auto next = expr.next_after(from, r.tz).value_or(std::chrono::system_clock::time_point::max());
            Schedule schedule{std::move(r), std::move(expr), next, std::nullopt};
            schedule.last_fired = row.last_fired;
            schedule.encoded_payload = std::move(stored.payload);
            if (row.last_fired) schedule.last = engine.find_key(occurrence_key(schedule, *row.last_fired));
            schedules.insert_or_assign(row.name, std::move(schedule));
        } catch (const std::exception& e) {
            skip(std::string("decode: ") + e.what());
        }
    }
}

// ---- SchedulerCore -----------------------------------------------------------------------

asio::awaitable<void> SchedulerCore::open() {
    auto self = shared_from_this();
    Durable& d = *s_->durable;
    store::LeadHandlers handlers;
    handlers.retention = s_->options.engine.retention;
    d.link->state = s_.get();  // the journal's thread starts in lead(), below
    handlers.on_leading = [link = d.link](store::Recovered r) {
        link->with_state([&](State& s) { s.on_leading(std::move(r)); });
    };
    handlers.on_commit = [link = d.link](const store::CommitReport& report) {
        link->with_state([&](State& s) { s.on_commit(report); });
    };
    handlers.on_lost = [link = d.link](const store::LeadershipLost& lost) {
        link->with_state([&](State& s) { s.on_lost(lost); });
    };
    d.journal.lead(std::move(handlers));
    auto leading = d.leading;
    co_await leading->async_wait(asio::use_awaitable);
    {
        std::lock_guard lock(s_->deliver_mu);
        if (d.open_error) throw *d.open_error;
    }
    // What the recovery wrote (rows it ended Failed, attempts it counted
    // lost) is committed before open returns, so that `find` and the
    // store's rows show it from then on (docs/store.md, "The scheduler
    // with a store"). Nothing to wait for when it wrote nothing.
    const bool committed = co_await s_->commit_enqueued();
    std::lock_guard lock(s_->deliver_mu);
    if (d.open_error) throw *d.open_error;
    if (!committed)
        throw StoreError(StoreErrorKind::Fenced, "leadership lost before the recovery was committed: " + d.lost.value_or(""));
}

asio::awaitable<void> SchedulerCore::flush() {
    if (!s_->durable) co_return;
    auto self = shared_from_this();
    const bool committed = co_await s_->commit_enqueued();
    std::lock_guard lock(s_->deliver_mu);
    if (!committed)
        throw StoreError(StoreErrorKind::Fenced, "leadership lost before the commit: " + s_->durable->lost.value_or(""));
}

asio::awaitable<bool> SchedulerCore::State::commit_enqueued() {
    store::Sequence seq = 0;
    {
        Read read(*this);
        seq = durable->enqueued;
    }
    auto done = WaitList::create();
    wait_commit(seq, done);
    co_await done->async_wait(asio::use_awaitable);
    std::lock_guard lock(deliver_mu);
    co_return seq <= durable->committed;
}

asio::awaitable<void> SchedulerCore::leadership_lost() {
    auto self = shared_from_this();
    if (!s_->durable) {
        // Never without a store: an operation that stays pending until the
        // awaiting coroutine is cancelled.
        auto never = WaitList::create();
        co_await never->async_wait(asio::use_awaitable);
        co_return;
    }
    auto lost = s_->durable->lost_waits;
    co_await lost->async_wait(asio::use_awaitable);
}

}  // namespace cronoq::detail
