#pragma once
// The state a task's handles share with the driver core.
#include <cronoq/detail/erased_value.hpp>
#include <cronoq/detail/parking.hpp>
#include <cronoq/detail/wait_list.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/task_status.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace cronoq::detail {

class SchedulerCore;

class HandleState {
public:
    HandleState(TaskId id, std::weak_ptr<SchedulerCore> core) : id_(id), core_(std::move(core)) {}

    TaskId id() const { return id_; }
    /// The scheduler, while it exists.
    std::shared_ptr<SchedulerCore> core() const { return core_.lock(); }
    /// Sets the id once the engine has given one, before the state is
    /// shared with any handle.
    void assign_id(TaskId id) { id_ = id; }
    TaskStatus status() const { return status_.load(std::memory_order_acquire); }
    void set_status(TaskStatus s) { status_.store(s, std::memory_order_release); }
    /// Starts loading the status for a write known to come soon.
    void prefetch_status() const noexcept { __builtin_prefetch(&status_, 1); }

    /// Records the terminal outcome once and wakes every waiter.
    void finish(TaskStatus status, std::uint32_t attempt, std::string&& message, ErasedValue output);

    /// Set once the task has its terminal outcome. Lives inside the state
    /// (no allocation of its own); `state` keeps it alive while awaited.
    static std::shared_ptr<WaitList> done_waits(const std::shared_ptr<HandleState>& state) {
        return std::shared_ptr<WaitList>(state, &state->done_waits_);
    }
    /// Whether the terminal outcome is recorded (`outcome` may be read).
    bool finished() const { return done_.load(std::memory_order_acquire); }
    /// Precondition: terminal. The output if Succeeded (an output held in
    /// place shares `state`); otherwise throws TaskFailure.
    static std::shared_ptr<const void> outcome(const std::shared_ptr<HandleState>& state);
    /// Blocks the calling thread; empty on timeout. Then as `outcome`.
    static std::optional<std::shared_ptr<const void>> wait_blocking(const std::shared_ptr<HandleState>& state,
                                                                    std::optional<std::chrono::nanoseconds> timeout);

    bool cancel();

private:
    // Packed, in the order a task's end touches them; the wait list last
    // (see WaitList).
    TaskId id_;
    std::weak_ptr<SchedulerCore> core_;
    std::atomic<TaskStatus> status_{TaskStatus::Ready};
    // The outcome below is written once, by the first `finish` (the one
    // that sets `claimed_`), and read only after `done_` is seen set. A
    // blocking waiter parks (parking.hpp), counted in `sleepers_`.
    std::atomic<bool> claimed_{false};
    std::atomic<bool> done_{false};
    TaskStatus final_ = TaskStatus::Ready;
    std::atomic<std::uint32_t> sleepers_{0};
    std::uint32_t attempt_ = 0;
    std::unique_ptr<std::string> message_;  // a pointer: most outcomes have none
    ErasedValue output_;
    WaitList done_waits_;
};

}  // namespace cronoq::detail
