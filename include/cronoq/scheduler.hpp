#pragma once
// Scheduler<P, O>: the asynchronous driver (docs/design.md, docs/guide/README.md, docs/guide/operations.md).
#include <cronoq/detail/builder_base.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/duration.hpp>
#include <cronoq/event_stream.hpp>
#include <cronoq/recurring.hpp>
#include <cronoq/snapshot.hpp>
#include <cronoq/submit_error.hpp>
#include <cronoq/task.hpp>
#include <cronoq/task_handle.hpp>
#include <cronoq/task_status.hpp>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace cronoq {

/// A cheap, copyable handle to a scheduler's shared state. Decides when each
/// submitted task runs; the pools' executors do the work as coroutines on
/// the `io_context` it was built on.
///
/// Awaitables: every `asio::awaitable` here and in `TaskHandle`,
/// `TaskContext`, `EventStream` and `offload` is a real Asio asynchronous
/// operation: while a coroutine awaits it the io_context has outstanding
/// work, and it completes on the awaiting coroutine's executor, never
/// inside the call that started it or any other call of the application's:
/// queued there (as a continuation, `asio::defer`: after the handler that
/// completed it, on that thread if it runs the executor), except that an
/// attempt's end that leaves the scheduler idle
/// resumes the coroutines it completes at once, from the handler in which
/// the attempt's coroutine ended (one of Asio's, never a call of the
/// application's), when that thread runs their executor (as
/// `asio::co_spawn`'s completion resumes its awaiter; docs/design.md,
/// "Resumption in place"). Each states what it completes with, what it throws, and
/// which `asio::cancellation_type`s it honours. A coroutine's default
/// cancellation filter lets only `terminal` through (`asio::co_spawn` with
/// a bound slot, `||` of the awaitable operators); to deliver `partial` or
/// `total`, reset the filter (`asio::this_coro::reset_cancellation_state`).
/// Where a type is honoured, cancelling ends the wait by throwing
/// `std::system_error` with `asio::error::operation_aborted`; it never
/// cancels a task (use `cancel` for that).
///
/// Threads: `try_submit`, `submit`, `cancel`, `status` and `subscribe` are
/// safe from any thread; the io_context may be run by one thread or many.
/// Called on a thread that runs a pool's executor (from a coroutine), a
/// call that lets attempts start runs each executor at once up to its
/// first suspension, and an executor that returns without suspending has
/// ended its task by the time the call returns: its handle is finished,
/// and `result()` goes on without waiting. What that end completes for
/// other coroutines is queued for them, never run inside the call.
/// An idle scheduler keeps no operation pending, so `io_context::run()`
/// returns once the application's own work is done.
///
/// Lifetime: destroying the last copy without `shutdown` is a shutdown with
/// zero grace: queued tasks end `Cancelled`, running attempts are cancelled.
///
/// Failure modes: attempts run at-least-once (a timed-out or expired attempt
/// may still be running when its retry starts; use `ctx.id()` and
/// `ctx.attempt()` as fencing). An executor that ignores cancellation keeps
/// its coroutine, and what it uses, alive; `shutdown` abandons it after
/// `Builder::abandon_after` (see `shutdown`). Exceptions thrown by an
/// executor's `abort` or by an `on_cancel` callback are logged and the
/// abort sequence goes on.
template <class P, class O>
class Scheduler {
public:
    class Builder : public detail::BuilderBase<Builder, P, O> {
    public:
        /// Validates the whole configuration; throws ConfigError naming the
        /// field. Nothing is started until the first submit.
        Scheduler build(asio::any_io_executor ex) const { return Scheduler(this->build_core(std::move(ex))); }

