#pragma once
// What invariant_test.cpp checks on every call: the call's actions applied
// to the model of invariant_model.hpp (apply), and the engine against the
// model after it (check). See the .cpp for the list of invariants.
#include "invariant_model.hpp"

namespace cronoq::core::test::invariant_model {

class InvariantChecks : public InvariantModel {
public:
    using InvariantModel::InvariantModel;

protected:
    /// Moves the model through the latest call's actions, then checks.
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
};

}  // namespace cronoq::core::test::invariant_model
