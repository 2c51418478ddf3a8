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
#include <cronoq/detail/remote_host.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/detail/unique_function.hpp>
#include <cronoq/detail/wait_list.hpp>
#include <cronoq/status_event.hpp>
#include <cronoq/store/journal.hpp>
#include <cronoq/store/store.hpp>

#include "attempt_state.hpp"
#include "runtime/block_pool.hpp"
#include "blocking_pool.hpp"
#include "recurring.hpp"

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

struct PoolRuntime {
    PoolDefinition def;
    asio::any_io_executor executor;  // where attempts run
    // Shared with every task's info, so that a TaskContext outliving the
    // scheduler still knows its pool's name.
    std::shared_ptr<const std::string> name;
    // Where attempts run, chosen by lease: Asio requires cancellation to be
    // emitted where the coroutine runs. Over an io_context that may be run
    // by several threads, a fixed set of strands (costing nothing per
    // attempt; each small enough for the type-erased executor to hold
    // without allocating). Over an io_context made for one thread
    // (concurrency hint 1), the pool's executor alone: one thread already
    // serializes an attempt and its abort. See docs/design.md.
    std::vector<asio::any_io_executor> lanes;
    const asio::any_io_executor& lane(LeaseId lease) const { return lanes[lease.value % lanes.size()]; }
    // Submitters waiting for room under OverflowPolicy::Wait, in order; the
    // head is woken when the engine announces space.
    std::deque<std::shared_ptr<WaitList>> waiting_submits;
    bool scaler_failing = false;  // the user scaler's last call threw (scheduler_scaling.cpp)
};

// The engine's mutex, counting its acquisitions: a figure of the driver's
// cost per task that, unlike time, no noise can move.
class EngineMutex {
public:
    void lock() {
        mu_.lock();
        ++acquisitions_;
    }
    bool try_lock() {
        if (!mu_.try_lock()) return false;
        ++acquisitions_;
        return true;
    }
    void unlock() { mu_.unlock(); }
    std::uint64_t acquisitions() const { return acquisitions_; }  // with the lock held

private:
    LightMutex mu_;
    std::uint64_t acquisitions_ = 0;
};

/// An attempt's end, sent by its coroutine's completion.
struct AttemptEnd {
    std::shared_ptr<Attempt> attempt;
    AttemptOutput output;
};

/// A remote worker's report about one of its leases (RemoteHost::report),
/// its output already decoded off the engine's mutex; served with the
/// attempt ends, through the same inbox.
struct RemoteEnd {
    enum class Kind : std::uint8_t { Ended, Nack, Heartbeat };
    WorkerId worker;
    LeaseId lease;
    Kind kind = Kind::Ended;
    AttemptOutput output;  ///< Ended: the outcome
    std::string reason;    ///< Nack
};

/// A connected remote worker's stream, as the driver reaches it.
struct RemoteWorkerLink {
    std::shared_ptr<RemoteSession> session;
    core::PoolId pool = 0;
};

/// Work a step leaves for after the engine's mutex.
struct Finish {  // a handle's terminal outcome
    std::shared_ptr<TaskRecord> record;
    TaskStatus status = TaskStatus::Ready;
    std::uint32_t attempt = 0;
    std::string message;
    ErasedValue output;
};
struct Drained {};  // shutdown is complete: wake its waiters
struct Ack {        // a submitter or `flush` waiting for the step's commit
    std::shared_ptr<WaitList> done;
};
using Deferred = std::variant<Finish, StatusEvent, UniqueFunction<void()>, Drained, Ack>;

/// A request's bytes for the store, made before the engine's mutex.
struct Encoded {
    std::string payload;  ///< also what a remote pool's leases carry
    std::string options;
    std::chrono::system_clock::time_point wall;  // the submission's
};

