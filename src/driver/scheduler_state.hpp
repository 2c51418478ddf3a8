#pragma once
// The driver core's state and its step pipeline (docs/design.md).
//
// Engine steps: every call that changes the engine runs inside a `Step`,
// which holds the engine's mutex; a call that only reads the engine holds
// it in a `Read`. An attempt's end takes the mutex only if it is free;
// otherwise it goes to an inbox that the holder, step or reader, serves
// when letting go, so one acquisition serves many reports.
//
// Under the mutex the driver only calls the engine and does its own cheap
// bookkeeping (aborting an attempt is a post). Attempts dispatched in a
// step start after it, free of every lock: on a thread that runs their
// executor they start at once, otherwise they are posted. What touches
// waiters or the application — completing handles, publishing events,
// logging, waking the shutdown — is collected as `Deferred` work and done
// after the mutex is released, still in the engine's order: the next step
// cannot deliver before the previous one has (a second mutex, taken before
// the engine's is released).
#include <cronoq/clock.hpp>
#include <cronoq/core/engine.hpp>
#include <cronoq/detail/erased.hpp>
#include <cronoq/detail/runtime/light_mutex.hpp>
#include <cronoq/detail/thread_safety.hpp>
#include <cronoq/detail/remote_host.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/detail/unique_function.hpp>
#include <cronoq/detail/wait_list.hpp>
#include <cronoq/status_event.hpp>
#include <cronoq/store/journal.hpp>
#include <cronoq/store/store.hpp>

