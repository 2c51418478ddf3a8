#include "engine_state.hpp"

namespace cronoq::core {

Engine::State::State(EngineConfig c) : config(std::move(c)) {}

// Every phase but the last may reject the batch; none changes the engine's
// state before the last, so a rejected batch leaves no trace. Due timers
// run first, and a rejection after them still settles what they changed.
SubmitResult<std::vector<TaskId>> Engine::State::admit_batch(std::span<const TaskSpec> specs, Time now) {
    if (life.shutting_down()) return {SubmitError::ShuttingDown, "the scheduler is shutting down"};
    Admission::Batch batch(specs);
    if (auto rejected = admission.validate(batch)) return {rejected->error, std::move(rejected->message)};
    run_due_timers(now);
    if (auto rejected = admission.check(batch, now)) {
        settle(now);
        return {rejected->error, std::move(rejected->message)};
    }
    std::vector<TaskId> placed = admission.place(batch, now);
    settle(now);
    return placed;
}

void Engine::State::fire(const Timer& tm, Time now) {
    switch (tm.kind) {
        case TimerKind::ShutdownGrace: return life.abort_all_running(now);
        case TimerKind::Horizon:
            if (auto* a = pools[tm.slot].scaler(now)) a->wake(now);
            return;
        case TimerKind::Autoscale: pools[tm.slot].autoscale_armed = never; return;  // settle() evaluates and re-arms
        case TimerKind::Refill: return resources.refilled(tm.slot, now);
        case TimerKind::RetryDone: return life.make_ready(tm.slot, now);
        case TimerKind::Start: return life.start_due(tm.slot, now);
        case TimerKind::MissCheck:
            // A paused pool's due start is judged at resume (Lifecycle::resume_starts).
            if (pools[tasks[tm.slot].pool].paused) return;
            return life.miss_start(tm.slot, now);
        case TimerKind::AwaitExpiry: return life.expire_await(tm.slot, now);
        case TimerKind::Attempt: break;
    }
    const AttemptState& a = tasks.attempt(tasks[tm.slot]);
    if (now >= a.deadline) return life.abandon_attempt(tm.slot, AbortReason::Timeout, now);
    if (now >= a.lease_expiry) {
        if (a.worker) workers.silent(a.worker);  // before its slot frees: no lease goes back to it
        return life.abandon_attempt(tm.slot, AbortReason::LeaseExpired, now);
    }
    // A heartbeat moved the expiry since this check was armed.
    const Time next = std::min(a.deadline, a.lease_expiry);
    if (next != never) timers.push(next, tm.slot, tm.gen, TimerKind::Attempt);
}

void Engine::State::settle(Time now) {
    // Handing over, waiting tasks keep their status: the next leader
    // evaluates their dependencies again when it restores them.
    const bool handing_over = life.handing_over();
    if (waiting.has_resolved() && !handing_over) life.resolve_dependents(now);
    if (!handing_over) scaling.evaluate_due(now);
    dispatcher.dispatch_dirty(now);
    // Each round hands units to waiters or stops. Within one call units only
    // go (nothing is released), so rounds end; the cap is only a guard.
    if (resources.may_have_parked())
        for (int round = 0; round < 1000 && resources.return_parked(now); ++round) dispatcher.dispatch_dirty(now);
    bounds.announce_space(out);
    retention.forget_expired(now, tasks, out);
    // Keep the heap top live, so that next_wakeup() never names a
    // wakeup with nothing to do, and an idle engine has none.
    while (!timers.empty() && !timer_live(timers.top())) timers.pop();
}

}  // namespace cronoq::core
