#pragma once
// The model behind graph_invariant_test.cpp: the state it keeps of every
// task, edge, key and pool, rebuilt only from the drained actions and the
// submit results, and the handlers that move it action by action. The
// checks made after every call are in graph_checks.hpp; the generator and
// the TESTs in the .cpp, which lists the invariants.
#include "model_harness.hpp"
#include "ordering_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace cronoq::core::test::graph_model {

using S = TaskStatus;
using K = Dep::Kind;

// The shutdown comes after 85 % of the calls.
inline constexpr SuiteRun suite{{101, 102, 103, 104, 105}, 2500, 17, 20};

// docs/guide/dependencies-and-keys.md, written out here rather than taken from dep_met, so that the
// engine's helper is checked too.
inline bool meets(K kind, S parent) {
    switch (kind) {
        case K::OnSuccess: return parent == S::Succeeded;
        case K::OnFailure: return parent == S::Failed || parent == S::DeadLettered;
        case K::OnComplete: return is_terminal(parent);
    }
    return false;
}

inline const char* kind_text(K k) {
    switch (k) {
        case K::OnSuccess: return "on_success";
        case K::OnFailure: return "on_failure";
        case K::OnComplete: return "on_complete";
    }
    return "?";
}

inline const char* miss_text(MissPolicy p) {
    switch (p) {
        case MissPolicy::RunLate: return "RunLate";
        case MissPolicy::Skip: return "Skip";
        case MissPolicy::Fail: return "Fail";
    }
    return "?";
}

inline std::string seconds(Duration d) {
    std::ostringstream os;
    os << to_seconds(d) << " s";
    return os.str();
}

// One edge of a task in the model: bound to its parent (a model index) once
// the parent exists, else awaiting `awaited` (UnknownDependency::Await).
struct EdgeModel {
    K kind = K::OnSuccess;
    std::optional<std::size_t> parent;
    std::string awaited;
};

struct TaskModel {
    TaskId id;
    PoolId pool = 0;
    std::optional<std::string> key;
    bool has_start = false;
    Time start{};
    Duration tolerance{};
    MissPolicy on_miss = MissPolicy::RunLate;
    Duration hint{};  // duration_hint: the expected duration of a fixed start
    std::vector<EdgeModel> edges;
    std::optional<Time> await_until;  // the Await timer, if an edge awaited a key at admission
    bool announced = false;           // its first Status was seen
    S state = S::Blocked;
    std::uint32_t attempts = 0;
    std::uint32_t max_attempts = 1;
    Duration backoff{};  // the pool's fixed retry delay
    Time retry_at{};     // while Retrying
    LeaseId lease{};     // while Running
    int terminal_events = 0;
    bool forgotten = false;

    // A fixed start that became due and has not run yet: dispatched before
    // other work. (After a retry it is ordinary ready work.)
    bool due_start() const { return has_start && attempts == 0 && state == S::Ready; }
};

struct PoolModel {
    PoolConfig config;
    std::size_t capacity = 0;
    std::size_t max_workers = 0;  // effective: 0 in the config means the capacity
    std::size_t limit = 0;        // overlapping reservations allowed
    std::size_t running = 0;      // live leases, as the actions go
    PoolCounters expect;          // cumulative counters the engine must show
};

// Where a dependency of a batch member points, by docs/guide/dependencies-and-keys.md's resolution.
struct Ref {
    enum class To : std::uint8_t { Task, Member, Await, Unknown } to = To::Unknown;
    K kind = K::OnSuccess;
    std::size_t index = 0;  // Task: model index; Member: spec index
    std::string key;        // Await: the key
};

// What the model expects of a submit or batch.
struct Plan {
    std::set<SubmitError> errors;                    // every error that applies; empty: must be accepted
    std::vector<std::optional<std::size_t>> holder;  // per spec: the task holding its key
    std::vector<std::vector<Ref>> refs;              // per admitted spec
    std::vector<bool> invalid;
};

using Op = ModelCall;

