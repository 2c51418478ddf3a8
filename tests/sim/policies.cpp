// The event loop, and the three policies it drives: the engine, plain FIFO
// and strict class priority. Every policy sees the same arrivals and service
// times; a completion at time t is handled before an arrival at t.
#include "score_model.hpp"
#include "sim.hpp"

#include <cronoq/core/engine.hpp>

#include <array>
#include <deque>
#include <limits>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace cronoq::sim {

namespace {

core::Time at(Nanos n) { return core::Time(core::Duration(n)); }

/// What every policy shares: the running attempts, the score model and the
/// record of dispatches.
class Loop {
public:
    Loop(const Trace& trace, Policy policy, const SimConfig& config)
        : trace_(trace), workers_(config.workers), model_(trace, config.engine, config.verify_model) {
        result_.policy = policy;
        result_.dispatched.assign(trace.tasks.size(), not_yet);
        result_.finished.assign(trace.tasks.size(), not_yet);
    }

    /// Runs to the horizon, calling `policy.arrive(i, now)` and
    /// `policy.complete(i, now)`.
    template <class P>
    void run(P& policy) {
        std::size_t next_arrival = 0;
        while (true) {
            const Nanos arrival = next_arrival < trace_.tasks.size() ? trace_.tasks[next_arrival].arrival : never;
            const Nanos completion = running_.empty() ? never : running_.top().first;
            const Nanos now = std::min(arrival, completion);
            if (now == never || now > trace_.horizon) break;
            if (completion <= arrival) {
                const std::uint32_t task = running_.top().second;
                running_.pop();
                result_.finished[task] = now;
                policy.complete(task, now);
            } else {
                const auto task = static_cast<std::uint32_t>(next_arrival++);
                model_.arrive(task);
                policy.arrive(task, now);
            }
        }
        result_.running_at_horizon = running_.size();
        result_.queued_at_horizon = model_.ready();
        result_.model_mismatches = model_.verify_mismatches();
    }

    /// A policy starts `task` at `now`.
    void start(std::uint32_t task, Nanos now) {
        if (result_.dispatched[task] != not_yet) {
            problem("task " + std::to_string(task) + " dispatched twice");
            return;
        }
        if (running_.size() >= workers_) problem("more attempts running than workers");
        const ScoreModel::Verdict v = model_.dispatch(task, now);
        ++result_.dispatches;
        if (v.contended) {
            ++result_.contended;
            if (v.best) ++result_.contended_best;
        }
        result_.dispatched[task] = now;
        running_.emplace(now + trace_.tasks[task].service, task);
    }

    ScoreModel& model() { return model_; }
    RunResult& result() { return result_; }
    void problem(std::string what) {
        if (result_.problems.size() < 10) result_.problems.push_back(std::move(what));
    }

private:
    static constexpr Nanos never = std::numeric_limits<Nanos>::max();
    using Running = std::pair<Nanos, std::uint32_t>;  // (completion time, task)

    const Trace& trace_;
    std::size_t workers_;
    ScoreModel model_;
    RunResult result_;
    std::priority_queue<Running, std::vector<Running>, std::greater<>> running_;
};

// ---- the engine ---------------------------------------------------------------

class EnginePolicy {
public:
    EnginePolicy(Loop& loop, const Trace& trace, const SimConfig& config)
        : loop_(loop), trace_(trace), engine_(config.engine), lease_(trace.tasks.size()) {
        core::PoolConfig pool;
        pool.name = "sim";
        pool.capacity = config.workers;
        pool_ = engine_.add_pool(pool);
        kind_ = engine_.intern_kind(trace.workload->name);
        task_of_.reserve(trace.tasks.size());
    }

    void arrive(std::uint32_t task, Nanos now) {
        catch_up(now);
        const TaskRec& t = trace_.tasks[task];
        core::TaskSpec spec;
        spec.pool = pool_;
        spec.priority = t.priority;
        spec.kind = kind_;
        // The hint is the real service time: latest start = deadline - service.
        spec.duration_hint = core::Duration(t.service);
        if (t.has_deadline) spec.deadline = at(t.deadline);
        auto id = engine_.submit(spec, at(now));
        if (!id) {
            loop_.problem("submit rejected: " + id.message());
            return;
        }
        task_of_.emplace(id.value().value, task);
        apply(now);
    }

