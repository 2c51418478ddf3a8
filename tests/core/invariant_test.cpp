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
#include "model_harness.hpp"
#include "ordering_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace cronoq::core::test::invariant_test {
namespace {

using S = TaskStatus;

// The shutdown comes after 80 % of the calls.
constexpr SuiteRun suite{{1, 2, 3, 4, 5}, 3000, 4, 5};

// docs/guide/ordering.md: the un-jittered delay before attempt n (n >= 2).
Duration backoff_ceiling(const RetryPolicy& p, std::uint32_t attempt) {
    const double raw = static_cast<double>(p.initial_backoff.count()) *
                       std::pow(p.multiplier, static_cast<double>(attempt >= 2 ? attempt - 2 : 0));
    if (!(raw < static_cast<double>(p.max_backoff.count()))) return p.max_backoff;
    return Duration(static_cast<Duration::rep>(raw));
}

struct TaskModel {
    TaskId id;
    PoolId pool = 0;
    Priority priority = Priority::Normal;
    S state = S::Ready;
    std::uint32_t attempts = 0;
    LeaseId lease{};  // live lease while Running
    Time ready_since{};
    std::uint64_t ready_seq = 0;  // order of becoming ready: FIFO order within a class
    Time attempt_start{};
    Time last_beat{};
    Time retry_since{};
    Time finished_at{};
    bool has_deadline = false;
    Time deadline{};
    Time latest_start{};
    std::optional<Duration> timeout;  // effective
    RetryPolicy retry;                // effective
    Duration retry_floor{};           // the next delay is at least this
    Duration retry_upper{};           // and at most this
    bool retried_in_call = false;
    bool forgotten = false;
    int terminal_events = 0;
};

struct PoolModel {
    PoolConfig config;
    std::size_t capacity = 0;
    std::size_t running = 0;
    PoolCounters expect;  // the cumulative counters the engine must show
};

using Op = ModelCall;

class Sim : public ModelRun {
public:
    static constexpr Duration retention = 20s;
    static constexpr std::size_t retention_max = 40;

    explicit Sim(std::uint64_t seed) : ModelRun(suite, seed), engine_(config(seed)), ordering_(config(seed)) {
        add_pool(PoolConfig{.name = "leased", .capacity = 2, .lease_ttl = 3s});
        add_pool(PoolConfig{.name = "timed",
                            .capacity = 1,
                            .retry = RetryPolicy{4, 500ms, 3.0, 10s, false},
                            .default_timeout = 8s});
        add_pool(PoolConfig{.name = "plain", .capacity = 3, .retry = RetryPolicy::none()});
    }

    std::size_t submitted() const { return tasks_.size(); }
    const OrderingModel& ordering() const { return ordering_; }
    std::uint64_t fingerprint() const { return fingerprint_; }
    const PoolCounters& expected(PoolId p) const { return pools_[p].expect; }

private:
    // ---- the harness's hooks (model_harness.hpp) --------------------------------------------

    const Engine& engine() const override { return engine_; }
    Time& clock() override { return now_; }
    void shutdown_midway_call() override { do_shutdown(now_ + rnd_.between(0s, 5s)); }
    void open_everything() override {
        for (PoolId p = 0; p < pools_.size(); ++p) do_set_capacity(p, 3);
    }
    std::vector<std::size_t> live_indices() const override { return live_; }
    bool running(std::size_t idx) const override { return tasks_[idx].state == S::Running; }
    void complete_with_success(std::size_t idx) override { do_complete(idx, Outcome::success()); }
    std::size_t task_count() const override { return tasks_.size(); }
    int terminal_events(std::size_t idx) const override { return tasks_[idx].terminal_events; }
    std::string show_task(std::size_t idx) const override {
        return "task " + std::to_string(tasks_[idx].id.value) + " " + std::string(to_string(tasks_[idx].state));
    }

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

    static EngineConfig config(std::uint64_t seed) { return model_config(seed, retention, retention_max); }

