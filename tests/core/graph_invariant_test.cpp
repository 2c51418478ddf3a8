// Randomized invariant test of the engine's graph and calendar features:
// fixed starts (docs/guide/time-and-cron.md), dependencies, keys and batches (docs/guide/dependencies-and-keys.md), with
// cancels, completions of every kind, capacity changes and a shutdown
// (docs/guide/operations.md). invariant_test.cpp covers ordering, retries, leases and
// retention; this file covers what that one never submits.
//
// Thousands of random calls per seed: submits and batches of every shape
// (fixed starts with each MissPolicy, edges of each kind by id and by key to
// live, retained, forgotten, in-batch and not-yet-submitted tasks; held keys;
// duplicate keys, cycles, unknown references, reservation conflicts),
// completions, cancels of tasks in every state, capacity changes, ticks at
// next_wakeup() and at random times, calls made late (time moved with no
// tick), and a shutdown. Pool settings (capacity, max_workers,
// reservable_fraction, max_hold, UnknownDependency, retry) are drawn per
// seed. A model built only from the drained actions and the submit results
// is checked after EVERY call:
//   - admission: the model predicts, from SPEC alone, every error that
//     applies to a submit or batch (DuplicateKeyInBatch, UnknownDependency,
//     Cycle on the modelled graph, ReservationConflict on the modelled
//     intervals, ShuttingDown, Invalid); the engine must reject with one of
//     them, and must accept when none applies. A rejected call emits no
//     action and changes no counter or key (all or nothing); a spec whose key
//     a live or retained task holds returns that task's id and admits
//     nothing;
//   - reservations: at no instant do more fixed-start intervals
//     [start, start + duration_hint) of a pool overlap than
//     max(1, floor(reservable_fraction * max_workers)); a reservation lasts
//     until its task is terminal;
//   - edges: a task is Ready, Scheduled or dispatched only once every edge is
//     met; it is Skipped only for a broken edge or an awaited key that did not
//     come within the pool's Await timeout; after every call no live task
//     has a broken edge (skips run down the graph within the call), no
//     Blocked task has all its edges met, and none awaits a key past its
//     timeout;
//   - fixed starts: Scheduled until the start and never dispatched before
//     it; at the first call at or after the start it is Ready, or Missed /
//     Failed under Skip / Fail when the call is more than start_tolerance
//     late; a Skip / Fail start not dispatched within its tolerance ends
//     Missed / Failed; a due start is dispatched before any other Ready task
//     of its pool and never waits while its pool has a free slot;
//   - slots: no Dispatch while running >= capacity, none during shutdown;
//     an ordinary Ready task waits beside a free slot only while enough
//     starts fall within max_hold to hold those slots (docs/guide/time-and-cron.md holds);
//   - every Status transition is legal, with the right pool, attempt and
//     time; counters (blocked, scheduled, ready, running, retrying,
//     submitted, dispatched, succeeded, failed, dead_lettered, cancelled,
//     skipped, missed, starts_on_time, starts_late), live_tasks(),
//     late_reports(), status() and find_key() match the model;
//     next_wakeup() is exactly the earliest live timer of the model;
//   - at the end every submitted task had exactly one terminal Status,
//     live_tasks() == 0 and next_wakeup() is empty.
//
// Seeds: a fixed list; CRONOQ_SEED=<n> runs that seed instead,
// CRONOQ_STEPS=<n> changes the number of calls per seed.
//
// The model and its action handlers are in graph_model.hpp, the admission
// prediction, the checks and the model's view in failure messages in
// graph_checks.hpp, the run itself (seeds, the loop of calls, the endings,
// the failure report) in model_harness.hpp, the regressions this test found
// in graph_regression_test.cpp; this file holds the generator and the TESTs.
#include "graph_checks.hpp"

namespace cronoq::core::test::graph_model::graph_invariant_test {
namespace {

class Sim : public GraphChecks {
public:
    explicit Sim(std::uint64_t seed) : GraphChecks(seed) {
        // Pool 0 rejects unknown keys, pool 1 awaits them, pool 2 either.
        for (int i = 0; i < 3; ++i) add_pool(random_pool(i));
    }

