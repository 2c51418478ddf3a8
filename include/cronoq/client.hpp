#pragma once
// Client<P, O> and BlockingClient<P, O>: submit, cancel, look up and await
// tasks of a store that some process leads (this one, another, or none
// yet), from any process (docs/guide/replicas.md).
#include <cronoq/client_handle.hpp>
#include <cronoq/codec.hpp>
#include <cronoq/detail/access.hpp>
#include <cronoq/detail/client_core.hpp>
#include <cronoq/detail/erased.hpp>
#include <cronoq/store/store.hpp>
#include <cronoq/stored_task.hpp>
#include <cronoq/submit_error.hpp>
#include <cronoq/task.hpp>
#include <cronoq/task_query.hpp>
#include <cronoq/task_ref.hpp>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace cronoq {

namespace detail {

template <class P>
std::vector<TaskRequest> client_requests(std::vector<Task<P>>&& tasks) {
    std::vector<TaskRequest> requests;
    requests.reserve(tasks.size());
    for (Task<P>& t : tasks) requests.push_back(TaskRequest(Access::take(std::move(t))));
    return requests;
}

}  // namespace detail

/// A client of a store: it submits, cancels, looks up and awaits tasks, and
/// never leads, never waits to lead, and needs no pools or executors, only
/// `codec<P>` and `codec<O>`. Cheap to copy; may share its `Store` object
/// with a scheduler of the same process. What a client submits is
/// acknowledged by its own commit (whether or not a leader runs); the
/// leader of the task's pool takes it up from the store (docs/guide/replicas.md).
///
/// Awaitables: as a scheduler's (see "Awaitables" in scheduler.hpp), each a
/// real Asio operation that keeps the io_context busy while it waits and
/// completes on the awaiting coroutine's executor. The store work behind
/// each runs on the client's own I/O thread, never on an io_context thread,
/// so a member honours `terminal` and `partial` cancellation by ending the
/// wait with `operation_aborted` while the store work it started runs to
/// its end (a submit may be committed all the same: look it up by key).
///
/// Threads: a client has two threads of its own, started by `open`: one
/// runs its store work, one watches the store for the ends its handles
/// await (one watcher per client, not a query per handle). They stop when
/// the last copy of the client and of its handles is gone.
///
/// Failure modes: every member throws `StoreError` when the store cannot be
/// read or written. Validation (pool, resources) is against the
/// configurations the leaders wrote; with none written yet, a bad task is
/// refused at ingestion, where it ends `Failed` naming why.
template <class P, class O>
class Client {
public:
    /// A client of `store`. Never waits to lead.
    ///
    /// Completion: the client, once the configurations the leaders wrote
    /// are read. Throws StoreError when the store cannot be read.
    ///
    /// Asio cancellation: honours `terminal` and `partial`.
    static asio::awaitable<Client> open(std::shared_ptr<Store> store, asio::any_io_executor executor) {
        Client client(detail::ClientCore::make(std::move(store), detail::erase_codec<P, O>()), std::move(executor));
        auto reading = client.core_->run([c = client.core_.get()] { c->refresh_configs(); });
        co_await std::move(reading);
        co_return client;
    }

    /// Submits one task in a transaction of this client's. Checks it first:
    /// a task without a pool is `Invalid` (a client has no default pool);
    /// once a leader wrote its configuration, a pool no shard declares is
    /// `UnknownPool`, a resource none declares `UnknownResource`, more than
    /// one could grant `ResourceExceedsCapacity`; a payload the codec
    /// refuses, or larger than the store accepts, is `Invalid`.
    ///
    /// Completion: once committed (the acknowledgement), the handle of the
    /// new task or of the task in the store that holds its key (live or
    /// retained). Throws SubmitException with the errors above, StoreError
    /// when the store cannot be written (nothing was committed then).
    ///
    /// Asio cancellation: honours `terminal` and `partial`: the wait ends
    /// with `operation_aborted`; the task may be committed all the same.
    asio::awaitable<ClientHandle<O>> submit(Task<P> task) {
        std::vector<Task<P>> one;
        one.push_back(std::move(task));
        auto many = submit_many(std::move(one));
        auto results = co_await std::move(many);
        co_return std::move(results.front()).value();
    }

