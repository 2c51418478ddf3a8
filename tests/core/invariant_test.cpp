// Randomized invariant test of the engine.
//
// Thousands of random calls per seed (submits of every shape, completions
// with every outcome, late reports, heartbeats, cancels, capacity changes,
// ticks at the next wakeup or at random times, shutdown). A model is built
// only from the drained actions, and after EVERY call the engine is checked
// against it:
//   - each task is in exactly one state; Status transitions are legal and
//     carry the right attempt, time and message;
//   - a Dispatch is only for a Ready task, only while running < capacity,
//     with a lease never seen before, and picks the best task by the docs/guide/ordering.md
//     score: no queue head (per class, the FIFO head and the deadline-heap
//     head) beats it, no deadline-free ready task scores more, and FIFO
//     order holds within each class; or, when a class is owed its share
//     (random min_share per seed), that class's longest-waiting head. The
//     window factor is random per seed too (ordering_model.hpp);
//   - counters(pool) (running, ready, retrying and the cumulative ones),
//     live_tasks(), late_reports() and retained_tasks() match the model;
//   - no slot stays idle while a task of its pool is Ready;
//   - Aborts only at or after their timeout / expiry / grace end, retries
//     only after their backoff floor; next_wakeup() is never later than the
//     next due event, empty when nothing is timed, and after a tick nothing
//     due is left.
// At the end (shutdown with zero grace, or completing everything) every
// submitted task has had exactly one terminal Status and live_tasks() == 0.
//
// Seeds: a fixed list; CRONOQ_SEED=<n> runs that seed instead,
// CRONOQ_STEPS=<n> changes the number of calls per seed.
//
// The model and its action handlers are in invariant_model.hpp, the
// checks after every call in invariant_checks.hpp, the run itself (seeds, the loop of calls, the
// endings, the failure report) in model_harness.hpp; this file holds the
// generator and the TESTs.
#include "invariant_checks.hpp"

namespace cronoq::core::test::invariant_model::invariant_test {
namespace {

class Sim : public InvariantChecks {
public:
    explicit Sim(std::uint64_t seed) : InvariantChecks(seed) {
        add_pool(PoolConfig{.name = "leased", .capacity = 2, .lease_ttl = 3s});
        add_pool(PoolConfig{.name = "timed",
                            .capacity = 1,
                            .retry = RetryPolicy{4, 500ms, 3.0, 10s, false},
                            .default_timeout = 8s});
        add_pool(PoolConfig{.name = "plain", .capacity = 3, .retry = RetryPolicy::none()});
    }

private:
    // ---- the harness's hooks (model_harness.hpp) --------------------------------------------

    void shutdown_midway_call() override { do_shutdown(now_ + rnd_.between(0s, 5s)); }
    void open_everything() override {
        for (PoolId p = 0; p < pools_.size(); ++p) do_set_capacity(p, 3);
    }
    void complete_with_success(std::size_t idx) override { do_complete(idx, Outcome::success()); }

    /// What must hold once everything has ended, beyond the harness's checks.
    void check_end() override {
        ASSERT_FALSE(engine_.next_wakeup().has_value()) << "a timer outlived every task";
        ASSERT_TRUE(live_leases_.empty());
        for (const TaskModel& t : tasks_) ASSERT_TRUE(is_terminal(t.state)) << "task " << t.id.value;
        for (PoolId p = 0; p < pools_.size(); ++p) {
            const PoolCounters c = engine_.counters(p);
            EXPECT_EQ(c.running, 0u);
            EXPECT_EQ(c.ready, 0u);
            EXPECT_EQ(c.retrying, 0u);
            EXPECT_EQ(c.succeeded + c.failed + c.dead_lettered + c.cancelled, c.submitted);
        }
    }

    // ---- random calls ------------------------------------------------------------------------

    void random_step() override {
        const auto r = rnd_.below(1000);
        if (r >= 300) {
            if (r < 900) {
                now_ += rnd_.between(1ns, 300ms);
            } else if (r < 990) {
                now_ += rnd_.between(300ms, 5s);
            } else {
                now_ += rnd_.between(20s, 60s);
            }
            // Every engine call first processes what is due; the model
            // predicts that only for tick, so time moves through a tick.
            do_tick();
            if (::testing::Test::HasFailure()) return;
        }
        const auto op = rnd_.below(100);
        if (op < 28) return do_submit();
        if (op < 50) {
            if (auto idx = pick_live([](const TaskModel& t) { return t.state == S::Running; }))
                return do_complete(*idx, random_outcome());
            return do_submit();
        }
        if (op < 54) return do_late_complete();
        if (op < 62) return do_heartbeat();
        if (op < 69) return do_cancel();
        if (op < 73) return do_set_capacity(static_cast<PoolId>(rnd_.below(pools_.size())), rnd_.below(5));
        if (op < 88) {
            if (auto wake = engine_.next_wakeup()) now_ = std::max(now_, *wake);
            return do_tick();
        }
        if (op < 96) now_ += rnd_.between(0s, 10s);
        do_tick();
    }

