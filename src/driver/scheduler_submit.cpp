// The ways a task is submitted (`try_submit`, `submit`, `try_submit_many`,
// `try_submit_batch`) and the admission under the engine's mutex they
// share: a request becomes the engine's spec and the driver's record,
// and the engine's answer becomes a handle (docs/design.md, "Tasks as the
// application holds them" and "Engine steps").
#include <cronoq/detail/scheduler_core.hpp>

#include "scheduler_state.hpp"

#include <asio/use_awaitable.hpp>

#include <algorithm>
#include <cassert>
#include <utility>

namespace cronoq::detail {

namespace {

bool needs_wall(const TaskRequest& r) { return r.deadline_at || r.deadline_in || r.start_at; }

}  // namespace

// ---- submission (mutex held) ----------------------------------------------------------

// The engine's view of a request, written into `spec` (a default one:
// what the request leaves empty is not written); wall time maps the time
// points.
std::optional<SchedulerCore::State::Failure> SchedulerCore::State::to_spec(const TaskRequest& r, core::Time now,
                                                                          std::chrono::system_clock::time_point wall,
                                                                          core::TaskSpec& spec) {
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
    if (!r.labels.empty()) {  // Task::label keeps names unique; the engine wants them sorted
        spec.labels.assign(r.labels.begin(), r.labels.end());
        std::sort(spec.labels.begin(), spec.labels.end());
    }
    return std::nullopt;
}


std::shared_ptr<TaskRecord> SchedulerCore::State::make_record(core::PoolId pool_id, TaskRequest&& r,
                                                              std::chrono::system_clock::time_point wall,
                                                              const std::string* payload_bytes) {
    const PoolRuntime& pool = pools[pool_id];
    auto record = record_blocks.make<TaskRecord>(TaskId{}, self);
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
    if (r.key || !r.tags.empty() || r.traceparent) record->more = std::make_unique<TaskRequest>(std::move(r));
    if (payload_bytes && pool.def.engine.remote) record->remote_payload = std::make_unique<std::string>(*payload_bytes);
    return record;
}

std::shared_ptr<HandleState> SchedulerCore::State::admitted(TaskId id, std::shared_ptr<TaskRecord> record,
                                                             const Encoded* encoded) {
    // Only a key can name a task admitted before (its holder): without one,
    // the id is this record's task.
    if (record->keyed()) {
        const std::uint64_t user = engine.user(id).value_or(0);
        if (user != to_user(record.get())) return from_user(user)->engine_ref;  // the key's holder
    }
    record->assign_id(id);
    hold(record);
    if (encoded && durable) write_admission(id, *record, *encoded);
    return record;
}

SubmitResult<std::shared_ptr<HandleState>> SchedulerCore::State::submit_one(TaskRequest& r, const Encoded* encoded) {
    const auto now = clock->now();
    auto handle = admit(r, encoded, now);
    apply(now);
    return handle;
}

SubmitResult<std::shared_ptr<HandleState>> SchedulerCore::State::admit(TaskRequest& r, const Encoded* encoded, core::Time now) {
    if (shutting_down) return {SubmitError::ShuttingDown, "the scheduler is shutting down"};
    // With a store, every caller made the bytes before the mutex (a
    // recurring occurrence's from its template's, encoded when the schedule
    // was added): none is encoded here.
    assert(!durable || encoded);
    // Wall time matters only to map time points: read it only then.
    const auto wall = needs_wall(r) ? clock->system_now() : std::chrono::system_clock::time_point{};
    core::TaskSpec spec;
    if (auto failure = to_spec(r, now, wall, spec)) return {failure->first, std::move(failure->second)};
    // The record is made first: the engine carries it from admission on.
    auto record = make_record(spec.pool, std::move(r), wall, encoded ? &encoded->payload : nullptr);
    spec.user = to_user(record.get());
    auto id = engine.submit(spec, now);
    if (!id) {
        // Not consumed: a waiting submitter tries again with it.
        if (record->more) r = std::move(*record->more);
        r.kind = std::move(record->kind);
        r.payload = std::move(record->payload);
        return {id.error(), id.message()};
    }
    return admitted(id.value(), std::move(record), encoded);
}

// ---- entry points ---------------------------------------------------------------------

SubmitResult<std::shared_ptr<HandleState>> SchedulerCore::try_submit(TaskRequest r) {
    std::optional<Encoded> encoded;
    if (s_->needs_encoding(r)) {
        auto bytes = s_->encode(r);
        if (!bytes) return {bytes.error(), bytes.message()};
        encoded.emplace(std::move(bytes).value());
    }
    State::Step step(*s_);
    return s_->submit_one(r, encoded ? &*encoded : nullptr);
}

asio::awaitable<std::shared_ptr<HandleState>> SchedulerCore::submit(TaskRequest r) {
    auto self = shared_from_this();
    State& s = *s_;
    std::optional<Encoded> encoded;
    if (s.needs_encoding(r)) {
        auto bytes = s.encode(r);
        if (!bytes) throw SubmitException(bytes.error(), bytes.message());
        encoded.emplace(std::move(bytes).value());
    }
    std::shared_ptr<WaitList> turn;  // set when it is this submitter's turn
    std::shared_ptr<HandleState> handle;
    for (;;) {
        {
            State::Step step(s);
            const auto pool_id = r.pool ? s.engine.find_pool(*r.pool) : std::optional<core::PoolId>(0);
            PoolRuntime* pool = pool_id ? &s.pools[*pool_id] : nullptr;
            // FIFO: a newcomer queues behind submitters already waiting.
            const bool queue_first = !turn && pool && !pool->waiting_submits.empty() && !s.shutting_down;
            if (!queue_first) {
                auto result = s.submit_one(r, encoded ? &*encoded : nullptr);
                const bool waits = !result && result.error() == SubmitError::Full && pool &&
                                   pool->def.engine.overflow == OverflowPolicy::Wait;
                if (!waits) {
                    if (!result) throw SubmitException(result.error(), result.message());
                    // Room may remain for the next waiter; if not, it waits again.
                    if (turn) s.wake_next_submit(*pool);
                    handle = std::move(result).value();
                    break;
                }
            }
            const bool had_turn = turn != nullptr;
            turn = WaitList::create();
            if (had_turn)
                pool->waiting_submits.push_front(turn);  // it keeps its place
            else
                pool->waiting_submits.push_back(turn);
        }
        // A cancelled waiter leaves the queue in the cancellation itself,
        // under the mutex: either it leaves before room is handed to it, and
        // the next waiter gets the room, or the room came first and the wait
        // completes normally (and passes on what it does not use).
        UniqueFunction<void()> leave = [weak = weak_from_this(), turn] {
            auto core = weak.lock();
            if (!core) return;
            State::Step step(*core->s_);
            for (PoolRuntime& p : core->s_->pools) std::erase(p.waiting_submits, turn);
        };
        auto wait = turn->async_wait(asio::use_awaitable, std::move(leave));
        co_await std::move(wait);  // throws operation_aborted when cancelled: nothing was admitted
    }
    // With a store, admission is acknowledged once it is committed (docs/guide/durability.md).
    if (s.durable) {
        auto committed = flush();
        try {
            co_await std::move(committed);
        } catch (const StoreError& e) {
            throw SubmitException(SubmitError::StoreFailed, e.what());
        }
    }
    co_return handle;
}

namespace {

// Each request admitted or rejected on its own, in one step: `request(i)`
// is request `i` (consumed only when admitted).
template <class Request>
void submit_each(SchedulerCore::State& s, std::size_t n, Request&& request, SchedulerCore::ResultSink sink, void* results) {
    // With a store or a remote pool, each request's bytes are made before
    // the engine's mutex; without either, no request needs them and no
    // array for them is made.
    std::vector<std::optional<SubmitResult<Encoded>>> encoded;
    if (s.durable || s.any_remote) {
        encoded.resize(n);
        for (std::size_t i = 0; i < n; ++i)
            if (s.needs_encoding(request(i))) encoded[i].emplace(s.encode(request(i)));
    }
    SchedulerCore::State::Step step(s);
    // One instant for the whole batch, and its actions applied once: a
    // clock read and a pass over the engine's actions are needed once per
    // batch, not once per task.
    const auto now = s.clock->now();
    for (std::size_t i = 0; i < n; ++i) {
        const auto* bytes = encoded.empty() || !encoded[i] ? nullptr : &*encoded[i];
        if (bytes && !*bytes) {
            sink(results, SubmitResult<std::shared_ptr<HandleState>>(bytes->error(), bytes->message()));
            continue;
        }
        sink(results, s.admit(request(i), bytes ? &bytes->value() : nullptr, now));
    }
    s.apply(now);
}

}  // namespace

void SchedulerCore::try_submit_many(std::size_t n, RequestAt at, void* tasks, ResultSink sink, void* results) {
    if (s_->durable || s_->any_remote) {
        // Encoded before the mutex: every request is made whole first.
        std::vector<TaskRequest> requests;
        requests.reserve(n);
        for (std::size_t i = 0; i < n; ++i) requests.push_back(std::move(at(tasks, i)));
        return submit_each(*s_, n, [&](std::size_t i) -> TaskRequest& { return requests[i]; }, sink, results);
    }
    // Without encoding, one request is filled with each task in turn: no
    // array of requests, which at 432 bytes each would be the largest the
    // batch writes. A task with options assigns every field of it; one
    // without sets the payload, pool, kind and priority, and finds the rest
    // at the defaults: submitting such a task moves out only fields that
    // were at their defaults already (a task without options has no key,
    // tags or traceparent), and after a task with options it is reset.
    TaskRequest request;
    bool clean = true;
    std::size_t current = n;
    const auto request_of = [&](std::size_t i) -> TaskRequest& {
        if (i == current) return request;
        current = i;
        TaskState& task = at(tasks, i);
        if (task.has_more()) {
            clean = false;
        } else if (!clean) {
            request = TaskRequest{};
            clean = true;
        } else {
            request.tags.clear();  // moved from: empty, but say so
        }
        task.move_into(request);
        return request;
    };
    submit_each(*s_, n, request_of, sink, results);
}

SubmitResult<std::vector<std::shared_ptr<HandleState>>> SchedulerCore::try_submit_batch(std::vector<TaskRequest> requests) {
    State& s = *s_;
    std::vector<std::optional<Encoded>> encoded(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
        if (!s.needs_encoding(requests[i])) continue;
        auto bytes = s.encode(requests[i]);
        if (!bytes) return {bytes.error(), "task " + std::to_string(i) + ": " + bytes.message()};
        encoded[i].emplace(std::move(bytes).value());
    }
    State::Step step(s);
    if (s.shutting_down) return {SubmitError::ShuttingDown, "the scheduler is shutting down"};
    const auto now = s.clock->now();
    const bool any_wall = std::any_of(requests.begin(), requests.end(), needs_wall);
    const auto wall = any_wall ? s.clock->system_now() : std::chrono::system_clock::time_point{};
    std::vector<core::TaskSpec> specs(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i)
        if (auto failure = s.to_spec(requests[i], now, wall, specs[i]))
            return {failure->first, "task " + std::to_string(i) + ": " + failure->second};
    std::vector<std::shared_ptr<TaskRecord>> records;
    records.reserve(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
        records.push_back(s.make_record(specs[i].pool, std::move(requests[i]), wall, encoded[i] ? &encoded[i]->payload : nullptr));
        specs[i].user = to_user(records.back().get());
    }
    auto ids = s.engine.submit_batch(specs, now);
    if (!ids) return {ids.error(), ids.message()};
    std::vector<std::shared_ptr<HandleState>> handles;
    handles.reserve(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i)
        handles.push_back(s.admitted(ids.value()[i], std::move(records[i]), encoded[i] ? &*encoded[i] : nullptr));
    s.apply(now);
    return handles;
}

}  // namespace cronoq::detail
