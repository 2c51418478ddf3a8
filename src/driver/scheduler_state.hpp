#pragma once
// The driver core's state: the wiring of the driver's components
// (docs/design.md, the driver). It owns the engine, its mutex and the
// components; the behaviour and the rest of the data are theirs: the step
// pipeline (step_pipeline.hpp), the engine's actions (actions.hpp), timers
// (timers.hpp), shutdown and the scheduler's mode (shutdown.hpp), recovery
// (recovery.hpp), admission, attempts, the store, remote workers and
// recurring schedules (their headers, below). Its own methods
// (scheduler_state.cpp) are its construction and the one admission entry.
#include <cronoq/clock.hpp>
#include <cronoq/core/engine.hpp>
#include <cronoq/detail/erased.hpp>
#include <cronoq/detail/runtime/light_mutex.hpp>
#include <cronoq/detail/thread_safety.hpp>
#include <cronoq/detail/remote_host.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/detail/unique_function.hpp>
#include <cronoq/detail/wait_list.hpp>
#include <cronoq/detail/worker_endpoint.hpp>
#include <cronoq/status_event.hpp>
#include <cronoq/store/journal.hpp>
#include <cronoq/store/store.hpp>

#include "actions.hpp"
#include "admission.hpp"
#include "attempt_launcher.hpp"
#include "attempt_observers.hpp"
#include "attempt_state.hpp"
#include "runtime/block_pool.hpp"
#include "blocking_pool.hpp"
#include "delivery.hpp"
#include "durable_link.hpp"
#include "encoder.hpp"
#include "inbox.hpp"
#include "intake.hpp"
#include "engine_mutex.hpp"
#include "pool_runtime.hpp"
#include "submission.hpp"
#include "recovery.hpp"
#include "recurring.hpp"
#include "recurring_table.hpp"
#include "remote_bridge.hpp"
#include "shard_keys.hpp"
#include "shutdown.hpp"
#include "step_pipeline.hpp"
#include "timers.hpp"

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/strand.hpp>

#include <atomic>
#include <exception>
#include <deque>
#include <limits>
#include <map>
#include <unordered_map>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace cronoq::detail {

class EventQueue;

struct SchedulerCore::State {
    State(asio::any_io_executor ex, SchedulerOptions opts);
    ~State();
    // The engine's modes the driver relies on; again on every new engine
    // (a store's recovery makes one).
    void set_engine_modes() CRONOQ_REQUIRES(mu);
    /// The engine while `create` builds the state, before anyone else can
    /// reach it: no step needed.
    core::Engine& unshared_engine() CRONOQ_NO_THREAD_SAFETY_ANALYSIS { return engine; }
    /// The proof of holding the engine's mutex that components take.
    EngineHeld held() const CRONOQ_REQUIRES(mu) { return EngineHeld{}; }
    /// A component's entry point, given that proof, tells the analysis the
    /// mutex is held: it cannot see that the component's `State&` is the
    /// caller's (engine_mutex.hpp), but the proof is made only under it.
    void holding(const EngineHeld&) const CRONOQ_ASSERT_CAPABILITY(mu) {}
    /// The state of `core` (a nested type reaches its private member).
    static State& of(SchedulerCore& core) { return *core.s_; }

    asio::any_io_executor executor;
    SchedulerOptions options;
    std::shared_ptr<Clock> clock;
    std::weak_ptr<SchedulerCore> self;
    // Whether debug lines are wanted, read once at build: the hot path
    // does not ask the logger for every abort.
    bool debug_logging = false;

    // ---- guarded by `mu` ---------------------------------------------------------
    mutable EngineMutex mu;
    core::Engine engine CRONOQ_GUARDED_BY(mu);
    Pools pools;  // fixed after build, but each pool's waiting submitters
    // The store (docs/guide/durability.md); null without one.
    const std::unique_ptr<DurableLink> durable;
    // Keys held by other shards' tasks (shard_keys.hpp); null without a store.
    const std::unique_ptr<ShardKeys> shard_keys;
    Encoder encoder;
    // Makes task records and admits them; reached with an EngineHeld.
    Admission admission;
    // The end of each step: the inbox, the attempts to start, the deferred work.
    StepPipeline pipeline{*this};
    // The engine's actions applied; the blocks attempts are made in.
    Actions actions{*this};
    // The engine's timer and the recurring table's, armed and served.
    Timers timers{*this, clock->make_timer(executor)};
    // Made by create(), then never replaced; its own data is reached with
    // an EngineHeld.
    std::unique_ptr<RecurringTable> recurring;
    // Attempt coroutines that have not returned (and were not abandoned).
    AttemptLauncher launcher;
    // The scheduler's mode (shutting down, finished) and how it stops.
    Shutdown shutdown{*this};
    // What the store's report that this process leads restores.
    Recovery recovery{*this};

