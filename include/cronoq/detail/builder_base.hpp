#pragma once
// The options shared by Scheduler::Builder and BlockingScheduler::Builder.
// Durations: any std::chrono::duration, saturated into nanoseconds.
#include <cronoq/bounds.hpp>
#include <cronoq/clock.hpp>
#include <cronoq/config_error.hpp>
#include <cronoq/detail/erased.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/detail/worker_endpoint.hpp>
#include <cronoq/duration.hpp>
#include <cronoq/event_stream.hpp>
#include <cronoq/pool.hpp>
#include <cronoq/priority.hpp>
#include <cronoq/resource.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace cronoq {
class Store;
}  // namespace cronoq

namespace cronoq::detail {

template <class Self, class P, class O>
class BuilderBase {
public:
    /// Declares a pool; at least one is required, names unique.
    Self& pool(Pool<P, O> p) { pools_.push_back(Access::take(std::move(p))); return self(); }
    Self& priority(PriorityConfig c) { options_.engine.priority = c; return self(); }
    Self& urgency(UrgencyConfig c) { options_.engine.urgency = c; return self(); }
    /// How long terminal tasks stay visible to `status()` (default 5 min).
    template <class Rep, class Period>
    Self& retention(std::chrono::duration<Rep, Period> d) {
        options_.engine.retention = saturating_ns(d);
        return self();
    }
    Self& retention_max(std::size_t n) { options_.engine.retention_max = n; return self(); }
    /// Told of every attempt's start and end, e.g. to make tracing spans
    /// (docs/guide/operations.md, "Tracing"; <cronoq/attempt_observer.hpp>).
    Self& observer(AttemptObserver o) { options_.observer = std::move(o); return self(); }
    /// Cap on tasks not yet running over all pools; a submission beyond it
    /// follows its own pool's overflow policy.
    Self& global_bounds(Bounds b) { options_.engine.global_bounds = b; return self(); }
    /// The window of `snapshot()`'s counts and percentiles (default 60 s).
    template <class Rep, class Period>
    Self& metrics_window(std::chrono::duration<Rep, Period> d) {
        options_.engine.metrics_window = saturating_ns(d);
        return self();
    }
    /// Declares a semaphore or token bucket shared by every pool.
    Self& resource(Resource r) { options_.engine.resources.push_back(std::move(r)); return self(); }
    /// Seed of the backoff jitter: the same seed gives the same delays.
    Self& seed(std::uint64_t s) { options_.engine.seed = s; return self(); }
    /// Default: `Clock::steady()`. Tests pass a `ManualClock`.
    Self& clock(std::shared_ptr<Clock> c) { options_.clock = std::move(c); return self(); }
    /// Threads of the pool for blocking work (0: hardware concurrency, >= 2).
    Self& blocking_threads(std::size_t n) { options_.blocking_threads = n; return self(); }
    /// How long `shutdown` waits, after aborting an attempt, for its
    /// coroutine to return before abandoning it (default 1 s; docs/guide/operations.md).
    template <class Rep, class Period>
    Self& abandon_after(std::chrono::duration<Rep, Period> d) {
        options_.abandon_after = saturating_ns(d);
        return self();
    }
    /// Capacity of each subscriber's event queue (default 4096).
    Self& event_capacity(std::size_t n) { options_.event_capacity = n; return self(); }
    /// Subscribes before the scheduler exists: the stream receives every
    /// status event of the next scheduler made by `open()` or `build()` (of
    /// this builder or any copy of it), from its creation on. Unlike the
    /// scheduler's own `subscribe()`, which exists only once `open()` has
    /// returned, it sees what `open()`'s recovery does: a task that was
    /// `Running` under a leader that died is retried (`Retrying`, "lease
    /// lost: scheduler restarted") or ends, before `open()` returns
    /// (docs/store.md, "The scheduler with a store"). Otherwise it is the
    /// scheduler's subscription: the same events, `event_capacity`, and it
    /// ends when that scheduler shuts down (an `open()` that throws
    /// StoreError shuts its scheduler down: take a new stream for the next
    /// try). A stream is attached to one scheduler only; the next scheduler
    /// made from the builder does not publish to it. A `build()` or
    /// `open()` that throws ConfigError attaches nothing.
    EventStream subscribe() {
        auto queue = SchedulerCore::make_subscription();
        options_.subscriptions.push_back(queue);
        return Access::make<EventStream>(std::move(queue));
    }
    /// Keeps the scheduler's state in `store` (docs/guide/durability.md): acknowledged work
    /// survives a crash, and processes sharing the store stand by for one
    /// another. Such a scheduler is made with `open()`, which waits to lead
    /// and recovers, not with `build()`. `P` and `O` need a `codec`.
    Self& store(std::shared_ptr<Store> s) { options_.store = std::move(s); return self(); }
    /// Serves the worker endpoint (docs/remote.md, "Serving while waiting"):
    /// `open()` starts it before it waits to lead; while this process does
    /// not lead, a worker's `register` is refused with a redirect to the
    /// leader's `advertise` endpoint; once it leads it serves the remote
    /// pools as `WorkerServer` does. Needs a store (`open()`, not `build()`),
    /// <cronoq/remote/worker_server.hpp> and the `cronoq::grpc` component
    /// (a program that calls it without linking that does not link).
    /// The shard of the store this scheduler leads (docs/guide/replicas.md,
    /// "Shards"; default "default"): its lease, epoch and fencing are its
    /// own, and the pools it declares belong to it. Throws ConfigError for
    /// an empty name; `open()` throws ConfigError for a pool that another
    /// shard declares while it leads or holds unfinished tasks of it. One store
    /// object leads one shard: a process that leads two opens the store twice.
    Self& shard(std::string name) {
        if (name.empty()) throw ConfigError("shard: the name must not be empty");
        options_.shard = std::move(name);
        return self();
    }
    Self& serve_workers(const WorkerServerConfig& config) {
        options_.worker_endpoint = worker_endpoint_factory(config);
        return self();
    }

protected:
    std::shared_ptr<SchedulerCore> build_core(asio::any_io_executor ex) const {
        if (options_.store)
            throw ConfigError("store: a scheduler with a store is made with open(), which waits to lead and recovers; "
                              "build() cannot");
        if (options_.worker_endpoint)
            throw ConfigError("serve_workers: needs a store and open(); without a store, serve a built scheduler "
                              "with WorkerServer::start");
        return SchedulerCore::create(std::move(ex), options_, pools_);
    }
    template <class P2 = P>
    std::shared_ptr<SchedulerCore> build_durable_core(asio::any_io_executor ex) const {
        if (!options_.store) throw ConfigError("store: open() needs a store (Builder::store); without one, use build()");
        SchedulerOptions options = options_;
        options.codec = erase_codec<P2, O>();
        return SchedulerCore::create(std::move(ex), std::move(options), pools_);
    }

private:
    Self& self() { return static_cast<Self&>(*this); }
    SchedulerOptions options_;
    std::vector<PoolDefinition> pools_;
};

}  // namespace cronoq::detail