/// How the store's thread reaches the scheduler. The handlers given to
/// `Journal::lead` hold this, never the scheduler itself: a handler that
/// owned the scheduler could be the last owner, and the scheduler would then
/// be destroyed, with its store, on the store's own thread (which cannot
/// join itself). The scheduler clears `state` when it goes; it waits for a
/// handler that is running, and later reports find no one.
struct StoreLink {
    std::mutex mu;
    SchedulerCore::State* state = nullptr;  // guarded by `mu`

    template <class F>
    void with_state(F&& f) {
        std::lock_guard lock(mu);
        if (state) f(*state);
    }
    void disconnect() {
        std::lock_guard lock(mu);
        state = nullptr;
    }
};

/// What a scheduler with a store keeps beside its engine (docs/guide/durability.md).
struct Durable {
    explicit Durable(std::shared_ptr<Store> s)
        : store(std::move(s)), journal(store->journal()), max_value_bytes(journal.max_value_bytes()) {}

    std::shared_ptr<Store> store;
    store::Journal& journal;
    const std::size_t max_value_bytes;  // a payload or output, encoded
    ErasedCodec codec;
    std::shared_ptr<StoreLink> link = std::make_shared<StoreLink>();

    // Guarded by the engine's mutex.
    store::Batch batch;    // the current step's changes, enqueued at its end
    bool writing = false;  // from recovery until the lead is lost or given up
    bool lead_ended = false;     // on_lost came
    bool release_due = false;    // shutdown handed everything over: give the lead up
    bool release_asked = false;
    store::Sequence enqueued = 0;
    // Ids below these may be handed out: reserved ahead in the store, in
    // blocks, so that a new leader never reuses one this process used.
    core::NextIds reserved{0, 0};
    static constexpr std::uint64_t id_block = 4096;

    // Guarded by `deliver_mu`.
    store::Sequence committed = 0;
    // Handle results and acknowledgements, released when their step's
    // commit is: the sequence to wait for, then the work.
    std::multimap<store::Sequence, Deferred> held;
    std::optional<std::string> lost;  // why the lead ended, once it has
    std::condition_variable_any commit_seen;  // notified when `committed` or `lost` changes

    std::shared_ptr<WaitList> leading = WaitList::create();    // set once open() may return
    std::shared_ptr<WaitList> lost_waits = WaitList::create();  // set once the lead ended
    std::optional<StoreError> open_error;                       // guarded by `deliver_mu`
};

struct SchedulerCore::State {
    State(asio::any_io_executor ex, SchedulerOptions opts);
    ~State();
    // The engine's modes the driver relies on; again on every new engine
    // (a store's recovery makes one).
    void set_engine_modes();
    /// The engine's reference to `record`, from admission (`hold`) until it
    /// lets go (`release`, which hands the reference back to drop later).
    void hold(const std::shared_ptr<TaskRecord>& record);
    std::shared_ptr<TaskRecord> release(TaskRecord& record);

    asio::any_io_executor executor;
    SchedulerOptions options;
    std::shared_ptr<Clock> clock;
    std::weak_ptr<SchedulerCore> self;
    // Whether a pool is remote (set at build): only then may a request
    // without a store need its payload encoded.
    bool any_remote = false;
    // Whether debug lines are wanted, read once at build: the hot path
    // does not ask the logger for every abort.
    bool debug_logging = false;

    // ---- guarded by `mu` ---------------------------------------------------------
    mutable EngineMutex mu;
    core::Engine engine;
    std::vector<PoolRuntime> pools;
    std::vector<core::Action> actions;
    std::vector<Deferred> deferred;
    std::vector<AttemptEnd> ends;  // the inbox drained into this buffer
    // Attempts dispatched in this step, in order: started once the step has
    // let go of the engine (a start may run the executor inline).
    StartList starts;
    std::unique_ptr<Clock::Timer> timer;
    std::optional<core::Time> armed;
    std::unique_ptr<Clock::Timer> recurring_timer;  // at the earliest next occurrence
    std::unique_ptr<Clock::Timer> abandon_timer;    // shutdown's limit on deaf attempts
    bool abandon_armed = false;
    std::map<std::string, Schedule, std::less<>> schedules;
    RecordLink held_records;        // every record whose engine_ref is set
    // Where records and attempts are made (under `mu`): freed blocks are
    // kept for reuse, up to a bound (runtime/block_pool.hpp).
    OwnedPool record_blocks{shared_block_size<TaskRecord>};
    OwnedPool attempt_blocks{shared_block_size<Attempt>};
    // Attempt coroutines that have not returned (and were not abandoned).
    RunningLink running_attempts;
    bool shutting_down = false;
    bool finished = false;          // shutdown completed: no timer may be armed again
    bool drained_sent = false;      // its waiters were told

