// The one admission entry (admission.hpp).
#include "admission.hpp"

#include "task_options.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

namespace cronoq::detail {

namespace {

bool needs_wall(const TaskRequest& r) { return r.deadline_at || r.deadline_in || r.start_at; }

Admitted refusal(std::pair<SubmitError, std::string> why) { return {why.first, std::move(why.second)}; }

/// `old` is a task the engine holds that ended so that it may be resubmitted.
bool replaceable(const core::Engine& engine, TaskId old) {
    if (old.value == 0) return false;
    const auto status = engine.status(old);
    return status && (*status == TaskStatus::Failed || *status == TaskStatus::DeadLettered || *status == TaskStatus::Cancelled);
}

}  // namespace

void Admission::admit(const EngineHeld& held, core::Engine& engine, Submissions& group, AdmitMode mode, core::Time now) {
    switch (mode) {
        case AdmitMode::Each: return admit_each(held, engine, group, now, false);
        case AdmitMode::All: return admit_all(held, engine, group, now, false);
        case AdmitMode::Replacing: return admit_replacing(held, engine, group, now);
        case AdmitMode::Restoring: return admit_restoring(held, engine, group, now);
        case AdmitMode::Ingesting:
            // One task alone may shed a victim to make room, as a submit does; a batch must fit.
            return group.size() == 1 ? admit_each(held, engine, group, now, true) : admit_all(held, engine, group, now, true);
    }
}

std::vector<std::shared_ptr<TaskRecord>> Admission::unfinished(const EngineHeld&) const {
    std::vector<std::shared_ptr<TaskRecord>> out;
    for (const RecordLink* l = held_.next; l != &held_; l = l->next) {
        const auto& record = static_cast<const TaskRecord&>(*l);
        if (!is_terminal(record.status())) out.push_back(record.engine_ref);
    }
    return out;
}

// Records the engine still held (keyed tasks it retained, tasks of a
// scheduler destroyed before its shutdown finished) each refer to
// themselves: let go of them.
std::vector<std::shared_ptr<TaskRecord>> Admission::release_all() {
    std::vector<std::shared_ptr<TaskRecord>> refs;
    while (held_.next != &held_) {
        auto& record = static_cast<TaskRecord&>(*held_.next);
        record.live.reset();  // an attempt refers to its record too
        record.prev->next = record.next;
        record.next->prev = record.prev;
        record.prev = record.next = &record;
        refs.push_back(std::move(record.engine_ref));
    }
    return refs;
}

// The engine's view of a request, written into `spec` (a default one:
// what the request leaves empty is not written); wall time maps the time
// points.
std::optional<Admission::Failure> Admission::to_spec(core::Engine& engine, const TaskRequest& r, core::Time now,
                                                    WallTime wall, core::TaskSpec& spec) const {
    if (r.pool) {
        auto id = engine.find_pool(*r.pool);
        if (!id) return Failure{SubmitError::UnknownPool, "no pool named \"" + *r.pool + "\""};
        spec.pool = *id;
    }
    const auto engine_time = [&](std::chrono::system_clock::time_point t) {
        // Saturating: a time point centuries away stays far away.
        const auto since = [](std::chrono::system_clock::time_point p) {
            return std::chrono::duration_cast<core::Duration>(p.time_since_epoch()).count();
        };
        return core::add_saturated(now, core::Duration(core::sub_saturated(since(t), since(wall))));
    };
    spec.priority = r.priority;
    spec.kind = engine.intern_kind(r.kind);
    if (r.deadline_at) spec.deadline = engine_time(*r.deadline_at);
    if (r.deadline_in) spec.deadline = core::add_saturated(now, *r.deadline_in);
    if (r.start_at) spec.start = engine_time(*r.start_at);
    if (r.start_in) spec.start = core::add_saturated(now, *r.start_in);
    spec.start_tolerance = r.start_tolerance;
    spec.on_miss = r.on_miss;
    // Most tasks have none of these: no call for an empty one.
    if (!r.depends_on.empty()) spec.depends_on = r.depends_on;
    if (!r.resources.empty()) spec.resources = r.resources;
    spec.duration_hint = r.duration_hint;
    spec.timeout = r.timeout;
    spec.retry = r.retry;
    if (r.key) spec.key = r.key;
    if (!r.fair_key.empty()) spec.fair_key = r.fair_key;
    if (!r.labels.empty()) {  // Task::label keeps names unique; the engine wants them sorted
        spec.labels.assign(r.labels.begin(), r.labels.end());
        std::sort(spec.labels.begin(), spec.labels.end());
    }
    return std::nullopt;
}

std::shared_ptr<TaskRecord> Admission::make_record(core::PoolId pool_id, TaskRequest&& r, WallTime wall,
                                                   const Encoded* encoded) {
    const PoolRuntime& pool = pools_[pool_id];
    auto record = record_blocks_.make<TaskRecord>(TaskId{}, self_);
    record->pool = pool.name;
    if (!r.kind.empty()) record->kind = std::move(r.kind);  // most tasks have none: no call
    if (!r.traceparent)
        for (const auto& [k, v] : r.tags)
            if (k == "traceparent") r.traceparent = v;
    if (r.deadline_at) record->deadline = r.deadline_at;
    if (r.deadline_in)
        record->deadline = std::chrono::system_clock::time_point(
            std::chrono::duration_cast<std::chrono::system_clock::duration>(core::Duration(core::add_saturated(
                std::chrono::duration_cast<core::Duration>(wall.time_since_epoch()).count(), r.deadline_in->count()))));
    record->timeout = r.timeout ? r.timeout : pool.def.engine.default_timeout;
    record->payload = std::move(r.payload);
    if (r.key || !r.tags.empty() || r.traceparent || !r.fair_key.empty()) record->more = std::make_unique<TaskRequest>(std::move(r));
    // A remote pool's leases carry the payload's codec<P> bytes.
    if (encoded && pool.def.engine.remote) record->remote_payload = std::make_unique<std::string>(encoded->payload);
    return record;
}

// A request the engine refused: what it consumed goes back, so that a
// waiting submitter tries again with it.
void Admission::give_back(TaskRecord& record, TaskRequest& r) {
    if (record.more) r = std::move(*record.more);
    r.kind = std::move(record.kind);
    r.payload = std::move(record.payload);
}

std::shared_ptr<HandleState> Admission::admitted(const EngineHeld& held, core::Engine& engine, TaskId id,
                                                std::shared_ptr<TaskRecord> record, const Encoded* encoded) {
    // Only a key can name a task admitted before (its holder): without one,
    // the id is this record's task.
    if (record->keyed()) {
        const std::uint64_t user = engine.user(id).value_or(0);
        if (user != to_user(record.get())) return from_user(user)->engine_ref;  // the key's holder
    }
    record->assign_id(id);
    hold(held, record);
    if (encoded && durable_)
        durable_->write_admission(held, id, *record, engine.status(id).value_or(TaskStatus::Ready), *encoded);
    return record;
}

void Admission::admit_each(const EngineHeld& held, core::Engine& engine, Submissions& group, core::Time now,
                           bool ingesting) {
    // Wall time matters only to map time points: read once, when first needed.
    std::optional<std::chrono::system_clock::time_point> wall;
    for (std::size_t i = 0; i < group.size(); ++i) {
        Submission& s = group.at(i);
        if (s.refused) {
            group.result(i, refusal(std::move(*s.refused)));
            continue;
        }
        // With a store, every caller made the bytes before the mutex.
        assert(!durable_ || s.encoded);
        if (!wall && needs_wall(s.request)) wall = clock_.system_now();
        const auto at = wall.value_or(std::chrono::system_clock::time_point{});
        core::TaskSpec spec;
        if (auto failure = to_spec(engine, s.request, now, at, spec)) {
            group.result(i, refusal(std::move(*failure)));
            continue;
        }
        if (ingesting) spec.given_id = s.row->id;
        // The record is made first: the engine carries it from admission on.
        const Encoded* encoded = s.encoded ? &*s.encoded : nullptr;
        auto record = make_record(spec.pool, std::move(s.request), at, encoded);
        spec.user = to_user(record.get());
        // A client's retry moves the key of the task it replaces, as a
        // local retry does (its transaction moved it in the store).
        auto id = ingesting && replaceable(engine, s.replaces) ? engine.resubmit(s.replaces, spec, now)
                                                                : engine.submit(spec, now);
        if (!id) {
            give_back(*record, s.request);
            group.result(i, {id.error(), id.message()});
            continue;
        }
        // An ingested row is in the store already: no TaskInserted for it.
        group.result(i, admitted(held, engine, id.value(), std::move(record), ingesting ? nullptr : encoded));
    }
}

void Admission::admit_all(const EngineHeld& held, core::Engine& engine, Submissions& group, core::Time now,
                          bool ingesting) {
    const std::size_t n = group.size();
    const auto refuse_all = [&](Admitted why) {
        for (std::size_t i = 0; i < n; ++i) group.result(i, Admitted(why.error(), why.message()));
    };
    bool any_wall = false;
    for (std::size_t i = 0; i < n; ++i) {
        Submission& s = group.at(i);
        if (s.refused) return refuse_all({s.refused->first, "task " + std::to_string(i) + ": " + s.refused->second});
        any_wall = any_wall || needs_wall(s.request);
    }
    const auto wall = any_wall ? clock_.system_now() : std::chrono::system_clock::time_point{};
    std::vector<core::TaskSpec> specs(n);
    for (std::size_t i = 0; i < n; ++i)
        if (auto failure = to_spec(engine, group.at(i).request, now, wall, specs[i]))
            return refuse_all({failure->first, "task " + std::to_string(i) + ": " + failure->second});
    std::vector<std::shared_ptr<TaskRecord>> records;
    records.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        Submission& s = group.at(i);
        records.push_back(make_record(specs[i].pool, std::move(s.request), wall, s.encoded ? &*s.encoded : nullptr));
        specs[i].user = to_user(records.back().get());
        if (ingesting) specs[i].given_id = s.row->id;
    }
    auto ids = engine.submit_batch(specs, now);
    if (!ids) return refuse_all({ids.error(), ids.message()});
    for (std::size_t i = 0; i < n; ++i) {
        const Submission& s = group.at(i);
        const Encoded* encoded = s.encoded && !ingesting ? &*s.encoded : nullptr;
        group.result(i, admitted(held, engine, ids.value()[i], std::move(records[i]), encoded));
    }
}

