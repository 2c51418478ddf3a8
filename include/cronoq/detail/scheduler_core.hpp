#pragma once
// The untyped heart of the driver. `Scheduler<P, O>` is a thin typed shell
// over it, so that the Asio-heavy code compiles once, in src/driver.
#include <cronoq/attempt_observer.hpp>
#include <cronoq/clock.hpp>
#include <cronoq/core/task_spec.hpp>
#include <cronoq/detail/erased.hpp>
#include <cronoq/detail/task_request.hpp>
#include <cronoq/detail/handle_state.hpp>
#include <cronoq/detail/inspection.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/pool_stats.hpp>
#include <cronoq/submit_error.hpp>
#include <cronoq/task_query.hpp>
#include <cronoq/task_ref.hpp>
#include <cronoq/task_status.hpp>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cronoq {
struct Snapshot;
class Store;
}

namespace cronoq::detail {

class EventQueue;
class RemoteHost;
class WorkerEndpointFactory;

/// The most threads a scheduler starts for one purpose (the io_context
/// threads of a BlockingScheduler, the blocking pool).
inline constexpr std::size_t max_threads = 1024;

struct SchedulerOptions {
    core::EngineConfig engine;
    std::shared_ptr<Clock> clock;       ///< null: Clock::steady()
    std::size_t blocking_threads = 0;   ///< 0: the hardware's concurrency, at least 2
    std::size_t event_capacity = 4096;  ///< per subscriber
    /// How long shutdown waits for the coroutine of an aborted attempt
    /// before abandoning it.
    std::chrono::nanoseconds abandon_after = std::chrono::seconds(1);
    /// Where the state is kept (docs/guide/durability.md); null: in memory only.
    std::shared_ptr<Store> store;
    /// Subscriptions taken from the builder (`BuilderBase::subscribe`),
    /// made before the scheduler: `create` attaches those no other
    /// scheduler took, so they see the recovery of `open()`.
    std::vector<std::weak_ptr<EventQueue>> subscriptions;
    /// Told of every attempt's start and end (docs/guide/operations.md, "Tracing").
    AttemptObserver observer;
    ErasedCodec codec;
    /// `Builder::serve_workers`: the worker endpoint `open()` starts before
    /// it waits to lead; null: none.
    std::shared_ptr<const WorkerEndpointFactory> worker_endpoint;
    /// `Builder::shard`: the shard of the store this scheduler leads.
    std::string shard = "default";
};

/// The tasks of one `try_submit_many`, as the typed shell holds them: read
/// in place (each task's state is consumed when its task is admitted), and
/// where each result goes, in the order of the tasks.
class ManyTasks {
public:
    virtual std::size_t size() const = 0;
    virtual TaskState& task(std::size_t i) = 0;
    virtual void result(SubmitResult<std::shared_ptr<HandleState>>&& r) = 0;

protected:
    ManyTasks() = default;
    ManyTasks(const ManyTasks&) = default;
    ManyTasks& operator=(const ManyTasks&) = default;
    ~ManyTasks() = default;
};

class SchedulerCore : public std::enable_shared_from_this<SchedulerCore> {
public:
    /// Validates everything first; throws ConfigError naming the field.
    static std::shared_ptr<SchedulerCore> create(asio::any_io_executor executor, SchedulerOptions options,
                                                 std::vector<PoolDefinition> pools);
    ~SchedulerCore();

