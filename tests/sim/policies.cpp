// The policies the loop drives: the engine (with or without shares), plain
// FIFO and strict class priority. Every policy sees the same arrivals,
// service times, fixed starts and attempt outcomes.
#include "loop.hpp"
#include "sim.hpp"

#include <cronoq/core/engine.hpp>

#include <array>
#include <cmath>
#include <deque>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace cronoq::sim {

namespace {

core::Time at(Nanos n) { return core::Time(core::Duration(n)); }

core::Outcome outcome_of(AttemptEnd end) {
    switch (end) {
        case AttemptEnd::Retryable: return core::Outcome::retryable("simulated failure");
        case AttemptEnd::Permanent: return core::Outcome::permanent("simulated failure");
        case AttemptEnd::Success:
        default: return core::Outcome::success();
    }
}

// ---- the engine ---------------------------------------------------------------

class EnginePolicy {
public:
    EnginePolicy(Loop& loop, const Trace& trace, const SimConfig& config, Policy policy)
        : loop_(loop), trace_(trace), engine_(engine_config(policy, config)), lease_(trace.tasks.size()) {
        core::PoolConfig pool;
        pool.name = "sim";
        pool.capacity = config.workers;
        pool_ = engine_.add_pool(pool);
        kind_ = engine_.intern_kind(trace.workload->name);
        task_of_.reserve(trace.tasks.size());
    }

    void arrive(std::uint32_t task, Nanos now) {
        const TaskRec& t = trace_.tasks[task];
        core::TaskSpec spec;
        spec.pool = pool_;
        spec.priority = t.priority;
        spec.kind = kind_;
        // The hint is the real service time: latest start = deadline - service.
        // Without it (failures variant) the engine uses the learned mean.
        if (trace_.variant != Variant::Failures) spec.duration_hint = core::Duration(t.service);
        if (t.has_deadline) spec.deadline = at(t.deadline);
        if (t.has_start()) spec.start = at(t.start);
        auto id = engine_.submit(spec, at(now));
        if (!id) {
            if (id.error() == SubmitError::ReservationConflict)
                loop_.reject(task);
            else
                loop_.problem("submit rejected: " + id.message());
            return;
        }
        task_of_.emplace(id.value().value, task);
        apply(now);
    }

    void complete(std::uint32_t task, AttemptEnd end, Nanos now) {
        if (!engine_.complete(lease_[task], outcome_of(end), at(now)))
            loop_.problem("completion of task " + std::to_string(task) + " was not live");
        apply(now);
    }

    Nanos next_wakeup() const {
        const auto wake = engine_.next_wakeup();
        return wake ? wake->time_since_epoch().count() : never;
    }

    void wake(Nanos now) {
        engine_.tick(at(now));
        apply(now);
    }

    /// Checks the engine's counters against the loop's record.
    void reconcile() {
        RunResult& r = loop_.result();
        const core::PoolCounters c = engine_.counters(pool_);
        std::array<std::uint64_t, 4> ended{};
        for (Ended e : r.ended) ++ended[static_cast<std::size_t>(e)];
        if (c.submitted != task_of_.size()) loop_.problem("engine submitted != tasks admitted");
        if (c.dispatched != r.dispatches) loop_.problem("engine dispatched != attempts started");
        if (c.succeeded != ended[static_cast<std::size_t>(Ended::Succeeded)]) loop_.problem("engine succeeded != ended so");
        if (c.failed != ended[static_cast<std::size_t>(Ended::Failed)]) loop_.problem("engine failed != ended so");
        if (c.dead_lettered != ended[static_cast<std::size_t>(Ended::DeadLettered)])
            loop_.problem("engine dead-lettered != ended so");
        if (c.retried != r.retries) loop_.problem("engine retried != retries seen");
        if (c.running != r.running_at_horizon) loop_.problem("engine running != running in the loop");
        if (c.ready + c.scheduled + c.retrying != r.waiting_at_horizon)
            loop_.problem("engine ready + scheduled + retrying != waiting in the loop");
        if (engine_.live_tasks() != c.running + c.ready + c.scheduled + c.retrying)
            loop_.problem("engine live tasks != running + waiting");
        if (engine_.late_reports() != 0) loop_.problem("late reports");
    }

private:
    void apply(Nanos now) {
        engine_.drain(actions_);
        for (const core::Action& a : actions_) {
            if (const auto* d = std::get_if<core::Dispatch>(&a)) {
                const auto task = task_index(d->task);
                if (!task) continue;
                if (d->attempt != loop_.attempts(*task) + 1) loop_.problem("unexpected attempt number");
                if (ScoreModel* model = loop_.model()) {
                    const auto choice = model->head_rule_choice(now);
                    if (!choice || *choice != *task) ++loop_.result().head_rule_mismatches;
                }
                lease_[*task] = d->lease;
                loop_.start(*task, now);
            } else if (const auto* st = std::get_if<core::Status>(&a)) {
                const auto task = task_index(st->task);
                if (!task) continue;
                switch (st->status) {
                    case TaskStatus::Succeeded: loop_.end(*task, Ended::Succeeded, now); break;
                    case TaskStatus::Failed: loop_.end(*task, Ended::Failed, now); break;
                    case TaskStatus::DeadLettered: loop_.end(*task, Ended::DeadLettered, now); break;
                    case TaskStatus::Retrying: loop_.retried(*task); break;
                    case TaskStatus::Ready:
                    case TaskStatus::Scheduled:
                    case TaskStatus::Running: break;
                    default: loop_.problem("unexpected status " + std::string(to_string(st->status))); break;
                }
            } else if (std::holds_alternative<core::Abort>(a)) {
                loop_.problem("unexpected abort");
            }
        }
    }