    // ---- clients' submissions and cancels (ingestion.hpp) -----------------------------
    Intake intake;

    // ---- remote workers (docs/remote.md) ---------------------------------------------
    RemoteBridge remote;
    // `Builder::serve_workers`: started by open() before it waits to lead,
    // stopped when the scheduler goes (docs/remote.md, "Serving while waiting").
    std::unique_ptr<WorkerEndpoint> endpoint;

    // ---- what steps leave for after `mu`, in order ------------------------------------
    Delivery delivery;
    // The application's attempt observer; its data is reached with an EngineHeld.
    AttemptObservers observers{options.observer};


    // ---- the blocking pool, started on first use ----------------------------------
    std::mutex blocking_mu;
    std::unique_ptr<BlockingPool> blocking;

    // ---- steps -------------------------------------------------------------------
    /// Holds the engine for one step; on the way out serves the inbox,
    /// releases the mutex and delivers what the step deferred
    /// (StepPipeline::end_step, step_pipeline.hpp).
    class CRONOQ_SCOPED_CAPABILITY Step {
    public:
        explicit Step(State& s) CRONOQ_ACQUIRE(s.mu) CRONOQ_NO_THREAD_SAFETY_ANALYSIS : s_(s), lock_(s.mu) {}
        ~Step() CRONOQ_RELEASE() CRONOQ_NO_THREAD_SAFETY_ANALYSIS;
        Step(const Step&) = delete;
        Step& operator=(const Step&) = delete;

    private:
        State& s_;
        std::unique_lock<EngineMutex> lock_;
    };
    /// Holds the engine to read it only (no engine call that changes it).
    /// A reader holds the mutex like a step, so an attempt's end posted
    /// meanwhile is left to it as to a step: on the way out it serves that
    /// end (as a step), else the end would wait for a next step that may
    /// never come, and its handle never complete (StepPipeline::end_read).
    class CRONOQ_SCOPED_CAPABILITY Read {
    public:
        explicit Read(State& s) CRONOQ_ACQUIRE(s.mu) CRONOQ_NO_THREAD_SAFETY_ANALYSIS : s_(s), lock_(s.mu) {}
        ~Read() CRONOQ_RELEASE() CRONOQ_NO_THREAD_SAFETY_ANALYSIS;
        Read(const Read&) = delete;
        Read& operator=(const Read&) = delete;

    private:
        State& s_;
        std::unique_lock<EngineMutex> lock_;
    };
    /// A log line, written after the mutex with the step's other work.
    void log(UniqueFunction<void()> line) CRONOQ_REQUIRES(mu) { pipeline.deferred(held()).emplace_back(std::move(line)); }
    // ---- admission (mutex held) -----------------------------------------------------
    /// The one admission entry (admission.hpp): every way in admits its
    /// submissions here, at `now`, leaving the engine's actions to the
    /// caller's Actions::apply(now). Refused while shutting down (but a recovery).
    void admit(Submissions& group, AdmitMode mode, core::Time now) CRONOQ_REQUIRES(mu);
    std::optional<TaskId> resolve(const TaskRef& ref) const CRONOQ_REQUIRES(mu);
    /// No mutex: before an in-process submission is admitted, refuses it
    /// or marks it to skip when its key or a key it depends on is held by a
    /// task of another shard (docs/store.md, "Keys across shards"). One
    /// submission, or a batch's, which read the pools' shards once; without
    /// a store of several shards, nothing.
    void look_across_shards(std::span<Submission> list) CRONOQ_EXCLUDES(mu);
    /// One of them, with the lookup of its batch.
    void look_across_shards(Submission& s, ShardKeys::Lookup& lookup) CRONOQ_EXCLUDES(mu);
    /// Admits `r` as a new task in place of the ended task `old`
    /// (`Scheduler::retry`): the key moves to it (docs/guide/durability.md).
    /// Throws SubmitException when it cannot be admitted.
    std::shared_ptr<HandleState> resubmit(TaskId old, TaskRequest&& r) CRONOQ_REQUIRES(mu);
    /// No mutex: the handle of a task the engine no longer holds, made from
    /// its committed row (terminal).
    std::shared_ptr<HandleState> stored_handle(const store::TaskRow& row) const;

    // ---- the store (its reports: recovery.hpp, shutdown.hpp) ----------------------------
    /// No mutex: waits until every change enqueued so far is committed;
    /// false when the lead ended first (`flush`, and `open` for what the
    /// recovery wrote). The caller keeps the state alive.
    asio::awaitable<bool> commit_enqueued();
};

}  // namespace cronoq::detail
