// Randomized invariant test of the engine's shared resources, bounds and
// overflow policies (docs/guide/resources-and-bounds.md), autoscaling (docs/guide/resources-and-bounds.md) and metrics window
// (docs/guide/operations.md). invariant_test.cpp and graph_invariant_test.cpp never declare
// a resource, a bound or an autoscaler; this file covers what they do not.
//
// Thousands of random calls per seed on an engine with two semaphores and
// two token buckets (permits, rates and bursts drawn per seed, a rate of 0
// included), a global bound half the time, and six pools: one per overflow
// policy with a bound (the ShedLowest one also autoscaled by the default
// policy), one autoscaled from 0, one with a user scaler. Calls: submits
// needing 0-2 resources (summed, zero and impossible amounts, unknown
// names), completions of every outcome kind (so retries and dead letters),
// timeouts, cancels, set_capacity (inside and outside [min, max]),
// set_rate (0, positive, negative, NaN, on a semaphore, an unknown name),
// ticks at next_wakeup() and at random times, a shutdown. Time moves only
// through ticks, so no other call has due work to do first. A model built
// only from the drained actions and the call answers is checked after
// EVERY call:
//   - a semaphore's units held by Running tasks never exceed its permits;
//     a token bucket (refilled at the rates set_rate gave it, capped at its
//     burst) never hands out a token it does not hold, so the tokens taken
//     never exceed burst + the integral of the rate;
//   - no head-of-line blocking: beside a free slot of its pool, a Ready
//     task that needs no resource never waits, and one that needs
//     resources waits only while one of them is short for it or wanted by
//     another Ready task that is short of it (the same resource's FIFO);
//     together with the two checks above this also shows that a parked
//     task holds nothing (a partial hold would starve the others);
//     CRONOQ_STRICT_RESOURCES=0 makes the last rule lenient (see
//     resource_checks.hpp);
//   - submit answers: UnknownResource, ResourceExceedsCapacity and
//     ShuttingDown as docs/guide/resources-and-bounds.md, docs/guide/operations.md say; Full only under Wait and Overloaded
//     only under Reject, both only when the pool's or the global bound is
//     full; under ShedLowest / ShedOldest a full bound sheds exactly one
//     Ready task of the bound's scope — the newest of the lowest class
//     strictly below the incoming one, or the oldest Low — and admits, or
//     answers Overloaded when there is none; a rejected submit emits
//     nothing; so a task is admitted only while its bounds have room
//     (pending = ready + retrying) or one-for-one with a victim (retries
//     may still take pending past a bound, as bounds.hpp says);
//   - SpaceAvailable only after a Full for its pool, only with room, and
//     always once there is room;
//   - autoscaling: every ScaleTo is within [min_workers, max_workers]; the
//     default policy steps up by at most max(floor(ratio x capacity), abs)
//     and never past its desired value, steps down by at most
//     max_step_down, not within `cooldown` of its previous change and never
//     below its desired value; a user scaler is never called by the
//     engine: it is asked (AskScaler) at most once per call, with the
//     pool's capacity, busy and pending as the model has them, the test
//     calls it and answers (answer_scaler), and the answer is clamped and
//     applied as is (a throw keeps the capacity); the pool is scaled by
//     nothing else; counters().capacity is the last ScaleTo or
//     set_capacity;
//   - counters() and stats(): running, ready (per class), retrying and every
//     cumulative counter match the model; stats() counts dispatched,
//     succeeded, failed, dead-lettered, retried, shed, waits and runs over
//     exactly the metrics slices the window keeps (sliding_window.hpp), and
//     busy, pending, capacity and desired agree with counters() (read for
//     every pool the call's actions named, and one more in turn);
//   - every Status transition is legal; after a tick next_wakeup() lies
//     ahead; every task ends exactly once; at the end live_tasks() == 0
//     and, once the autoscalers have stepped down to their floors,
//     next_wakeup() is empty.
//
// Seeds: a fixed list; CRONOQ_SEED=<n> runs that seed instead,
// CRONOQ_STEPS=<n> changes the number of calls per seed.
#include "ordering_model.hpp"
#include "resource_checks.hpp"

