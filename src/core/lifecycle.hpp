#pragma once
// A task's moves from one status to another
// (docs/design.md#engine-source-layout): ready, running, terminal, retrying,
// abandoned, and the shutdown and hand-over that end them all. Every
// transition goes through here, so the pool counters, the shed lists,
// resources, worker leases, dependents and retention move together. Holds
// the components a move touches, given at construction; owns the engine's
// mode (running, shutting down, handing over) and the backoff jitter
// generator.
#include "backlog_bounds.hpp"
#include "backoff.hpp"
#include "engine_types.hpp"
#include "kind_table.hpp"
#include "outbox.hpp"
#include "resource_gate.hpp"
#include "retention.hpp"
#include "task_table.hpp"
#include "timer_heap.hpp"
#include "waiting_room.hpp"
#include "worker_roster.hpp"

#include <optional>
#include <string>
#include <vector>

namespace cronoq::core {

/// What a transition reaches besides the task table (all outlive the lifecycle).
struct LifecycleParts {
    std::vector<PoolState>& pools;
    Outbox& out;
    TimerHeap& timers;
    BacklogBounds& bounds;
    ResourceGate& resources;
    WorkerRoster& workers;
    WaitingRoom& waiting;
    Retention& retention;
    detail::KindTable& kinds;
};

class Lifecycle {
public:
    Lifecycle(TaskTable& tasks, const LifecycleParts& parts, std::uint64_t seed)
        : tasks_(tasks), pools_(parts.pools), out_(parts.out), timers_(parts.timers), bounds_(parts.bounds),
          resources_(parts.resources), workers_(parts.workers), waiting_(parts.waiting),
          retention_(parts.retention), kinds_(parts.kinds), rng_(seed) {}

    // ---- the engine's mode ------------------------------------------------------
    bool shutting_down() const { return shutting_down_; }
    /// hand_over: nothing is dispatched and only running attempts move on.
    bool handing_over() const { return handing_over_; }
    void begin_shutdown() {
        shutting_down_ = true;
        handing_over_ = false;  // after a hand-over: what is left ends here after all
    }
    void begin_hand_over() {
        shutting_down_ = true;
        handing_over_ = true;
    }
    bool report_implied = true;         // Engine::report_implied_transitions
    bool release_users_at_end = false;  // Engine::release_users_at_end

    // ---- transitions ------------------------------------------------------------
    // Takes a task out of the count of its waiting status; every transition
    // starts with it, so counts move in one place. (Running is counted by
    // its lease: end_lease.)
    void leave(TaskSlot& t);
    // Ready in the pool's queue, or with `due_start` in its queue of due
    // fixed starts, which dispatch first. `admitting`: the task is being
    // admitted (its Ready is implied, Engine::report_implied_transitions).
    void make_ready(std::uint32_t s, Time now, bool due_start = false, bool admitting = false);
    // A task being admitted without needs into a local pool that has a
    // free slot and nothing else ready: the next dispatch would take it,
    // and nothing before that dispatch could change its choice, so it
    // starts now, without a round through the queue. False (nothing done)
    // when that does not hold; the caller makes it ready instead.
    bool start_at_once(std::uint32_t s, Time now);
    // `worker`: the remote worker that takes the lease (0 in a local pool).
    // `took_best`: the dispatch took the best-scored ready task (metrics).
    void start_attempt(std::uint32_t s, Time now, WorkerId worker, bool took_best);
    // Ends the running attempt's lease; the slot it held is free again.
    // Returns what the attempt was, for the caller's report of it.
    AttemptState end_lease(TaskSlot& t, Time now);
    // Terminal: the task keeps its slot, retained until its retention ends.
    void finish(std::uint32_t s, TaskStatus status, std::string message, Time now);
    // A failed attempt that may be retried: Retrying until its backoff
    // ends, else dead-lettered (or Cancelled in a shutdown).
    void fail_retryable(std::uint32_t s, std::string message, std::optional<Duration> retry_after, Time now);
    // The engine gives up a running attempt (timeout, lease expiry,
    // cancellation, shutdown, lost worker): Abort, then what follows.
    void abandon_attempt(std::uint32_t s, AbortReason reason, Time now);
    // A shed victim (BacklogBounds::make_room) ends to make room.
    void shed(std::uint32_t s, const std::string& why, Time now);
    // A Ready task waiting after a nack that no connected worker can take
    // fails, as the nack would have had none been there.
    void fail_stranded(std::uint32_t s, Time now);
    // A Retrying task restored with its backoff still running.
    void restore_retrying(std::uint32_t s, Time until);

    // ---- moves out of waiting (what waits is the WaitingRoom's) --------------------
    // Every edge of a Blocked or new task is met: Scheduled, or Ready.
    void release(std::uint32_t s, Time now, bool admitting = false);
    // A fixed start has come: Ready at the front, or its miss policy.
    void start_due(std::uint32_t s, Time now);
    void miss_start(std::uint32_t s, Time now);
    // A due start within its tolerance is missed if no slot frees by its end.
    void arm_miss_check(std::uint32_t s, std::uint32_t gen, const StartInfo& start);
    // The pool resumed: each of its due starts that a pause held past its
    // tolerance follows its miss policy now; the others get their miss
    // check again (a pause drops it: docs/guide/operations.md, "Pause and resume").
    void resume_starts(PoolState& p, Time now);
    // An awaited key's timeout: the task that awaits it is Skipped.
    void expire_await(std::uint32_t s, Time now);
    // Tells the dependents of every task that ended; skips run down the
    // graph within this one call.
    void resolve_dependents(Time now);

    // ---- shutdown and hand-over ---------------------------------------------------
    bool any_running() const {
        for (const PoolState& p : pools_)
            if (p.counters.running > 0) return true;
        return false;
    }
    // At the end of a shutdown grace. Handing over, the tasks stay Running
    // (as the store has them) with no attempt: the next leader recovers
    // them as after a crash.
    void abort_all_running(Time now);
    // A shutdown's or hand-over's grace ends at `end` unless it ends
    // sooner already: then, or at once when it has passed, every running
    // attempt is aborted.
    void shorten_grace(Time now, Time end);

    Duration expected_duration(const TaskSlot& t) const {
        const TaskExtras* e = tasks_.find_extras(t);
        return pools_[t.pool].expected_duration(t.kind, e ? e->duration_hint : Duration{});
    }

private:
    // Ready (counted, a scaler told of its arrival), in no queue yet.
    // Returns its fair key's weight in the pool.
    double become_ready(std::uint32_t s, Time now);
    void unpark_key(PoolState& p, std::uint32_t key);
    const RetryPolicy& retry_of(const TaskSlot& t) const {
        const TaskExtras* e = tasks_.find_extras(t);
        return e && e->retry ? *e->retry : pools_[t.pool].config.retry;
    }
    /// Per attempt; 0: none.
    Duration timeout_of(const TaskSlot& t) const {
        const TaskExtras* e = tasks_.find_extras(t);
        if (e && e->timeout) return *e->timeout;
        return pools_[t.pool].config.default_timeout.value_or(Duration{});
    }

    TaskTable& tasks_;
    std::vector<PoolState>& pools_;
    Outbox& out_;
    TimerHeap& timers_;
    BacklogBounds& bounds_;
    ResourceGate& resources_;
    WorkerRoster& workers_;
    WaitingRoom& waiting_;
    Retention& retention_;
    detail::KindTable& kinds_;
    detail::Rng rng_;
    bool shutting_down_ = false;
    bool handing_over_ = false;
    Time grace_end_ = never;
};

}  // namespace cronoq::core