    template <class Pred>
    std::optional<std::size_t> pick_live(Pred pred) {
        return pick_index(live_, [&](std::size_t idx) { return pred(tasks_[idx]); });
    }

    RetryPolicy random_policy() {
        RetryPolicy p;
        p.max_attempts = static_cast<std::uint32_t>(1 + rnd_.below(4));
        p.initial_backoff = rnd_.chance(15) ? Duration{0} : rnd_.between(1ms, 2s);
        p.multiplier = std::array<double, 4>{0.0, 1.0, 2.0, 3.5}[rnd_.below(4)];
        p.max_backoff = rnd_.chance(10) ? Duration{0} : rnd_.between(1ms, 10s);
        p.jitter = rnd_.chance(50);
        return p;
    }

    Outcome random_outcome() {
        const auto r = rnd_.below(100);
        const std::string msg = "m" + std::to_string(rnd_.below(1000));
        if (r < 40) return Outcome::success();
        if (r < 65) return Outcome::retryable(msg);
        if (r < 75) return Outcome::retryable(msg, rnd_.between(0s, 5s));
        if (r < 85) return Outcome::permanent(msg);
        return Outcome::cancelled(msg);
    }

    void do_submit() {
        TaskSpec spec;
        std::optional<SubmitError> expect;
        spec.pool = static_cast<PoolId>(rnd_.below(pools_.size()));
        spec.priority = static_cast<Priority>(rnd_.below(priority_count));
        if (rnd_.chance(30)) {
            spec.deadline = now_ - 5s + rnd_.between(0s, 65s);
            spec.duration_hint = rnd_.between(100ms, 5s);
        } else if (rnd_.chance(10)) {
            spec.duration_hint = rnd_.between(100ms, 5s);
        }
        if (rnd_.chance(25)) spec.timeout = rnd_.between(200ms, 10s);
        if (rnd_.chance(40)) spec.retry = random_policy();
        const auto bad = rnd_.below(100);
        if (bad < 2) {
            spec.pool = static_cast<PoolId>(pools_.size() + rnd_.below(3));
            expect = SubmitError::UnknownPool;
        } else if (bad < 3) {
            spec.timeout = -rnd_.between(0s, 1s);
            expect = SubmitError::Invalid;
        } else if (bad < 4) {
            spec.retry = RetryPolicy{0, 1s, 2.0, 1s, true};
            expect = SubmitError::Invalid;
        }
        if (shutting_down_) expect = SubmitError::ShuttingDown;

        Op op{Op::Kind::Submit};
        describe(op);
        auto r = engine_.submit(spec, now_);
        if (expect) {
            ASSERT_FALSE(r.has_value()) << "accepted a submission that must fail";
            ASSERT_EQ(r.error(), *expect);
            op.silent = true;
            return apply(op);
        }
        ASSERT_TRUE(r.has_value()) << "rejected: " << r.message();
        op.task = r.value();
        pending_ = spec;
        apply(op);
        pending_.reset();
        ASSERT_TRUE(by_id_.count(op.task.value)) << "an accepted task emitted no Status Ready";
    }

    void do_complete(std::size_t idx, Outcome outcome) {
        Op op{Op::Kind::Complete};
        op.task = tasks_[idx].id;
        op.lease = tasks_[idx].lease;
        op.outcome = std::move(outcome);
        describe(op);
        ASSERT_TRUE(engine_.complete(op.lease, op.outcome, now_)) << "a live lease was refused";
        apply(op);
        ASSERT_NE(tasks_[idx].lease, op.lease) << "the completion did not end the attempt";
    }

    void do_late_complete() {
        Op op{Op::Kind::DeadComplete};
        op.lease = dead_leases_.empty() || rnd_.chance(10) ? LeaseId{~0ull - rnd_.below(10)}
                                                           : dead_leases_[rnd_.below(dead_leases_.size())];
        op.outcome = random_outcome();
        op.silent = true;
        describe(op);
        ASSERT_FALSE(engine_.complete(op.lease, op.outcome, now_)) << "a dead lease was accepted";
        ++late_;
        apply(op);
    }

    void do_heartbeat() {
        Op op{Op::Kind::Heartbeat};
        op.silent = true;
        const auto idx = pick_live([](const TaskModel& t) { return t.state == S::Running; });
        if (idx && rnd_.chance(85)) {
            op.lease = tasks_[*idx].lease;
            describe(op);
            ASSERT_TRUE(engine_.heartbeat(op.lease, now_)) << "a live lease's heartbeat was refused";
            tasks_[*idx].last_beat = now_;
        } else {
            op.lease = dead_leases_.empty() ? LeaseId{~0ull} : dead_leases_[rnd_.below(dead_leases_.size())];
            describe(op);
            ASSERT_FALSE(engine_.heartbeat(op.lease, now_)) << "a dead lease's heartbeat was accepted";
            ++late_;
        }
        apply(op);
    }