namespace cronoq::core::test::resource_model::resource_invariant_test {
namespace {

class Sim : public Checked {
public:
    explicit Sim(std::uint64_t s) : Checked(s), engine_(configure(s)) {
        for (PoolConfig& c : pool_configs()) {
            const PoolId id = engine_.add_pool(c);
            PoolModel m;
            m.capacity = c.capacity;
            if (c.max_workers == 0) c.max_workers = c.capacity;
            m.config = std::move(c);
            m.last_change = now;  // the initial capacity counts as a change (autoscale.hpp)
            if (m.config.user_scaler) user_pool = id;
            pools.push_back(std::move(m));
        }
        // The first call makes the autoscalers (their clocks start there).
        do_tick();
    }

    const Coverage& coverage() const { return cov; }

private:
    // ---- the harness's hooks (model_harness.hpp) --------------------------------------------

    const Engine& engine() const override { return engine_; }
    Time& clock() override { return now; }
    void shutdown_midway_call() override { do_shutdown(now + rnd_.between(0s, 4s)); }
    /// Refills every bucket and opens slots where no autoscaler decides.
    void open_everything() override {
        for (const ResourceState& r : std::vector<ResourceState>(resources))
            if (r.bucket()) do_set_rate(r.decl.name, 5.0, false);
        for (PoolId p = 0; p < pools.size(); ++p)
            if (!pools[p].config.autoscale) do_set_capacity(p, std::max<std::size_t>(pools[p].capacity, 1));
    }
    std::vector<std::size_t> live_indices() const override { return live; }
    bool running(std::size_t idx) const override { return tasks[idx].state == S::Running; }
    void complete_with_success(std::size_t idx) override { do_complete(idx, Outcome::success()); }
    std::size_t task_count() const override { return tasks.size(); }
    int terminal_events(std::size_t idx) const override { return tasks[idx].terminal_events; }
    std::string show_task(std::size_t idx) const override { return show(tasks[idx]); }
    std::string failure_context() override { return "resources:\n" + show_resources(); }

    /// Once everything has ended (and every task ended once): the engine
    /// goes quiet (autoscalers step down to their floors, then sleep).
    void check_end() override {
        for (PoolId p = 0; p < pools.size(); ++p) {
            const PoolCounters c = engine_.counters(p);
            EXPECT_EQ(c.succeeded + c.failed + c.dead_lettered + c.cancelled + c.shed, c.submitted) << "pool " << p;
        }
        for (int i = 0; i < 2000 && engine_.next_wakeup() && !failed(); ++i) {
            now = std::max(now, *engine_.next_wakeup());
            do_tick();
        }
        ASSERT_FALSE(engine_.next_wakeup().has_value()) << "a timer outlived every task and every autoscaler step";
        for (PoolId p = 0; p < pools.size(); ++p)
            if (pools[p].config.autoscale) {
                EXPECT_EQ(pools[p].capacity, pools[p].config.min_workers) << "idle pool " << p << " not at its floor";
            }
    }

    EngineConfig configure(std::uint64_t s) {
        now = t0 + 100s;
        // Shares must not hold back a task that could run.
        EngineConfig c = model_config(s, 20s, 50);
        c.metrics_window = metrics_window;
        c.resources = {Resource::semaphore("db", static_cast<std::uint32_t>(1 + rnd_.below(3))),
                       Resource::semaphore("io", static_cast<std::uint32_t>(2 + rnd_.below(3))),
                       Resource::token_bucket("api", rnd_.pick(std::array<double, 4>{0.5, 1.0, 2.0, 4.0}),
                                              static_cast<std::uint32_t>(1 + rnd_.below(3))),
                       Resource::token_bucket("mail", rnd_.pick(std::array<double, 3>{0.0, 0.25, 1.0}),
                                              static_cast<std::uint32_t>(1 + rnd_.below(2)))};
        for (const Resource& r : c.resources) {
            ResourceState m;
            m.decl = r;
            m.level = r.burst;  // a bucket starts full
            m.rate = r.rate_per_s;
            m.last = now;
            resources.push_back(m);
        }
        if (rnd_.chance(50)) c.global_bounds = Bounds{10 + rnd_.below(11)};
        global_bounds = c.global_bounds;
        return c;
    }

