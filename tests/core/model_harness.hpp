#pragma once
// The randomized-model harness the invariant suites share
// (invariant_test.cpp, graph_invariant_test.cpp, resource_invariant_test.cpp):
// the seeds and the number of calls (CRONOQ_SEED / CRONOQ_STEPS), the loop
// of random calls with an optional shutdown part-way, the two endings
// (shut down, or let every task finish), the end-of-run checks that hold
// for every suite, and the failure report (seed, step, the failing call,
// the model time, the suite's own view and the actions of that call).
// A suite derives its model from ModelRun and brings what is its own: the
// model, its random calls (random_step), the handling of each action
// (walk_actions checks how they come) and the checks after every call.
#include "engine_harness.hpp"
#include "random_calls.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace cronoq::core::test {

/// A suite's fixed run: its seeds, its calls per seed and where in the run
/// the part-way shutdown comes (after `shutdown_num / shutdown_den` of the
/// calls).
struct SuiteRun {
    std::array<std::uint64_t, 5> default_seeds;
    int default_steps;
    int shutdown_num;
    int shutdown_den;

    /// CRONOQ_SEED, or the suite's seeds.
    std::vector<std::uint64_t> seeds() const { return seeds_or(default_seeds); }
    /// CRONOQ_STEPS, or the suite's calls per seed.
    int steps() const { return steps_or(default_steps); }
    /// The default seeds at full length (see random_calls.hpp).
    bool default_run() const { return test::default_run(default_steps); }
};

/// How a run ends after its random calls.
enum class Ending {
    ShutdownMidway,      ///< a shutdown with some grace part-way, then one with none
    CompleteEverything,  ///< every task finishes, then an idle shutdown
};

/// One call a suite makes to the engine, as its model takes it.
struct ModelCall {
    enum class Kind {
        Submit,
        Complete,
        DeadComplete,  ///< a completion with a lease that has ended
        Heartbeat,
        Cancel,
        SetCapacity,
        SetRate,
        Tick,
        Shutdown,
        ScalerAnswer,
    };
    Kind kind = Kind::Tick;
    TaskId task{};
    LeaseId lease{};
    Outcome outcome{};
    std::optional<PoolId> pool;  ///< set_capacity: the pool it changed; answer_scaler: the pool answered
    bool silent = false;         ///< the call must emit no action (and runs no housekeeping)
};

inline const char* call_name(ModelCall::Kind k) {
    using K = ModelCall::Kind;
    switch (k) {
        case K::Submit: return "submit";
        case K::Complete: return "complete";
        case K::DeadComplete: return "complete (dead lease)";
        case K::Heartbeat: return "heartbeat";
        case K::Cancel: return "cancel";
        case K::SetCapacity: return "set_capacity";
        case K::SetRate: return "set_rate";
        case K::Tick: return "tick";
        case K::Shutdown: return "shutdown";
        case K::ScalerAnswer: return "answer_scaler";
    }
    return "?";
}

/// The cumulative counters of pool `q`: the engine's (`c`) against the
/// model's (`x`). Every one is compared; a suite whose calls never make
/// one happen expects it at 0.
inline void check_cumulative(const PoolCounters& c, const PoolCounters& x, PoolId q) {
    ASSERT_EQ(c.submitted, x.submitted) << "pool " << q;
    ASSERT_EQ(c.dispatched, x.dispatched) << "pool " << q;
    ASSERT_EQ(c.succeeded, x.succeeded) << "pool " << q;
    ASSERT_EQ(c.failed, x.failed) << "pool " << q;
    ASSERT_EQ(c.dead_lettered, x.dead_lettered) << "pool " << q;
    ASSERT_EQ(c.cancelled, x.cancelled) << "pool " << q;
    ASSERT_EQ(c.retried, x.retried) << "pool " << q;
    ASSERT_EQ(c.timed_out, x.timed_out) << "pool " << q;
    ASSERT_EQ(c.lease_expired, x.lease_expired) << "pool " << q;
    ASSERT_EQ(c.skipped, x.skipped) << "pool " << q;
    ASSERT_EQ(c.missed, x.missed) << "pool " << q;
    ASSERT_EQ(c.shed, x.shed) << "pool " << q;
    ASSERT_EQ(c.starts_on_time, x.starts_on_time) << "pool " << q;
    ASSERT_EQ(c.starts_late, x.starts_late) << "pool " << q;
}

