#pragma once
// The model behind resource_invariant_test.cpp: what the engine must have
// done with resources (docs/guide/resources-and-bounds.md), bounds and overflow (docs/guide/resources-and-bounds.md), autoscaling
// (docs/guide/resources-and-bounds.md) and its metrics window (docs/guide/operations.md), rebuilt only from the actions
// the engine drained and the answers of the calls. This header holds the
// state and the action handlers; resource_checks.hpp the checks; the .cpp
// the generator and the TESTs.
#include "model_harness.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace cronoq::core::test::resource_model {

using S = TaskStatus;

// The shutdown comes after 85 % of the calls.
inline constexpr SuiteRun suite{{201, 202, 203, 204, 205}, 3000, 17, 20};

// The engine computes a bucket's level exactly from a reference point; the
// model adds up refills in doubles. They differ by rounding only, far below
// this.
inline constexpr double token_slack = 1e-6;

// The metrics window of the engine under test, and its slices (the engine
// keeps six; sliding_window.hpp).
inline constexpr Duration metrics_window = std::chrono::seconds(12);
inline constexpr Duration metrics_slice = metrics_window / 6;

struct ResourceState {
    Resource decl;
    std::uint32_t held = 0;  // semaphore: units of the Running tasks
    double level = 0;        // bucket: tokens at `last`
    double rate = 0;         // bucket: as set_rate left it
    Time last{};
    // A Ready task needing this resource ended (cancelled, shed) since its
    // units last came back: what it held back may still be parked (the
    // lenient check, see Model::strict).
    bool waiter_left = false;

    bool bucket() const { return decl.kind == Resource::Kind::TokenBucket; }
    // A bucket refills continuously up to its burst (resource.hpp).
    void advance(Time now) {
        if (bucket() && now > last) level = std::min<double>(decl.burst, level + rate * to_seconds(now - last));
        last = std::max(last, now);
    }
    double free_units() const { return bucket() ? level : static_cast<double>(decl.permits) - held; }
    // Whether `n` units might not be there now: the slack leans towards
    // "short", so that rounding never makes a legitimate wait look wrong.
    bool maybe_short(std::uint32_t n) const { return free_units() < n + (bucket() ? token_slack : 0.0); }
};

struct Need {
    std::size_t resource = 0;
    std::uint32_t amount = 0;
};

struct TaskModel {
    TaskId id;
    PoolId pool = 0;
    Priority priority = Priority::Normal;
    std::vector<Need> needs;  // summed per resource, zero amounts dropped (docs)
    S state = S::Ready;
    std::uint32_t attempts = 0;
    std::uint32_t max_attempts = 1;
    Duration backoff{};  // the pool's fixed retry delay
    std::optional<Duration> timeout;
    LeaseId lease{};
    Time ready_since{};
    Time attempt_start{};
    Time retry_since{};
    int terminal_events = 0;
};

// What the engine counts in its metrics window, per pool.
enum Counted : std::size_t { kDispatched, kSucceeded, kFailed, kDeadLettered, kRetried, kShed, kRunEnded, kCounted };

struct PoolModel {
    PoolConfig config;
    std::size_t capacity = 0;
    std::size_t running = 0;
    bool full = false;    // a Full was answered: a SpaceAvailable is owed once there is room
    Time last_change{};   // the autoscaling policy's last change (cooldown)
    PoolCounters expect;  // the cumulative counters the engine must show
    std::map<std::int64_t, std::array<std::uint64_t, kCounted>> periods;  // by metrics slice
    // The pool as the autoscaler saw it in the current call (see process).
    std::size_t eval_capacity = 0;
    std::size_t eval_running = 0;
    std::array<std::size_t, priority_count> eval_ready{};
};

// Every call of the user scaler, as it saw it. The engine never calls it: it
// asks (AskScaler) and the test, as its owner, calls it and answers.
struct ScalerLog {
    struct Call {
        ScalerInput input;
        std::size_t answer = 0;
        bool threw = false;
    };
    std::vector<Call> calls;
};

