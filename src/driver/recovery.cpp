// Recovery when this process starts leading (recovery.hpp,
// docs/guide/durability.md "Recovery").
#include "recovery.hpp"

#include <cronoq/config_error.hpp>
#include <cronoq/logging.hpp>
#include <cronoq/store/client_access.hpp>

#include "ingestion.hpp"
#include "recurring_definition.hpp"
#include "scheduler_state.hpp"
#include "shard_config_codec.hpp"
#include "task_options.hpp"

#include <spdlog/spdlog.h>

namespace cronoq::detail {

// Recovered rows as admit reads them; a row that cannot come back ends
// failed in the store (unless it ended already), and is named in the log.
class Recovery::Rows final : public Submissions {
public:
    Rows(Recovery& r, std::vector<Submission>& list, WallTime wall) : r_(r), list_(list), wall_(wall) {}
    std::size_t size() const override { return list_.size(); }
    Submission& at(std::size_t i) override { return list_[i]; }
    // Only a pool the engine does not know refuses a row before the
    // engine sees it; what the engine refuses is counted, and logged.
    // Called by admit, with the engine's mutex held.
    void result(std::size_t i, Admitted&& r) override CRONOQ_REQUIRES(r_.s_.mu) {
        const store::TaskRow& row = *list_[i].row;
        const bool unknown_pool = !r && r.error() == SubmitError::UnknownPool;
        if (!unknown_pool) ++restored_;
        if (r) return;
        if (unknown_pool) {
            if (!is_terminal(row.status)) r_.fail(r_.s_.held(), row.id, row.attempt, "unknown pool after restart: " + row.pool, wall_);
            return;
        }
        r_.s_.log([id = row.id, message = r.message()] {
            logger()->warn("recovery: task {} could not come back: {}", id.value, message);
        });
    }
    std::size_t restored() const { return restored_; }

private:
    Recovery& r_;
    std::vector<Submission>& list_;
    WallTime wall_;
    std::size_t restored_ = 0;
};

void Recovery::lead(store::Recovered recovered) {
    if (!recovered.pool_conflict.empty()) {
        // Nothing was claimed or read: give the lead up; open() throws once
        // the store reports it (docs/store.md, "Shards").
        s_.delivery.refuse_open("shard \"" + s_.options.shard + "\": " + recovered.pool_conflict);
        s_.durable->journal().release();
        return;
    }
    {
        SchedulerCore::State::Step step(s_);
        s_.durable->start_writing(s_.held());
        const auto now = s_.clock->now();
        const auto wall = s_.clock->system_now();
        write_config(s_.held(), wall, recovered.epoch);
        tasks(s_.held(), recovered, now, wall);
        // After the restore: clients' cancels reach the tasks it brought back.
        Ingestion(s_).recovered(s_.held(), recovered.inbox, now);
        schedules(s_.held(), recovered.recurring);
        s_.actions.apply(s_.held(), now);
        s_.timers.rearm_recurring(s_.held());
        if (!recovered.inbox.empty())
            Ingestion(s_).recovered_in(s_.held(), recovered.inbox, s_.durable->enqueue_now(s_.held(), s_.engine));
    }
    s_.durable->leading()->set();
}

void Recovery::tasks(const EngineHeld& held, store::Recovered& recovered, core::Time now, WallTime wall) {
    s_.holding(held);
    start_fresh_engine(held, recovered.marks);
    // Before the tasks: a paused pool's ready tasks must not start. A pool
    // this process does not declare keeps its row for one that does.
    for (const std::string& name : recovered.paused_pools) {
        if (const auto pool = s_.engine.find_pool(name)) s_.engine.pause(*pool, now);
        s_.log([name] { logger()->info("recovery: pool \"{}\" stays paused", name); });
    }
    Ingestion(s_).recovered_pools(held, recovered.inbox, now);
    fair_weights(held, recovered.fair_weights, now);
    for (const store::UnreadableRow& row : recovered.unreadable) fail(held, row.id, row.attempt, "decode: " + row.why, wall);
    // Each row comes back through the one admission entry, as a submission
    // whose bytes are the row's (a remote pool's leases carry them).
    std::vector<TaskRequest> requests;
    std::vector<const store::TaskRow*> rows;
    requests.reserve(recovered.tasks.size());
    const auto ending = clients_rows_ending(recovered);
    for (const store::TaskRow& row : recovered.tasks) {
        if (!ending.empty())
            if (auto end = ending.find(row.id.value); end != ending.end()) {
                s_.durable->write_ended(s_.held(), row.id, TaskStatus::Cancelled, 0, end->second, wall);
                continue;
            }
        try {
            requests.push_back(s_.encoder.decode(row));
        } catch (const std::exception& e) {
            if (!is_terminal(row.status)) fail(held, row.id, row.attempt, std::string("decode: ") + e.what(), wall);
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
    Rows group(*this, list, wall);
    s_.admit(group, AdmitMode::Restoring, now);
    s_.log([n = group.restored(), marks = recovered.marks, epoch = recovered.epoch] {
        logger()->info("store: leading (epoch {}); recovered {} task(s); ids from {}", epoch, n, marks.next_task_id);
    });
}

// Clients' rows no leader ingested that do not come back: one a client
// also cancelled ends Cancelled without an attempt; one whose key a task
// of the leader's holds too (the leader's submission was committed after
// the client's) ends Cancelled naming it, as at ingestion (docs/store.md,
// "Clients").
std::unordered_map<std::uint64_t, std::string> Recovery::clients_rows_ending(const store::Recovered& recovered) {
    std::unordered_map<std::uint64_t, std::string> out;
    std::unordered_set<std::uint64_t> submitted;
    for (const store::InboxEntry& e : recovered.inbox)
        if (e.op == store::InboxEntry::Op::Submit) submitted.insert(e.task.value);
    if (submitted.empty()) return out;
    for (const store::InboxEntry& e : recovered.inbox)
        if (e.op == store::InboxEntry::Op::Cancel && submitted.count(e.task.value))
            out.emplace(e.task.value, "cancelled before the leader ingested it");
    std::unordered_map<std::string, TaskId> held;
    for (const store::TaskRow& row : recovered.tasks)
        if (row.key && !submitted.count(row.id.value)) {
            TaskId& holder = held[*row.key];
            holder = std::max(holder, row.id);
        }
    for (const store::TaskRow& row : recovered.tasks)
        if (row.key && submitted.count(row.id.value))
            if (auto h = held.find(*row.key); h != held.end())
                out.emplace(row.id.value, "key \"" + *row.key + "\" is held by task " + std::to_string(h->second.value));
    return out;
}

void Recovery::start_fresh_engine(const EngineHeld& held, const store::HighWaterMarks& marks) {
    s_.holding(held);
    // Nothing was submitted yet: open() has not returned.
    core::EngineConfig config = s_.options.engine;
    config.first_task_id = std::max<std::uint64_t>(marks.next_task_id, 1);
    config.first_lease_id = std::max<std::uint64_t>(marks.next_lease_id, 1);
    // Clients' ids (restored or ingested) never move this leader's counters.
    config.given_ids_from = store::first_client_task_id;
    core::Engine fresh(config);
    for (const PoolRuntime& p : s_.pools) fresh.add_pool(p.def.engine);
    s_.engine = std::move(fresh);
    s_.set_engine_modes();
    s_.durable->reset_reserved(s_.held());
}

// Weights set at run time override the configured ones (docs/store.md,
// "Fair weights"); one of a pool this scheduler no longer has, or that this
// build refuses, is left out rather than stop the recovery.
void Recovery::fair_weights(const EngineHeld& held, const std::vector<store::FairWeightSet>& weights, core::Time now) {
    s_.holding(held);
    for (const store::FairWeightSet& w : weights) {
        const auto pool = s_.engine.find_pool(w.pool);
        std::string why = "no such pool";
        if (pool) {
            try {
                s_.engine.set_fair_weight(*pool, w.key, w.weight, now);
                continue;
            } catch (const ConfigError& e) {
                why = e.what();
            }
        }
        s_.log([w, why] { logger()->warn("recovery: fair weight of \"{}\" in pool \"{}\" not restored: {}", w.key, w.pool, why); });
    }
}

void Recovery::fail(const EngineHeld& held, TaskId id, std::uint32_t attempt, std::string message, WallTime wall) {
    s_.holding(held);
    s_.log([id, message] { logger()->warn("recovery: task {} ends failed: {}", id.value, message); });
    s_.durable->write_failed(s_.held(), id, attempt, std::move(message), wall);
}

void Recovery::write_config(const EngineHeld& held, WallTime wall, std::uint64_t epoch) {
    s_.holding(held);
    ShardConfigBody body;
    // Bound before the store could lead (SchedulerCore::open).
    if (s_.endpoint) body.advertise = s_.endpoint->advertise();
    body.epoch = epoch;
    for (const PoolRuntime& p : s_.pools) {
        const core::PoolConfig& c = p.def.engine;
        ShardConfigBody::PoolEntry e{*p.name, c.remote, std::nullopt, c.overflow, c.max_workers};
        if (c.bounds.bounded()) e.max_pending = c.bounds.max_pending;
        body.pools.push_back(std::move(e));
    }
    for (const Resource& r : s_.options.engine.resources)
        body.resources.push_back({r.name, r.kind, r.kind == Resource::Kind::Semaphore ? r.permits : r.burst});
    if (s_.options.engine.global_bounds.bounded()) body.global_max_pending = s_.options.engine.global_bounds.max_pending;
    body.retention = s_.options.engine.retention;
    body.max_value_bytes = s_.durable->journal().max_value_bytes();
    s_.durable->write(s_.held(), store::ConfigWritten{{s_.options.shard, encode_shard_config(body), wall,
                                                       s_.options.engine.retention}});
}

void Recovery::schedules(const EngineHeld& held, std::vector<store::RecurringRow>& rows) {
    s_.holding(held);
    for (store::RecurringRow& row : rows) {
        // A schedule that cannot come back stays in the store, untouched:
        // a process that declares its pool, or reads its format, may lead
        // later. It is named in the log.
        const auto skip = [&](const std::string& why) CRONOQ_REQUIRES(s_.mu) {
            s_.log([name = row.name, why] { logger()->warn("recovery: recurring \"{}\" not resumed: {}", name, why); });
        };
        try {
            StoredSchedule stored = decode_schedule(row.definition);
            RecurringRequest& r = stored.request;
            r.name = row.name;
            if (r.task.pool && !s_.engine.find_pool(*r.task.pool)) {
                skip("unknown pool after restart: " + *r.task.pool);
                continue;
            }
            r.task.payload = s_.encoder.decode_payload(stored.payload);
            CronExpr expr = CronExpr::parse(r.cron);
            // From its last occurrence: one missed while no process led is
            // due at once (and fires once), none fires twice.
            const auto from = row.last_fired.value_or(stored.added_at);
            const auto next = expr.next_after(from, r.tz).value_or(std::chrono::system_clock::time_point::max());
            Schedule schedule{std::move(r), std::move(expr), next, std::nullopt};
            schedule.last_fired = row.last_fired;
            schedule.encoded_payload = std::move(stored.payload);
            if (row.last_fired) schedule.last = s_.engine.find_key(occurrence_key(schedule, *row.last_fired));
            s_.recurring->restore(s_.held(), std::move(schedule));
        } catch (const std::exception& e) {
            skip(std::string("decode: ") + e.what());
        }
    }
}

}  // namespace cronoq::detail