    std::vector<PoolConfig> pool_configs() {
        const auto retry = [this] {
            // A fixed delay (multiplier 1, no jitter): the model knows when
            // a backoff may end.
            const Duration backoff = rnd_.pick(std::array<Duration, 3>{0s, 300ms, 1s});
            return RetryPolicy{static_cast<std::uint32_t>(1 + rnd_.below(3)), backoff, 1.0, backoff, false};
        };
        const auto pool = [&](std::string name, std::size_t capacity, OverflowPolicy overflow, std::size_t bound) {
            PoolConfig c;
            c.name = std::move(name);
            c.capacity = capacity;
            c.retry = retry();
            c.overflow = overflow;
            if (bound) c.bounds = Bounds{bound};
            return c;
        };
        std::vector<PoolConfig> out;
        out.push_back(pool("wait", 1 + rnd_.below(2), OverflowPolicy::Wait, 3 + rnd_.below(3)));
        out.push_back(pool("reject", 1 + rnd_.below(2), OverflowPolicy::Reject, 2 + rnd_.below(3)));
        out.back().default_timeout = 3s;
        out.push_back(pool("lowest", 1, OverflowPolicy::ShedLowest, 2 + rnd_.below(2)));
        out.back().max_workers = 3;
        out.back().min_workers = 1;
        out.back().autoscale = AutoscaleConfig{.interval = 500ms, .max_step_up_ratio = 0.5, .max_step_up_abs = 1,
                                               .stabilization_window = 4s, .cooldown = 2s};
        out.push_back(pool("oldest", 1 + rnd_.below(2), OverflowPolicy::ShedOldest, 3 + rnd_.below(3)));
        out.push_back(pool("auto", 1, OverflowPolicy::Wait, 0));
        out.back().max_workers = 6;
        out.back().autoscale = AutoscaleConfig{.interval = 1s, .drain_time = 4s, .max_step_up_abs = 2,
                                               .stabilization_window = 3s, .cooldown = 1s};
        out.push_back(pool("user", 2, OverflowPolicy::Wait, 0));
        out.back().max_workers = 5;
        out.back().min_workers = 1;
        out.back().autoscale = AutoscaleConfig{.interval = 700ms};
        out.back().user_scaler = true;
        return out;
    }

    // ---- random calls ---------------------------------------------------------------------------

    void random_step() override {
        const auto r = rnd_.below(1000);
        if (r < 300) {
            now += r < 250 ? rnd_.between(1ms, 400ms) : r < 295 ? rnd_.between(400ms, 4s) : rnd_.between(10s, 30s);
            do_tick();  // time moves only through ticks: no call has due work first
            if (failed()) return;
        }
        const auto op = live.size() > 70 ? 30 + rnd_.below(70) : rnd_.below(100);
        if (op < 4) {
            // A burst into one pool, so that bounds fill and shed.
            const auto pool = static_cast<PoolId>(rnd_.below(pools.size()));
            for (std::uint64_t i = 0, n = 2 + rnd_.below(5); i < n && !failed(); ++i) do_submit(pool);
            return;
        }
        if (op < 30) return do_submit();
        if (op < 55) {
            if (auto idx = pick_live([](const TaskModel& t) { return t.state == S::Running; }))
                return do_complete(*idx, random_outcome());
            return do_submit();
        }
        if (op < 57) return do_dead_complete();
        if (op < 64) return do_cancel();
        if (op < 68) {
            const PoolId p = static_cast<PoolId>(rnd_.below(pools.size()));
            return do_set_capacity(p, rnd_.below(pools[p].config.max_workers + 3));
        }
        if (op < 74) return random_set_rate();
        if (op < 88) {
            if (auto wake = engine_.next_wakeup()) now = std::max(now, *wake);
            return do_tick();
        }
        now += rnd_.between(0s, 5s);
        do_tick();
    }