// A user policy (scaler.hpp): a fixed answer when the pool is idle (so that
// it can sleep), now and then a throw (the capacity must stay) or an answer
// beyond max (it must be clamped), else busy + half the backlog.
inline std::function<std::size_t(const ScalerInput&)> user_scaler(std::shared_ptr<ScalerLog> log) {
    return [log](const ScalerInput& in) -> std::size_t {
        const std::size_t pending = std::accumulate(in.pending.begin(), in.pending.end(), std::size_t{0});
        ScalerLog::Call call{in, 0, false};
        const std::size_t n = log->calls.size() + 1;
        if (pending == 0 && in.busy == 0)
            call.answer = in.min;
        else if (n % 11 == 0)
            call.threw = true;
        else if (n % 7 == 0)
            call.answer = in.max + 50;
        else
            call.answer = in.busy + (pending + 1) / 2;
        log->calls.push_back(call);
        if (call.threw) throw std::runtime_error("user scaler failure");
        return call.answer;
    };
}

using Op = ModelCall;

// What a run exercised, so that a generator that stops reaching a feature
// is noticed.
struct Coverage {
    std::map<SubmitError, std::uint64_t> rejected;
    std::uint64_t accepted = 0, shed_lowest = 0, shed_oldest = 0, space = 0, waited_on_resource = 0;
    std::uint64_t scale_up = 0, scale_down = 0, scaler_calls = 0, scaler_throws = 0, zero_rate = 0, bad_rate = 0;
    std::uint64_t timed_out = 0, two_resources = 0;
};

// The state the checks read, and the handlers that move it action by action.
class Model : public ModelRun {
public:
    explicit Model(std::uint64_t seed) : ModelRun(suite, seed) {}

    std::vector<ResourceState> resources;
    std::vector<PoolModel> pools;
    std::vector<TaskModel> tasks;
    std::unordered_map<std::uint64_t, std::size_t> by_id;
    std::unordered_map<std::uint64_t, std::size_t> live_leases;
    std::unordered_set<std::uint64_t> all_leases;
    std::vector<LeaseId> dead_leases;
    std::vector<std::size_t> live;
    Bounds global_bounds{};
    std::shared_ptr<ScalerLog> scaler_log = std::make_shared<ScalerLog>();
    std::optional<PoolId> user_pool;
    bool shutting_down = false;
    Time grace_end = Time::max();
    Time now{};
    Coverage cov;
    // Set by the Sim before a submit: the spec, and the Ready tasks that
    // the overflow policy may shed (empty: no shed may happen).
    std::optional<TaskSpec> pending_spec;
    std::set<std::size_t> victims;
    bool shed_expected = false;
    // Pools an action of the current call named (their stats() may change).
    std::set<PoolId> touched;
    // The current call's default-policy ScaleTo actions (pool, capacity
    // before) and AskScaler actions.
    std::vector<std::pair<PoolId, std::size_t>> scaled;
    std::size_t questions = 0;

    std::size_t pending_of(PoolId p) const {
        const PoolCounters c = counts(p);
        return c.ready + c.retrying;
    }
    std::size_t pending_total() const {
        std::size_t n = 0;
        for (PoolId p = 0; p < pools.size(); ++p) n += pending_of(p);
        return n;
    }
    // Room for one more task of pool p (bounds.hpp; engine.hpp submit).
    bool has_room(PoolId p) const {
        const Bounds& b = pools[p].config.bounds;
        if (b.bounded() && pending_of(p) + 1 > b.max_pending) return false;
        return !global_bounds.bounded() || pending_total() + 1 <= global_bounds.max_pending;
    }