// What a run exercised, so that a generator that stops reaching a feature
// is noticed.
struct Coverage {
    std::uint64_t accepted = 0, held_key = 0, batches = 0;
    std::map<SubmitError, std::uint64_t> rejected;
    std::uint64_t skipped = 0, await_skipped = 0, awaited_bound = 0, missed = 0, failed_start = 0;
    std::uint64_t on_time = 0, late = 0, scheduled = 0;
    std::map<S, std::uint64_t> cancelled_from;
};

// The state and the action handlers; graph_checks.hpp adds the checks,
// the test adds the generator.
class GraphModel : public ModelRun {
public:
    static constexpr Duration retention = 30s;
    static constexpr std::size_t retention_max = 60;
    static constexpr int key_space = 24;

    explicit GraphModel(std::uint64_t seed) : ModelRun(suite, seed), engine_(config(seed)) {}

protected:
    // The harness's hooks (model_harness.hpp) that read the model.
    const Engine& engine() const override { return engine_; }
    Time& clock() override { return now_; }
    std::vector<std::size_t> live_indices() const override { return live_; }
    bool running(std::size_t idx) const override { return tasks_[idx].state == S::Running; }
    std::size_t task_count() const override { return tasks_.size(); }
    int terminal_events(std::size_t idx) const override { return tasks_[idx].terminal_events; }
    std::string show_task(std::size_t idx) const override { return show(tasks_[idx]); }

    // Shares and holds must not lose a start.
    static EngineConfig config(std::uint64_t seed) { return model_config(seed, retention, retention_max); }

    void add_pool(PoolConfig c) {
        const PoolId id = engine_.add_pool(c);
        ASSERT_EQ(id, pools_.size());
        PoolModel m;
        m.capacity = c.capacity;
        m.max_workers = c.max_workers == 0 ? c.capacity : c.max_workers;
        // docs/guide/time-and-cron.md: reservable_fraction of max_workers, at least one slot.
        m.limit = std::max<std::size_t>(
            1, static_cast<std::size_t>(std::floor(c.reservable_fraction * static_cast<double>(m.max_workers))));
        m.config = std::move(c);
        pools_.push_back(std::move(m));
    }

    bool blocked_task(std::size_t idx) const { return tasks_[idx].announced && tasks_[idx].state == S::Blocked; }

    TaskModel model_of(const TaskSpec& spec, TaskId id) const {
        TaskModel t;
        t.id = id;
        t.pool = spec.pool;
        t.key = spec.key;
        t.has_start = spec.start.has_value();
        if (t.has_start) {
            t.start = *spec.start;
            t.tolerance = spec.start_tolerance;
            t.on_miss = spec.on_miss;
            t.hint = *spec.duration_hint;
        }
        t.max_attempts = pools_[spec.pool].config.retry.max_attempts;
        t.backoff = pools_[spec.pool].config.retry.initial_backoff;
        return t;
    }

    // ---- the model ------------------------------------------------------------------------------

    struct Edges {
        bool all_met = true;
        bool broken = false;
        bool unbound = false;  // awaits a key that no task held yet
    };

    Edges edges_of(const TaskModel& t) const {
        Edges s;
        for (const EdgeModel& e : t.edges) {
            if (!e.parent) {
                s.unbound = true;
                s.all_met = false;
                continue;
            }
            const TaskModel& p = tasks_[*e.parent];
            if (!p.announced || !is_terminal(p.state)) {
                s.all_met = false;
            } else if (!meets(e.kind, p.state)) {
                s.broken = true;
                s.all_met = false;
            }
        }
        return s;
    }

    // docs/guide/time-and-cron.md: a fixed start may be Ready from its start on; a Skip / Fail
    // start only within its tolerance.
    bool start_allows_ready(const TaskModel& t) const {
        if (!t.has_start) return true;
        if (now_ < t.start) return false;
        return now_ - t.start <= t.tolerance || t.on_miss == MissPolicy::RunLate;
    }

    bool miss_allowed(const TaskModel& t, S status) const {
        if (!t.has_start || t.attempts != 0 || now_ - t.start <= t.tolerance) return false;
        return (status == S::Missed && t.on_miss == MissPolicy::Skip) ||
               (status == S::Failed && t.on_miss == MissPolicy::Fail);
    }

