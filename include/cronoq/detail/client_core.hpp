#pragma once
// The non-template core of `cronoq::Client` (<cronoq/client.hpp>): what a
// process that does not lead writes to and reads from a store, and the one
// watcher that completes its handles (docs/guide/replicas.md). Compiled once
// into the driver library (src/client/); the typed `Client<P, O>` only
// erases its tasks and codecs into it.
#include <cronoq/detail/erased.hpp>
#include <cronoq/detail/task_request.hpp>
#include <cronoq/detail/unique_function.hpp>
#include <cronoq/detail/wait_list.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/stored_task.hpp>
#include <cronoq/submit_error.hpp>
#include <cronoq/task_query.hpp>
#include <cronoq/task_ref.hpp>
#include <cronoq/task_status.hpp>

#include <asio/awaitable.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace cronoq {
class Store;
}

namespace cronoq::detail {

/// A committed end as a client reads it, for `result()`.
struct ClientEnd {
    TaskStatus status = TaskStatus::Failed;
    std::uint32_t attempt = 0;
    std::string message;
    std::optional<std::string> output;  ///< codec<O>'s bytes, after a success
};

/// One wait for one task's committed end: set once by the watcher. Awaited
/// through `done` (a coroutine) or `wait_blocking` (a thread).
class EndWait {
public:
    explicit EndWait(TaskId id) : id_(id) {}
    TaskId id() const { return id_; }

    /// Records the end once and wakes every waiter.
    void finish(ClientEnd end);
    /// Blocks until finished or `timeout` passed; the end, or empty.
    std::optional<ClientEnd> wait_blocking(std::optional<std::chrono::nanoseconds> timeout);
    /// Precondition: finished (`done` set).
    const ClientEnd& end() const { return end_; }

    static std::shared_ptr<WaitList> done(const std::shared_ptr<EndWait>& wait) {
        return std::shared_ptr<WaitList>(wait, &wait->done_);
    }

private:
    TaskId id_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool finished_ = false;
    ClientEnd end_;
    WaitList done_;
};

/// How `submit` treats its tasks.
enum class ClientSubmitMode : std::uint8_t {
    Each,   ///< each checked on its own; the accepted ones in one transaction
    Batch,  ///< all or none; marked as one batch for the leader
};

/// Thread-safe. Store work runs either on the calling thread (the blocking
/// members, for `BlockingClient`) or, through `run`, on the core's own I/O
/// thread (for `Client`'s awaitables), never on an `io_context` thread.
/// Destroying the core (when the last client copy and handle go) stops its
/// threads, after the I/O thread ran what was queued.
class ClientCore {
public:
    virtual ~ClientCore() = default;

    /// Starts the core's threads; reads nothing yet.
    static std::shared_ptr<ClientCore> make(std::shared_ptr<Store> store, ErasedCodec codec);

    // ---- blocking members: one or two short transactions on the calling thread ----

    /// Reads the shards' configurations (the client checks tasks against
    /// them); throws StoreError when the store cannot be read.
    virtual void refresh_configs() = 0;
    /// One result per request, in order: the task's id (a new one, or the
    /// task its key resolved to) or why the client refused it. `Batch`: one
    /// refusal refuses every request, with that error.
    virtual std::vector<SubmitResult<TaskId>> submit(std::vector<TaskRequest> requests, ClientSubmitMode mode) = 0;
    virtual bool cancel(const TaskRef& task) = 0;
    virtual std::optional<StoredTask> get(const TaskRef& task) = 0;
    /// The id of the task the store holds under `task`, if any.
    virtual std::optional<TaskId> find(const TaskRef& task) = 0;
    /// `Client::retry`: the new task's id; empty if the task is unknown,
    /// not ended, or succeeded. Throws SubmitException when the new task
    /// cannot be submitted.
    virtual std::optional<TaskId> retry(const TaskRef& task) = 0;
    virtual TaskPage query(const TaskQuery& query) = 0;
    /// `Client::pause` / `resume`: commits the entry for the leader. Throws
    /// SubmitException (`Invalid` for no name, `UnknownPool` as `submit`
    /// refuses a task's pool).
    virtual void set_paused(const std::string& pool, bool paused) = 0;
    /// The committed status; throws std::out_of_range when the store no
    /// longer holds the task (pruned).
    virtual TaskStatus status(TaskId id) = 0;

    // ---- the watcher ------------------------------------------------------------

    /// A wait for `id`'s committed end, finished by the watcher (at its next
    /// look if the end is already committed).
    virtual std::shared_ptr<EndWait> await_end(TaskId id) = 0;
    /// The waiter went away (its wait was cancelled): stop watching for it.
    virtual void forget(const std::shared_ptr<EndWait>& wait) = 0;
    /// A finished wait's outcome: the output decoded with codec<O> (null for
    /// a `void` output or none kept) if it succeeded; else throws
    /// TaskFailure with its status, attempt and last error.
    virtual std::shared_ptr<const void> outcome(const EndWait& wait) const = 0;

    // ---- running blocking members off the event loop -------------------------------

    /// Runs `job` on the I/O thread, in order with the other jobs.
    virtual void enqueue(UniqueFunction<void()> job) = 0;

    /// Runs `fn()` on the I/O thread and completes with what it returned
    /// (or rethrows what it threw) on the awaiting coroutine's executor.
    /// Asio cancellation: honours `terminal` and `partial`, not `total`:
    /// the wait ends at once with `operation_aborted`, but `fn` runs to its
    /// end (its effect, e.g. a commit, may happen all the same).
    template <class F>
    asio::awaitable<std::invoke_result_t<F&>> run(F fn) {
        using R = std::invoke_result_t<F&>;
        struct Slot {
            WaitList done;
            std::optional<std::conditional_t<std::is_void_v<R>, char, R>> value;
            std::exception_ptr error;
        };
        auto slot = std::make_shared<Slot>();
        // The job holds no reference to the core: were it the last, the core
        // would be destroyed on its own I/O thread.
        UniqueFunction<void()> job([slot, fn = std::move(fn)]() mutable {
            try {
                if constexpr (std::is_void_v<R>) {
                    fn();
                    slot->value.emplace();
                } else {
                    slot->value.emplace(fn());
                }
            } catch (...) {
                slot->error = std::current_exception();
            }
            slot->done.set();
        });
        enqueue(std::move(job));
        auto waiting = WaitList::async_wait(std::shared_ptr<WaitList>(slot, &slot->done), asio::use_awaitable, {},
                                            asio::cancellation_type::terminal | asio::cancellation_type::partial);
        co_await std::move(waiting);
        if (slot->error) std::rethrow_exception(slot->error);
        if constexpr (!std::is_void_v<R>) co_return std::move(*slot->value);
    }

protected:
    ClientCore() = default;
    ClientCore(const ClientCore&) = delete;
    ClientCore& operator=(const ClientCore&) = delete;
};

}  // namespace cronoq::detail