    // Counts of the live tasks of a pool, by state, as the model has them.
    PoolCounters counts(PoolId p) const {
        PoolCounters c;
        for (std::size_t idx : live) {
            const TaskModel& t = tasks[idx];
            if (t.pool != p) continue;
            if (t.state == S::Ready) {
                ++c.ready;
                ++c.ready_by_class[index_of(t.priority)];
            }
            if (t.state == S::Retrying) ++c.retrying;
            if (t.state == S::Running) ++c.running;
        }
        return c;
    }

    // ---- actions ----------------------------------------------------------------------------------

    /// Moves the model through the latest call's actions, in order.
    void process(const Op& op) {
        if (op.silent) {
            ASSERT_TRUE(actions_.empty()) << "a call that must change nothing emitted " << actions_.size()
                                          << " action(s)";
        }
        for (ResourceState& r : resources) r.advance(now);
        scaled.clear();
        questions = 0;
        bool evaluated = false;
        bool shed_seen = false;
        walk_actions(now, [&](const auto& x, const auto&... status) {
            using X = std::decay_t<decltype(x)>;
            if constexpr (requires { x.pool; }) touched.insert(x.pool);
            // The engine evaluates autoscalers after the call's own effects
            // and before it dispatches (engine_state.hpp settle): the first
            // ScaleTo, Dispatch, SpaceAvailable or Forget marks that point.
            if (!evaluated && !std::is_same_v<X, Status> && !std::is_same_v<X, Abort>) {
                snapshot_for_scaler();
                evaluated = true;
            }
            if constexpr (std::is_same_v<X, Dispatch>) {
                on_dispatch(x);
            } else if constexpr (std::is_same_v<X, Abort>) {
                on_abort(x, op);
                if (::testing::Test::HasFatalFailure()) return;
                on_status(status..., op, x.reason, shed_seen);
            } else if constexpr (std::is_same_v<X, Status>) {
                on_status(x, op, std::nullopt, shed_seen);
            } else if constexpr (std::is_same_v<X, ScaleTo>) {
                on_scale(x, scaled);
            } else if constexpr (std::is_same_v<X, SpaceAvailable>) {
                ASSERT_LT(x.pool, pools.size());
                ASSERT_TRUE(pools[x.pool].full) << "SpaceAvailable for pool " << x.pool << " without a Full before";
                ASSERT_TRUE(has_room(x.pool)) << "SpaceAvailable for pool " << x.pool << " with no room";
                pools[x.pool].full = false;
                ++cov.space;
            } else if constexpr (std::is_same_v<X, AskScaler>) {
                ASSERT_EQ(std::optional<PoolId>(x.pool), user_pool) << "AskScaler for a pool without a user scaler";
                ++questions;
            } else {
                static_assert(std::is_same_v<X, Forget>);
                const auto it = by_id.find(x.task.value);
                ASSERT_NE(it, by_id.end()) << "Forget of an unknown task";
                ASSERT_TRUE(is_terminal(tasks[it->second].state)) << "Forget of a live task";
            }
        });
        if (::testing::Test::HasFatalFailure()) return;
        if (!evaluated) snapshot_for_scaler();
        ASSERT_EQ(shed_seen, shed_expected) << (shed_expected ? "the overflow policy had to shed a victim"
                                                              : "a task was shed that the policy may not shed");
        shed_expected = false;  // predicted for one submit only
        victims.clear();
        std::erase_if(live, [this](std::size_t idx) { return is_terminal(tasks[idx].state); });
    }

    void count(PoolId p, Counted what) {
        ++pools[p].periods[period(now)][what];
    }
    static std::int64_t period(Time t) { return t.time_since_epoch().count() / metrics_slice.count(); }

    void snapshot_for_scaler() {
        for (PoolId p = 0; p < pools.size(); ++p) {
            const PoolCounters c = counts(p);
            pools[p].eval_capacity = pools[p].capacity;
            pools[p].eval_running = c.running;
            pools[p].eval_ready = c.ready_by_class;
        }
    }