    /// Submits independent tasks in ONE transaction: each checked as
    /// `submit` does and refused on its own; the rest committed together.
    /// Keys resolve in order (a key given twice gives the first one's task).
    ///
    /// Completion: one result per task, in order, once committed. Throws
    /// StoreError when the store cannot be written (nothing was committed).
    ///
    /// Asio cancellation: as `submit`.
    asio::awaitable<std::vector<SubmitResult<ClientHandle<O>>>> submit_many(std::vector<Task<P>> tasks) {
        auto core = core_;
        auto submitting = core->run([c = core.get(), r = detail::client_requests(std::move(tasks))]() mutable {
            return c->submit(std::move(r), detail::ClientSubmitMode::Each);
        });
        auto ids = co_await std::move(submitting);
        std::vector<SubmitResult<ClientHandle<O>>> out;
        out.reserve(ids.size());
        for (auto& id : ids) {
            if (id)
                out.emplace_back(ClientHandle<O>(id.value(), core));
            else
                out.emplace_back(id.error(), id.message());
        }
        co_return out;
    }

    /// Submits every task or none, in one transaction, marked as one batch
    /// for the leader, which admits it whole or ends every task of it
    /// `Failed` naming the first error (dependencies and cycles are checked
    /// there). The client's own checks are `submit`'s, and a key given twice
    /// is `DuplicateKeyInBatch`.
    ///
    /// Completion: the handles, in the order of `tasks`, once committed.
    /// Throws SubmitException with the first error (nothing committed), or
    /// StoreError.
    ///
    /// Asio cancellation: as `submit`.
    asio::awaitable<std::vector<ClientHandle<O>>> submit_batch(std::vector<Task<P>> tasks) {
        auto core = core_;
        auto submitting = core->run([c = core.get(), r = detail::client_requests(std::move(tasks))]() mutable {
            return c->submit(std::move(r), detail::ClientSubmitMode::Batch);
        });
        auto ids = co_await std::move(submitting);
        std::vector<ClientHandle<O>> out;
        out.reserve(ids.size());
        for (auto& id : ids) out.push_back(ClientHandle<O>(std::move(id).value(), core));
        co_return out;
    }

    /// Commits a cancel for the task's leader, which cancels it as a local
    /// cancel does: a queued task ends `Cancelled`, a running attempt is
    /// aborted (executor `abort`, context, Asio cancellation; on a remote
    /// worker an `abort`). Before a leader took the task up, it ends
    /// `Cancelled` without an attempt.
    ///
    /// Completion: once the cancel is committed: true if the task exists
    /// and had not ended as committed. Throws StoreError.
    ///
    /// Asio cancellation: honours `terminal` and `partial` (the cancel may be
    /// committed all the same).
    asio::awaitable<bool> cancel(TaskRef task) {
        auto core = core_;
        auto cancelling = core->run([c = core.get(), t = std::move(task)] { return c->cancel(t); });
        co_return co_await std::move(cancelling);
    }

    /// The task's committed row (by id, or by key: the newest task holding
    /// it); empty if the store holds none. Throws StoreError.
    /// Asio cancellation: honours `terminal` and `partial`.
    asio::awaitable<std::optional<StoredTask>> get(TaskRef task) {
        auto core = core_;
        auto reading = core->run([c = core.get(), t = std::move(task)] { return c->get(t); });
        co_return co_await std::move(reading);
    }

    /// A handle to a task the store holds (live, or ended and not yet
    /// pruned); empty otherwise. Throws StoreError.
    /// Asio cancellation: honours `terminal` and `partial`.
    asio::awaitable<std::optional<ClientHandle<O>>> find(TaskRef task) {
        auto core = core_;
        auto reading = core->run([c = core.get(), t = std::move(task)] { return c->find(t); });
        auto id = co_await std::move(reading);
        if (!id) co_return std::nullopt;
        co_return ClientHandle<O>(*id, core);
    }

    /// As `Scheduler::retry`: submits a `Failed`, `DeadLettered` or
    /// `Cancelled` task's payload and options again as a new task (new id,
    /// fresh attempts, no dependencies), its deadline and start at the same
    /// distance from now as they were from its first submission. A key
    /// moves to the new task (docs/guide/replicas.md, "Retry from a
    /// client"). Empty if the task is unknown, not ended, or succeeded.
    ///
    /// Completion: the new task's handle, once committed. Throws
    /// SubmitException when it cannot be submitted, StoreError.
    ///
    /// Asio cancellation: as `submit`.
    asio::awaitable<std::optional<ClientHandle<O>>> retry(TaskRef task) {
        auto core = core_;
        auto retrying = core->run([c = core.get(), t = std::move(task)] { return c->retry(t); });
        auto id = co_await std::move(retrying);
        if (!id) co_return std::nullopt;
        co_return ClientHandle<O>(*id, core);
    }

    /// One page of tasks, as `Store::query` (docs/store.md, "Queries").
    /// Throws StoreError, and `std::invalid_argument` for a cursor no page
    /// returned. Asio cancellation: honours `terminal` and `partial`.
    asio::awaitable<TaskPage> query(TaskQuery q) {
        auto core = core_;
        auto reading = core->run([c = core.get(), q = std::move(q)] { return c->query(q); });
        co_return co_await std::move(reading);
    }