        /// With a store (`store(...)`): waits until this process leads on
        /// it (standbys wait here), recovers what the store holds, and
        /// returns the scheduler (docs/guide/durability.md). Throws ConfigError without a
        /// store, and StoreError when the lead ends before it began (the
        /// store was released or fenced meanwhile).
        ///
        /// The configuration is validated and the scheduler made at the
        /// call (a ConfigError is thrown then); the awaitable refers to
        /// nothing of the builder, which may be a temporary.
        ///
        /// Completion: the scheduler, leading, with what the store held
        /// recovered and what the recovery wrote (rows it could not bring
        /// back, ended `Failed`) committed. Throws StoreError as above.
        ///
        /// Asio cancellation: honours `terminal`, `partial` and `total`:
        /// the wait ends with `operation_aborted` and the scheduler being
        /// opened shuts down as when its last handle goes: a standby stops
        /// waiting for the lead (its store is released: a store leads at
        /// most once, so open the file again with a new store to retry), one
        /// that already leads hands over.
        template <class P2 = P>
        asio::awaitable<Scheduler> open(asio::any_io_executor ex) const {
            return open_core(this->template build_durable_core<P2>(std::move(ex)));
        }

    private:
        static asio::awaitable<Scheduler> open_core(std::shared_ptr<detail::SchedulerCore> core) {
            Scheduler scheduler(core);  // shuts down, handing over, if opening fails
            auto opening = core->open();
            co_await std::move(opening);
            co_return scheduler;
        }
    };

    static Builder builder() { return Builder{}; }

    /// Submits without waiting. Errors: UnknownPool, UnknownResource,
    /// ResourceExceedsCapacity, ShuttingDown, Invalid (also a payload the
    /// store's codec refuses or finds too large); past a bound (docs/guide/resources-and-bounds.md)
    /// Full under `OverflowPolicy::Wait`, Overloaded under `Reject` or a
    /// shedding policy that finds no victim; for fixed starts and
    /// dependencies ReservationConflict, Cycle, UnknownDependency. A key
    /// held by a live or retained task gives a handle to that task.
    SubmitResult<TaskHandle<O>> try_submit(Task<P> task) {
        auto r = owner_->core->try_submit(detail::Access::take(std::move(task)));
        if (!r) return {r.error(), r.message()};
        return detail::Access::make<TaskHandle<O>>(std::move(r).value());
    }

    /// Submits. When the task's pool is full under `OverflowPolicy::Wait`,
    /// suspends until there is room, in FIFO order among waiting
    /// submitters (a `try_submit` that finds room is admitted at once). At
    /// shutdown, waiting submitters fail with `ShuttingDown`. With a store
    /// it then waits until the admission is committed (docs/guide/durability.md: this is
    /// the acknowledgement).
    ///
    /// Completion: the handle of the admitted task, or of the task that
    /// holds its key. Throws SubmitException with `try_submit`'s errors
    /// but `Full` (it waits instead), and with a store `StoreFailed` when
    /// the scheduler stops leading before the commit.
    ///
    /// Asio cancellation: honours `terminal`, `partial` and `total`. While
    /// it waits for room: the task is not admitted and its turn passes to
    /// the next submitter. While it waits for the commit: the task stays
    /// admitted and is committed all the same (find it by key or id).
    /// Either way the wait ends with `operation_aborted`.
    asio::awaitable<TaskHandle<O>> submit(Task<P> task) {
        auto owner = owner_;
        auto op = owner->core->submit(detail::Access::take(std::move(task)));
        auto state = co_await std::move(op);
        co_return detail::Access::make<TaskHandle<O>>(std::move(state));
    }

    /// Submits independent tasks in one engine step (docs/design.md): each is
    /// admitted or rejected on its own, as `try_submit` would (never
    /// waits; `Full` under `OverflowPolicy::Wait`). Results in the order of
    /// `tasks`. Unlike `try_submit_batch`, one rejection admits the rest.
    std::vector<SubmitResult<TaskHandle<O>>> try_submit_many(std::vector<Task<P>> tasks) {
        Many many(tasks);
        owner_->core->try_submit_many(many);
        return std::move(many.out);
    }