    void end_lease(TaskModel& t) {
        for (const Need& n : t.needs)
            if (!resources[n.resource].bucket()) {
                resources[n.resource].held -= n.amount;  // tokens never come back
                resources[n.resource].waiter_left = false;
            }
        live_leases.erase(t.lease.value);
        dead_leases.push_back(t.lease);
        t.lease = LeaseId{};
        --pools[t.pool].running;
        count(t.pool, kRunEnded);
    }

    void on_dispatch(const Dispatch& d) {
        const auto it = by_id.find(d.task.value);
        ASSERT_NE(it, by_id.end()) << "Dispatch of an unknown task";
        TaskModel& t = tasks[it->second];
        PoolModel& p = pools[t.pool];
        ASSERT_EQ(t.state, S::Ready) << "Dispatch of a task that is " << to_string(t.state);
        ASSERT_EQ(d.pool, t.pool);
        ASSERT_FALSE(shutting_down) << "Dispatch during shutdown";
        ASSERT_LT(p.running, p.capacity) << "Dispatch while running >= capacity";
        ASSERT_TRUE(d.lease) << "lease 0";
        ASSERT_TRUE(all_leases.insert(d.lease.value).second) << "lease " << d.lease.value << " reused";
        ASSERT_EQ(d.attempt, t.attempts + 1);
        // docs/guide/resources-and-bounds.md: all of its resources, at once. A semaphore never has
        // more holders' units than permits; a bucket never hands out a
        // token it does not hold (so, summed over a run, never more than
        // burst + the integral of its rate).
        for (const Need& n : t.needs) {
            ResourceState& r = resources[n.resource];
            if (r.bucket()) {
                r.level -= n.amount;
                ASSERT_GE(r.level, -token_slack) << "bucket \"" << r.decl.name << "\" handed out " << n.amount
                                                 << " token(s) it did not hold (level now " << r.level << ")";
            } else {
                r.held += n.amount;
                ASSERT_LE(r.held, r.decl.permits)
                    << "semaphore \"" << r.decl.name << "\" has " << r.held << " units held, permits "
                    << r.decl.permits;
            }
        }
        ++t.attempts;
        t.state = S::Running;
        t.lease = d.lease;
        t.attempt_start = now;
        ++p.running;
        ++p.expect.dispatched;
        live_leases[d.lease.value] = it->second;
        count(t.pool, kDispatched);
    }

    void on_abort(const Abort& ab, const Op& op) {
        const auto it = live_leases.find(ab.lease.value);
        ASSERT_NE(it, live_leases.end()) << "Abort of a lease that is not live";
        TaskModel& t = tasks[it->second];
        ASSERT_EQ(t.id, ab.task);
        ASSERT_EQ(t.pool, ab.pool);
        switch (ab.reason) {
            case AbortReason::Timeout:
                ASSERT_EQ(op.kind, Op::Kind::Tick) << "timeout outside a tick (time only moves through ticks)";
                ASSERT_TRUE(t.timeout && now >= t.attempt_start + *t.timeout) << "aborted before its timeout";
                ++pools[t.pool].expect.timed_out;
                ++cov.timed_out;
                break;
            case AbortReason::Cancelled:
                ASSERT_TRUE(op.kind == Op::Kind::Cancel && op.task == t.id) << "aborted a task that was not cancelled";
                break;
            case AbortReason::Shutdown:
                ASSERT_TRUE(shutting_down && now >= grace_end) << "aborted for shutdown before the grace end";
                break;
            case AbortReason::LeaseExpired: FAIL() << "lease expiry without a lease_ttl";
            case AbortReason::WorkerLost: FAIL() << "worker lost in a model without remote workers";
        }
    }