    void end_lease(TaskModel& t) {
        dead_leases_.push_back(t.lease);
        t.lease = LeaseId{};
        --pools_[t.pool].running;
    }

    void on_forget(const Forget& fg) {
        const auto it = by_id_.find(fg.task.value);
        ASSERT_NE(it, by_id_.end()) << "Forget of an unknown task";
        TaskModel& t = tasks_[it->second];
        ASSERT_TRUE(t.announced && is_terminal(t.state)) << "Forget of a task that has not ended: " << show(t);
        ASSERT_FALSE(t.forgotten) << "a task forgotten twice";
        t.forgotten = true;
        if (t.key) {
            auto k = keys_.find(*t.key);
            if (k != keys_.end() && k->second == it->second) keys_.erase(k);
        }
    }

    void on_dispatch(const Dispatch& d) {
        const auto it = by_id_.find(d.task.value);
        ASSERT_NE(it, by_id_.end()) << "Dispatch of an unknown task";
        TaskModel& t = tasks_[it->second];
        PoolModel& p = pools_[t.pool];
        ASSERT_EQ(t.state, S::Ready) << "Dispatch of a task that is " << to_string(t.state) << ": " << show(t);
        ASSERT_EQ(d.pool, t.pool);
        ASSERT_FALSE(shutting_down_) << "Dispatch during shutdown";
        ASSERT_LT(p.running, p.capacity) << "Dispatch while running >= capacity: " << show(t);
        ASSERT_TRUE(d.lease) << "lease 0";
        ASSERT_TRUE(all_leases_.insert(d.lease.value).second) << "lease " << d.lease.value << " reused";
        ASSERT_EQ(d.attempt, t.attempts + 1);
        ASSERT_TRUE(edges_of(t).all_met) << "dispatched before every edge is met: " << show(t);
        if (t.due_start()) {
            ASSERT_TRUE(now_ >= t.start) << "dispatched before its start: " << show(t);
            if (t.on_miss != MissPolicy::RunLate) {
                ASSERT_TRUE(now_ - t.start <= t.tolerance)
                    << "a Skip/Fail start dispatched past its tolerance: " << show(t);
            }
            if (now_ - t.start <= t.tolerance) {
                ++p.expect.starts_on_time;
                ++cov_.on_time;
            } else {
                ++p.expect.starts_late;
                ++cov_.late;
            }
        } else {
            // docs/guide/time-and-cron.md: a due start goes ahead of ready work of its pool.
            for (std::size_t idx : live_) {
                const TaskModel& o = tasks_[idx];
                ASSERT_FALSE(o.pool == t.pool && o.announced && o.due_start())
                    << "dispatched " << show(t) << " while the due start " << show(o) << " waits";
            }
        }
        ++t.attempts;
        t.state = S::Running;
        t.lease = d.lease;
        ++p.running;
        ++p.expect.dispatched;
    }

    void on_abort(const Abort& ab, const Op& op) {
        const auto it = by_id_.find(ab.task.value);
        ASSERT_NE(it, by_id_.end()) << "Abort of an unknown task";
        TaskModel& t = tasks_[it->second];
        ASSERT_EQ(t.state, S::Running) << "Abort of a task that is " << to_string(t.state);
        ASSERT_EQ(t.lease, ab.lease);
        ASSERT_EQ(t.pool, ab.pool);
        switch (ab.reason) {
            case AbortReason::Cancelled:
                ASSERT_TRUE(op.kind == Op::Kind::Cancel && op.task == t.id) << "aborted a task that was not cancelled";
                break;
            case AbortReason::Shutdown:
                ASSERT_TRUE(shutting_down_ && now_ >= grace_end_) << "aborted for shutdown before the grace end";
                break;
            default: FAIL() << "Abort for " << to_string(ab.reason) << " with no timeout and no lease_ttl";
        }
    }

