#pragma once
// TaskHandle<O>: follow one submitted task to its end.
#include <cronoq/detail/access.hpp>
#include <cronoq/detail/handle_state.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/task_failure.hpp>
#include <cronoq/task_status.hpp>

#include <asio/awaitable.hpp>
#include <asio/use_awaitable.hpp>

#include <memory>

namespace cronoq {

/// Copyable; every copy follows the same task. Thread-safe.
template <class O>
class TaskHandle {
public:
    /// An empty handle, only to be assigned to (`valid()` is false).
    TaskHandle() = default;

    bool valid() const { return state_ != nullptr; }

    TaskId id() const { return state_->id(); }
    /// The latest status the driver has seen.
    TaskStatus status() const { return state_->status(); }
    /// Same as `Scheduler::cancel(id())`.
    bool cancel() { return state_->cancel(); }

    /// Waits for the task's end (with a store, for its end to be
    /// committed). When the task has already ended (and, with a store, its
    /// end is committed), the coroutine goes on at once, without
    /// suspending. Otherwise a real Asio operation: it keeps the io_context
    /// busy while it waits, and it completes on the awaiting coroutine's
    /// executor: queued there (deferred, as a continuation of the handler
    /// that completed it), or, when the task's end leaves the scheduler idle,
    /// resumed at once from the handler in which the attempt ended if that
    /// thread runs the executor (see "Awaitables" in scheduler.hpp).
    ///
    /// Completion: the output if the task succeeded (null for `void`).
    /// Throws `TaskFailure` with the status, attempt and last error for
    /// any other end, and with a store when the lead ended before the end
    /// was committed (its status is then the one the store keeps, the
    /// message says why).
    ///
    /// Asio cancellation: honours `terminal`, `partial` and `total` (a
    /// coroutine's default filter lets only `terminal` through). Any of
    /// them ends the wait with `operation_aborted` (thrown as
    /// `std::system_error`) and nothing else: the task itself goes on, and
    /// `result()` may be awaited again.
    asio::awaitable<std::shared_ptr<const O>> result() const {
        auto state = state_;
        if (!state->finished()) {
            auto done = detail::WaitList::async_wait(detail::HandleState::done_waits(state), asio::use_awaitable);
            co_await std::move(done);
        }
        co_return std::static_pointer_cast<const O>(detail::HandleState::outcome(state));
    }

private:
    friend struct detail::Access;
    explicit TaskHandle(std::shared_ptr<detail::HandleState> state) : state_(std::move(state)) {}

    std::shared_ptr<detail::HandleState> state_;
};

}  // namespace cronoq
