#pragma once
// The thread-local bookkeeping that lets attempts start without a trip round
// the io_context (docs/design.md, "Starting attempts"): a run of starts on
// this thread, the attempt being spawned, and the attempt a dispatch to its
// lane is entering. Every name here is per thread; nothing is shared.
#include <cronoq/detail/scheduler_core.hpp>

#include "../attempt_state.hpp"

#include <memory>
#include <utility>
#include <vector>

namespace cronoq::detail::runtime {

/// One start_all's run on this thread. The attempts that end inside their
/// start leave their ends here, to be served together in one step once every
/// start of the run is made; what that step (or an executor calling the
/// scheduler) dispatches waits here for the next run, which goes round the
/// io_context once for all of them. Only one run per thread: a start_all of
/// another scheduler inside it posts its starts, as inside any start.
class StartRun {
public:
    explicit StartRun(const SchedulerCore::State& s) noexcept : state_(&s) { current_ = this; }
    ~StartRun() { current_ = nullptr; }
    StartRun(const StartRun&) = delete;
    StartRun& operator=(const StartRun&) = delete;

    static StartRun* current() noexcept { return current_; }
    /// The run of `s` on this thread, if one is under way.
    static StartRun* of(const SchedulerCore::State& s) noexcept {
        return current_ && current_->state_ == &s ? current_ : nullptr;
    }
    /// Ends made inside this run's starts; the buffer is the thread's,
    /// kept with its capacity from run to run.
    static std::vector<AttemptEnd>& ends() noexcept { return ends_; }

    /// Adds `list` (linked through `next_start`) to the next run, in order.
    void later(std::shared_ptr<Attempt> list) noexcept { next_.append(std::move(list)); }
    std::shared_ptr<Attempt> take_later() noexcept { return next_.take(); }

private:
    const SchedulerCore::State* state_;
    StartList next_;
    static inline thread_local StartRun* current_ = nullptr;
    static inline thread_local std::vector<AttemptEnd> ends_;
};

/// The attempt whose coroutine the innermost start on this thread is
/// spawning, for the scope of one spawn; null outside every start. An
/// attempt's completion that finds itself here ended inside that spawn (the
/// coroutine never suspended); one that finds any attempt here runs inside a
/// start, where a call of the application's may be below.
class Spawning {
public:
    explicit Spawning(const Attempt* a) noexcept : outer_(std::exchange(current_, a)) {}
    ~Spawning() { current_ = outer_; }
    Spawning(const Spawning&) = delete;
    Spawning& operator=(const Spawning&) = delete;

    static const Attempt* current() noexcept { return current_; }

private:
    const Attempt* outer_;
    static inline thread_local const Attempt* current_ = nullptr;
};

/// The attempt whose lane a run on this thread is dispatching to: its
/// handler, run inline by that dispatch, starts it in the run.
class EnteringLane {
public:
    explicit EnteringLane(const Attempt* a) noexcept { current_ = a; }
    ~EnteringLane() { current_ = nullptr; }
    EnteringLane(const EnteringLane&) = delete;
    EnteringLane& operator=(const EnteringLane&) = delete;

    /// Whether the handler running now is the one dispatched for `a`, run
    /// inline by that dispatch (then it is no longer entering).
    static bool take(const Attempt* a) noexcept {
        if (current_ != a) return false;
        current_ = nullptr;
        return true;
    }

private:
    static inline thread_local const Attempt* current_ = nullptr;
};

}  // namespace cronoq::detail::runtime