    /// Submits every task or none (docs/guide/dependencies-and-keys.md). Tasks may depend on each other
    /// by key, in any order; a key defined twice is `DuplicateKeyInBatch`.
    /// Handles come back in the order of `tasks`.
    SubmitResult<std::vector<TaskHandle<O>>> try_submit_batch(std::vector<Task<P>> tasks) {
        std::vector<detail::TaskRequest> requests;
        requests.reserve(tasks.size());
        for (Task<P>& t : tasks) requests.push_back(detail::Access::take(std::move(t)));
        auto r = owner_->core->try_submit_batch(std::move(requests));
        if (!r) return {r.error(), r.message()};
        std::vector<TaskHandle<O>> handles;
        handles.reserve(r.value().size());
        for (auto& state : r.value()) handles.push_back(detail::Access::make<TaskHandle<O>>(std::move(state)));
        return handles;
    }

    /// `try_submit_batch` that throws SubmitException on an error. It never
    /// suspends on a wait, not even for room under `OverflowPolicy::Wait`
    /// (`Full`) nor, with a store, for the commit: like `try_submit`, its
    /// success is not an acknowledgement; `flush()` waits for it.
    ///
    /// Completion: the handles, in the order of `tasks`. Throws
    /// SubmitException with `try_submit_batch`'s error.
    ///
    /// Asio cancellation: none; it has no wait for cancellation to end.
    asio::awaitable<std::vector<TaskHandle<O>>> submit_batch(std::vector<Task<P>> tasks) {
        auto owner = owner_;
        auto r = try_submit_batch(std::move(tasks));
        co_return std::move(r).value();
    }

    /// Adds a cron schedule, or replaces the one of the same name (which
    /// also restarts a `QueueOnSuccess` chain). Throws ConfigError for bad
    /// cron text, an unknown time zone or pool; nothing is registered then.
    /// While a schedule is registered the scheduler keeps a timer pending
    /// for its next occurrence; shutdown stops every schedule.
    void add_recurring(Recurring<P> schedule) { owner_->core->add_recurring(detail::Access::take(std::move(schedule))); }
    /// Stops a schedule; occurrences already submitted go on. False if
    /// there is no schedule of that name.
    bool remove_recurring(std::string_view name) { return owner_->core->remove_recurring(name); }

    /// Changes a token bucket's refill rate from now on, e.g. after a 429;
    /// a rate of 0 pauses it. Safe from any thread. Throws ConfigError for
    /// an unknown bucket, a semaphore, or a negative or non-finite rate.
    void set_rate(std::string_view bucket, double rate_per_s) { owner_->core->set_rate(bucket, rate_per_s); }

    /// The weight of fair key `key` in `pool` (docs/guide/fairness.md) from
    /// the next decision on, overriding the pool's `FairnessConfig`. Safe
    /// from any thread. With a store it is durable at the next commit and
    /// outlives a restart. Throws ConfigError for an unknown pool or a
    /// weight that is not finite and > 0; nothing changes then.
    void set_fair_weight(std::string_view pool, std::string_view key, double weight) {
        owner_->core->set_fair_weight(pool, key, weight);
    }

    /// Cancels a task (by id or key) that has not ended: a queued one ends
    /// `Cancelled` at once, a running one is aborted. False if unknown or
    /// already terminal.
    bool cancel(TaskRef ref) { return owner_->core->cancel(ref); }

    /// A live or retained task's status; empty if unknown or forgotten.
    std::optional<TaskStatus> status(TaskRef ref) const { return owner_->core->status(ref); }