    SubmitResult<std::shared_ptr<HandleState>> try_submit(TaskRequest request);
    /// As try_submit, but waits in FIFO order for room under
    /// OverflowPolicy::Wait; throws SubmitException on an error.
    asio::awaitable<std::shared_ptr<HandleState>> submit(TaskRequest request);
    /// Each of the typed shell's tasks admitted or rejected on its own,
    /// under one acquisition of the engine, with no vector of requests or
    /// results in between (a batch of 100 000 would write two more arrays
    /// of that size): the tasks are read in place, each result handed on
    /// in order (`ManyTasks`).
    void try_submit_many(ManyTasks& tasks);
    /// All or nothing; handles in the order of `requests`.
    SubmitResult<std::vector<std::shared_ptr<HandleState>>> try_submit_batch(std::vector<TaskRequest> requests);
    /// Adds or replaces the schedule named `request.name`. Throws
    /// ConfigError (bad cron, zone, pool, name) and registers nothing then.
    void add_recurring(RecurringRequest request);
    bool remove_recurring(std::string_view name);
    /// Throws ConfigError for an unknown bucket or a bad rate.
    void set_rate(std::string_view bucket, double rate_per_s);
    void set_fair_weight(std::string_view pool, std::string_view key, double weight);
    bool cancel(const TaskRef& task);
    /// Pauses or resumes the named pool (docs/guide/operations.md, "Pause
    /// and resume"); with a store durable at the next commit. False for an
    /// unknown pool.
    bool set_paused(std::string_view pool, bool paused);
    std::optional<TaskStatus> status(const TaskRef& task) const;
    /// With a store: waits until this process leads, recovers what the
    /// store holds, and starts. Throws StoreError when leadership ended
    /// before it began.
    asio::awaitable<void> open();
    /// Completes once everything admitted so far is committed (at once
    /// without a store). Throws StoreError if leadership is lost first.
    asio::awaitable<void> flush();
    /// Completes once this scheduler stopped leading (fenced, its commits
    /// kept failing, or shutdown released the lead); never without a store.
    asio::awaitable<void> leadership_lost();
    /// The state behind a live task, or a retained one whose record the
    /// driver keeps (a keyed task); null otherwise.
    std::shared_ptr<HandleState> find(const TaskRef& task) const;
    /// A page of tasks (docs/guide/operations.md, "Queries"): with a store
    /// the store's `query` on the calling thread; without one, live and
    /// retained tasks. Throws std::invalid_argument for a bad cursor,
    /// StoreError when the store cannot be read.
    TaskPage query(const TaskQuery& query) const;
    /// A Failed, DeadLettered or Cancelled task submitted again as a new
    /// task; null if unknown, not terminal, or succeeded. Throws
    /// SubmitException when the new task cannot be admitted.
    std::shared_ptr<HandleState> retry(const TaskRef& task);
    asio::awaitable<void> shutdown(std::chrono::nanoseconds grace);
    /// Starts a shutdown with zero grace and does not wait for it.
    void shutdown_now();
    std::shared_ptr<EventQueue> subscribe();
    /// A queue for `SchedulerOptions::subscriptions`, attached by `create`.
    static std::shared_ptr<EventQueue> make_subscription();

    asio::any_io_executor get_executor() const;
    /// Where blocking work runs; the threads start on first use.
    asio::any_io_executor blocking_executor();
    void heartbeat(LeaseId lease);
    /// Engine figures of a pool; empty for an unknown name.
    std::optional<core::PoolCounters> counters(std::string_view pool) const;
    std::uint64_t late_reports() const;
    /// How often the engine's lock was taken so far (a cost figure).
    std::uint64_t lock_acquisitions() const;
    Snapshot snapshot() const;
    /// The recurring schedules, each with its next `occurrences`
    /// (<cronoq/detail/inspection.hpp>). Thread-safe.
    std::vector<RecurringView> recurring_view(std::size_t occurrences) const;
    /// One task by id or key with its dependencies: with a store its row
    /// (read on the calling thread), else what the scheduler holds of a
    /// live or retained task; empty if unknown. Thread-safe.
    std::optional<TaskView> task_view(const TaskRef& task) const;
    /// The scheduler as a worker server sees it (docs/remote.md,
    /// <cronoq/detail/remote_host.hpp>): one object per scheduler, made on
    /// first use, thread-safe. It holds the scheduler weakly: once the
    /// scheduler is gone, `connect` refuses (ShuttingDown) and the other
    /// calls do nothing. From a typed `Scheduler<P, O>`:
    /// `detail::Access::core(scheduler)->remote_host()`.
    std::shared_ptr<RemoteHost> remote_host();

    struct State;  // defined in src/driver/scheduler_state.hpp

private:
    explicit SchedulerCore(std::unique_ptr<State> state);
    void attach(const std::shared_ptr<EventQueue>& queue);
    std::unique_ptr<State> s_;
};

}  // namespace cronoq::detail