    std::optional<std::uint32_t> task_index(TaskId id) {
        const auto it = task_of_.find(id.value);
        if (it != task_of_.end()) return it->second;
        loop_.problem("an action for an unknown task id");
        return std::nullopt;
    }

    Loop& loop_;
    const Trace& trace_;
    core::Engine engine_;
    core::PoolId pool_ = 0;
    core::KindId kind_ = 0;
    std::vector<LeaseId> lease_;
    std::unordered_map<std::uint64_t, std::uint32_t> task_of_;
    std::vector<core::Action> actions_;
};

// ---- the baselines ------------------------------------------------------------

/// Plain FIFO (one queue in the order tasks become ready) or strict priority
/// (one FIFO per class, best class first; no aging, no urgency). A fixed
/// start joins the queue at its start; a failed attempt is retried under
/// RetryPolicy{}'s backoff (full jitter from a generator of its own).
class BaselinePolicy {
public:
    BaselinePolicy(Loop& loop, const Trace& trace, const SimConfig& config, bool strict)
        : loop_(loop), trace_(trace), free_(config.workers), strict_(strict), jitter_(config.seed ^ 0xba5e11e5ULL) {}

    void arrive(std::uint32_t task, Nanos now) {
        const TaskRec& t = trace_.tasks[task];
        if (t.has_start() && t.start > now) {
            timers_.emplace(t.start, task);
            return;
        }
        enqueue(task);
        dispatch(now);
    }

    void complete(std::uint32_t task, AttemptEnd end, Nanos now) {
        ++free_;
        switch (end) {
            case AttemptEnd::Success: loop_.end(task, Ended::Succeeded, now); break;
            case AttemptEnd::Permanent: loop_.end(task, Ended::Failed, now); break;
            case AttemptEnd::Retryable:
                if (loop_.attempts(task) >= max_attempts) {
                    loop_.end(task, Ended::DeadLettered, now);
                } else {
                    loop_.retried(task);
                    timers_.emplace(now + backoff(loop_.attempts(task) + 1), task);
                }
                break;
        }
        dispatch(now);
    }

    Nanos next_wakeup() const { return timers_.empty() ? never : timers_.top().first; }

    void wake(Nanos now) {
        while (!timers_.empty() && timers_.top().first <= now) {
            enqueue(timers_.top().second);
            timers_.pop();
        }
        dispatch(now);
    }

private:
    // docs/guide/ordering.md with RetryPolicy{}: uniform in [0, min(1 s x 2^(n-2), 60 s)].
    Nanos backoff(std::uint32_t next_attempt) {
        const double ceiling = std::min(std::ldexp(1.0, static_cast<int>(next_attempt) - 2), 60.0);
        return static_cast<Nanos>(std::llround(ceiling * jitter_.uniform() * 1e9));
    }

    void enqueue(std::uint32_t task) {
        queues_[strict_ ? index_of(trace_.tasks[task].priority) : 0].push_back(task);
    }

    void dispatch(Nanos now) {
        while (free_ > 0) {
            std::deque<std::uint32_t>* queue = nullptr;
            for (auto& q : queues_)
                if (!q.empty()) {
                    queue = &q;
                    break;
                }
            if (!queue) return;
            const std::uint32_t task = queue->front();
            queue->pop_front();
            --free_;
            loop_.start(task, now);
        }
    }

    using Timer = std::pair<Nanos, std::uint32_t>;  // (when, task): a start or the end of a backoff
    Loop& loop_;
    const Trace& trace_;
    std::size_t free_;
    bool strict_;
    Rng jitter_;
    std::array<std::deque<std::uint32_t>, priority_count> queues_;
    std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
};

}  // namespace

RunResult run_policy(const Trace& trace, Policy policy, const SimConfig& config) {
    Loop loop(trace, policy, config);
    if (is_engine(policy)) {
        EnginePolicy engine(loop, trace, config, policy);
        loop.run(engine);
        engine.reconcile();
    } else {
        BaselinePolicy baseline(loop, trace, config, policy == Policy::Strict);
        loop.run(baseline);
    }
    return std::move(loop.result());
}

}  // namespace cronoq::sim