    const Coverage& coverage() const { return cov_; }

private:
    // ---- the harness's hooks (model_harness.hpp) --------------------------------------------

    void shutdown_midway_call() override { do_shutdown(now_ + rnd_.between(0s, 4s)); }
    void open_everything() override {
        for (PoolId p = 0; p < pools_.size(); ++p) {
            do_set_capacity(p, std::max<std::size_t>(1, pools_[p].max_workers), false);
            if (failed()) return;
        }
    }
    void complete_with_success(std::size_t idx) override { do_complete(idx, Outcome::success(), false); }

    /// What must hold once everything has ended, beyond the harness's checks.
    void check_end() override {
        ASSERT_FALSE(engine_.next_wakeup().has_value()) << "a timer outlived every task";
        for (const TaskModel& t : tasks_) ASSERT_TRUE(t.announced) << show(t);
        for (PoolId p = 0; p < pools_.size(); ++p) {
            const PoolCounters c = engine_.counters(p);
            EXPECT_EQ(c.blocked + c.scheduled + c.ready + c.running + c.retrying, 0u) << "pool " << p;
            EXPECT_EQ(c.succeeded + c.failed + c.dead_lettered + c.cancelled + c.skipped + c.missed, c.submitted)
                << "pool " << p << ": every submitted task ends exactly once";
        }
    }

    PoolConfig random_pool(int i) {
        PoolConfig c;
        c.name = "p" + std::to_string(i);
        c.capacity = 1 + rnd_.below(3);
        // 0 leaves max_workers at the capacity (the documented default).
        c.max_workers = rnd_.chance(20) ? 0 : c.capacity + rnd_.below(4);
        // Pool 0 can reserve a single slot, so that conflicts are common.
        c.reservable_fraction = i == 0 ? rnd_.pick(std::array<double, 2>{0.0, 0.25})
                                       : rnd_.pick(std::array<double, 5>{0.0, 0.25, 0.5, 0.75, 1.0});
        c.max_hold = rnd_.pick(std::array<Duration, 4>{0s, 1s, 5s, 30s});
        const Duration backoff = rnd_.pick(std::array<Duration, 3>{0s, 200ms, 1s});
        // A fixed delay (multiplier 1, no jitter): the model knows when a
        // retry is due, so next_wakeup() can be checked exactly.
        c.retry = RetryPolicy{static_cast<std::uint32_t>(1 + rnd_.below(3)), backoff, 1.0, backoff, false};
        const bool awaits = i == 1 || (i == 2 && rnd_.chance(50));
        if (awaits) c.unknown_dependency = UnknownDependency::Await{rnd_.between(2s, 60s)};
        return c;
    }

    // ---- random calls ---------------------------------------------------------------------------

    void random_step() override {
        const auto r = rnd_.below(1000);
        if (r < 300) {
            now_ += r < 250 ? rnd_.between(1ms, 400ms) : r < 295 ? rnd_.between(400ms, 4s) : rnd_.between(20s, 50s);
            // Time moves through a tick here, so that submits never come
            // with work due (a rejected submit must then emit nothing).
            do_tick();
            if (failed()) return;
        }
        // Keep the population moderate: a long run must not only pile up.
        const bool crowded = live_.size() > 90;
        const auto op = crowded ? 30 + rnd_.below(70) : rnd_.below(100);
        if (op < 20) return do_submit(false);
        if (op < 30) return do_submit(true);
        if (op < 52) {
            if (auto idx = pick_live([](const TaskModel& t) { return t.state == S::Running; }))
                return do_complete(*idx, random_outcome(), false);
            return do_submit(false);
        }
        if (op < 54) return do_dead_complete();
        if (op < 62) return do_cancel(false);
        if (op < 66) {
            // Anywhere in [0, max_workers]; the reservation limit stays.
            const PoolId p = random_pool_id();
            return do_set_capacity(p, rnd_.below(pools_[p].max_workers + 1), false);
        }
        if (op < 80) {
            if (auto wake = engine_.next_wakeup()) now_ = std::max(now_, *wake);
            return do_tick();
        }
        if (op < 88) {
            now_ += rnd_.between(0s, 8s);
            return do_tick();
        }
        // A call made late: time moved with no tick, so the call itself
        // first does what was due (starts, miss checks, await timeouts,
        // backoffs, the shutdown grace).
        now_ += rnd_.between(0s, 8s);
        const auto which = rnd_.below(3);
        if (which == 0) {
            if (auto idx = pick_live([](const TaskModel& t) { return t.state == S::Running; }))
                return do_complete(*idx, random_outcome(), true);
        }
        if (which == 1) return do_cancel(true);
        const PoolId p = random_pool_id();
        return do_set_capacity(p, rnd_.below(pools_[p].max_workers + 1), true);
    }