    // ---- the inbox of attempt ends ---------------------------------------------
    LightMutex inbox_mu;
    std::vector<AttemptEnd> inbox;
    std::vector<RemoteEnd> remote_inbox;
    std::atomic<bool> inbox_filled{false};  // either has something
    std::vector<RemoteEnd> remote_ends;      // guarded by `mu`: remote_inbox drained

    // ---- remote workers (scheduler_remote.cpp, docs/remote.md) ------------------------
    // Live remote leases (guarded by `mu`): their reports name only the lease.
    std::unordered_map<std::uint64_t, std::shared_ptr<Attempt>> remote_leases;
    std::mutex remote_mu;  // after `mu` when both are taken
    std::unordered_map<std::uint64_t, RemoteWorkerLink> remote_links;  // by worker; guarded by remote_mu
    std::shared_ptr<RemoteHost> host;                                   // guarded by remote_mu
    std::atomic<std::size_t> lease_limit{std::numeric_limits<std::size_t>::max()};  // RemoteHost::limit_lease

    // ---- guarded by `deliver_mu`: what steps leave for after `mu` -----------------
    LightMutex deliver_mu;
    std::vector<Deferred> delivering;  // a step's deferred work; its buffer is reused
    std::vector<std::weak_ptr<EventQueue>> subscribers;
    std::atomic<std::size_t> subscriber_count{0};  // read under `mu` to skip building events
    std::shared_ptr<WaitList> drained = WaitList::create();

    // ---- the store (docs/guide/durability.md); null without one --------------------------------------
    std::unique_ptr<Durable> durable;

    // ---- the blocking pool, started on first use ----------------------------------
    std::mutex blocking_mu;
    std::unique_ptr<BlockingPool> blocking;

    // ---- steps -------------------------------------------------------------------
    /// Holds the engine for one step; on the way out serves the inbox,
    /// releases the mutex and delivers what the step deferred.
    class Step {
    public:
        explicit Step(State& s) : s_(s), lock_(s.mu) {}
        ~Step();
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
    class Read {
    public:
        explicit Read(State& s) : s_(s), lock_(s.mu) {}
        ~Read() { s_.end_read(lock_); }
        Read(const Read&) = delete;
        Read& operator=(const Read&) = delete;

    private:
        State& s_;
        std::unique_lock<EngineMutex> lock_;
    };
    /// Ends a step: with `lock` held, serves the inbox and collects the
    /// deferred work; then releases it and delivers that work in order.
    void end_step(std::unique_lock<EngineMutex>& lock);
    /// Ends a read: releases `lock`, then serves an end posted meanwhile.
    void end_read(std::unique_lock<EngineMutex>& lock);
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
    void offer(Put&& put);
    /// Mutex held: moves what the inbox holds to `ends` and `remote_ends`.
    void take_inbox();
    /// Mutex held: applies one remote report to the engine.
    void serve_remote(RemoteEnd& end, core::Time now);
    /// Mutex held: a lease for a remote worker; sent after the mutex.
    void dispatch_remote(core::Dispatch& d, TaskRecord& record, PoolRuntime& pool);
    /// Mutex held: an abandoned remote lease; the worker is told after the mutex.
    void abort_remote(const core::Abort& a, std::shared_ptr<Attempt> attempt);
    /// The remote pool a request goes to; null for a local one (or unknown).
    const PoolRuntime* remote_pool_of(const TaskRequest& r) const;
    /// Why a task of the remote pool `pool` with `payload_bytes` encoded could
    /// not be sent to its workers; empty when it can.
    std::string lease_too_large(const TaskRequest& r, const PoolRuntime& pool, std::size_t payload_bytes) const;
    /// Whether `r`'s payload is encoded before the mutex (a store, a remote pool).
    bool needs_encoding(const TaskRequest& r) const { return durable || (any_remote && remote_pool_of(r)); }
    /// Mutex held, at the end of a shutdown: every worker is told.
    void shutdown_sessions();

