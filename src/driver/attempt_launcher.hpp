#pragma once
// The attempt launcher (docs/design.md, "Starting attempts"): starts the
// attempts a step dispatched, after the engine's mutex, each on its lane,
// and takes their ends back to the driver's inbox; keeps the list of
// coroutines that have not returned, so that shutdown can name and abandon
// those that ignore cancellation. The fast paths (a start run on this
// thread, the attempt being spawned) are in runtime/start_run.hpp.
#include <cronoq/clock.hpp>
#include <cronoq/detail/scheduler_core.hpp>

#include "attempt_state.hpp"
#include "engine_mutex.hpp"

#include <exception>
#include <functional>
#include <memory>
#include <vector>

namespace cronoq::detail {

class AttemptLauncher {
public:
    explicit AttemptLauncher(std::unique_ptr<Clock::Timer> abandon_timer);

    // ---- starts and ends: no lock held ------------------------------------------------
    /// Starts each attempt of the list (linked through `next_start`) on its
    /// lane, in one run: ends inside the starts are served together after
    /// them, and what that dispatches starts in one posted run.
    static void start_all(std::shared_ptr<SchedulerCore> core, std::shared_ptr<Attempt> first) noexcept;
    /// What the attempt's coroutine returned or threw, reported on its lane.
    static void end_attempt(std::shared_ptr<SchedulerCore> core, std::shared_ptr<Attempt> a, std::exception_ptr thrown,
                            AttemptOutput&& out);

    // ---- coroutines that have not returned: engine steps -----------------------------
    // Inline: every local attempt is linked and unlinked once.
    void link(const EngineHeld&, Attempt& a) noexcept {
        a.prev = running_.prev;
        a.next = &running_;
        a.prev->next = &a;
        running_.prev = &a;
    }
    /// False if it was not linked (it had been abandoned).
    bool unlink(const EngineHeld&, Attempt& a) noexcept {
        if (a.prev == &a) return false;  // unlinked: a link points to itself
        a.prev->next = a.next;
        a.next->prev = a.prev;
        a.prev = a.next = &a;
        return true;
    }
    bool any_running(const EngineHeld&) const { return running_.next != &running_; }
    /// Arms, once, shutdown's limit on coroutines that ignore cancellation:
    /// `on_limit` runs at `at`.
    void arm_abandon(const EngineHeld&, core::Time at, std::function<void()> on_limit);
    /// Every coroutine still running, unlinked: abandoned. Each stays alive
    /// (its coroutine holds it) until its late end, which is ignored.
    std::vector<Attempt*> abandon_all(const EngineHeld&);
    /// No limit pending any more (shutdown complete, the scheduler gone).
    void stop() { abandon_timer_->disarm(); }

private:
    /// Posts a run of the list's starts to the lane of its first attempt.
    static void post_starts(const std::shared_ptr<SchedulerCore>& core, std::shared_ptr<Attempt> list) noexcept;
    /// On the attempt's lane: makes the executor's coroutine and spawns it.
    static void start(std::shared_ptr<SchedulerCore> core, std::shared_ptr<Attempt> a) noexcept;

    RunningLink running_;
    std::unique_ptr<Clock::Timer> abandon_timer_;
    bool abandon_armed_ = false;
};

}  // namespace cronoq::detail