/// The SCOPED_TRACE of a seed's test.
inline std::string rerun_hint(std::uint64_t seed) {
    return "seed " + std::to_string(seed) + " (rerun with CRONOQ_SEED=" + std::to_string(seed) + ")";
}

/// One line per action, for failure reports.
inline std::string show_actions(const std::vector<Action>& actions) {
    std::ostringstream os;
    for (const Action& a : actions) {
        if (const auto* d = std::get_if<Dispatch>(&a))
            os << "  Dispatch task " << d->task.value << " lease " << d->lease.value << " pool " << d->pool
               << " attempt " << d->attempt << "\n";
        else if (const auto* ab = std::get_if<Abort>(&a))
            os << "  Abort task " << ab->task.value << " lease " << ab->lease.value << " " << to_string(ab->reason)
               << "\n";
        else if (const auto* st = std::get_if<Status>(&a))
            os << "  Status task " << st->task.value << " pool " << st->pool << " " << to_string(st->status)
               << " attempt " << st->attempt << " \"" << st->message << "\"\n";
        else if (const auto* sc = std::get_if<ScaleTo>(&a))
            os << "  ScaleTo pool " << sc->pool << " to " << sc->capacity << "\n";
        else if (const auto* sp = std::get_if<SpaceAvailable>(&a))
            os << "  SpaceAvailable pool " << sp->pool << "\n";
        else if (const auto* fg = std::get_if<Forget>(&a))
            os << "  Forget task " << fg->task.value << "\n";
        else if (const auto* q = std::get_if<AskScaler>(&a))
            os << "  AskScaler pool " << q->pool << "\n";
    }
    return os.str();
}

/// The base of a suite's model: owns the run (seed, generator, step, the
/// call being made and its actions) and drives it through the hooks below.
class ModelRun {
public:
    virtual ~ModelRun() = default;

    /// The whole run of one seed: the random calls, the ending, and the
    /// checks once everything has ended (common ones, then the suite's).
    void run_to_end(Ending ending) {
        run(suite_.steps(), ending == Ending::ShutdownMidway);
        if (::testing::Test::HasFailure()) return;
        if (ending == Ending::ShutdownMidway)
            do_shutdown(clock());
        else
            finish_by_completing();
        if (::testing::Test::HasFailure()) return;
        check_every_task_ended();
        if (::testing::Test::HasFailure()) return;
        check_end();
    }

    /// `n` random calls; with `shutdown_midway`, a shutdown with some grace
    /// comes where the suite says. Stops at the first failure.
    void run(int n, bool shutdown_midway) {
        for (step_ = 0; step_ < n; ++step_) {
            if (shutdown_midway && step_ == n * suite_.shutdown_num / suite_.shutdown_den)
                shutdown_midway_call();
            else
                random_step();
            if (failed()) return;
        }
    }

protected:
    ModelRun(const SuiteRun& suite, std::uint64_t seed) : suite_(suite), seed_(seed), rnd_(seed) {}

    // ---- what a suite brings --------------------------------------------------------------------

    virtual const Engine& engine() const = 0;
    /// The model's time (calls are made at it).
    virtual Time& clock() = 0;
    /// One random call (or a few), each applied to the model and checked.
    virtual void random_step() = 0;
    /// The part-way shutdown: draws its grace and shuts down.
    virtual void shutdown_midway_call() = 0;
    virtual void do_shutdown(Time grace_end) = 0;
    virtual void do_tick() = 0;
    /// Before every task is made to finish: open slots (and whatever else
    /// holds tasks back).
    virtual void open_everything() = 0;
    /// The model's live tasks, and what the harness asks of them.
    virtual std::vector<std::size_t> live_indices() const = 0;
    virtual bool running(std::size_t idx) const = 0;
    virtual void complete_with_success(std::size_t idx) = 0;
    /// Every task the model has seen, and its terminal Status count.
    virtual std::size_t task_count() const = 0;
    virtual int terminal_events(std::size_t idx) const = 0;
    virtual std::string show_task(std::size_t idx) const = 0;
    /// The suite's own checks once everything has ended.
    virtual void check_end() = 0;
    /// The suite's view of its model in a failure report ("" for none).
    virtual std::string failure_context() { return {}; }

    // ---- what the harness gives -----------------------------------------------------------------