    /// As `Scheduler::pause`, from any process: commits the pause for the
    /// pool's leader, which applies it once, as a local pause (it dispatches
    /// nothing new, its running attempts finish; durable: the next leader
    /// starts it paused). With no leader running, the next one applies it
    /// as it starts leading (docs/guide/replicas.md, "Pause and resume").
    ///
    /// Completion: once committed (not once applied). Throws
    /// SubmitException: `Invalid` for an empty name, `UnknownPool` for a
    /// pool no leader declares (as `submit` checks a task's pool: before
    /// any leader wrote its configuration, any name is committed, and the
    /// leader logs and drops one it does not know); StoreError.
    ///
    /// Asio cancellation: honours `terminal` and `partial` (the pause may be
    /// committed all the same).
    asio::awaitable<void> pause(std::string pool) { return set_paused(std::move(pool), true); }
    /// As `pause`, for `Scheduler::resume`.
    asio::awaitable<void> resume(std::string pool) { return set_paused(std::move(pool), false); }

    asio::any_io_executor get_executor() const { return executor_; }

private:
    friend struct detail::Access;
    template <class P2, class O2>
    friend class BlockingClient;
    asio::awaitable<void> set_paused(std::string pool, bool paused) {
        auto core = core_;
        auto setting = core->run([c = core.get(), pool = std::move(pool), paused] { c->set_paused(pool, paused); });
        co_await std::move(setting);
    }
    Client(std::shared_ptr<detail::ClientCore> core, asio::any_io_executor executor)
        : core_(std::move(core)), executor_(std::move(executor)) {}

    std::shared_ptr<detail::ClientCore> core_;
    asio::any_io_executor executor_;
};

/// `Client` for code without an event loop: the same members, each blocking
/// the calling thread for its store work (no io_context, no I/O thread;
/// the watcher still has its thread). Cheap to copy; thread-safe.
template <class P, class O>
class BlockingClient {
public:
    /// Never waits to lead; throws StoreError when the store cannot be read.
    static BlockingClient open(std::shared_ptr<Store> store) {
        BlockingClient client(detail::ClientCore::make(std::move(store), detail::erase_codec<P, O>()));
        client.core_->refresh_configs();
        return client;
    }

    /// As `Client::submit`: returns once committed; throws SubmitException.
    BlockingClientHandle<O> submit(Task<P> task) {
        std::vector<Task<P>> one;
        one.push_back(std::move(task));
        return std::move(submit_many(std::move(one)).front()).value();
    }
    /// As `Client::submit_many`: one transaction, one result per task.
    std::vector<SubmitResult<BlockingClientHandle<O>>> submit_many(std::vector<Task<P>> tasks) {
        auto ids = core_->submit(detail::client_requests(std::move(tasks)), detail::ClientSubmitMode::Each);
        std::vector<SubmitResult<BlockingClientHandle<O>>> out;
        out.reserve(ids.size());
        for (auto& id : ids) {
            if (id)
                out.emplace_back(wrap(id.value()));
            else
                out.emplace_back(id.error(), id.message());
        }
        return out;
    }
    /// As `Client::submit_batch`: all or nothing; throws SubmitException.
    std::vector<BlockingClientHandle<O>> submit_batch(std::vector<Task<P>> tasks) {
        auto ids = core_->submit(detail::client_requests(std::move(tasks)), detail::ClientSubmitMode::Batch);
        std::vector<BlockingClientHandle<O>> out;
        out.reserve(ids.size());
        for (auto& id : ids) out.push_back(wrap(std::move(id).value()));
        return out;
    }
    bool cancel(TaskRef task) { return core_->cancel(task); }
    std::optional<StoredTask> get(TaskRef task) { return core_->get(task); }
    std::optional<BlockingClientHandle<O>> find(TaskRef task) {
        auto id = core_->find(task);
        if (!id) return std::nullopt;
        return wrap(*id);
    }
    std::optional<BlockingClientHandle<O>> retry(TaskRef task) {
        auto id = core_->retry(task);
        if (!id) return std::nullopt;
        return wrap(*id);
    }
    TaskPage query(const TaskQuery& q) { return core_->query(q); }
    /// As `Client::pause`: returns once committed; throws SubmitException.
    void pause(const std::string& pool) { core_->set_paused(pool, true); }
    /// As `Client::resume`.
    void resume(const std::string& pool) { core_->set_paused(pool, false); }

private:
    explicit BlockingClient(std::shared_ptr<detail::ClientCore> core) : core_(std::move(core)) {}
    BlockingClientHandle<O> wrap(TaskId id) const { return BlockingClientHandle<O>(ClientHandle<O>(id, core_)); }

    std::shared_ptr<detail::ClientCore> core_;
};

}  // namespace cronoq
