// The driver core's construction (validating the pools, making their lanes)
// and its entry points other than submission, which is in
// scheduler_submit.cpp: each runs as one engine step (see
// scheduler_state.hpp), so what it changes is delivered before it returns.
#include <cronoq/config_error.hpp>
#include <cronoq/cron_expr.hpp>
#include <cronoq/detail/executor_target.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/logging.hpp>
#include <cronoq/snapshot.hpp>

#include "runtime/asio_internals.hpp"
#include "event_queue.hpp"
#include "actions.hpp"
#include "pool_pause.hpp"
#include "shutdown.hpp"
#include "scheduler_state.hpp"
#include "timers.hpp"

#include <asio/io_context.hpp>
#include <asio/strand.hpp>
#include <asio/use_awaitable.hpp>

#include <algorithm>
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

}  // namespace

// ---- SchedulerCore --------------------------------------------------------------------

SchedulerCore::SchedulerCore(std::unique_ptr<State> state) : s_(std::move(state)) {}

SchedulerCore::~SchedulerCore() {
    // Its streams end first: their hosts find this scheduler gone.
    if (s_ && s_->endpoint) s_->endpoint->stop();
    // The store's reports stop reaching this scheduler (waiting for one
    // being handled) before anything of it goes.
    if (s_ && s_->durable) s_->durable->link()->disconnect();
    // The timers' callbacks hold only a weak reference; cancel their waits.
    if (s_) s_->timers.disarm();
    if (s_ && s_->recurring) s_->recurring->stop();
    if (s_) s_->launcher.stop();
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
        state->unshared_engine().add_pool(d.engine);  // validates the rest, names the field
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
        p.def = std::move(d);
    }
    state->encoder.pools_ready();
    std::shared_ptr<SchedulerCore> core(new SchedulerCore(std::move(state)));
    core->s_->self = core;
    core->s_->recurring = std::make_unique<RecurringTable>(core->s_->clock->make_timer(executor), [w = core->s_->self] {
        if (auto c = w.lock()) c->s_->timers.on_recurring_due();
    });
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

void SchedulerCore::set_rate(std::string_view bucket, double rate_per_s) {
    std::optional<std::string> problem;
    {
        State::Step step(*s_);
        const auto now = s_->clock->now();
        problem = s_->engine.set_rate(bucket, rate_per_s, now);
        s_->actions.apply(s_->held(), now);
    }
    if (problem) throw ConfigError("set_rate: " + *problem);
}

void SchedulerCore::set_fair_weight(std::string_view pool, std::string_view key, double weight) {
    State::Step step(*s_);
    const auto id = s_->engine.find_pool(pool);
    if (!id) throw ConfigError("set_fair_weight: no pool named \"" + std::string(pool) + "\"");
    const auto now = s_->clock->now();
    s_->engine.set_fair_weight(*id, key, weight, now);  // ConfigError for a bad weight: nothing changed
    if (s_->durable) s_->durable->write(s_->held(), store::FairWeightSet{std::string(pool), std::string(key), weight});
    s_->actions.apply(s_->held(), now);
}

bool SchedulerCore::cancel(const TaskRef& ref) {
    State::Step step(*s_);
    const auto task = s_->resolve(ref);
    if (!task) return false;
    const auto now = s_->clock->now();
    const bool cancelled = s_->engine.cancel(*task, now);
    s_->actions.apply(s_->held(), now);
    return cancelled;
}

bool SchedulerCore::set_paused(std::string_view name, bool paused) {
    State::Step step(*s_);
    const auto now = s_->clock->now();
    if (!set_pool_paused(*s_, name, paused, now)) return false;
    s_->actions.apply(s_->held(), now);
    return true;
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
        s_->shutdown.begin(s_->held(), grace);
    }
    auto drained = s_->delivery.drained();
    co_await drained->async_wait(asio::use_awaitable);
}

void SchedulerCore::shutdown_now() {
    State::Step step(*s_);
    s_->shutdown.begin(s_->held(), std::chrono::nanoseconds(0));
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
    if (!s_->delivery.subscribe(q)) {
        q->close();
    } else {
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
    s_->actions.apply(s_->held(), now);  // what came due on the way
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
        out.store = s_->durable->journal().figures();  // under the store's own lock
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