    PoolId random_pool_id() { return static_cast<PoolId>(rnd_.below(pools_.size())); }

    template <class Pred>
    std::optional<std::size_t> pick_live(Pred pred) {
        return pick_index(live_, [&](std::size_t idx) { return tasks_[idx].announced && pred(tasks_[idx]); });
    }

    Outcome random_outcome() {
        const auto r = rnd_.below(100);
        const std::string msg = "m" + std::to_string(rnd_.below(100));
        if (r < 45) return Outcome::success();
        if (r < 65) return Outcome::retryable(msg);
        if (r < 85) return Outcome::permanent(msg);
        return Outcome::cancelled(msg);
    }

    // Keys from a small space, so that held keys, awaited keys that arrive
    // and awaited keys that never do are all common.
    std::string random_key() {
        const auto r = rnd_.below(100);
        if (r < 20) {
            // A key some Blocked task awaits: satisfies it, or closes a cycle.
            std::vector<const std::string*> awaited;
            for (std::size_t idx : live_)
                for (const EdgeModel& e : tasks_[idx].edges)
                    if (!e.parent && tasks_[idx].state == S::Blocked) awaited.push_back(&e.awaited);
            if (!awaited.empty()) return *awaited[rnd_.below(awaited.size())];
        } else if (r < 45 && !keys_.empty()) {
            // A held key: idempotent resubmits, and edges by key to live
            // and retained tasks.
            auto it = keys_.begin();
            std::advance(it, static_cast<std::ptrdiff_t>(rnd_.below(keys_.size())));
            return it->first;
        }
        return "k" + std::to_string(rnd_.below(key_space));
    }

    TaskRef random_ref(const std::vector<std::string>& batch_keys, bool awaits) {
        const auto r = rnd_.below(100);
        if (r < 12) {
            // A Blocked task: the graph grows deeper (and may close a cycle).
            if (auto idx = pick_live([](const TaskModel& t) { return t.state == S::Blocked; })) return tasks_[*idx].id;
        }
        if (r < 30) {
            if (auto idx = pick_live([](const TaskModel&) { return true; })) return tasks_[*idx].id;
        }
        if (r < 42 && !tasks_.empty()) {
            // A recent task: mostly retained, some forgotten (unknown).
            return tasks_[tasks_.size() - 1 - rnd_.below(std::min<std::size_t>(tasks_.size(), 90))].id;
        }
        if (r < 44) return TaskId{~0ull - rnd_.below(100)};  // never submitted
        if (r < 66 && !batch_keys.empty()) return batch_keys[rnd_.below(batch_keys.size())];
        if (awaits && rnd_.chance(40)) {
            // A key of its own small space: it is held only once a later
            // submit takes it as an awaited key (random_key), so tasks
            // awaiting it pile up, for close_awaits and for await timeouts.
            return "w" + std::to_string(rnd_.below(key_space / 2));
        }
        if (!awaits && !keys_.empty() && rnd_.chance(70)) {
            // A pool that rejects unknown keys: mostly a held key, or most
            // of its batches would fail for that one reason.
            auto it = keys_.begin();
            std::advance(it, static_cast<std::ptrdiff_t>(rnd_.below(keys_.size())));
            return it->first;
        }
        return random_key();
    }

