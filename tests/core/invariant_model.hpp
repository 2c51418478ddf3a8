#pragma once
// The model behind invariant_test.cpp: the state it keeps of every task,
// lease and pool, rebuilt only from the drained actions, and the handlers
// that move it action by action. invariant_checks.hpp applies a call's
// actions and checks the engine after it; the generator and the TESTs are
// in the .cpp, which lists the invariants.
#include "model_harness.hpp"
#include "ordering_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace cronoq::core::test::invariant_model {

using S = TaskStatus;

// The shutdown comes after 80 % of the calls.
inline constexpr SuiteRun suite{{1, 2, 3, 4, 5}, 3000, 4, 5};

// docs/guide/ordering.md: the un-jittered delay before attempt n (n >= 2).
inline Duration backoff_ceiling(const RetryPolicy& p, std::uint32_t attempt) {
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
// The state and the action handlers; invariant_checks.hpp adds the checks,
// the test adds the generator.
class InvariantModel : public ModelRun {
public:
    static constexpr Duration retention = 20s;
    static constexpr std::size_t retention_max = 40;

    explicit InvariantModel(std::uint64_t seed)
        : ModelRun(suite, seed), engine_(config(seed)), ordering_(config(seed)) {}

    std::size_t submitted() const { return tasks_.size(); }
    const OrderingModel& ordering() const { return ordering_; }
    std::uint64_t fingerprint() const { return fingerprint_; }
    const PoolCounters& expected(PoolId p) const { return pools_[p].expect; }

protected:
    // The harness's hooks (model_harness.hpp) that read the model.
    const Engine& engine() const override { return engine_; }
    Time& clock() override { return now_; }
    std::vector<std::size_t> live_indices() const override { return live_; }
    bool running(std::size_t idx) const override { return tasks_[idx].state == S::Running; }
    std::size_t task_count() const override { return tasks_.size(); }
    int terminal_events(std::size_t idx) const override { return tasks_[idx].terminal_events; }
    std::string show_task(std::size_t idx) const override {
        return "task " + std::to_string(tasks_[idx].id.value) + " " + std::string(to_string(tasks_[idx].state));
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

    // ---- the model -----------------------------------------------------------------------------

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
    std::optional<TaskSpec> pending_;};

}  // namespace cronoq::core::test::invariant_model