    // ---- actions (mutex held) ------------------------------------------------------
    void apply(core::Time now);
    void on(core::Dispatch& d, core::Time now, std::chrono::system_clock::time_point wall);
    void on(core::Abort& a, core::Time now, std::chrono::system_clock::time_point wall);
    void on(core::Status& s, core::Time now, std::chrono::system_clock::time_point wall);
    void on(core::Forget& f, core::Time now, std::chrono::system_clock::time_point wall);
    void on(core::ScaleTo& s, core::Time now, std::chrono::system_clock::time_point wall);
    void on(core::SpaceAvailable& s, core::Time now, std::chrono::system_clock::time_point wall);
    void on(core::AskScaler& q, core::Time now, std::chrono::system_clock::time_point wall);
    /// No mutex: calls the pool's user scaler, then answers the engine.
    void ask_scaler(core::PoolId pool, const ScalerInput& question);
    void wake_next_submit(PoolRuntime& pool);
    void serve_ends(core::Time now);
    void log(UniqueFunction<void()> line) { deferred.emplace_back(std::move(line)); }
    /// Delivers a step's work (deliver_mu held); with a store, results and
    /// acknowledgements wait until `step_seq` is committed.
    void deliver(std::vector<Deferred>& work, store::Sequence step_seq);
    void deliver_one(Deferred& d);
    /// A result or acknowledgement whose commit will never come (the lead
    /// was lost): its waiter learns so.
    void fail_uncommitted(Deferred& d);

    // ---- submission (mutex held) -----------------------------------------------------
    using Failure = std::pair<SubmitError, std::string>;
    std::optional<Failure> to_spec(const TaskRequest& r, core::Time now, std::chrono::system_clock::time_point wall,
                                   core::TaskSpec& spec);
    /// The record of a request the engine is about to admit. In a remote
    /// pool it keeps `payload_bytes` (the payload through codec<P>, when
    /// made), which its leases carry.
    std::shared_ptr<TaskRecord> make_record(core::PoolId pool, TaskRequest&& r, std::chrono::system_clock::time_point wall,
                                            const std::string* payload_bytes);
    /// The handle of what the engine answered for `record`: the record
    /// itself when admitted, else the record of the task holding the key.
    std::shared_ptr<HandleState> admitted(TaskId id, std::shared_ptr<TaskRecord> record, const Encoded* encoded);
    /// Consumes `r` only when it is admitted, so that a waiting submitter
    /// can try again with it. With a store, `encoded` is its bytes, made
    /// by the caller before the mutex (required).
    SubmitResult<std::shared_ptr<HandleState>> submit_one(TaskRequest& r, const Encoded* encoded = nullptr);
    /// As submit_one, at `now`, leaving the engine's actions to the
    /// caller's apply(now): a batch admits its tasks at one instant.
    SubmitResult<std::shared_ptr<HandleState>> admit(TaskRequest& r, const Encoded* encoded, core::Time now);
    std::optional<TaskId> resolve(const TaskRef& ref) const;
    /// Admits `r` as a new task in place of the ended task `old`
    /// (`Scheduler::retry`): the key moves to it (docs/guide/durability.md).
    SubmitResult<std::shared_ptr<HandleState>> resubmit_one(TaskId old, TaskRequest& r);
    /// No mutex: the handle of a task the engine no longer holds, made from
    /// its committed row (terminal).
    std::shared_ptr<HandleState> stored_handle(const store::TaskRow& row) const;