    void on_status(const Status& st, const Op& op, std::optional<AbortReason> abort, bool& shed_seen) {
        ASSERT_EQ(st.at, now);
        const auto it = by_id.find(st.task.value);
        if (it == by_id.end()) return admit(st, op);
        TaskModel& t = tasks[it->second];
        ASSERT_EQ(t.terminal_events, 0) << "Status " << to_string(st.status) << " after the terminal "
                                        << to_string(t.state);
        ASSERT_EQ(st.pool, t.pool);
        ASSERT_EQ(st.attempt, t.attempts);
        PoolModel& p = pools[t.pool];
        const bool running = t.state == S::Running;
        const bool by_complete = op.kind == Op::Kind::Complete && running && op.lease == t.lease;
        const bool retryable_end =
            abort == AbortReason::Timeout || (by_complete && op.outcome.kind == Outcome::Kind::Retryable);
        switch (st.status) {
            case S::Ready:
                ASSERT_EQ(t.state, S::Retrying) << "Ready from " << to_string(t.state);
                ASSERT_GE(now - t.retry_since, t.backoff) << "left its backoff early";
                t.ready_since = now;
                break;
            case S::Retrying:
                ASSERT_TRUE(running && retryable_end) << "Retrying without a retryable end of its attempt";
                ASSERT_FALSE(shutting_down) << "retried during shutdown";
                ASSERT_LT(t.attempts, t.max_attempts) << "retried past max_attempts";
                t.retry_since = now;
                ++p.expect.retried;
                count(t.pool, kRetried);
                break;
            case S::Succeeded:
                ASSERT_TRUE(by_complete && op.outcome.kind == Outcome::Kind::Success) << "Succeeded without a success";
                ++p.expect.succeeded;
                count(t.pool, kSucceeded);
                break;
            case S::Failed:
                ASSERT_TRUE(by_complete && op.outcome.kind == Outcome::Kind::Permanent)
                    << "Failed without a permanent failure";
                ++p.expect.failed;
                count(t.pool, kFailed);
                break;
            case S::DeadLettered:
                ASSERT_TRUE(running && retryable_end && !shutting_down && t.attempts >= t.max_attempts)
                    << "DeadLettered without a retryable end of the last attempt";
                ++p.expect.dead_lettered;
                count(t.pool, kDeadLettered);
                break;
            case S::Cancelled: {
                const bool by_cancel = op.kind == Op::Kind::Cancel && op.task == t.id;
                const bool ok = running ? (abort == AbortReason::Cancelled || abort == AbortReason::Shutdown ||
                                           (retryable_end && shutting_down) ||
                                           (by_complete && op.outcome.kind == Outcome::Kind::Cancelled))
                                        : (by_cancel || op.kind == Op::Kind::Shutdown);
                ASSERT_TRUE(ok) << "a " << to_string(t.state)
                                << " task Cancelled without cancel, shutdown or a cancelled outcome";
                ++p.expect.cancelled;
                break;
            }
            case S::Shed:
                // docs/guide/resources-and-bounds.md: evicted by the submit that needed room, and the
                // victim is the one the policy names (see Sim::predict).
                ASSERT_EQ(op.kind, Op::Kind::Submit) << "Shed outside a submit";
                ASSERT_FALSE(shed_seen) << "one submit shed two tasks";
                ASSERT_TRUE(victims.count(it->second)) << "shed task " << t.id.value << " ("
                                                       << to_string(t.priority) << ", ready at "
                                                       << to_seconds(t.ready_since - t0) << " s, state "
                                                       << to_string(t.state) << ") is not the policy's victim";
                shed_seen = true;
                ++p.expect.shed;
                count(t.pool, kShed);
                break;
            default: FAIL() << "unexpected status " << to_string(st.status);
        }
        if (running && st.status != S::Running && t.lease) end_lease(t);
        if (t.state == S::Ready && is_terminal(st.status))
            for (const Need& n : t.needs) resources[n.resource].waiter_left = true;
        t.state = st.status;
        if (is_terminal(st.status)) ++t.terminal_events;
    }