    /// True once the test has failed; the first time, reports where.
    bool failed() {
        if (!::testing::Test::HasFailure()) return false;
        if (!reported_) {
            reported_ = true;
            ADD_FAILURE() << "seed " << seed_ << ": failed at step " << step_ << " (" << call_
                          << ") at t=" << to_seconds(clock() - t0) << " s; rerun with CRONOQ_SEED=" << seed_
                          << " CRONOQ_STEPS=" << suite_.steps() << "\n"
                          << failure_context() << "actions of that call:\n"
                          << show_actions(actions_);
        }
        return true;
    }

    /// Names the call about to be made, for the failure report.
    void describe(const ModelCall& call, const std::string& extra = {}) {
        std::ostringstream os;
        os << call_name(call.kind);
        if (call.task) os << " task " << call.task.value;
        if (call.lease) os << " lease " << call.lease.value;
        os << extra;
        call_ = os.str();
    }

    /// Hands the latest call's actions to `on` in order, checking how they
    /// come: a Dispatch is followed by its Status Running (same task, pool,
    /// attempt, time `now`, no message), an Abort by its task's Status. Calls
    /// on(dispatch), on(abort, its_status), and on(x) for any other action
    /// (a Status that follows no Dispatch or Abort among them). Stops at
    /// the first fatal failure.
    template <class On>
    void walk_actions(Time now, On&& on) {
        for (std::size_t i = 0; i < actions_.size(); ++i) {
            const Status* paired = i + 1 < actions_.size() ? std::get_if<Status>(&actions_[i + 1]) : nullptr;
            std::visit(
                [&](const auto& x) {
                    using X = std::decay_t<decltype(x)>;
                    if constexpr (std::is_same_v<X, Dispatch>) {
                        ASSERT_TRUE(paired && paired->task == x.task && paired->status == TaskStatus::Running &&
                                    paired->attempt == x.attempt && paired->pool == x.pool && paired->at == now &&
                                    paired->message.empty())
                            << "Dispatch of task " << x.task.value << " not followed by its Status Running";
                        on(x);
                        ++i;
                    } else if constexpr (std::is_same_v<X, Abort>) {
                        ASSERT_TRUE(paired && paired->task == x.task)
                            << "Abort of task " << x.task.value << " not followed by the task's Status";
                        on(x, *paired);
                        ++i;
                    } else {
                        on(x);
                    }
                },
                actions_[i]);
            if (::testing::Test::HasFatalFailure()) return;
        }
    }

    /// A random index of `live` that satisfies `pred`, if any.
    template <class Pred>
    std::optional<std::size_t> pick_index(const std::vector<std::size_t>& live, Pred pred) {
        if (live.empty()) return std::nullopt;
        const std::size_t start = rnd_.below(live.size());
        for (std::size_t i = 0; i < live.size(); ++i) {
            const std::size_t idx = live[(start + i) % live.size()];
            if (pred(idx)) return idx;
        }
        return std::nullopt;
    }

    const SuiteRun suite_;
    const std::uint64_t seed_;
    Random rnd_;
    int step_ = 0;
    std::vector<Action> actions_;  ///< the latest call's actions

private:
    /// Lets every task end: opens everything, completes whatever runs with
    /// success and ticks through what is timed; then shuts down (idle).
    void finish_by_completing() {
        open_everything();
        if (failed()) return;
        for (int guard = 0; guard < 200000 && !live_indices().empty(); ++guard) {
            bool any = false;
            for (std::size_t idx : live_indices()) {
                if (!running(idx)) continue;
                any = true;
                complete_with_success(idx);
                if (failed()) return;
            }
            const std::vector<std::size_t> live = live_indices();
            if (any || live.empty()) continue;
            const auto wake = engine().next_wakeup();
            ASSERT_TRUE(wake.has_value()) << "stuck: " << live.size()
                                          << " live task(s), none running, no wakeup; first: "
                                          << show_task(live.front());
            clock() = std::max(clock(), *wake);
            do_tick();
            if (failed()) return;
        }
        ASSERT_TRUE(live_indices().empty()) << "tasks still live after every completion";
        do_shutdown(clock());
    }

    /// What holds at the end of every suite's run: nothing live, and every
    /// task had exactly one terminal Status.
    void check_every_task_ended() {
        ASSERT_EQ(engine().live_tasks(), 0u);
        for (std::size_t idx = 0; idx < task_count(); ++idx)
            ASSERT_EQ(terminal_events(idx), 1) << show_task(idx);
    }

    std::string call_;
    bool reported_ = false;
};

}  // namespace cronoq::core::test
