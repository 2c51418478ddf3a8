#pragma once
// What the driver keeps per task and per attempt, shared with TaskContext.
//
// One allocation per task: its `TaskRecord` is the handles' state, the
// task's description for its attempts and the driver's bookkeeping at once;
// the engine carries a pointer to it (TaskSpec::user), so the driver needs
// no map from task id. One allocation per attempt: its `Attempt` is the
// context's state and the coroutine's cancellation signal.
#include <cronoq/detail/cancel_state.hpp>
#include <cronoq/detail/erased.hpp>
#include <cronoq/detail/task_request.hpp>
#include <cronoq/detail/handle_state.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/task_context.hpp>

#include "runtime/prefetch.hpp"

#include <asio/cancellation_signal.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace cronoq::detail {

class SchedulerCore;
struct PoolRuntime;
struct Attempt;
struct TaskRecord;

/// Immutable after submit; what an attempt's context shows of its task.
/// Its fields come first in the record: what every task sets and reads,
/// then one pointer to what few tasks have.
struct TaskInfo {
    std::shared_ptr<const std::string> pool;  // shared: a context may outlive its scheduler
    ErasedValue payload;  ///< an attempt gets it shared with the record (`payload.share`)
    std::string kind;
    std::optional<std::chrono::system_clock::time_point> deadline;
    std::optional<std::chrono::nanoseconds> timeout;
    /// The request as submitted (its payload and kind moved out) when it
    /// has a key, tags or a traceparent: what the context shows of
    /// those, and for a keyed task the other options, for
    /// `Scheduler::retry`. Null for most tasks, so that a record stays
    /// within few cache lines.
    std::unique_ptr<TaskRequest> more;

    bool keyed() const { return more && more->key; }
    const std::optional<std::string>& key() const { return more ? more->key : none; }
    const Tags& tags() const { return more ? more->tags : no_tags; }
    const std::optional<std::string>& traceparent() const { return more ? more->traceparent : none; }
    const std::string& fair_key() const { return more ? more->fair_key : no_fair_key; }
    /// `more`, made on first use.
    TaskRequest& request() {
        if (!more) more = std::make_unique<TaskRequest>();
        return *more;
    }

private:
    static inline const std::optional<std::string> none{};
    static inline const Tags no_tags{};
    static inline const std::string no_fair_key{};
};

/// Links the records the engine holds (guarded by the engine's mutex), so
/// that a scheduler destroyed while the engine still knows tasks (keyed
/// ones it retains) lets go of them.
struct RecordLink {
    RecordLink* prev = this;
    RecordLink* next = this;
};

/// The driver's bookkeeping of a task, guarded by the engine's mutex.
struct RecordState {
    /// The engine's reference, behind TaskSpec::user: set at admission,
    /// dropped when the engine lets go (terminal without a key, or Forget).
    std::shared_ptr<TaskRecord> engine_ref;
    /// The attempt holding the live lease, if one runs.
    std::shared_ptr<Attempt> live;
    /// The output of a success being reported (with a store, its bytes
    /// too), until its Status takes it.
    OutputValue output;
    /// In a remote pool: the payload through codec<P>, made at submit off
    /// the engine's mutex; null until then (else made when a lease goes
    /// out). A pointer: most tasks run here, and the record stays small.
    std::unique_ptr<std::string> remote_payload;
};

/// A task's one allocation in the driver. In the order of use: the bases
/// most tasks touch come first and the handle state last, whose wait list
/// ends in a waiter's inline storage, touched only when a handle waits. In
/// a burst of many tasks each record is out of the cache whenever it is
/// touched, so its size is what a task's creation and end cost.
struct TaskRecord final : TaskInfo, RecordLink, RecordState, HandleState {
    TaskRecord(TaskId task, std::weak_ptr<SchedulerCore> core) : HandleState(task, std::move(core)) {}
};

/// The id of the task whose info this is: the info is part of its record.
inline TaskId task_id(const TaskInfo& info) { return static_cast<const TaskRecord&>(info).id(); }

inline std::uint64_t to_user(TaskRecord* r) { return reinterpret_cast<std::uintptr_t>(r); }
inline TaskRecord* from_user(std::uint64_t u) { return reinterpret_cast<TaskRecord*>(static_cast<std::uintptr_t>(u)); }

/// Starts loading what a Dispatch of the task reads and writes (the
/// reference counts, the references, the status) and what its start reads
/// (the payload); changes nothing.
inline void prefetch_for_dispatch(const TaskRecord* r) noexcept {
    runtime::prefetch_shared_count(r);
    __builtin_prefetch(&r->payload);
    __builtin_prefetch(&r->engine_ref, 1);
    r->prefetch_status();
}

struct AttemptState {
    std::shared_ptr<const TaskInfo> task;  // aliases the task's record
    LeaseId lease;
    std::uint32_t attempt = 0;
    bool needs_heartbeat = false;
    CancelState cancel;  // tokens alias this state: no allocation of its own
};

/// The scheduler of an attempt's task, while it exists.
inline std::shared_ptr<SchedulerCore> core_of(const AttemptState& a) {
    return static_cast<const TaskRecord&>(*a.task).core();
}

/// Links every attempt whose coroutine has not returned (guarded by the
/// engine's mutex), so that shutdown can name and abandon the deaf ones.
struct RunningLink {
    RunningLink* prev = this;
    RunningLink* next = this;
};

struct Attempt final : AttemptState, RunningLink {
    TaskRecord* record = nullptr;  // kept alive by `task`
    const PoolRuntime* pool = nullptr;
    /// The remote worker holding the lease; 0 for an attempt run here (a
    /// remote attempt has no coroutine: its end is the worker's report).
    WorkerId worker{};
    asio::cancellation_signal signal;
    /// Set by its completion when the coroutine ended inside the spawn
    /// (it never suspended); read by the start after the spawn, on the
    /// same thread.
    bool ended_in_start = false;
    /// The next attempt a step starts after the engine's mutex (guarded by
    /// it until the step takes the list).
    std::shared_ptr<Attempt> next_start;
};

/// An attempt's end, sent by its coroutine's completion.
struct AttemptEnd {
    std::shared_ptr<Attempt> attempt;
    AttemptOutput output;
};

/// The first attempt of `list` (linked through `next_start`), unlinked;
/// `list` becomes the rest.
inline std::shared_ptr<Attempt> pop_start(std::shared_ptr<Attempt>& list) noexcept {
    std::shared_ptr<Attempt> a = std::move(list);
    list = std::move(a->next_start);
    return a;
}

/// Attempts waiting to start, in order, linked through `next_start`.
class StartList {
public:
    /// Adds `a` (its `next_start` empty) at the end.
    void push_back(std::shared_ptr<Attempt> a) noexcept {
        Attempt* added = a.get();
        if (tail_)
            tail_->next_start = std::move(a);
        else
            head_ = std::move(a);
        tail_ = added;
    }
    /// Adds every attempt of `list` (linked the same way) at the end.
    void append(std::shared_ptr<Attempt> list) noexcept {
        while (list) push_back(pop_start(list));
    }
    /// The list's first attempt (the rest linked behind it); empties it.
    std::shared_ptr<Attempt> take() noexcept {
        tail_ = nullptr;
        return std::move(head_);
    }

private:
    std::shared_ptr<Attempt> head_;
    Attempt* tail_ = nullptr;
};

}  // namespace cronoq::detail