    // The first Status of a task: the submit of this call admitted it.
    void admit(const Status& st, const Op& op) {
        ASSERT_EQ(op.kind, Op::Kind::Submit) << "Status of an unknown task";
        ASSERT_EQ(st.task, op.task) << "Status of a task this submit did not admit";
        ASSERT_EQ(st.status, S::Ready);
        ASSERT_EQ(st.attempt, 0u);
        ASSERT_TRUE(pending_spec.has_value());
        const TaskSpec& spec = *pending_spec;
        ASSERT_EQ(st.pool, spec.pool);
        TaskModel t;
        t.id = st.task;
        t.pool = spec.pool;
        t.priority = spec.priority;
        t.needs = needs_of(spec);
        const RetryPolicy& retry = pools[spec.pool].config.retry;
        t.max_attempts = retry.max_attempts;
        t.backoff = retry.initial_backoff;
        t.timeout = spec.timeout ? spec.timeout : pools[spec.pool].config.default_timeout;
        t.ready_since = now;
        by_id[t.id.value] = tasks.size();
        live.push_back(tasks.size());
        tasks.push_back(std::move(t));
        ++pools[spec.pool].expect.submitted;
        ++cov.accepted;
    }

    // The docs' resolution: requests naming one resource are summed, zero
    // amounts dropped. Precondition: every name is declared.
    std::vector<Need> needs_of(const TaskSpec& spec) const {
        std::vector<Need> out;
        for (const ResourceUse& use : spec.resources) {
            if (use.amount == 0) continue;
            std::size_t r = 0;
            while (resources[r].decl.name != use.name) ++r;
            auto same = std::find_if(out.begin(), out.end(), [r](const Need& n) { return n.resource == r; });
            if (same == out.end())
                out.push_back(Need{r, use.amount});
            else
                same->amount += use.amount;
        }
        return out;
    }

    // docs/guide/resources-and-bounds.md and autoscale.hpp, for the policy that emitted a ScaleTo.
    void on_scale(const ScaleTo& sc, std::vector<std::pair<PoolId, std::size_t>>& scaled) {
        ASSERT_LT(sc.pool, pools.size());
        PoolModel& p = pools[sc.pool];
        ASSERT_TRUE(p.config.autoscale.has_value()) << "ScaleTo for pool " << sc.pool << ", which does not autoscale";
        const std::size_t c = p.capacity, n = sc.capacity;
        ASSERT_NE(n, c) << "ScaleTo to the capacity the pool already has";
        ASSERT_GE(n, p.config.min_workers) << "ScaleTo below min_workers";
        ASSERT_LE(n, p.config.max_workers) << "ScaleTo above max_workers";
        if (n > c)
            ++cov.scale_up;
        else
            ++cov.scale_down;
        if (sc.pool != user_pool) {
            const AutoscaleConfig& a = *p.config.autoscale;
            if (n > c) {
                // Step up at most max(floor(ratio x capacity), abs), unless
                // it only brings the pool up to its floor.
                const auto by_ratio =
                    static_cast<std::size_t>(std::floor(a.max_step_up_ratio * static_cast<double>(c)));
                ASSERT_LE(n, std::max(c + std::max(by_ratio, a.max_step_up_abs), p.config.min_workers))
                    << "step up from " << c << " beyond max(ratio x capacity, abs)";
            } else if (c <= p.config.max_workers) {
                ASSERT_LE(c - n, a.max_step_down) << "step down from " << c << " by more than max_step_down";
                ASSERT_GE(now - p.last_change, a.cooldown)
                    << "step down " << to_seconds(now - p.last_change)
                    << " s after the previous change, within cooldown";
            } else {
                ASSERT_EQ(n, p.config.max_workers) << "a capacity above max is brought to max";
            }
            scaled.emplace_back(sc.pool, c);
        }
        p.capacity = n;
        p.last_change = now;
    }
};

}  // namespace cronoq::core::test::resource_model