    TaskSpec random_spec(const std::vector<std::string>& batch_keys, std::optional<std::string> key) {
        TaskSpec spec;
        spec.pool = random_pool_id();
        spec.priority = static_cast<Priority>(rnd_.below(priority_count));
        spec.key = std::move(key);
        if (rnd_.chance(35)) {
            spec.start = now_ + rnd_.between(-3s, 12s);
            spec.start_tolerance = rnd_.chance(20) ? 0s : rnd_.between(1ms, 2s);
            spec.on_miss = static_cast<MissPolicy>(rnd_.below(3));
            spec.duration_hint = rnd_.between(100ms, 6s);  // always: the model needs the expected duration
        } else if (rnd_.chance(40)) {
            spec.duration_hint = rnd_.between(100ms, 40s);  // long ones are kept off held slots
        }
        if (rnd_.chance(45)) {
            const auto n = 1 + rnd_.below(3);
            for (std::uint64_t i = 0; i < n; ++i)
                spec.depends_on.push_back(
                    Dep{static_cast<K>(rnd_.below(3)),
                        random_ref(batch_keys, pools_[spec.pool].config.unknown_dependency.awaits())});
        }
        if (rnd_.chance(2)) {
            // A spec that is malformed in one documented way.
            switch (rnd_.below(5)) {
                case 0: spec.pool = static_cast<PoolId>(pools_.size() + rnd_.below(3)); break;
                case 1:
                    spec.start = now_ + 1s;
                    spec.duration_hint = 1s;
                    spec.start_tolerance = -1ms;
                    break;
                case 2: spec.duration_hint = 0s; break;
                case 3: spec.key = ""; break;
                default: spec.depends_on.push_back(Dep::on_success(std::string())); break;
            }
        }
        return spec;
    }

    void do_submit(bool batch) {
        std::vector<TaskSpec> specs;
        if (!batch) {
            std::optional<std::string> key;
            if (rnd_.chance(40)) key = random_key();
            specs.push_back(random_spec({}, std::move(key)));
            if (rnd_.chance(25)) {
                // A task in the awaiting pool on a key no task ever held:
                // it waits for random_key to hand the key out, and feeds
                // close_awaits and the await timeouts.
                TaskSpec& spec = specs.back();
                spec.pool = 1;
                spec.depends_on = {Dep{static_cast<K>(rnd_.below(3)), "fresh" + std::to_string(fresh_keys_++)}};
            }
        } else {
            const std::size_t n = 2 + rnd_.below(4);
            std::vector<std::optional<std::string>> keys(n);
            std::vector<std::string> batch_keys;
            for (auto& k : keys) {
                if (!rnd_.chance(65)) continue;
                // Now and then a key twice: DuplicateKeyInBatch.
                if (!batch_keys.empty() && rnd_.chance(6)) {
                    k = batch_keys[rnd_.below(batch_keys.size())];
                } else {
                    k = random_key();
                    if (std::find(batch_keys.begin(), batch_keys.end(), *k) != batch_keys.end()) k = random_key();
                }
                batch_keys.push_back(*k);
            }
            for (std::size_t i = 0; i < n; ++i) specs.push_back(random_spec(batch_keys, keys[i]));
            if (rnd_.chance(25)) close_awaits(specs);
        }
        const Plan p = plan(specs);

        Op op{Op::Kind::Submit};
        describe(op, (batch ? " batch of " : " ") + show_specs(specs));
        std::vector<TaskId> ids;
        std::optional<SubmitError> error;
        std::string message;
        if (batch) {
            ++cov_.batches;
            auto r = engine_.submit_batch(specs, now_);
            if (r) {
                ids = r.value();
            } else {
                error = r.error();
                message = r.message();
            }
        } else {
            auto r = engine_.submit(specs.front(), now_);
            if (r) {
                ids.push_back(r.value());
            } else {
                error = r.error();
                message = r.message();
            }
        }
        if (error) {
            ASSERT_FALSE(p.errors.empty())
                << "rejected with " << to_string(*error) << " (" << message << ") although no error applies";
            ASSERT_TRUE(p.errors.count(*error)) << "rejected with " << to_string(*error) << " (" << message
                                                << "); expected one of " << show_errors(p.errors);
            ++cov_.rejected[*error];
            op.silent = true;  // all or nothing
            apply(op, {});
            for (const TaskSpec& spec : specs)
                if (spec.key && !spec.key->empty()) {
                    const auto held = keys_.find(*spec.key);
                    ASSERT_EQ(engine_.find_key(*spec.key),
                              held == keys_.end() ? std::nullopt : std::optional<TaskId>(tasks_[held->second].id))
                        << "a rejected submit changed the holder of key \"" << *spec.key << "\"";
                }
            return;
        }
        ASSERT_TRUE(p.errors.empty()) << "accepted although " << show_errors(p.errors) << " applies";
        ASSERT_EQ(ids.size(), specs.size());
        std::vector<std::size_t> fresh;
        admit(specs, ids, p, fresh);
        if (::testing::Test::HasFatalFailure()) return;
        op.silent = fresh.empty();  // only held keys: nothing admitted
        apply(op, fresh);
    }

