// The driver's step pipeline (step_pipeline.hpp).
#include "step_pipeline.hpp"

#include <cronoq/logging.hpp>

#include "event_queue.hpp"
#include "scheduler_state.hpp"

#include <spdlog/spdlog.h>

#include <vector>

namespace cronoq::detail {

namespace {

core::Outcome to_outcome(const AttemptOutput& out) {
    if (!out.error) return core::Outcome::success();
    const TaskError& e = *out.error;
    switch (e.kind()) {
        case TaskError::Kind::Retryable: return core::Outcome::retryable(e.message(), e.retry_after());
        case TaskError::Kind::Permanent: return core::Outcome::permanent(e.message());
        case TaskError::Kind::Cancelled: return core::Outcome::cancelled(e.message());
    }
    return core::Outcome::permanent(e.message());
}

}  // namespace

SchedulerCore::State::Step::~Step() { s_.pipeline.end_step(lock_); }

SchedulerCore::State::Read::~Read() { s_.pipeline.end_read(lock_); }

void StepPipeline::end_step(std::unique_lock<EngineMutex>& lock) {
    for (;;) {
        if (inbox_.filled(std::memory_order_acquire)) serve_ends(s_.held(), s_.clock->now());
        const store::Sequence step_seq = s_.durable ? s_.durable->enqueue_step(s_.held(), s_.engine) : 0;
        std::shared_ptr<Attempt> starting = starts_.take();
        if (deferred_.empty()) {
            lock.unlock();  // nothing to deliver, nothing to keep in order
        } else {
            // In order: this step's work is delivered before the next step's.
            s_.delivery.deliver_step(deferred_, lock, step_seq);
        }
        // Free of both locks: a start may run the executor on this thread,
        // and the executor may call into the scheduler.
        if (starting) AttemptLauncher::start_all(s_.self.lock(), std::move(starting));
        // An end posted while this step held the mutex found it taken and
        // left itself to us: serve it, unless another step already does.
        // The unlock above and this load are sequentially consistent, as
        // are offer()'s store of the flag and its try_lock: either that
        // try_lock sees the unlock, or this load sees the flag.
        if (!inbox_.filled(std::memory_order_seq_cst) || !lock.try_lock()) return;
    }
}

void StepPipeline::end_read(std::unique_lock<EngineMutex>& lock) {
    lock.unlock();
    // As at the end of a step (sequentially consistent, as there): an end
    // that found the mutex held by this reader is served here.
    if (inbox_.filled(std::memory_order_seq_cst) && lock.try_lock()) end_step(lock);
}

template <class Put>
void StepPipeline::offer(Put&& put) {
    {
        // Nobody holds the engine: serve these reports at once, without the
        // inbox, after what the inbox holds (a worker's reports keep their
        // order: a heartbeat, then the lease's end). Never wait for the
        // engine: its holder may be waiting for this thread (a reader whose
        // clock the application holds, say).
        std::unique_lock lock(s_.mu, std::try_to_lock);
        if (lock) {
            inbox_.take(ends_, remote_ends_);
            put(ends_, remote_ends_);
            serve_ends(s_.held(), s_.clock->now());
            return end_step(lock);
        }
    }
    // Sequentially consistent, as the try_lock below and the holder's
    // unlock and load (end_step): either this try_lock sees the holder's
    // unlock, or the holder, after unlocking, sees the flag.
    inbox_.put(put);
    std::unique_lock lock(s_.mu, std::try_to_lock);
    if (lock) end_step(lock);
}

void StepPipeline::post_end(AttemptEnd&& end) {
    offer([&](std::vector<AttemptEnd>& to, std::vector<RemoteEnd>&) { to.push_back(std::move(end)); });
}

void StepPipeline::post_ends(std::vector<AttemptEnd>& batch) {
    offer([&](std::vector<AttemptEnd>& to, std::vector<RemoteEnd>&) { move_all(to, batch); });
}

void StepPipeline::post_remote(RemoteEnd end) {
    offer([&](std::vector<AttemptEnd>&, std::vector<RemoteEnd>& to) { to.push_back(std::move(end)); });
}

void StepPipeline::serve_ends(const EngineHeld& held, core::Time now) {
    s_.holding(held);
    inbox_.take(ends_, remote_ends_);
    for (RemoteEnd& end : remote_ends_) serve_remote(held, end, now);
    remote_ends_.clear();
    for (AttemptEnd& end : ends_) {
        Attempt& a = *end.attempt;
        const bool live = s_.engine.complete(a.lease, to_outcome(end.output), now);
        if (live) {
            a.record->output = std::move(end.output.output);
            if (a.record->live.get() == &a) a.record->live.reset();
            // Not live: the engine abandoned the attempt, and what it threw
            // on the way out (operation_aborted) is expected, not a panic.
            if (end.output.error && end.output.error->message().rfind("panic: ", 0) == 0)
                s_.log([id = task_id(*a.task), attempt = a.attempt, message = end.output.error->message()] {
                    logger()->warn("task {} attempt {}: executor {}", id.value, attempt, message);
                });
        }
        if (!s_.launcher.unlink(s_.held(), a))
            s_.log([id = task_id(*a.task), lease = a.lease] {
                logger()->warn("task {} lease {}: abandoned attempt returned after shutdown; its result was ignored",
                               id.value, lease.value);
            });
    }
    ends_.clear();
    s_.actions.apply(held, now);
    s_.shutdown.check_drained(s_.held());  // also when the ends left no action
    // Idle now: no other task could run before the waiters these ends
    // complete, so if this thread is in an attempt's completion they resume
    // in place, not after a trip round the io_context. A busy scheduler
    // posts them, and one awaiting coroutine then finds many results ready
    // at once.
    if (s_.engine.live_tasks() == 0) ResumeInPlace::want();
}

// A remote report: the lease must be live and the worker's (the engine
// checks both and counts the rest late).
void StepPipeline::serve_remote(const EngineHeld& held, RemoteEnd& end, core::Time now) {
    s_.holding(held);
    switch (end.kind) {
        case RemoteEnd::Kind::Heartbeat: s_.engine.heartbeat(end.lease, now, end.worker); return;
        case RemoteEnd::Kind::Nack:
            if (s_.engine.nack(end.lease, end.reason, now, end.worker)) break;
            return;
        case RemoteEnd::Kind::Ended:
            if (s_.engine.complete(end.lease, to_outcome(end.output), now, end.worker)) break;
            return;
    }
    auto attempt = s_.remote.end_lease(s_.held(), end.lease);
    if (!attempt) return;
    if (end.kind == RemoteEnd::Kind::Ended) attempt->record->output = std::move(end.output.output);
    if (attempt->record->live == attempt) attempt->record->live.reset();
}

}  // namespace cronoq::detail