    void complete(std::uint32_t task, Nanos now) {
        catch_up(now);
        if (!engine_.complete(lease_[task], core::Outcome::success(), at(now)))
            loop_.problem("completion of task " + std::to_string(task) + " was not live");
        apply(now);
    }

    /// Checks the engine's counters against the loop's record.
    void reconcile() {
        RunResult& r = loop_.result();
        const core::PoolCounters c = engine_.counters(pool_);
        std::uint64_t finished = 0;
        for (Nanos f : r.finished) finished += f != not_yet;
        std::uint64_t arrived = task_of_.size();
        if (c.submitted != arrived) loop_.problem("engine submitted " + std::to_string(c.submitted) + " != arrived " + std::to_string(arrived));
        if (c.dispatched != r.dispatches) loop_.problem("engine dispatched != dispatches seen");
        if (c.succeeded != finished) loop_.problem("engine succeeded != finished");
        if (c.running != r.running_at_horizon) loop_.problem("engine running != running in the loop");
        if (c.ready != r.queued_at_horizon) loop_.problem("engine ready != queued in the model");
        if (engine_.live_tasks() != c.running + c.ready) loop_.problem("engine live tasks != running + ready");
        if (engine_.late_reports() != 0) loop_.problem("late reports");
    }

private:
    // No task here has a timeout or lease, so the engine should never want a
    // wakeup; tick anyway if it does, as a driver would.
    void catch_up(Nanos now) {
        while (auto wake = engine_.next_wakeup()) {
            if (*wake > at(now)) break;
            engine_.tick(*wake);
            apply(wake->time_since_epoch().count());
        }
    }

    void apply(Nanos now) {
        engine_.drain(actions_);
        for (const core::Action& a : actions_) {
            if (const auto* d = std::get_if<core::Dispatch>(&a)) {
                const auto it = task_of_.find(d->task.value);
                if (it == task_of_.end()) {
                    loop_.problem("dispatch of an unknown task id");
                    continue;
                }
                const std::uint32_t task = it->second;
                if (d->attempt != 1) loop_.problem("unexpected attempt " + std::to_string(d->attempt));
                const auto choice = loop_.model().head_rule_choice(now);
                if (!choice || *choice != task) ++loop_.result().head_rule_mismatches;
                lease_[task] = d->lease;
                loop_.start(task, now);
            } else if (std::holds_alternative<core::Abort>(a)) {
                loop_.problem("unexpected abort");
            }
        }
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

/// Plain FIFO (one queue in arrival order) or strict priority (one FIFO per
/// class, best class first; no aging, no urgency).
class BaselinePolicy {
public:
    BaselinePolicy(Loop& loop, const Trace& trace, std::size_t workers, bool strict)
        : loop_(loop), trace_(trace), free_(workers), strict_(strict) {}

    void arrive(std::uint32_t task, Nanos now) {
        queues_[strict_ ? index_of(trace_.tasks[task].priority) : 0].push_back(task);
        dispatch(now);
    }

    void complete(std::uint32_t, Nanos now) {
        ++free_;
        dispatch(now);
    }

private:
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

    Loop& loop_;
    const Trace& trace_;
    std::size_t free_;
    bool strict_;
    std::array<std::deque<std::uint32_t>, priority_count> queues_;
};

}  // namespace

RunResult run_policy(const Trace& trace, Policy policy, const SimConfig& config) {
    Loop loop(trace, policy, config);
    if (policy == Policy::Cronoq) {
        EnginePolicy engine(loop, trace, config);
        loop.run(engine);
        engine.reconcile();
    } else {
        BaselinePolicy baseline(loop, trace, config.workers, policy == Policy::Strict);
        loop.run(baseline);
    }
    return std::move(loop.result());
}

}  // namespace cronoq::sim