    // Points batch members at tasks that await keys: a member takes an
    // awaited key and depends on some awaiter. Whether that closes a cycle
    // depends on which awaiter, and a cycle may run through the keys of two
    // members (each one's awaiter depending on the other), which no single
    // key's awaiters reveal.
    void close_awaits(std::vector<TaskSpec>& specs) {
        std::vector<std::pair<std::size_t, std::string>> awaiters;
        for (std::size_t idx : live_)
            if (blocked_task(idx))
                for (const EdgeModel& e : tasks_[idx].edges)
                    if (!e.parent) awaiters.emplace_back(idx, e.awaited);
        if (awaiters.empty()) return;
        const auto& [w1, k1] = awaiters[rnd_.below(awaiters.size())];
        const auto& [w2, k2] = awaiters[rnd_.below(awaiters.size())];
        // Only these edges, so that no other error hides the cycle.
        specs[0].key = k1;
        specs[0].depends_on = {Dep{static_cast<K>(rnd_.below(3)), tasks_[rnd_.chance(50) ? w1 : w2].id}};
        if (rnd_.chance(50)) {
            // The crossed pattern: w1 -> member 0 -> w2 -> member 1 -> w1
            // when k1 and k2 differ.
            specs[0].depends_on = {Dep{static_cast<K>(rnd_.below(3)), tasks_[w2].id}};
            specs[1].key = k2;
            specs[1].depends_on = {Dep{static_cast<K>(rnd_.below(3)), tasks_[w1].id}};
            if (rnd_.chance(50)) specs.resize(2);
        }
    }

    void do_complete(std::size_t idx, Outcome outcome, bool late) {
        Op op{Op::Kind::Complete};
        op.task = tasks_[idx].id;
        op.lease = tasks_[idx].lease;
        op.outcome = std::move(outcome);
        describe(op, late ? " (late call)" : "");
        // Only the shutdown grace ends a lease by time here (no timeouts).
        const bool expect = !(shutting_down_ && now_ >= grace_end_);
        const bool ok = engine_.complete(op.lease, op.outcome, now_);
        if (!ok) ++late_reports_;
        apply(op, {});
        if (failed()) return;
        ASSERT_EQ(ok, expect) << "complete of a live lease";
        ASSERT_NE(tasks_[idx].lease, op.lease) << "the completion did not end the attempt";
    }

    void do_dead_complete() {
        Op op{Op::Kind::DeadComplete};
        op.lease = dead_leases_.empty() ? LeaseId{~0ull} : dead_leases_[rnd_.below(dead_leases_.size())];
        op.outcome = random_outcome();
        op.silent = true;
        describe(op);
        ASSERT_FALSE(engine_.complete(op.lease, op.outcome, now_)) << "a dead lease was accepted";
        ++late_reports_;
        apply(op, {});
    }