void Admission::admit_replacing(const EngineHeld& held, core::Engine& engine, Submissions& group, core::Time now) {
    const auto wall = clock_.system_now();
    for (std::size_t i = 0; i < group.size(); ++i) {
        Submission& s = group.at(i);
        if (s.refused) {
            group.result(i, refusal(std::move(*s.refused)));
            continue;
        }
        core::TaskSpec spec;
        if (auto failure = to_spec(engine, s.request, now, wall, spec)) {
            group.result(i, refusal(std::move(*failure)));
            continue;
        }
        const bool keyed = s.request.key.has_value();
        auto record = make_record(spec.pool, std::move(s.request), wall, s.encoded ? &*s.encoded : nullptr);
        const TaskRecord* made = record.get();
        spec.user = to_user(record.get());
        // An old task the engine forgot (known from its row) is replaced by a
        // plain submission; its key, if no other task took it, goes along.
        const bool known = engine.status(s.replaces).has_value();
        auto id = known ? engine.resubmit(s.replaces, spec, now) : engine.submit(spec, now);
        // Its retention may end at `now` with no engine step since: resubmit
        // forgets it first, then refuses it as unknown. Its options are known
        // all the same (a record's, or the row's): submitted like a forgotten one.
        if (known && !id && id.error() == SubmitError::Invalid && !engine.status(s.replaces)) id = engine.submit(spec, now);
        if (!id) {
            give_back(*record, s.request);
            group.result(i, {id.error(), id.message()});
            continue;
        }
        auto handle = admitted(held, engine, id.value(), std::move(record), s.encoded ? &*s.encoded : nullptr);
        if (keyed && handle.get() == made && durable_) durable_->write(held, store::TaskKeyReleased{s.replaces});
        group.result(i, std::move(handle));
    }
}

