#pragma once
// ClientHandle<O> and BlockingClientHandle<O>: follow one task that a
// client submitted or found, from any process (docs/guide/replicas.md).
#include <cronoq/detail/access.hpp>
#include <cronoq/detail/client_core.hpp>
#include <cronoq/duration.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/task_failure.hpp>
#include <cronoq/task_status.hpp>

#include <asio/awaitable.hpp>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <utility>

namespace cronoq {

template <class P, class O>
class Client;
template <class P, class O>
class BlockingClient;

/// Cheap to copy (an id and a reference to its client's core); every copy
/// follows the same task. Outlives the `Client` that made it: the client's
/// watcher runs until the last client copy and handle are gone.
/// Thread-safe.
template <class O>
class ClientHandle {
public:
    /// An empty handle, only to be assigned to (`valid()` is false).
    ClientHandle() = default;

    bool valid() const { return core_ != nullptr; }
    TaskId id() const { return id_; }

    /// Waits until the task's end is committed to the store (by whichever
    /// process leads it), as the client's one watcher sees it: on SQLite
    /// by polling the file, on PostgreSQL by the leader's notification,
    /// with a slow poll besides. A task that already ended completes at the
    /// watcher's next look. A real Asio operation: the io_context has
    /// outstanding work while it waits, and it completes on the awaiting
    /// coroutine's executor (queued there, never inside this call).
    ///
    /// Completion: the output, decoded with codec<O>, if the task
    /// Succeeded (null for `void`, or when no output was kept); otherwise
    /// throws `TaskFailure` with the committed status, attempt and last
    /// error. The store being unreadable does not end the wait: the
    /// watcher logs nothing and looks again (a store that stays unreadable
    /// keeps the wait going until it is cancelled).
    ///
    /// Asio cancellation: honours `terminal`, `partial` and `total`. Any of
    /// them ends this wait only, with `operation_aborted` (thrown as
    /// `std::system_error`): the task goes on, other waits for it go on,
    /// and `result()` may be awaited again.
    asio::awaitable<std::shared_ptr<const O>> result() const {
        auto core = core_;
        auto wait = core->await_end(id_);
        auto waiting = detail::WaitList::async_wait(detail::EndWait::done(wait), asio::use_awaitable,
                                                    [core, wait] { core->forget(wait); });
        co_await std::move(waiting);
        co_return std::static_pointer_cast<const O>(core->outcome(*wait));
    }

    /// The task's status as committed in the store (read on the client's
    /// I/O thread in one short transaction; before a leader took the task
    /// up, as admission would make it: `Blocked`, `Scheduled` or `Ready`).
    ///
    /// Completion: the status. Throws StoreError when the store cannot be
    /// read, `std::out_of_range` when it no longer holds the task (pruned).
    ///
    /// Asio cancellation: honours `terminal` and `partial`: the wait ends
    /// with `operation_aborted` (the read finishes unobserved).
    asio::awaitable<TaskStatus> status() const {
        auto core = core_;
        const TaskId id = id_;
        auto reading = core->run([c = core.get(), id] { return c->status(id); });
        co_return co_await std::move(reading);
    }

private:
    friend struct detail::Access;
    template <class O2>
    friend class BlockingClientHandle;
    template <class P2, class O2>
    friend class Client;
    template <class P2, class O2>
    friend class BlockingClient;
    ClientHandle(TaskId id, std::shared_ptr<detail::ClientCore> core) : id_(id), core_(std::move(core)) {}

    TaskId id_{};
    std::shared_ptr<detail::ClientCore> core_;
};

/// A client handle whose waits block the calling thread. Never call `get`
/// from a thread that must run for the task to end (none of the client's:
/// its watcher has a thread of its own).
template <class O>
class BlockingClientHandle {
public:
    BlockingClientHandle() = default;

    bool valid() const { return handle_.valid(); }
    TaskId id() const { return handle_.id(); }
    /// The committed status; throws as `ClientHandle::status`.
    TaskStatus status() const { return handle_.core_->status(handle_.id_); }
    /// Blocks until the task's end is committed; its output (null for
    /// `void`), or throws `TaskFailure` as `ClientHandle::result`.
    std::shared_ptr<const O> get() const {
        auto wait = handle_.core_->await_end(handle_.id_);
        wait->wait_blocking(std::nullopt);
        return std::static_pointer_cast<const O>(handle_.core_->outcome(*wait));
    }
    /// As `get`, but empty if the end is not committed within `d`.
    template <class Rep, class Period>
    std::optional<std::shared_ptr<const O>> get_for(std::chrono::duration<Rep, Period> d) const {
        auto wait = handle_.core_->await_end(handle_.id_);
        if (!wait->wait_blocking(saturating_ns(d))) {
            handle_.core_->forget(wait);
            return std::nullopt;
        }
        return std::static_pointer_cast<const O>(handle_.core_->outcome(*wait));
    }
    /// The same task's awaitable handle, for code that runs on an io_context.
    const ClientHandle<O>& handle() const { return handle_; }

private:
    friend struct detail::Access;
    template <class P2, class O2>
    friend class BlockingClient;
    explicit BlockingClientHandle(ClientHandle<O> handle) : handle_(std::move(handle)) {}

    ClientHandle<O> handle_;
};

}  // namespace cronoq