    void do_cancel() {
        Op op{Op::Kind::Cancel};
        const auto r = rnd_.below(100);
        bool expect = false;
        if (r < 5 || tasks_.empty()) {
            op.task = TaskId{r < 2 ? 0 : ~0ull - rnd_.below(10)};
        } else {
            std::size_t idx;
            if (r < 60 && !live_.empty())
                idx = live_[rnd_.below(live_.size())];
            else
                idx = rnd_.below(tasks_.size());
            op.task = tasks_[idx].id;
            expect = !is_terminal(tasks_[idx].state);
        }
        describe(op);
        const bool ok = engine_.cancel(op.task, now_);
        ASSERT_EQ(ok, expect) << "cancel of a task in state "
                              << (by_id_.count(op.task.value) ? to_string(tasks_[by_id_[op.task.value]].state) : "unknown");
        op.silent = !ok;
        apply(op);
        if (ok) {
            ASSERT_EQ(tasks_[by_id_.at(op.task.value)].state, S::Cancelled) << "cancel returned true but no Cancelled";
        }
    }

    void do_set_capacity(PoolId pool, std::size_t capacity) {
        Op op{Op::Kind::SetCapacity};
        describe(op, " pool " + std::to_string(pool) + " to " + std::to_string(capacity));
        engine_.set_capacity(pool, capacity, now_);
        pools_[pool].capacity = capacity;
        apply(op);
    }

    void do_tick() override {
        Op op{Op::Kind::Tick};
        describe(op);
        engine_.tick(now_);
        apply(op);
    }

    void do_shutdown(Time grace_end) override {
        Op op{Op::Kind::Shutdown};
        describe(op, " grace to +" + std::to_string(to_seconds(grace_end - now_)) + " s");
        engine_.shutdown(now_, grace_end);
        shutting_down_ = true;
        grace_end_ = std::min(grace_end_, grace_end);
        apply(op);
        ASSERT_TRUE(engine_.is_shutting_down());
    }
};

class InvariantTest : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(InvariantTest, RandomCallsThenShutdownWithZeroGrace) {
    SCOPED_TRACE(rerun_hint(GetParam()));
    Sim sim(GetParam());
    sim.run_to_end(Ending::ShutdownMidway);
    if (HasFailure()) return;
    EXPECT_GT(sim.submitted(), 100u);
}

TEST_P(InvariantTest, RandomCallsThenCompleteEverything) {
    SCOPED_TRACE(rerun_hint(GetParam()));
    Sim sim(GetParam());
    sim.run_to_end(Ending::CompleteEverything);
    if (HasFailure()) return;
    EXPECT_GT(sim.submitted(), 100u);
    // The run exercised every way an attempt ends, in one pool or another.
    const auto in_any_pool = [&](std::uint64_t PoolCounters::*count) {
        std::uint64_t sum = 0;
        for (PoolId p = 0; p < 3; ++p) sum += sim.expected(p).*count;
        return sum;
    };
    EXPECT_GT(in_any_pool(&PoolCounters::succeeded), 0u);
    EXPECT_GT(in_any_pool(&PoolCounters::failed), 0u);
    EXPECT_GT(in_any_pool(&PoolCounters::dead_lettered), 0u);
    EXPECT_GT(in_any_pool(&PoolCounters::cancelled), 0u);
    EXPECT_GT(in_any_pool(&PoolCounters::retried), 0u);
    EXPECT_GT(in_any_pool(&PoolCounters::timed_out), 0u);
    EXPECT_GT(in_any_pool(&PoolCounters::lease_expired), 0u);
    if (sim.ordering().sharing() && suite.default_run()) {
        EXPECT_GT(sim.ordering().owed_dispatches(), 0u) << "no dispatch was decided by a share";
    }
}

TEST_P(InvariantTest, SameCallsGiveTheSameActions) {
    // Determinism: the engine reads no clock and draws jitter from its seed,
    // so replaying the same calls gives the same actions (ids aside, which
    // are process-wide).
    const std::uint64_t seed = GetParam();
    SCOPED_TRACE("seed " + std::to_string(seed));
    Sim a(seed);
    a.run(suite.steps() / 3, true);
    if (HasFailure()) return;
    Sim b(seed);
    b.run(suite.steps() / 3, true);
    EXPECT_EQ(a.fingerprint(), b.fingerprint());
    EXPECT_EQ(a.submitted(), b.submitted());
}

INSTANTIATE_TEST_SUITE_P(Seeds, InvariantTest, ::testing::ValuesIn(suite.seeds()));

}  // namespace
}  // namespace cronoq::core::test::invariant_model::invariant_test
