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

// Recovered rows as admit reads them; a row that cannot come back ends
// failed in the store (unless it ended already), and is named in the log.
class SchedulerCore::State::RecoveredRows final : public Submissions {
public:
    RecoveredRows(State& s, std::vector<Submission>& list, std::chrono::system_clock::time_point wall)
        : s_(s), list_(list), wall_(wall) {}
    std::size_t size() const override { return list_.size(); }
    Submission& at(std::size_t i) override { return list_[i]; }
    // Only a pool the engine does not know refuses a row before the
    // engine sees it; what the engine refuses is counted, and logged.
    // Called by admit, with the engine's mutex held.
    void result(std::size_t i, Admitted&& r) override CRONOQ_REQUIRES(s_.mu) {
        const store::TaskRow& row = *list_[i].row;
        const bool unknown_pool = !r && r.error() == SubmitError::UnknownPool;
        if (!unknown_pool) ++restored_;
        if (r) return;
        if (unknown_pool) {
            if (!is_terminal(row.status)) s_.fail_recovered(row.id, row.attempt, "unknown pool after restart: " + row.pool, wall_);
            return;
        }
        s_.log([id = row.id, message = r.message()] {
            logger()->warn("recovery: task {} could not come back: {}", id.value, message);
        });
    }
    std::size_t restored() const { return restored_; }

private:
    State& s_;
    std::vector<Submission>& list_;
    std::chrono::system_clock::time_point wall_;
    std::size_t restored_ = 0;
};

// ---- the store's reports (its thread) -----------------------------------------------------

void SchedulerCore::State::on_commit(const store::CommitReport& report) {
    if (report.error) logger()->warn("store: commit failed (retried): {}", report.error->what());
    delivery.committed(report.committed);
}