    void on_status(const Status& st, const Op& op, std::optional<AbortReason> abort) {
        ASSERT_TRUE(st.at == now_) << "Status stamped " << seconds(st.at - now_) << " off the time of the call";
        const auto it = by_id_.find(st.task.value);
        ASSERT_NE(it, by_id_.end()) << "Status " << to_string(st.status) << " of task " << st.task.value
                                    << ", which no accepted submit of this call admitted";
        const std::size_t idx = it->second;
        TaskModel& t = tasks_[idx];
        ASSERT_EQ(t.terminal_events, 0) << "Status " << to_string(st.status) << " after the terminal " << show(t);
        ASSERT_EQ(st.pool, t.pool);
        ASSERT_EQ(st.attempt, t.attempts) << show(t);
        const bool fresh = !t.announced;
        const S from = t.state;
        const Edges e = edges_of(t);
        const bool by_cancel = op.kind == Op::Kind::Cancel && op.task == t.id;
        const bool by_shutdown = op.kind == Op::Kind::Shutdown;
        const bool by_complete = op.kind == Op::Kind::Complete && from == S::Running && t.lease && op.lease == t.lease;
        const Outcome::Kind outcome = op.outcome.kind;
        std::string why;  // the first rule broken
        auto require = [&why](bool ok, const char* rule) {
            if (!ok && why.empty()) why = rule;
        };
        if (shutting_down_) require(is_terminal(st.status), "after shutdown a task may only end");
        switch (st.status) {
            case S::Blocked:
                require(fresh, "Blocked only at admission");
                require(!e.broken, "Blocked although an edge is already broken (must be Skipped)");
                require(!e.all_met, "Blocked although every edge is met");
                break;
            case S::Scheduled:
                require(fresh || from == S::Blocked, "Scheduled only at admission or from Blocked");
                require(e.all_met, "Scheduled with an edge not met");
                require(t.has_start && t.start > now_, "Scheduled with no start ahead");
                break;
            case S::Ready:
                if (fresh || from == S::Blocked || from == S::Scheduled) {
                    require(e.all_met, "Ready with an edge not met");
                    require(start_allows_ready(t), "Ready before its start, or a Skip/Fail start past its tolerance");
                } else {
                    require(from == S::Retrying, "Ready from a state other than Blocked, Scheduled or Retrying");
                    require(now_ >= t.retry_at, "left its backoff early");
                }
                break;
            case S::Running: why = "Status Running without a Dispatch"; break;
            case S::Retrying:
                require(by_complete && outcome == Outcome::Kind::Retryable, "Retrying without a retryable completion");
                require(t.attempts < t.max_attempts, "retried past max_attempts");
                break;
            case S::Succeeded:
                require(by_complete && outcome == Outcome::Kind::Success, "Succeeded without a success");
                break;
            case S::DeadLettered:
                require(by_complete && outcome == Outcome::Kind::Retryable && t.attempts >= t.max_attempts,
                        "DeadLettered without a retryable failure of the last attempt");
                break;
            case S::Failed:
                if (from == S::Running && !fresh) {
                    require(by_complete && outcome == Outcome::Kind::Permanent, "Failed without a permanent failure");
                } else {
                    require(fresh || from == S::Blocked || from == S::Scheduled || from == S::Ready,
                            "Failed (missed start) from a state that cannot miss");
                    require(!(fresh || from == S::Blocked) || e.all_met, "a missed start with an edge not met");
                    require(miss_allowed(t, S::Failed), "Failed as a missed start that was not missed (or not Fail)");
                }
                break;
            case S::Missed:
                require(fresh || from == S::Blocked || from == S::Scheduled || from == S::Ready,
                        "Missed from a state that cannot miss");
                require(!(fresh || from == S::Blocked) || e.all_met, "a missed start with an edge not met");
                require(miss_allowed(t, S::Missed), "Missed although the start was not missed (or not Skip)");
                break;
            case S::Skipped:
                require(fresh || from == S::Blocked, "Skipped from a state other than Blocked");
                require(e.broken || (!fresh && e.unbound && t.await_until && now_ >= *t.await_until),
                        "Skipped with no broken edge and no awaited key past its timeout");
                break;
            case S::Cancelled:
                require(!fresh, "Cancelled at admission");
                if (from == S::Running) {
                    require((abort == AbortReason::Cancelled && by_cancel) || abort == AbortReason::Shutdown ||
                                (!abort && by_complete &&
                                 (outcome == Outcome::Kind::Cancelled ||
                                  (outcome == Outcome::Kind::Retryable && shutting_down_))),
                            "a running task Cancelled without cancel, shutdown or a cancelled outcome");
                } else {
                    require(by_cancel || by_shutdown, "Cancelled without cancel() or shutdown()");
                }
                break;
            case S::Shed: why = "Shed without bounds"; break;
        }
        ASSERT_TRUE(why.empty()) << (fresh ? std::string("admitted") : std::string(to_string(from))) << " -> "
                                 << to_string(st.status) << ": " << why << "\n  " << show(t) << "\n  message: \""
                                 << st.message << "\"";

        PoolModel& p = pools_[t.pool];
        if (from == S::Running && !fresh && t.lease) end_lease(t);
        if (fresh) {
            t.announced = true;
            if (t.key) {
                // The engine binds tasks awaiting this key to the new task.
                ASSERT_FALSE(keys_.count(*t.key)) << "admitted a task under the held key \"" << *t.key << "\"";
                keys_[*t.key] = idx;
                for (std::size_t other : live_) {
                    if (!blocked_task(other)) continue;
                    for (EdgeModel& edge : tasks_[other].edges)
                        if (!edge.parent && edge.awaited == *t.key) {
                            edge.parent = idx;
                            ++cov_.awaited_bound;
                        }
                }
            }
        }
        t.state = st.status;
        if (st.status == S::Scheduled) ++cov_.scheduled;
        if (st.status == S::Retrying) {
            t.retry_at = now_ + t.backoff;
            ++p.expect.retried;
        }
        if (!is_terminal(st.status)) return;
        ++t.terminal_events;
        switch (st.status) {
            case S::Succeeded: ++p.expect.succeeded; break;
            case S::Failed:
                ++p.expect.failed;
                if (from != S::Running || fresh) {
                    ++p.expect.starts_late;
                    ++cov_.failed_start;
                }
                break;
            case S::DeadLettered: ++p.expect.dead_lettered; break;
            case S::Cancelled: ++p.expect.cancelled; break;
            case S::Skipped:
                ++p.expect.skipped;
                ++cov_.skipped;
                if (!e.broken) ++cov_.await_skipped;
                break;
            case S::Missed:
                ++p.expect.missed;
                ++p.expect.starts_late;
                ++cov_.missed;
                break;
            default: break;
        }
    }