    template <class Pred>
    std::optional<std::size_t> pick_live(Pred pred) {
        return pick_index(live, [&](std::size_t idx) { return pred(tasks[idx]); });
    }

    Outcome random_outcome() {
        const auto r = rnd_.below(100);
        const std::string msg = "m" + std::to_string(rnd_.below(100));
        if (r < 40) return Outcome::success();
        if (r < 70) return Outcome::retryable(msg);
        if (r < 85) return Outcome::permanent(msg);
        return Outcome::cancelled(msg);
    }

    TaskSpec random_spec(std::optional<PoolId> pool) {
        TaskSpec spec;
        spec.pool = pool ? *pool : static_cast<PoolId>(rnd_.below(pools.size()));
        spec.priority = static_cast<Priority>(rnd_.below(priority_count));
        if (rnd_.chance(20)) spec.timeout = rnd_.between(500ms, 4s);
        const auto r = rnd_.below(100);
        const std::size_t n = r < 40 ? 0 : r < 80 ? 1 : 2;
        for (std::size_t i = 0; i < n; ++i) {
            const ResourceState& res = resources[rnd_.below(resources.size())];
            const std::uint32_t cap = res.decl.capacity();
            const auto amount = static_cast<std::uint32_t>(rnd_.chance(70) ? 1 : 1 + rnd_.below(cap));
            spec.resources.push_back(ResourceUse{res.decl.name, amount});
        }
        if (!spec.resources.empty() && rnd_.chance(5))
            spec.resources.push_back(spec.resources.front());  // the same resource twice: summed
        if (!spec.resources.empty() && rnd_.chance(3)) spec.resources.front().amount = 0;  // asks for nothing
        if (rnd_.chance(2)) spec.resources.push_back(ResourceUse{"nope", 1});
        if (rnd_.chance(2)) {
            const ResourceState& res = resources[rnd_.below(resources.size())];
            spec.resources.push_back(ResourceUse{res.decl.name, res.decl.capacity() + 1});
        }
        return spec;
    }

    void do_submit(std::optional<PoolId> pool = std::nullopt) {
        const TaskSpec spec = random_spec(pool);
        const auto expect = predict(spec);
        Op op{Op::Kind::Submit};
        describe(op, " " + show_spec(spec));
        auto r = engine_.submit(spec, now);
        if (expect) {
            ASSERT_FALSE(r.has_value()) << "accepted; expected " << to_string(*expect);
            ASSERT_EQ(r.error(), *expect) << r.message();
            ++cov.rejected[*expect];
            if (*expect == SubmitError::Full) pools[spec.pool].full = true;
            op.silent = true;  // a rejected task leaves no trace
            return apply(op);
        }
        ASSERT_TRUE(r.has_value()) << "rejected with " << to_string(r.error()) << ": " << r.message();
        op.task = r.value();
        if (spec.resources.size() >= 2) ++cov.two_resources;
        pending_spec = spec;
        apply(op);
        pending_spec.reset();
        ASSERT_TRUE(by_id.count(op.task.value)) << "an accepted task emitted no Status Ready";
    }