    // ---- the store (scheduler_store.cpp) ----------------------------------------------
    /// The bytes of `r` for the store; a codec that throws makes it Invalid.
    SubmitResult<Encoded> encode(const TaskRequest& r) const;
    /// Mutex held: the row of a task just admitted, and a status change.
    void write_admission(TaskId id, const TaskRecord& record, const Encoded& encoded);
    void write_status(const core::Status& s, TaskRecord& record, core::Time now, std::chrono::system_clock::time_point wall);
    /// Mutex held, at the end of a step: enqueues its changes; returns the
    /// sequence its results must wait for (0 without a store).
    store::Sequence enqueue_step();
    /// Mutex held: a change for this step's batch, while this process
    /// leads (nothing otherwise).
    void write(store::Change change);
    /// The store's reports, on its thread.
    void on_leading(store::Recovered recovered);
    void on_commit(const store::CommitReport& report);
    void on_lost(const store::LeadershipLost& lost);
    /// Mutex held: brings back what the store holds (docs/guide/durability.md "Recovery").
    void recover(store::Recovered& recovered, core::Time now, std::chrono::system_clock::time_point wall);
    /// The steps of recover(): an engine whose ids start above the marks; a
    /// task that cannot come back ends failed in the store; a row becomes a
    /// task and its record; the engine takes the tasks back (returns how many).
    void start_fresh_engine(const store::HighWaterMarks& marks);
    void fail_recovered(TaskId id, std::uint32_t attempt, std::string message, std::chrono::system_clock::time_point wall);
    void rebuild_recovered(store::TaskRow& row, core::Time now, std::chrono::system_clock::time_point wall,
                           std::vector<core::RestoredTask>& tasks, std::vector<std::shared_ptr<TaskRecord>>& records);
    std::size_t restore_recovered(const std::vector<core::RestoredTask>& tasks,
                                  std::vector<std::shared_ptr<TaskRecord>>& records, core::Time now);
    void recover_schedules(std::vector<store::RecurringRow>& rows);
    /// Registers `done` to be set once `seq` is committed (or the lead lost).
    void wait_commit(store::Sequence seq, std::shared_ptr<WaitList> done);
    /// No mutex: waits until every change enqueued so far is committed;
    /// false when the lead ended first (`flush`, and `open` for what the
    /// recovery wrote). The caller keeps the state alive.
    asio::awaitable<bool> commit_enqueued();

    // ---- recurring schedules (mutex held) -------------------------------------------
    void on_recurring_due();
    void rearm_recurring();

    // ---- timing (mutex held) --------------------------------------------------------
    void rearm();
    void on_wakeup();

    // ---- attempts ---------------------------------------------------------------------
    /// No lock held: starts each attempt of the list on its lane, in one
    /// run: ends inside the starts are served together after them, and
    /// what that dispatches starts in one posted run (scheduler_attempts.cpp).
    static void start_all(std::shared_ptr<SchedulerCore> core, std::shared_ptr<Attempt> first) noexcept;
    /// Posts a run of the list's starts to the lane of its first attempt.
    static void post_starts(const std::shared_ptr<SchedulerCore>& core, std::shared_ptr<Attempt> list) noexcept;
    /// On the attempt's lane: makes the executor's coroutine and spawns it.
    static void start(std::shared_ptr<SchedulerCore> core, std::shared_ptr<Attempt> a) noexcept;
    /// What the attempt's coroutine returned or threw, reported on its lane.
    static void end_attempt(std::shared_ptr<SchedulerCore> core, std::shared_ptr<Attempt> a, std::exception_ptr thrown,
                            AttemptOutput&& out);
    void link_running(Attempt& a);
    bool unlink_running(Attempt& a);
    void arm_abandon();
    void abandon_deaf_attempts();

    // ---- shutdown (mutex held) ---------------------------------------------------------
    void begin_shutdown(std::chrono::nanoseconds grace);
    void check_drained();
};

}  // namespace cronoq::detail
