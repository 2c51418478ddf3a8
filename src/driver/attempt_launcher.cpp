// The attempt launcher (attempt_launcher.hpp).
#include <cronoq/logging.hpp>

#include <spdlog/spdlog.h>

#include "attempt_launcher.hpp"

#include "runtime/start_run.hpp"
#include "scheduler_state.hpp"
#include "step_pipeline.hpp"

#include <asio/dispatch.hpp>
#include <asio/post.hpp>

#include <exception>
#include <utility>
#include <vector>

namespace cronoq::detail {

// ---- starts --------------------------------------------------------------------------------

using runtime::EnteringLane;
using runtime::Spawning;
using runtime::StartRun;

void AttemptLauncher::start_all(std::shared_ptr<SchedulerCore> core, std::shared_ptr<Attempt> first) noexcept {
    if (!core || !first) return;  // the scheduler is being destroyed: nothing may start
    SchedulerCore::State& s = SchedulerCore::State::of(*core);
    // Inside a run of this scheduler (an end it serves, an executor
    // calling it): these start in the next run.
    if (StartRun* run = StartRun::of(s)) return run->later(std::move(first));
    // Inside another scheduler's run (every start is made in one): posted,
    // so that tasks that submit each other cannot grow the stack.
    if (StartRun::current()) return post_starts(core, std::move(first));
    std::shared_ptr<Attempt> next;
    {
        StartRun run(s);
        while (first) {
            std::shared_ptr<Attempt> a = pop_start(first);
            const auto& lane = a->pool->lane(a->lease);
            // On a thread that runs the lane, the attempt starts at once
            // instead of going round the io_context's queue (one pass of
            // its run loop less per task): what asio::dispatch would do,
            // without wrapping the call for the type-erased executor.
            if (runs_in_this_thread(lane)) {
                start(core, std::move(a));
                continue;
            }
            // Another lane: dispatched to it. Asio runs the handler here
            // and now if the lane is free and this thread runs its
            // executor (the handler then holds the lane, and the attempt
            // starts in this run); else it is queued there, and starts in
            // a run of its own.
            auto go = [core, a]() mutable {
                if (EnteringLane::take(a.get())) return start(std::move(core), std::move(a));
                start_all(std::move(core), std::move(a));
            };
            std::exception_ptr failed;
            {
                EnteringLane entering(a.get());
                try {
                    asio::dispatch(lane, std::move(go));
                } catch (...) {  // the handler could not be allocated
                    failed = std::current_exception();
                }
            }
            if (failed) end_attempt(core, std::move(a), failed, {});
        }
        // The attempts that ended inside their start: one step serves them
        // all, as it serves a single end (post_end).
        if (std::vector<AttemptEnd>& ended = StartRun::ends(); !ended.empty()) s.pipeline.post_ends(ended);
        next = run.take_later();
    }
    if (next) post_starts(core, std::move(next));
}

// Posts one handler that starts `list` (linked through `next_start`) in a
// run of its own, on the lane of its first attempt.
void AttemptLauncher::post_starts(const std::shared_ptr<SchedulerCore>& core, std::shared_ptr<Attempt> list) noexcept {
    const auto& lane = list->pool->lane(list->lease);
    try {
        asio::post(lane, [core, list]() mutable { start_all(std::move(core), std::move(list)); });
    } catch (...) {  // the handler could not be allocated: none of them starts
        const auto error = std::current_exception();
        while (list) end_attempt(core, pop_start(list), error, {});
    }
}

void AttemptLauncher::start(std::shared_ptr<SchedulerCore> core, std::shared_ptr<Attempt> attempt) noexcept {
    // Aborted between its dispatch and now (another thread's step, or a
    // timeout): the executor never runs; the engine has ended the lease.
    if (attempt->cancel.is_cancelled()) {
        auto aborted = std::make_exception_ptr(TaskError::cancelled());
        return end_attempt(std::move(core), std::move(attempt), aborted, {});
    }
    Spawning in_start(attempt.get());
    try {
        // The executor's own coroutine is spawned (spawn_attempt): no frame
        // of the driver's sits between it and Asio; its end (or what it
        // threw) comes to the completion, on the same lane. co_spawn runs
        // it at once (we are on its lane) up to its first suspension; if
        // it never suspends, its end is served inside this call.
        // The core moves into the completion; the attempt is copied, so
        // that a spawn that throws (and drops the completion) still leaves
        // it here to report.
        attempt->pool->def.executor.spawn(attempt->pool->lane(attempt->lease), attempt->signal.slot(),
                                          Access::make<TaskContext>(std::shared_ptr<AttemptState>(attempt)),
                                          attempt->task->payload.share(attempt->task), AttemptCompletion(std::move(core), attempt));
        // Ended already: Asio's cancellation handlers for the coroutine
        // (one in the slot, one in the proxy slot co_spawn made) go back to
        // its recycling allocator now, for the next start to take, instead
        // of staying with the attempt until its end is served.
        if (attempt->ended_in_start) attempt->signal.slot().clear();
    } catch (...) {
        // Serving the end threw (std::bad_alloc in a step): the driver
        // cannot go on, as when any step throws.
        if (attempt->ended_in_start) std::terminate();
        // The coroutine could not even be made (its frame not allocated).
        if (auto owner = core_of(*attempt)) end_attempt(std::move(owner), std::move(attempt), std::current_exception(), {});
    }
}

// ---- ends ----------------------------------------------------------------------------------

void AttemptCompletion::operator()(std::exception_ptr thrown, AttemptOutput&& out) && {
    if (Spawning::current() == attempt_.get()) attempt_->ended_in_start = true;
    // The coroutine ended without suspending, inside its start: a call of
    // the application's (try_submit) may be below, so the waiters this end
    // completes are posted.
    if (Spawning::current())
        return AttemptLauncher::end_attempt(std::move(core_), std::move(attempt_), thrown, std::move(out));
    // Where the coroutine ended after a suspension, in the handler that
    // resumed it: if this end leaves the scheduler idle, the waiters it
    // completes (the task's result, most often) resume here once the
    // driver has let go of its locks (serve_ends, wait_list.hpp).
    ResumeInPlace resume;
    AttemptLauncher::end_attempt(std::move(core_), std::move(attempt_), thrown, std::move(out));
    resume.run();
}

void AttemptLauncher::end_attempt(std::shared_ptr<SchedulerCore> core, std::shared_ptr<Attempt> a,
                                       std::exception_ptr thrown, AttemptOutput&& out) {
    if (thrown) {
        try {
            std::rethrow_exception(thrown);
        } catch (const TaskError& e) {
            out.error = e;
        } catch (const std::exception& e) {
            out.error = TaskError::permanent(std::string("panic: ") + e.what());
        } catch (...) {
            out.error = TaskError::permanent("panic: unknown exception");
        }
    }
    // With a store, the output crosses it as bytes: encoded here, off the
    // engine's mutex. An output the codec refuses cannot be kept.
    SchedulerCore::State& s = SchedulerCore::State::of(*core);
    s.encoder.encode_output(out);
    // From here on the context reports cancelled (docs/guide/executors.md).
    a->cancel.cancel();
    // Ended inside a start of a run (start_all): the run serves it with
    // the others, in one step.
    if (StartRun::of(s)) return StartRun::ends().push_back(AttemptEnd{std::move(a), std::move(out)});
    s.pipeline.post_end(AttemptEnd{std::move(a), std::move(out)});
}

AttemptLauncher::AttemptLauncher(std::unique_ptr<Clock::Timer> abandon_timer) : abandon_timer_(std::move(abandon_timer)) {}

void AttemptLauncher::arm_abandon(const EngineHeld&, core::Time at, std::function<void()> on_limit) {
    if (abandon_armed_) return;
    abandon_armed_ = true;
    abandon_timer_->arm(at, std::move(on_limit));
}

std::vector<Attempt*> AttemptLauncher::abandon_all(const EngineHeld& held) {
    std::vector<Attempt*> abandoned;
    while (running_.next != &running_) {
        Attempt& a = static_cast<Attempt&>(*running_.next);
        abandoned.push_back(&a);
        unlink(held, a);
    }
    return abandoned;
}

}  // namespace cronoq::detail