    /// Pauses a pool (docs/guide/operations.md, "Pause and resume"): it
    /// goes on admitting and keeping tasks (bounds apply as usual) but
    /// dispatches none, to a local slot or a remote worker; running
    /// attempts go on and end as usual. Retries whose backoff ends and
    /// fixed starts that come due wait `Ready`; a fixed start the pause
    /// holds past its tolerance follows its `MissPolicy` at `resume`. Its
    /// autoscaler holds still. `snapshot()` shows it (`PoolSnapshot::paused`).
    /// With a store, durable at the next commit, like `cancel`: a new
    /// leader recovers the pool paused. False for an unknown pool; true
    /// also when it was paused already. Safe from any thread.
    bool pause(std::string_view pool) { return owner_->core->set_paused(pool, true); }
    /// Lets a paused pool dispatch again, its ready tasks in their usual
    /// order. False for an unknown pool; true also when it was not paused.
    bool resume(std::string_view pool) { return owner_->core->set_paused(pool, false); }

    /// A handle to a task by id or key: any live task, and a retained one
    /// (within `retention`) that has a key, whose output the scheduler
    /// keeps; with a store also every ended task whose row the store still
    /// holds (read from the store on the calling thread, a short
    /// transaction, after waiting for the commit of a task that just ended
    /// here; a StoreError if it cannot be read). Empty otherwise (unknown,
    /// forgotten, or without a store ended without a key). Safe from any
    /// thread.
    std::optional<TaskHandle<O>> find(TaskRef ref) const {
        auto state = owner_->core->find(ref);
        if (!state) return std::nullopt;
        return detail::Access::make<TaskHandle<O>>(std::move(state));
    }

    /// Submits a `Failed`, `DeadLettered` or `Cancelled` task's payload and
    /// options again as a new task (new id, fresh attempts), at once like
    /// `try_submit` (with a store, durable at the next commit). Its key, if
    /// any, moves to the new task; the old task keeps its one terminal
    /// status and its dependents are not revisited. The new task waits for
    /// no dependency (the old one's were met when it ran). Empty if the
    /// task is unknown, not terminal, or succeeded; without a store, also
    /// for a retained task without a key (the driver keeps no payload of
    /// it); with a store, every ended task whose row the store holds is
    /// covered, also one forgotten past its retention. A task known only
    /// from its stored row gets its deadline and start at the same
    /// distance from the retry as they were from its first submission
    /// (its row is read on the calling thread, a short transaction; a
    /// StoreError if the store cannot be read). Throws
    /// SubmitException when the new task cannot be admitted (e.g.
    /// `ShuttingDown`, `UnknownPool`). Safe from any thread.
    std::optional<TaskHandle<O>> retry(TaskRef ref) {
        auto state = owner_->core->retry(ref);
        if (!state) return std::nullopt;
        return detail::Access::make<TaskHandle<O>>(std::move(state));
    }

    /// One page of the tasks `q` selects, newest (highest id) first, with a
    /// cursor for the next (docs/guide/operations.md, "Queries"). With a
    /// store it is the store's `query`, read on the calling thread in a
    /// short read transaction: it sees what is committed (`flush()` first
    /// to see everything admitted). Without one it sees live and retained
    /// tasks, under the engine's lock for a bounded number of tasks: a page
    /// may then be short (even empty) and still name a next one; paging on
    /// returns every match exactly once. There, `payload` and `output` are
    /// filled where the scheduler holds them as bytes (a remote pool's,
    /// through its codec), `last_error` where it keeps the task's record
    /// (live tasks, retained ones with a key), and `updated_at` is the last
    /// change it can date. Throws std::invalid_argument for a cursor no
    /// page returned, StoreError when the store cannot be read. Safe from
    /// any thread.
    TaskPage query(const TaskQuery& q) const { return owner_->core->query(q); }

    /// Every pool's figures over the metrics window; cheap enough to call
    /// every second under load. Safe from any thread.
    Snapshot snapshot() const { return owner_->core->snapshot(); }

    /// Every status transition from now on; see EventStream. What `open()`
    /// recovered happened before: `Builder::subscribe()` sees that too.
    EventStream subscribe() { return detail::Access::make<EventStream>(owner_->core->subscribe()); }