    void do_complete(std::size_t idx, Outcome outcome) {
        Op op{Op::Kind::Complete};
        op.task = tasks[idx].id;
        op.lease = tasks[idx].lease;
        op.outcome = std::move(outcome);
        describe(op, std::string(" ") + (op.outcome.kind == Outcome::Kind::Success     ? "success"
                                         : op.outcome.kind == Outcome::Kind::Retryable ? "retryable"
                                         : op.outcome.kind == Outcome::Kind::Permanent ? "permanent"
                                                                                       : "cancelled"));
        ASSERT_TRUE(engine_.complete(op.lease, op.outcome, now)) << "a live lease was refused";
        apply(op);
    }

    void do_dead_complete() {
        Op op{Op::Kind::DeadComplete};
        op.lease = dead_leases.empty() ? LeaseId{~0ull} : dead_leases[rnd_.below(dead_leases.size())];
        op.outcome = random_outcome();
        op.silent = true;
        describe(op);
        ASSERT_FALSE(engine_.complete(op.lease, op.outcome, now)) << "a dead lease was accepted";
        apply(op);
    }

    void do_cancel() {
        Op op{Op::Kind::Cancel};
        std::optional<std::size_t> idx;
        const auto r = rnd_.below(100);
        if (r < 80 && !live.empty())
            idx = live[rnd_.below(live.size())];
        else if (r < 95 && !tasks.empty())
            idx = rnd_.below(tasks.size());
        op.task = idx ? tasks[*idx].id : TaskId{~0ull - rnd_.below(100)};
        const bool expect = idx && !is_terminal(tasks[*idx].state);
        op.silent = !expect;
        describe(op);
        ASSERT_EQ(engine_.cancel(op.task, now), expect);
        apply(op);
    }

    void do_set_capacity(PoolId pool, std::size_t capacity) {
        Op op{Op::Kind::SetCapacity};
        op.pool = pool;
        describe(op, " pool " + std::to_string(pool) + " to " + std::to_string(capacity));
        engine_.set_capacity(pool, capacity, now);
        pools[pool].capacity = capacity;
        apply(op);
    }

    void random_set_rate() {
        const auto r = rnd_.below(100);
        if (r < 5) return do_set_rate("nope", 1.0, true);
        if (r < 10) return do_set_rate(resources[rnd_.below(2)].decl.name, 1.0, true);  // a semaphore
        const std::string& bucket = resources[2 + rnd_.below(2)].decl.name;
        if (r < 16) {
            ++cov.bad_rate;
            return do_set_rate(bucket, rnd_.pick(std::array<double, 3>{-1.0, std::nan(""), INFINITY}), true);
        }
        const double rate = rnd_.pick(std::array<double, 6>{0.0, 0.0, 0.25, 1.0, 3.0, 8.0});
        cov.zero_rate += rate == 0 ? 1 : 0;
        do_set_rate(bucket, rate, false);
    }

    void do_set_rate(const std::string& name, double rate, bool invalid) {
        Op op{Op::Kind::SetRate};
        op.silent = invalid;  // nothing changes (engine.hpp)
        describe(op, " \"" + name + "\" to " + std::to_string(rate));
        const auto problem = engine_.set_rate(name, rate, now);
        ASSERT_EQ(problem.has_value(), invalid) << (problem ? *problem : std::string("accepted"));
        if (!invalid)
            for (ResourceState& res : resources)
                if (res.decl.name == name) {
                    res.advance(now);  // accrued at the old rate up to now
                    res.rate = rate;
                    res.waiter_left = false;  // set_rate brings its waiters back
                }
        apply(op);
    }

    void do_tick() override {
        Op op{Op::Kind::Tick};
        describe(op);
        engine_.tick(now);
        apply(op);
        if (failed()) return;
        // Everything due by now was done: the next wakeup lies ahead.
        if (const auto wake = engine_.next_wakeup()) {
            ASSERT_GT(*wake, now) << "next_wakeup() not after a tick at the same time";
        }
    }