    // ---- failure messages -----------------------------------------------------------------------

    std::string show(const TaskModel& t) const {
        std::ostringstream os;
        os << "task " << t.id.value << " (pool " << t.pool << ", "
           << (t.announced ? to_string(t.state) : "unannounced");
        if (t.key) os << ", key \"" << *t.key << "\"";
        if (t.has_start)
            os << ", start +" << seconds(t.start - now_) << " tolerance " << seconds(t.tolerance) << " "
               << miss_text(t.on_miss) << " hint " << seconds(t.hint);
        os << ", attempts " << t.attempts;
        for (const EdgeModel& e : t.edges) {
            os << ", " << kind_text(e.kind) << "(";
            if (e.parent) {
                const TaskModel& p = tasks_[*e.parent];
                os << "task " << p.id.value << " " << (p.announced ? to_string(p.state) : "unannounced");
            } else {
                os << "awaiting \"" << e.awaited << "\"";
            }
            os << ")";
        }
        if (t.await_until) os << ", await until +" << seconds(*t.await_until - now_);
        os << ")";
        return os.str();
    }

    Engine engine_;
    std::vector<PoolModel> pools_;
    std::vector<TaskModel> tasks_;
    std::unordered_map<std::uint64_t, std::size_t> by_id_;
    std::unordered_map<std::string, std::size_t> keys_;  // held by a live or retained task
    std::unordered_set<std::uint64_t> all_leases_;
    std::vector<LeaseId> dead_leases_;
    std::vector<std::size_t> live_;
    std::uint64_t late_reports_ = 0;
    std::uint64_t last_id_ = 0;
    std::uint64_t fresh_keys_ = 0;
    bool shutting_down_ = false;
    Time grace_end_ = Time::max();
    Time now_ = t0 + 100s;
    Coverage cov_;
};

}  // namespace cronoq::core::test::graph_model