#include "admission.hpp"
#include "attempt_launcher.hpp"
#include "attempt_state.hpp"
#include "runtime/block_pool.hpp"
#include "blocking_pool.hpp"
#include "delivery.hpp"
#include "durable_link.hpp"
#include "encoder.hpp"
#include "inbox.hpp"
#include "engine_mutex.hpp"
#include "pool_runtime.hpp"
#include "submission.hpp"
#include "recurring.hpp"
#include "recurring_table.hpp"
#include "remote_bridge.hpp"

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
    Encoder encoder;
    // Makes task records and admits them; reached with an EngineHeld.
    Admission admission;
    std::vector<core::Action> actions CRONOQ_GUARDED_BY(mu);
    std::vector<Deferred> deferred CRONOQ_GUARDED_BY(mu);
    std::vector<AttemptEnd> ends CRONOQ_GUARDED_BY(mu);  // the inbox drained into this buffer
    // Attempts dispatched in this step, in order: started once the step has
    // let go of the engine (a start may run the executor inline).
    StartList starts CRONOQ_GUARDED_BY(mu);
    std::unique_ptr<Clock::Timer> timer;
    std::optional<core::Time> armed CRONOQ_GUARDED_BY(mu);
    // Made by create(), then never replaced; its own data is reached with
    // an EngineHeld.
    std::unique_ptr<RecurringTable> recurring;
    // Where attempts are made (under `mu`): freed blocks are kept for
    // reuse, up to a bound (runtime/block_pool.hpp).
    OwnedPool attempt_blocks CRONOQ_GUARDED_BY(mu){shared_block_size<Attempt>};
    // Attempt coroutines that have not returned (and were not abandoned).
    AttemptLauncher launcher;
    bool shutting_down CRONOQ_GUARDED_BY(mu) = false;
    bool finished CRONOQ_GUARDED_BY(mu) = false;          // shutdown completed: no timer may be armed again
    bool drained_sent CRONOQ_GUARDED_BY(mu) = false;      // its waiters were told

    // ---- reports that found the engine's mutex taken ---------------------------
    Inbox inbox;
    std::vector<RemoteEnd> remote_ends CRONOQ_GUARDED_BY(mu);  // remote_inbox drained

    // ---- remote workers (docs/remote.md) ---------------------------------------------
    RemoteBridge remote;

    // ---- what steps leave for after `mu`, in order ------------------------------------
    Delivery delivery;


    // ---- the blocking pool, started on first use ----------------------------------
    std::mutex blocking_mu;
    std::unique_ptr<BlockingPool> blocking;

    // ---- steps -------------------------------------------------------------------
    /// Holds the engine for one step; on the way out serves the inbox,
    /// releases the mutex and delivers what the step deferred.
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
    /// never come, and its handle never complete.
    class CRONOQ_SCOPED_CAPABILITY Read {
    public:
        explicit Read(State& s) CRONOQ_ACQUIRE(s.mu) CRONOQ_NO_THREAD_SAFETY_ANALYSIS : s_(s), lock_(s.mu) {}
        ~Read() CRONOQ_RELEASE() CRONOQ_NO_THREAD_SAFETY_ANALYSIS { s_.end_read(lock_); }
        Read(const Read&) = delete;
        Read& operator=(const Read&) = delete;

    private:
        State& s_;
        std::unique_lock<EngineMutex> lock_;
    };
    /// Ends a step: with `lock` held, serves the inbox and collects the
    /// deferred work; then releases it and delivers that work in order.
    void end_step(std::unique_lock<EngineMutex>& lock) CRONOQ_NO_THREAD_SAFETY_ANALYSIS;
    /// Ends a read: releases `lock`, then serves an end posted meanwhile.
    void end_read(std::unique_lock<EngineMutex>& lock) CRONOQ_NO_THREAD_SAFETY_ANALYSIS;
    /// Queues an attempt's end; served by whichever step comes next, at
    /// once if nobody holds the engine.
    void post_end(AttemptEnd&& end);
    /// The same for several ends at once; leaves `batch` empty.
    void post_ends(std::vector<AttemptEnd>& batch);
    /// The same for a remote worker's report.
    void post_remote(RemoteEnd end);
    /// What the three above share: `put(ends, remote_ends)` moves the
    /// report(s) into the vectors it is given (scheduler_step.cpp).
    template <class Put>
    void offer(Put&& put) CRONOQ_NO_THREAD_SAFETY_ANALYSIS;
    /// Mutex held: applies one remote report to the engine.
    void serve_remote(RemoteEnd& end, core::Time now) CRONOQ_REQUIRES(mu);
    /// Mutex held: a lease for a remote worker; sent after the mutex.
    void dispatch_remote(core::Dispatch& d, TaskRecord& record, PoolRuntime& pool) CRONOQ_REQUIRES(mu);
    /// Mutex held: an abandoned remote lease; the worker is told after the mutex.
    void abort_remote(const core::Abort& a, std::shared_ptr<Attempt> attempt) CRONOQ_REQUIRES(mu);
    /// Mutex held, at the end of a shutdown: every worker is told.
    void shutdown_sessions() CRONOQ_REQUIRES(mu);

    // ---- actions (mutex held) ------------------------------------------------------
    void apply(core::Time now) CRONOQ_REQUIRES(mu);
    void on(core::Dispatch& d, core::Time now, std::chrono::system_clock::time_point wall) CRONOQ_REQUIRES(mu);
    void on(core::Abort& a, core::Time now, std::chrono::system_clock::time_point wall) CRONOQ_REQUIRES(mu);
    void on(core::Status& s, core::Time now, std::chrono::system_clock::time_point wall) CRONOQ_REQUIRES(mu);
    void on(core::Forget& f, core::Time now, std::chrono::system_clock::time_point wall) CRONOQ_REQUIRES(mu);
    void on(core::ScaleTo& s, core::Time now, std::chrono::system_clock::time_point wall) CRONOQ_REQUIRES(mu);
    void on(core::SpaceAvailable& s, core::Time now, std::chrono::system_clock::time_point wall) CRONOQ_REQUIRES(mu);
    void on(core::AskScaler& q, core::Time now, std::chrono::system_clock::time_point wall) CRONOQ_REQUIRES(mu);
    /// No mutex: calls the pool's user scaler, then answers the engine.
    void ask_scaler(core::PoolId pool, const ScalerInput& question);
    void wake_next_submit(PoolRuntime& pool) CRONOQ_REQUIRES(mu);
    void serve_ends(core::Time now) CRONOQ_REQUIRES(mu);
    void log(UniqueFunction<void()> line) CRONOQ_REQUIRES(mu) { deferred.emplace_back(std::move(line)); }
    // ---- admission (mutex held) -----------------------------------------------------
    /// The one admission entry (admission.hpp): every way in admits its
    /// submissions here, at `now`, leaving the engine's actions to the
    /// caller's apply(now). Refused while shutting down (but a recovery).
    void admit(Submissions& group, AdmitMode mode, core::Time now) CRONOQ_REQUIRES(mu);
    std::optional<TaskId> resolve(const TaskRef& ref) const CRONOQ_REQUIRES(mu);
    /// Admits `r` as a new task in place of the ended task `old`
    /// (`Scheduler::retry`): the key moves to it (docs/guide/durability.md).
    /// Throws SubmitException when it cannot be admitted.
    std::shared_ptr<HandleState> resubmit(TaskId old, TaskRequest&& r) CRONOQ_REQUIRES(mu);
    /// No mutex: the handle of a task the engine no longer holds, made from
    /// its committed row (terminal).
    std::shared_ptr<HandleState> stored_handle(const store::TaskRow& row) const;

    // ---- the store (scheduler_store.cpp) ----------------------------------------------
    /// The store's reports, on its thread.
    void on_leading(store::Recovered recovered);
    void on_commit(const store::CommitReport& report);
    void on_lost(const store::LeadershipLost& lost);
    /// Mutex held: brings back what the store holds (docs/guide/durability.md "Recovery").
    void recover(store::Recovered& recovered, core::Time now, std::chrono::system_clock::time_point wall) CRONOQ_REQUIRES(mu);
    /// The steps of recover(): an engine whose ids start above the marks; a
    /// task that cannot come back ends failed in the store; a row becomes a
    /// task through admit (AdmitMode::Restoring).
    void start_fresh_engine(const store::HighWaterMarks& marks) CRONOQ_REQUIRES(mu);
    void fail_recovered(TaskId id, std::uint32_t attempt, std::string message, std::chrono::system_clock::time_point wall) CRONOQ_REQUIRES(mu);
    class RecoveredRows;
    void recover_schedules(std::vector<store::RecurringRow>& rows) CRONOQ_REQUIRES(mu);
    /// No mutex: waits until every change enqueued so far is committed;
    /// false when the lead ended first (`flush`, and `open` for what the
    /// recovery wrote). The caller keeps the state alive.
    asio::awaitable<bool> commit_enqueued();

    // ---- recurring schedules (mutex held) -------------------------------------------
    void on_recurring_due() CRONOQ_REQUIRES(mu);
    void rearm_recurring() CRONOQ_REQUIRES(mu);
    /// A schedule's occurrence at `at`, admitted (its overlap policy permitting).
    void fire(Schedule& s, std::chrono::system_clock::time_point at, core::Time now,
              std::chrono::system_clock::time_point wall) CRONOQ_REQUIRES(mu);

    // ---- timing (mutex held) --------------------------------------------------------
    void rearm() CRONOQ_REQUIRES(mu);
    void on_wakeup();

    // ---- attempts ---------------------------------------------------------------------
    void arm_abandon() CRONOQ_REQUIRES(mu);
    void abandon_deaf_attempts();

    // ---- shutdown (mutex held) ---------------------------------------------------------
    void begin_shutdown(std::chrono::nanoseconds grace) CRONOQ_REQUIRES(mu);
    void check_drained() CRONOQ_REQUIRES(mu);
};

}  // namespace cronoq::detail