    /// Stops admitting (`ShuttingDown`); queued tasks end `Cancelled`
    /// (with a store they are handed over to the next leader instead,
    /// docs/guide/durability.md); running attempts get `grace` to finish, then are
    /// cancelled. `grace`: any `std::chrono::duration`, saturated into
    /// nanoseconds. Safe to call again (a later call can only shorten the
    /// grace).
    ///
    /// Completion: when every handle has its terminal status and no attempt
    /// coroutine is left, or, for coroutines that ignore their
    /// cancellation, at most `abandon_after` (default 1 s) later: those are
    /// abandoned, with a warning naming each; they keep what they use
    /// alive, their late results are ignored, and the io_context's `run()`
    /// returns once they end. With a store, also once the lead was given
    /// up. Afterwards the scheduler holds no pending operation. Throws
    /// nothing.
    ///
    /// Asio cancellation: honours `terminal`, `partial` and `total`: the
    /// wait ends with `operation_aborted`, and the shutdown goes on
    /// regardless.
    template <class Rep, class Period>
    asio::awaitable<void> shutdown(std::chrono::duration<Rep, Period> grace) {
        auto owner = owner_;
        co_await owner->core->shutdown(saturating_ns(grace));
    }

    /// Waits until every task admitted so far, and every change made so
    /// far, is committed to the store.
    ///
    /// Completion: once committed; at once without a store. Throws
    /// StoreError if the scheduler stops leading first.
    ///
    /// Asio cancellation: honours `terminal`, `partial` and `total`: the
    /// wait ends with `operation_aborted`; the commit goes on.
    asio::awaitable<void> flush() {
        auto owner = owner_;
        auto done = owner->core->flush();
        co_await std::move(done);
    }

    /// Waits until this scheduler stopped leading on its store: fenced by
    /// another process, commits failing for `leader_lease`, or its
    /// shutdown handing over. It then admits nothing, and its waiters have
    /// failed.
    ///
    /// Completion: once the lead ended (at once if it already has); never
    /// without a store. Throws nothing.
    ///
    /// Asio cancellation: honours `terminal`, `partial` and `total`: the
    /// wait ends with `operation_aborted` (the only way it ends without a
    /// store).
    asio::awaitable<void> leadership_lost() {
        auto owner = owner_;
        auto lost = owner->core->leadership_lost();
        co_await std::move(lost);
    }

    asio::any_io_executor get_executor() const { return owner_->core->get_executor(); }

private:
    friend struct detail::Access;
    // Shared by every copy of this Scheduler; the last one out shuts down.
    struct Owner {
        explicit Owner(std::shared_ptr<detail::SchedulerCore> c) : core(std::move(c)) {}
        Owner(const Owner&) = delete;
        Owner& operator=(const Owner&) = delete;
        ~Owner() { core->shutdown_now(); }
        std::shared_ptr<detail::SchedulerCore> core;
    };
    explicit Scheduler(std::shared_ptr<detail::SchedulerCore> core) : owner_(std::make_shared<Owner>(std::move(core))) {}
    // try_submit_many's tasks as the core reads them: each task's request in
    // place, each result straight into `out` (no array of requests or of
    // untyped results in between).
    struct Many final : detail::ManyTasks {
        explicit Many(std::vector<Task<P>>& t) : tasks(t) { out.reserve(t.size()); }
        std::size_t size() const override { return tasks.size(); }
        detail::TaskState& task(std::size_t i) override { return detail::Access::state_of(tasks[i]); }
        void result(SubmitResult<std::shared_ptr<detail::HandleState>>&& r) override {
            if (r)
                out.emplace_back(detail::Access::make<TaskHandle<O>>(std::move(r).value()));
            else
                out.emplace_back(r.error(), r.message());
        }
        std::vector<Task<P>>& tasks;
        std::vector<SubmitResult<TaskHandle<O>>> out;
    };

    std::shared_ptr<Owner> owner_;
};

}  // namespace cronoq
