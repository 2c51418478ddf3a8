// The driver core's entry points: each runs as one engine step (see
// scheduler_state.hpp), so what it changes is delivered before it returns.
#include <cronoq/config_error.hpp>
#include <cronoq/cron_expr.hpp>
#include <cronoq/detail/executor_target.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/logging.hpp>
#include <cronoq/snapshot.hpp>

#include "asio_internals.hpp"
#include "event_queue.hpp"
#include "scheduler_state.hpp"

#include <asio/io_context.hpp>
#include <asio/strand.hpp>
#include <asio/use_awaitable.hpp>

#include <algorithm>
#include <cassert>
#include <thread>
#include <utility>

namespace cronoq::detail {

namespace {

// Strands per pool that attempts are spread over, by lease (see
// docs/design.md): enough that two busy attempts rarely share one.
constexpr std::size_t strands_per_pool = 32;

std::string pool_field(const PoolDefinition& d, const char* field) {
    return "pool \"" + d.engine.name + "\": " + field;
}

void validate(const PoolDefinition& d) {
    if (d.engine.remote) {  // its workers' slots are its capacity; it runs no executor here
        if (d.workers_given && d.max_workers == 0) throw ConfigError(pool_field(d, "workers: max must be at least 1"));
        return;
    }
    if (d.max_workers == 0) throw ConfigError(pool_field(d, "workers: max must be at least 1"));
    if (d.min_workers > d.max_workers)
        throw ConfigError(pool_field(d, "workers: min (") + std::to_string(d.min_workers) + ") > max (" +
                          std::to_string(d.max_workers) + ")");
    if (d.engine.capacity < d.min_workers || d.engine.capacity > d.max_workers)
        throw ConfigError(pool_field(d, "workers: initial (") + std::to_string(d.engine.capacity) +
                          ") outside [min, max]");
    if (!d.executor.spawn) throw ConfigError(pool_field(d, "no executor (call executor_fn or executor)"));
    // Only an autoscaler can raise a local pool's capacity above its initial
    // value: without one, an initial 0 would queue tasks forever.
    if (d.engine.capacity == 0 && !d.engine.autoscale)
        throw ConfigError(pool_field(d, "workers: initial is 0 and no autoscaler can raise it (set autoscale or initial >= 1)"));
}

// Whether the io_context was made for one thread (concurrency hint 1):
// the application's promise that one thread runs it, which Asio itself
// relies on to drop its locking.
bool runs_on_one_thread(asio::io_context& io) { return asio_internals::concurrency_hint(io) == 1; }

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

std::optional<TaskId> SchedulerCore::State::resolve(const TaskRef& ref) const {
    if (ref.id) return ref.id;
    return ref.key ? engine.find_key(*ref.key) : std::nullopt;
}

// ---- SchedulerCore --------------------------------------------------------------------

SchedulerCore::SchedulerCore(std::unique_ptr<State> state) : s_(std::move(state)) {}

SchedulerCore::~SchedulerCore() {
    // The store's reports stop reaching this scheduler (waiting for one
    // being handled) before anything of it goes.
    if (s_ && s_->durable) s_->durable->link->disconnect();
    // The timers' callbacks hold only a weak reference; cancel their waits.
    if (s_ && s_->timer) s_->timer->disarm();
    if (s_ && s_->recurring_timer) s_->recurring_timer->disarm();
    if (s_ && s_->abandon_timer) s_->abandon_timer->disarm();
}

std::shared_ptr<SchedulerCore> SchedulerCore::create(asio::any_io_executor executor, SchedulerOptions options,
                                                     std::vector<PoolDefinition> pools) {
    if (pools.empty()) throw ConfigError("pools: at least one pool is required");
    if (!executor) throw ConfigError("executor: build() needs a valid executor");
    for (const auto& d : pools) validate(d);
    if (options.blocking_threads > max_threads)
        throw ConfigError("blocking_threads: at most " + std::to_string(max_threads) + " (got " +
                          std::to_string(options.blocking_threads) + ")");
    if (options.abandon_after.count() < 0) throw ConfigError("abandon_after: must not be negative");
    auto state = std::make_unique<State>(executor, std::move(options));  // validates engine constants
    for (auto& d : pools) {
        // A remote pool's cap on granted slots: workers(...)'s max, else none (0).
        d.engine.max_workers = d.engine.remote && !d.workers_given ? 0 : d.max_workers;
        d.engine.min_workers = d.min_workers;
        state->engine.add_pool(d.engine);  // validates the rest, names the field
        PoolRuntime& p = state->pools.emplace_back();
        p.executor = d.run_on ? *d.run_on : executor;
        p.name = std::make_shared<const std::string>(d.engine.name);
        const auto* io = target_of<asio::io_context::executor_type>(p.executor);
        if (io && runs_on_one_thread(io->context())) {
            p.lanes.push_back(p.executor);
        } else {
            p.lanes.reserve(strands_per_pool);
            for (std::size_t i = 0; i < strands_per_pool; ++i) {
                if (io)
                    p.lanes.emplace_back(asio::make_strand(*io));
                else
                    p.lanes.emplace_back(asio::make_strand(p.executor));
            }
        }
        state->any_remote = state->any_remote || d.engine.remote;
        p.def = std::move(d);
    }
    state->timer = state->clock->make_timer(executor);
    state->recurring_timer = state->clock->make_timer(executor);
    state->abandon_timer = state->clock->make_timer(executor);
    std::shared_ptr<SchedulerCore> core(new SchedulerCore(std::move(state)));
    core->s_->self = core;
    // Before anything can happen: a subscription from the builder sees
    // every event, recovery included.
    for (const auto& taken : std::exchange(core->s_->options.subscriptions, {})) {
        auto q = taken.lock();
        if (!q || !q->claim()) continue;
        q->set_capacity(core->s_->options.event_capacity);
        core->attach(q);
    }
    return core;
}

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

std::vector<SubmitResult<std::shared_ptr<HandleState>>> SchedulerCore::try_submit_many(std::vector<TaskRequest> requests) {
    std::vector<SubmitResult<std::shared_ptr<HandleState>>> results;
    results.reserve(requests.size());
    const auto sink = [](void* out, SubmitResult<std::shared_ptr<HandleState>>&& r) {
        static_cast<std::vector<SubmitResult<std::shared_ptr<HandleState>>>*>(out)->push_back(std::move(r));
    };
    submit_each(*s_, requests.size(), [&](std::size_t i) -> TaskRequest& { return requests[i]; }, sink, &results);
    return results;
}

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

void SchedulerCore::set_rate(std::string_view bucket, double rate_per_s) {
    std::optional<std::string> problem;
    {
        State::Step step(*s_);
        const auto now = s_->clock->now();
        problem = s_->engine.set_rate(bucket, rate_per_s, now);
        s_->apply(now);
    }
    if (problem) throw ConfigError("set_rate: " + *problem);
}

bool SchedulerCore::cancel(const TaskRef& ref) {
    State::Step step(*s_);
    const auto task = s_->resolve(ref);
    if (!task) return false;
    const auto now = s_->clock->now();
    const bool cancelled = s_->engine.cancel(*task, now);
    s_->apply(now);
    return cancelled;
}

std::optional<TaskStatus> SchedulerCore::status(const TaskRef& ref) const {
    State::Read read(*s_);
    const auto task = s_->resolve(ref);
    return task ? s_->engine.status(*task) : std::nullopt;
}

asio::awaitable<void> SchedulerCore::shutdown(std::chrono::nanoseconds grace) {
    auto self = shared_from_this();
    {
        State::Step step(*s_);
        s_->begin_shutdown(grace);
    }
    auto drained = s_->drained;
    co_await drained->async_wait(asio::use_awaitable);
}

void SchedulerCore::shutdown_now() {
    State::Step step(*s_);
    s_->begin_shutdown(std::chrono::nanoseconds(0));
}

std::shared_ptr<EventQueue> SchedulerCore::subscribe() {
    auto q = std::make_shared<EventQueue>(s_->options.event_capacity);
    attach(q);
    return q;
}

std::shared_ptr<EventQueue> SchedulerCore::make_subscription() {
    return std::make_shared<EventQueue>(SchedulerOptions{}.event_capacity);
}

void SchedulerCore::attach(const std::shared_ptr<EventQueue>& q) {
    // Under both mutexes: a step that sees the count publishes to it.
    State::Read engine(*s_);
    std::lock_guard delivering(s_->deliver_mu);
    if (s_->drained->is_set()) {
        q->close();
    } else {
        s_->subscribers.push_back(q);
        s_->subscriber_count.store(s_->subscribers.size(), std::memory_order_relaxed);
        // From now on every transition makes an event (and stays so: a
        // subscriber may come back at any time).
        s_->engine.report_implied_transitions(true);
    }
}

asio::any_io_executor SchedulerCore::get_executor() const { return s_->executor; }

asio::any_io_executor SchedulerCore::blocking_executor() {
    std::lock_guard lock(s_->blocking_mu);
    if (!s_->blocking) {
        std::size_t n = s_->options.blocking_threads;
        if (n == 0) n = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 2, max_threads);
        // Throws std::system_error when a thread cannot start; the next
        // offload tries again.
        s_->blocking = std::make_unique<BlockingPool>(n);
    }
    return s_->blocking->get_executor();
}

void SchedulerCore::heartbeat(LeaseId lease) {
    State::Step step(*s_);
    const auto now = s_->clock->now();
    s_->engine.heartbeat(lease, now);
    s_->apply(now);  // what came due on the way
}

std::optional<core::PoolCounters> SchedulerCore::counters(std::string_view pool) const {
    State::Read read(*s_);
    auto id = s_->engine.find_pool(pool);
    if (!id) return std::nullopt;
    return s_->engine.counters(*id);
}

Snapshot SchedulerCore::snapshot() const {
    Snapshot out;
    {
        State::Read read(*s_);
        const auto now = s_->clock->now();
        out.pools.reserve(s_->pools.size());
        for (core::PoolId i = 0; i < s_->pools.size(); ++i) {
            PoolSnapshot& p = out.pools.emplace_back();
            static_cast<core::PoolStats&>(p) = s_->engine.stats(i, now);
            p.name = s_->pools[i].def.engine.name;
            if (s_->pools[i].def.engine.remote) p.remote_workers = s_->engine.connected_workers(i);
        }
    }
    if (s_->durable) {
        out.store = s_->durable->journal.figures();  // under the store's own lock
    }
    return out;
}

std::uint64_t SchedulerCore::lock_acquisitions() const {
    State::Read read(*s_);
    return s_->mu.acquisitions();
}

std::uint64_t SchedulerCore::late_reports() const {
    State::Read read(*s_);
    return s_->engine.late_reports();
}

}  // namespace cronoq::detail