    void add_pool(PoolConfig c) {
        const PoolId id = engine_.add_pool(c);
        ASSERT_EQ(id, pools_.size());
        PoolModel m;
        m.capacity = c.capacity;
        m.config = std::move(c);
        pools_.push_back(std::move(m));
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

    // ---- the model -----------------------------------------------------------------------------

    void apply(const Op& op) {
        engine_.drain(actions_);
        ASSERT_FALSE(engine_.has_actions());
        if (op.silent) { ASSERT_TRUE(actions_.empty()) << "a call that changes nothing emitted actions"; }
        walk_actions(now_, [&](const auto& x, const auto&... status) {
            using X = std::decay_t<decltype(x)>;
            fold(Action(x).index());
            if constexpr (std::is_same_v<X, Dispatch>) {
                on_dispatch(x);
            } else if constexpr (std::is_same_v<X, Abort>) {
                on_abort(x, op);
                if (::testing::Test::HasFatalFailure()) return;
                fold(static_cast<std::uint64_t>(x.reason));
                on_status(status..., op, x.reason);
            } else if constexpr (std::is_same_v<X, Status>) {
                on_status(x, op, std::nullopt);
            } else if constexpr (std::is_same_v<X, Forget>) {
                ASSERT_TRUE(by_id_.count(x.task.value)) << "Forget of an unknown task";
                const TaskModel& t = tasks_[by_id_.at(x.task.value)];
                ASSERT_TRUE(is_terminal(t.state)) << "Forget of a task that has not ended";
                ASSERT_FALSE(t.forgotten) << "a task forgotten twice";
                forgets_in_call_.push_back(x.task.value);
            } else {
                FAIL() << "unexpected action (ScaleTo / SpaceAvailable / AskScaler) without autoscaling or bounds";
            }
        });
        if (::testing::Test::HasFatalFailure()) return;
        for (std::size_t idx : retried_in_call_) tasks_[idx].retried_in_call = false;
        retried_in_call_.clear();
        live_.erase(std::remove_if(live_.begin(), live_.end(), [this](std::size_t idx) { return is_terminal(tasks_[idx].state); }),
                    live_.end());
        if (!op.silent) forget_expired();
        // The engine says Forget for exactly the tasks the model forgot.
        std::sort(forgets_in_call_.begin(), forgets_in_call_.end());
        std::sort(forgotten_in_call_.begin(), forgotten_in_call_.end());
        ASSERT_EQ(forgets_in_call_, forgotten_in_call_) << "Forget actions differ from the retention rule";
        forgets_in_call_.clear();
        forgotten_in_call_.clear();
        check(op);
    }

    void fold(std::uint64_t v) { fingerprint_ = (fingerprint_ ^ v) * 0x100000001B3ull; }

    std::size_t index_of_task(TaskId id) {
        const auto it = by_id_.find(id.value);
        return it == by_id_.end() ? ~std::size_t{0} : it->second;
    }

    void end_lease(TaskModel& t) {
        live_leases_.erase(t.lease.value);
        dead_leases_.push_back(t.lease);
        --pools_[t.pool].running;
        t.lease = LeaseId{};
    }

    ReadyTask ordering_view(const TaskModel& t) const {
        return ReadyTask{t.id.value, t.priority, t.ready_since, t.ready_seq, t.has_deadline, t.deadline, t.latest_start};
    }

    // docs/guide/ordering.md, with this seed's shares and window factor (ordering_model.hpp).
    void check_order(const TaskModel& t) {
        std::vector<ReadyTask> ready;
        for (std::size_t idx : live_) {
            const TaskModel& o = tasks_[idx];
            if (o.pool == t.pool && o.state == S::Ready) ready.push_back(ordering_view(o));
        }
        const std::string wrong = ordering_.check_dispatch(t.pool, ordering_view(t), ready, now_);
        ASSERT_TRUE(wrong.empty()) << wrong;
    }

    // `t` has just left Ready: the last of its class in its pool takes the
    // class's share credit with it.
    void left_ready(const TaskModel& t) {
        for (std::size_t idx : live_) {
            const TaskModel& o = tasks_[idx];
            if (o.pool == t.pool && o.priority == t.priority && o.state == S::Ready) return;
        }
        ordering_.class_emptied(t.pool, t.priority);
    }

    void on_dispatch(const Dispatch& d) {
        const std::size_t idx = index_of_task(d.task);
        ASSERT_NE(idx, ~std::size_t{0}) << "Dispatch of an unknown task";
        TaskModel& t = tasks_[idx];
        fold(idx);
        fold(d.attempt);
        ASSERT_EQ(t.state, S::Ready) << "Dispatch of a task that is " << to_string(t.state);
        ASSERT_EQ(d.pool, t.pool);
        ASSERT_FALSE(shutting_down_) << "Dispatch during shutdown";
        PoolModel& p = pools_[t.pool];
        ASSERT_LT(p.running, p.capacity) << "Dispatch while running >= capacity";
        ASSERT_TRUE(d.lease) << "lease 0";
        ASSERT_TRUE(all_leases_.insert(d.lease.value).second) << "lease " << d.lease.value << " reused";
        ASSERT_EQ(d.attempt, t.attempts + 1);
        check_order(t);
        if (::testing::Test::HasFatalFailure()) return;
        ++t.attempts;
        t.state = S::Running;
        left_ready(t);
        t.lease = d.lease;
        t.attempt_start = now_;
        t.last_beat = now_;
        ++p.running;
        ++p.expect.dispatched;
        live_leases_[d.lease.value] = idx;
    }

    void on_abort(const Abort& ab, const Op& op) {
        const auto it = live_leases_.find(ab.lease.value);
        ASSERT_NE(it, live_leases_.end()) << "Abort of a lease that is not live";
        TaskModel& t = tasks_[it->second];
        ASSERT_EQ(t.id, ab.task);
        ASSERT_EQ(t.pool, ab.pool);
        ASSERT_EQ(t.state, S::Running);
        const bool timed_out = t.timeout && now_ >= t.attempt_start + *t.timeout;
        const auto& ttl = pools_[t.pool].config.lease_ttl;
        const bool expired = ttl && now_ >= t.last_beat + *ttl;
        switch (ab.reason) {
            case AbortReason::Timeout:
                ASSERT_EQ(op.kind, Op::Kind::Tick) << "timeout outside a tick";
                ASSERT_TRUE(timed_out) << "aborted for timeout before the timeout";
                ++pools_[t.pool].expect.timed_out;
                break;
            case AbortReason::LeaseExpired:
                ASSERT_EQ(op.kind, Op::Kind::Tick) << "lease expiry outside a tick";
                ASSERT_TRUE(expired) << "lease aborted before its expiry";
                ASSERT_FALSE(timed_out) << "a due timeout must win over the lease expiry";
                ++pools_[t.pool].expect.lease_expired;
                break;
            case AbortReason::Cancelled:
                ASSERT_EQ(op.kind, Op::Kind::Cancel);
                ASSERT_EQ(op.task, t.id) << "aborted a task that was not cancelled";
                break;
            case AbortReason::Shutdown:
                ASSERT_TRUE(shutting_down_);
                ASSERT_GE(now_, grace_end_) << "aborted for shutdown before the grace end";
                ASSERT_TRUE(op.kind == Op::Kind::Tick || op.kind == Op::Kind::Shutdown);
                break;
            case AbortReason::WorkerLost: FAIL() << "worker lost in a model without remote workers";
        }
        end_lease(t);
    }

    void on_status(const Status& st, const Op& op, std::optional<AbortReason> abort) {
        ASSERT_EQ(st.at, now_);
        std::size_t idx = index_of_task(st.task);
        if (idx == ~std::size_t{0}) {
            ASSERT_EQ(op.kind, Op::Kind::Submit) << "Status of an unknown task";
            ASSERT_EQ(st.task, op.task);
            ASSERT_EQ(st.status, S::Ready);
            ASSERT_EQ(st.attempt, 0u);
            ASSERT_TRUE(pending_.has_value());
            ASSERT_GT(st.task.value, last_task_id_) << "task ids must increase";
            last_task_id_ = st.task.value;
            const TaskSpec& spec = *pending_;
            ASSERT_EQ(st.pool, spec.pool);
            TaskModel t;
            t.id = st.task;
            t.pool = spec.pool;
            t.priority = spec.priority;
            t.ready_since = now_;
            t.ready_seq = ++ready_seq_;
            t.has_deadline = spec.deadline.has_value();
            if (t.has_deadline) {
                t.deadline = *spec.deadline;
                t.latest_start = *spec.deadline - *spec.duration_hint;
            }
            t.timeout = spec.timeout ? spec.timeout : pools_[spec.pool].config.default_timeout;
            t.retry = spec.retry.value_or(pools_[spec.pool].config.retry);
            idx = tasks_.size();
            by_id_[t.id.value] = idx;
            tasks_.push_back(t);
            live_.push_back(idx);
            ++pools_[t.pool].expect.submitted;
            fold(idx);
            fold(static_cast<std::uint64_t>(S::Ready));
            return;
        }
        TaskModel& t = tasks_[idx];
        fold(idx);
        fold(static_cast<std::uint64_t>(st.status));
        fold(static_cast<std::uint64_t>((st.at - t0).count()));
        ASSERT_EQ(t.terminal_events, 0) << "Status " << to_string(st.status) << " after the terminal "
                                        << to_string(t.state);
        ASSERT_EQ(st.pool, t.pool);
        ASSERT_EQ(st.attempt, t.attempts);
        const bool by_complete = op.kind == Op::Kind::Complete && t.lease && op.lease == t.lease;
        PoolCounters& expect = pools_[t.pool].expect;
        switch (st.status) {
            case S::Ready: {
                ASSERT_EQ(t.state, S::Retrying) << "Ready from " << to_string(t.state);
                ASSERT_FALSE(abort.has_value());
                ASSERT_GE(now_ - t.retry_since, t.retry_floor) << "retried before its backoff";
                if (op.kind != Op::Kind::Tick) {
                    ASSERT_TRUE(t.retried_in_call && now_ == t.retry_since) << "left backoff outside a tick";
                }
                ASSERT_TRUE(st.message.empty());
                t.state = S::Ready;
                t.ready_since = now_;
                t.ready_seq = ++ready_seq_;
                return;
            }
            case S::Retrying: {
                ASSERT_EQ(t.state, S::Running) << "Retrying from " << to_string(t.state);
                std::string message;
                std::optional<Duration> retry_after;
                if (abort == AbortReason::Timeout) {
                    message = "timeout";
                } else if (abort == AbortReason::LeaseExpired) {
                    message = "lease expired";
                } else {
                    ASSERT_FALSE(abort.has_value()) << "Retrying after an abort for " << to_string(*abort);
                    ASSERT_TRUE(by_complete) << "Retrying without a report or an abort";
                    ASSERT_EQ(op.outcome.kind, Outcome::Kind::Retryable);
                    message = op.outcome.message;
                    retry_after = op.outcome.retry_after;
                }
                ASSERT_FALSE(shutting_down_) << "retried during shutdown";
                ASSERT_LT(t.attempts, t.retry.max_attempts) << "retried past max_attempts";
                ASSERT_EQ(st.message, message);
                if (t.lease) end_lease(t);
                t.state = S::Retrying;
                t.retry_since = now_;
                const Duration floor = retry_after.value_or(Duration{0});
                t.retry_upper = std::max(backoff_ceiling(t.retry, t.attempts + 1), floor);
                t.retry_floor = t.retry.jitter ? floor : t.retry_upper;
                t.retried_in_call = true;
                retried_in_call_.push_back(idx);
                ++expect.retried;
                return;
            }
            case S::Succeeded:
            case S::Failed:
            case S::DeadLettered:
            case S::Cancelled: {
                S want = S::Cancelled;
                std::string message;
                auto retryable_end = [&](const std::string& why) {
                    if (shutting_down_) {
                        want = S::Cancelled;
                        message = "shutdown: " + why;
                    } else {
                        want = S::DeadLettered;
                        message = why;
                    }
                };
                if (abort) {
                    switch (*abort) {
                        case AbortReason::Cancelled: message = "cancelled"; break;
                        case AbortReason::Shutdown: message = "shutdown"; break;
                        case AbortReason::Timeout: retryable_end("timeout"); break;
                        case AbortReason::LeaseExpired: retryable_end("lease expired"); break;
                        case AbortReason::WorkerLost: retryable_end("worker disconnected"); break;
                    }
                } else if (t.state == S::Running) {
                    ASSERT_TRUE(by_complete) << "a running task ended without a report or an abort";
                    switch (op.outcome.kind) {
                        case Outcome::Kind::Success: want = S::Succeeded; break;
                        case Outcome::Kind::Permanent:
                            want = S::Failed;
                            message = op.outcome.message;
                            break;
                        case Outcome::Kind::Cancelled: message = op.outcome.message; break;
                        case Outcome::Kind::Retryable: retryable_end(op.outcome.message); break;
                    }
                } else if (op.kind == Op::Kind::Cancel && op.task == t.id) {
                    message = "cancelled";
                } else if (op.kind == Op::Kind::Shutdown) {
                    message = "shutdown";
                } else {
                    FAIL() << to_string(t.state) << " task ended " << to_string(st.status)
                           << " without cancel or shutdown";
                }
                if (want == S::DeadLettered) {
                    ASSERT_GE(t.attempts, t.retry.max_attempts) << "dead-lettered with attempts left";
                }
                ASSERT_EQ(st.status, want) << "from " << to_string(t.state);
                ASSERT_EQ(st.message, message);
                if (t.lease) end_lease(t);
                const bool was_ready = t.state == S::Ready;
                t.state = st.status;
                if (was_ready) left_ready(t);
                t.finished_at = now_;
                ++t.terminal_events;
                finished_.push_back(idx);
                switch (st.status) {
                    case S::Succeeded: ++expect.succeeded; break;
                    case S::Failed: ++expect.failed; break;
                    case S::DeadLettered: ++expect.dead_lettered; break;
                    default: ++expect.cancelled; break;
                }
                return;
            }
            default: FAIL() << "unexpected status " << to_string(st.status);
        }
    }

    // Terminal tasks retained: the newest ones, at most retention_max, none
    // older than retention (applied whenever the engine settles).
    void forget_expired() {
        while (forgotten_ < finished_.size()) {
            TaskModel& f = tasks_[finished_[forgotten_]];
            const bool over = finished_.size() - forgotten_ > retention_max;
            if (!over && now_ - f.finished_at < retention) break;
            f.forgotten = true;
            forgotten_in_call_.push_back(f.id.value);
            ++forgotten_;
        }
    }

    // ---- invariants after every call -------------------------------------------------------------

    void check(const Op& op) {
        std::vector<std::size_t> ready(pools_.size()), running(pools_.size()), retrying(pools_.size());
        std::optional<Time> due;
        auto due_at = [&due](Time t) { due = due ? std::min(*due, t) : t; };
        for (std::size_t idx : live_) {
            const TaskModel& t = tasks_[idx];
            const auto st = engine_.status(t.id);
            ASSERT_TRUE(st.has_value()) << "live task " << t.id.value << " forgotten";
            ASSERT_EQ(*st, t.state) << "task " << t.id.value;
            switch (t.state) {
                case S::Ready: ++ready[t.pool]; break;
                case S::Running: {
                    ++running[t.pool];
                    ASSERT_TRUE(t.lease && live_leases_.count(t.lease.value));
                    if (t.timeout) due_at(t.attempt_start + *t.timeout);
                    if (const auto& ttl = pools_[t.pool].config.lease_ttl) due_at(t.last_beat + *ttl);
                    break;
                }
                case S::Retrying:
                    ++retrying[t.pool];
                    ASSERT_GT(t.retry_upper, Duration{0}) << "a zero backoff must not wait for a tick";
                    due_at(t.retry_since + t.retry_upper);
                    break;
                default: FAIL() << "live task in state " << to_string(t.state);
            }
        }
        std::size_t all_running = 0;
        for (PoolId p = 0; p < pools_.size(); ++p) {
            const PoolCounters c = engine_.counters(p);
            const PoolModel& m = pools_[p];
            ASSERT_EQ(c.capacity, m.capacity) << "pool " << p;
            ASSERT_EQ(c.running, m.running) << "pool " << p << ": running differs from the live leases";
            ASSERT_EQ(c.running, running[p]) << "pool " << p;
            ASSERT_EQ(c.ready, ready[p]) << "pool " << p;
            ASSERT_EQ(c.retrying, retrying[p]) << "pool " << p;
            check_cumulative(c, m.expect, p);
            if (::testing::Test::HasFatalFailure()) return;
            if (ready[p] > 0) { ASSERT_GE(c.running, c.capacity) << "pool " << p << ": idle slot while tasks wait"; }
            all_running += running[p];
        }
        ASSERT_EQ(live_leases_.size(), all_running);
        ASSERT_EQ(engine_.live_tasks(), live_.size());
        ASSERT_EQ(engine_.late_reports(), late_);

        if (shutting_down_ && all_running > 0) due_at(grace_end_);
        const auto wake = engine_.next_wakeup();
        if (!due) {
            ASSERT_FALSE(wake.has_value()) << "next_wakeup with nothing timed: a stale timer";
        } else {
            ASSERT_TRUE(wake.has_value()) << "timed work but no next_wakeup";
            ASSERT_LE(*wake, *due) << "next_wakeup later than the next due event";
        }
        if (op.kind == Op::Kind::Tick) {
            if (due) { ASSERT_GT(*due, now_) << "work due at or before the tick was left undone"; }
            if (wake) { ASSERT_GT(*wake, now_) << "next_wakeup in the past after a tick"; }
        }

        // Retention.
        ASSERT_EQ(engine_.retained_tasks(), finished_.size() - forgotten_);
        auto visible = [this](std::size_t i) {
            const TaskModel& f = tasks_[finished_[i]];
            const auto st = engine_.status(f.id);
            if (f.forgotten) {
                ASSERT_FALSE(st.has_value()) << "task " << f.id.value << " retained too long";
                ASSERT_FALSE(engine_.cancel(f.id, now_));
            } else {
                ASSERT_TRUE(st.has_value()) << "terminal task " << f.id.value << " forgotten too early";
                ASSERT_EQ(*st, f.state);
            }
        };
        if (!finished_.empty()) {
            visible(finished_.size() - 1);
            if (forgotten_ > 0) visible(forgotten_ - 1);
            if (forgotten_ < finished_.size()) visible(forgotten_);
            visible(rnd_.below(finished_.size()));
        }
    }

    Engine engine_;
    OrderingModel ordering_;
    std::vector<PoolModel> pools_;
    std::vector<TaskModel> tasks_;
    std::unordered_map<std::uint64_t, std::size_t> by_id_;
    std::unordered_map<std::uint64_t, std::size_t> live_leases_;
    std::unordered_set<std::uint64_t> all_leases_;
    std::vector<LeaseId> dead_leases_;
    std::vector<std::size_t> live_;
    std::vector<std::size_t> finished_;
    std::vector<std::size_t> retried_in_call_;
    std::size_t forgotten_ = 0;
    std::vector<std::uint64_t> forgets_in_call_;     // Forget actions of this call
    std::vector<std::uint64_t> forgotten_in_call_;   // what the model forgot in it
    std::uint64_t late_ = 0;
    std::uint64_t last_task_id_ = 0;
    std::uint64_t ready_seq_ = 0;
    std::uint64_t fingerprint_ = 0xCBF29CE484222325ull;
    bool shutting_down_ = false;
    Time grace_end_ = Time::max();
    Time now_ = t0;
    std::optional<TaskSpec> pending_;
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
    // The run exercised every way an attempt ends.
    PoolCounters sum;
    for (PoolId p = 0; p < 3; ++p) {
        const PoolCounters& c = sim.expected(p);
        sum.succeeded += c.succeeded;
        sum.failed += c.failed;
        sum.dead_lettered += c.dead_lettered;
        sum.cancelled += c.cancelled;
        sum.retried += c.retried;
        sum.timed_out += c.timed_out;
        sum.lease_expired += c.lease_expired;
    }
    EXPECT_GT(sum.succeeded, 0u);
    EXPECT_GT(sum.failed, 0u);
    EXPECT_GT(sum.dead_lettered, 0u);
    EXPECT_GT(sum.cancelled, 0u);
    EXPECT_GT(sum.retried, 0u);
    EXPECT_GT(sum.timed_out, 0u);
    EXPECT_GT(sum.lease_expired, 0u);
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
}  // namespace cronoq::core::test::invariant_test