    void do_cancel(bool late) {
        Op op{Op::Kind::Cancel};
        std::optional<std::size_t> idx;
        const auto r = rnd_.below(100);
        const std::array<S, 5> states{S::Blocked, S::Scheduled, S::Ready, S::Running, S::Retrying};
        if (r < 80) {
            const S want = states[r % states.size()];
            idx = pick_live([want](const TaskModel& t) { return t.state == want; });
            if (!idx) idx = pick_live([](const TaskModel&) { return true; });
        } else if (r < 95 && !tasks_.empty()) {
            idx = rnd_.below(tasks_.size());
        }
        op.task = idx ? tasks_[*idx].id : TaskId{~0ull - rnd_.below(100)};
        const bool expect = idx && !is_terminal(tasks_[*idx].state);
        const S before = idx ? tasks_[*idx].state : S::Shed;
        op.silent = !expect && !late;
        describe(op, late ? " (late call)" : "");
        const bool ok = engine_.cancel(op.task, now_);
        apply(op, {});
        if (failed()) return;
        // A late call first does what was due, which may end the task.
        if (!late) {
            ASSERT_EQ(ok, expect) << "cancel of a task that is " << (idx ? to_string(before) : "unknown");
        }
        if (ok) {
            ASSERT_TRUE(idx.has_value()) << "cancel of an unknown task returned true";
            ASSERT_EQ(tasks_[*idx].state, S::Cancelled) << "cancel returned true but the task did not end Cancelled";
            ++cov_.cancelled_from[before];
        } else if (idx) {
            ASSERT_TRUE(is_terminal(tasks_[*idx].state)) << "cancel of a live task returned false";
        }
    }

    void do_set_capacity(PoolId pool, std::size_t capacity, bool late) {
        Op op{Op::Kind::SetCapacity};
        describe(op,
                 " pool " + std::to_string(pool) + " to " + std::to_string(capacity) + (late ? " (late call)" : ""));
        engine_.set_capacity(pool, capacity, now_);
        pools_[pool].capacity = capacity;
        apply(op, {});
    }

    void do_tick() override {
        Op op{Op::Kind::Tick};
        describe(op);
        engine_.tick(now_);
        apply(op, {});
    }

    void do_shutdown(Time grace_end) override {
        Op op{Op::Kind::Shutdown};
        describe(op, " grace to +" + seconds(grace_end - now_));
        engine_.shutdown(now_, grace_end);
        shutting_down_ = true;
        grace_end_ = std::min(grace_end_, grace_end);
        apply(op, {});
        if (failed()) return;
        ASSERT_TRUE(engine_.is_shutting_down());
    }
};

class GraphInvariantTest : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(GraphInvariantTest, RandomCallsThenShutdownMidway) {
    SCOPED_TRACE(rerun_hint(GetParam()));
    Sim sim(GetParam());
    sim.run_to_end(Ending::ShutdownMidway);
}

TEST_P(GraphInvariantTest, RandomCallsThenCompleteEverything) {
    SCOPED_TRACE(rerun_hint(GetParam()));
    Sim sim(GetParam());
    sim.run_to_end(Ending::CompleteEverything);
    // The run reached what it is meant to check.
    if (HasFailure() || !suite.default_run()) return;
    const Coverage& c = sim.coverage();
    EXPECT_GT(c.accepted, 100u);
    EXPECT_GT(c.batches, 20u);
    EXPECT_GT(c.held_key, 0u);
    EXPECT_GT(c.skipped, 0u);
    EXPECT_GT(c.awaited_bound, 0u);
    EXPECT_GT(c.scheduled, 0u);
    EXPECT_GT(c.on_time, 0u);
    EXPECT_GT(c.missed + c.failed_start, 0u);
    EXPECT_GT(c.late, 0u) << "no RunLate start ran late";
    EXPECT_GT(c.await_skipped, 0u) << "no awaited key timed out";
    for (S from : {S::Blocked, S::Scheduled, S::Ready, S::Running}) {
        EXPECT_GT(c.cancelled_from.count(from) ? c.cancelled_from.at(from) : 0u, 0u)
            << "no cancel of a " << to_string(from) << " task";
    }
    for (SubmitError e : {SubmitError::UnknownDependency, SubmitError::ReservationConflict, SubmitError::Cycle,
                          SubmitError::DuplicateKeyInBatch}) {
        EXPECT_GT(c.rejected.count(e) ? c.rejected.at(e) : 0u, 0u) << to_string(e);
    }
}

INSTANTIATE_TEST_SUITE_P(GraphInvariantSeeds, GraphInvariantTest, ::testing::ValuesIn(suite.seeds()));

}  // namespace
}  // namespace cronoq::core::test::graph_model::graph_invariant_test