void SchedulerCore::State::on_lost(const store::LeadershipLost& lost) {
    {
        Step step(*this);
        durable->end_lead(held());
        if (!shutting_down) {
            // Fenced or failing: stop at once; what the store holds is for the
            // next leader. Running attempts are aborted without a change.
            shutting_down = true;
            recurring->stop();
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
        unfinished = admission.unfinished(held());
    }
    delivery.lead_lost(lost);
    const std::string why = lost.reason == store::LostReason::Released
                                ? "the scheduler shut down; the task stays in the store for the next leader"
                                : "leadership lost: " + lost.message + "; the task stays in the store for the next leader";
    for (auto& record : unfinished) record->finish(record->status(), 0, std::string(why), nullptr);
    durable->leading()->set();  // an open() still waiting learns it will not lead
    durable->lost_waits()->set();
    Step step(*this);
    check_drained();  // a shutdown that waited for the hand-over ends now
}

void SchedulerCore::State::on_leading(store::Recovered recovered) {
    {
        Step step(*this);
        durable->start_writing(held());
        const auto now = clock->now();
        recover(recovered, now, clock->system_now());
        recover_schedules(recovered.recurring);
        apply(now);
        rearm_recurring();
    }
    durable->leading()->set();
}

void SchedulerCore::State::recover(store::Recovered& recovered, core::Time now, std::chrono::system_clock::time_point wall) {
    start_fresh_engine(recovered.marks);
    for (const store::UnreadableRow& row : recovered.unreadable)
        fail_recovered(row.id, row.attempt, "decode: " + row.why, wall);
    // Each row comes back through the one admission entry, as a submission
    // whose bytes are the row's (a remote pool's leases carry them).
    std::vector<TaskRequest> requests;
    std::vector<const store::TaskRow*> rows;
    requests.reserve(recovered.tasks.size());
    for (const store::TaskRow& row : recovered.tasks) {
        try {
            requests.push_back(encoder.decode(row));
        } catch (const std::exception& e) {
            if (!is_terminal(row.status)) fail_recovered(row.id, row.attempt, std::string("decode: ") + e.what(), wall);
            continue;
        }
        rows.push_back(&row);
    }
    std::vector<Submission> list;
    list.reserve(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
        Submission& s = list.emplace_back(requests[i]);
        s.encoded = Encoded{rows[i]->payload, {}, wall};
        s.row = rows[i];
    }
    RecoveredRows group(*this, list, wall);
    admit(group, AdmitMode::Restoring, now);
    log([n = group.restored(), marks = recovered.marks, epoch = recovered.epoch] {
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
    durable->reset_reserved(held());
}

void SchedulerCore::State::fail_recovered(TaskId id, std::uint32_t attempt, std::string message,
                                          std::chrono::system_clock::time_point wall) {
    log([id, message] { logger()->warn("recovery: task {} ends failed: {}", id.value, message); });
    durable->write_failed(held(), id, attempt, std::move(message), wall);
}

void SchedulerCore::State::recover_schedules(std::vector<store::RecurringRow>& rows) {
    for (store::RecurringRow& row : rows) {
        // A schedule that cannot come back stays in the store, untouched:
        // a process that declares its pool, or reads its format, may lead
        // later. It is named in the log.
        const auto skip = [&](const std::string& why) CRONOQ_REQUIRES(mu) {
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
            r.task.payload = encoder.decode_payload(stored.payload);
            CronExpr expr = CronExpr::parse(r.cron);
            // From its last occurrence: one missed while no process led is
            // due at once (and fires once), none fires twice.
            const auto from = row.last_fired.value_or(stored.added_at);
            const auto next = expr.next_after(from, r.tz).value_or(std::chrono::system_clock::time_point::max());
            Schedule schedule{std::move(r), std::move(expr), next, std::nullopt};
            schedule.last_fired = row.last_fired;
            schedule.encoded_payload = std::move(stored.payload);
            if (row.last_fired) schedule.last = engine.find_key(occurrence_key(schedule, *row.last_fired));
            recurring->restore(held(), std::move(schedule));
        } catch (const std::exception& e) {
            skip(std::string("decode: ") + e.what());
        }
    }
}

// ---- SchedulerCore -----------------------------------------------------------------------

asio::awaitable<void> SchedulerCore::open() {
    auto self = shared_from_this();
    DurableLink& d = *s_->durable;
    store::LeadHandlers handlers;
    handlers.retention = s_->options.engine.retention;
    d.link()->state = s_.get();  // the journal's thread starts in lead(), below
    handlers.on_leading = [link = d.link()](store::Recovered r) {
        link->with_state([&](State& s) { s.on_leading(std::move(r)); });
    };
    handlers.on_commit = [link = d.link()](const store::CommitReport& report) {
        link->with_state([&](State& s) { s.on_commit(report); });
    };
    handlers.on_lost = [link = d.link()](const store::LeadershipLost& lost) {
        link->with_state([&](State& s) { s.on_lost(lost); });
    };
    d.journal().lead(std::move(handlers));
    auto leading = d.leading();
    co_await leading->async_wait(asio::use_awaitable);
    s_->delivery.throw_open_error();
    // What the recovery wrote (rows it ended Failed, attempts it counted
    // lost) is committed before open returns, so that `find` and the
    // store's rows show it from then on (docs/store.md, "The scheduler
    // with a store"). Nothing to wait for when it wrote nothing.
    const bool committed = co_await s_->commit_enqueued();
    s_->delivery.throw_open_error();
    if (!committed)
        throw StoreError(StoreErrorKind::Fenced,
                         "leadership lost before the recovery was committed: " + s_->delivery.lost().value_or(""));
}

asio::awaitable<void> SchedulerCore::flush() {
    if (!s_->durable) co_return;
    auto self = shared_from_this();
    const bool committed = co_await s_->commit_enqueued();
    if (!committed)
        throw StoreError(StoreErrorKind::Fenced, "leadership lost before the commit: " + s_->delivery.lost().value_or(""));
}

asio::awaitable<bool> SchedulerCore::State::commit_enqueued() {
    store::Sequence seq = 0;
    {
        Read read(*this);
        seq = durable->enqueued(held());
    }
    auto done = WaitList::create();
    delivery.wait_commit(seq, done);
    co_await done->async_wait(asio::use_awaitable);
    co_return delivery.is_committed(seq);
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
    auto lost = s_->durable->lost_waits();
    co_await lost->async_wait(asio::use_awaitable);
}

}  // namespace cronoq::detail