    void do_shutdown(Time grace) override {
        Op op{Op::Kind::Shutdown};
        describe(op, " grace to +" + std::to_string(to_seconds(grace - now)) + " s");
        engine_.shutdown(now, grace);
        shutting_down = true;
        grace_end = std::min(grace_end, grace);
        apply(op);
    }

    void apply(const Op& op) {
        engine_.drain(actions_);
        ASSERT_FALSE(engine_.has_actions());
        touched.clear();
        if (op.pool) touched.insert(*op.pool);
        process(op);
        if (::testing::Test::HasFatalFailure()) return;
        check_autoscaling(op);
        if (::testing::Test::HasFatalFailure()) return;
        check(static_cast<std::size_t>(step_));
        if (::testing::Test::HasFatalFailure()) return;
        answer_questions();
    }

    // As the engine's owner: calls the user scaler for each question the
    // call asked, outside the engine, and answers it in a call of its own.
    void answer_questions() {
        std::vector<PoolId> asked;
        for (const Action& a : actions_)
            if (const auto* q = std::get_if<AskScaler>(&a)) asked.push_back(q->pool);
        for (PoolId pool : asked) {
            const std::optional<ScalerInput> question = engine_.scaler_question(pool);
            ASSERT_TRUE(question.has_value()) << "AskScaler without an open question";
            std::optional<std::size_t> answer;
            try {
                answer = scaler_(*question);
            } catch (const std::runtime_error&) {
                // no opinion: the capacity stays
            }
            Op op{Op::Kind::ScalerAnswer};
            op.pool = pool;
            describe(op, " pool " + std::to_string(pool) + (answer ? " " + std::to_string(*answer) : " (threw)"));
            ASSERT_TRUE(engine_.answer_scaler(pool, answer, now)) << "an open question refused its answer";
            apply(op);
            if (failed()) return;
        }
    }

    Engine engine_;
    std::function<std::size_t(const ScalerInput&)> scaler_ = user_scaler(scaler_log);
};

class ResourceInvariantTest : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(ResourceInvariantTest, RandomCallsThenShutdownMidway) {
    SCOPED_TRACE(rerun_hint(GetParam()));
    Sim sim(GetParam());
    sim.run_to_end(Ending::ShutdownMidway);
}

TEST_P(ResourceInvariantTest, RandomCallsThenCompleteEverything) {
    SCOPED_TRACE(rerun_hint(GetParam()));
    Sim sim(GetParam());
    sim.run_to_end(Ending::CompleteEverything);
    if (HasFailure() || !suite.default_run()) return;
    // The run reached what it is meant to check.
    const Coverage& c = sim.coverage();
    EXPECT_GT(c.accepted, 300u);
    EXPECT_GT(c.shed_lowest, 0u);
    EXPECT_GT(c.shed_oldest, 0u);
    EXPECT_GT(c.space, 0u);
    EXPECT_GT(c.waited_on_resource, 0u) << "no task ever waited on a resource beside a free slot";
    EXPECT_GT(c.scale_up, 0u);
    EXPECT_GT(c.scale_down, 0u);
    EXPECT_GT(c.scaler_calls, 0u);
    EXPECT_GT(c.scaler_throws, 0u);
    EXPECT_GT(c.zero_rate, 0u);
    EXPECT_GT(c.bad_rate, 0u);
    EXPECT_GT(c.timed_out, 0u);
    EXPECT_GT(c.two_resources, 0u);
    for (SubmitError e : {SubmitError::Full, SubmitError::Overloaded, SubmitError::UnknownResource,
                          SubmitError::ResourceExceedsCapacity}) {
        EXPECT_GT(c.rejected.count(e) ? c.rejected.at(e) : 0u, 0u) << to_string(e);
    }
}

INSTANTIATE_TEST_SUITE_P(Seeds, ResourceInvariantTest, ::testing::ValuesIn(suite.seeds()));

}  // namespace
}  // namespace cronoq::core::test::resource_model::resource_invariant_test