void Admission::admit_restoring(const EngineHeld& held, core::Engine& engine, Submissions& group, core::Time now) {
    const auto wall = clock_.system_now();
    const auto engine_time = [&](std::optional<store::WallTime> t) -> std::optional<core::Time> {
        if (!t) return std::nullopt;
        return core::add_saturated(now, std::chrono::duration_cast<core::Duration>(*t - wall));
    };
    std::vector<core::RestoredTask> tasks;
    std::vector<std::shared_ptr<TaskRecord>> records;
    std::vector<std::size_t> index;  // of each restored task in the group
    for (std::size_t i = 0; i < group.size(); ++i) {
        Submission& s = group.at(i);
        const store::TaskRow& row = *s.row;
        core::TaskSpec spec;
        if (auto failure = to_spec(engine, s.request, now, wall, spec)) {
            group.result(i, refusal(std::move(*failure)));
            continue;
        }
        auto record = make_record(spec.pool, std::move(s.request), wall, s.encoded ? &*s.encoded : nullptr);
        if (record->keyed()) relative_to_submission(*record->more, row.submitted_at);  // for a retry
        record->assign_id(row.id);
        record->set_status(row.status);
        if (is_terminal(row.status))
            record->finish(row.status, row.attempt, std::string(row.last_error), encoder_.decode_output(row));
        spec.user = to_user(record.get());
        tasks.push_back(core::RestoredTask{row.id, std::move(spec), row.status, row.attempt, engine_time(row.run_at),
                                           row.last_error});
        records.push_back(std::move(record));
        index.push_back(i);
    }
    auto results = engine.restore(tasks, now);
    for (std::size_t k = 0; k < results.size(); ++k) {
        if (!results[k]) {
            group.result(index[k], {results[k].error(), results[k].message()});
            continue;
        }
        hold(held, records[k]);
        // As for a task that ends here: a finished one without a key keeps no record.
        std::shared_ptr<HandleState> handle = records[k];
        if (is_terminal(tasks[k].status) && !records[k]->keyed()) {
            engine.release_user(tasks[k].id);
            release(held, *records[k]);
        }
        group.result(index[k], std::move(handle));
    }
}

}  // namespace cronoq::detail
