#pragma once
// The checks resource_invariant_test.cpp makes on every call, over the
// model of resource_model.hpp: the answer a submit must get (predict), the
// autoscaling after a call's actions, the invariants after every call, and
// the model's view in failure messages. See the .cpp for the list of
// invariants.
#include "resource_model.hpp"

namespace cronoq::core::test::resource_model {

class Checked : public Model {
public:
    using Model::Model;

    // docs/guide/resources-and-bounds.md as written by default; CRONOQ_STRICT_RESOURCES=0 is lenient
    // about waiters held back by tasks that cannot take the resource (see
    // waiters()), to look past that while chasing something else.
    const bool strict = [] {
        const char* env = std::getenv("CRONOQ_STRICT_RESOURCES");
        return !(env && *env == '0');
    }();

    // ---- invariants after every call ------------------------------------------------------------

    void check(std::size_t turn) {
        ASSERT_EQ(engine().live_tasks(), live.size());
        for (std::size_t idx : live) ASSERT_EQ(engine().status(tasks[idx].id), tasks[idx].state) << show(tasks[idx]);
        const std::vector<bool> may_wait = waiters();
        for (PoolId q = 0; q < pools.size(); ++q) {
            const PoolModel& m = pools[q];
            const PoolCounters c = engine().counters(q);
            const PoolCounters n = counts(q);
            const PoolCounters& x = m.expect;
            ASSERT_EQ(c.capacity, m.capacity) << "pool " << q << ": not the last ScaleTo or set_capacity";
            ASSERT_EQ(c.running, m.running) << "pool " << q;
            ASSERT_EQ(c.running, n.running) << "pool " << q;
            ASSERT_EQ(c.ready, n.ready) << "pool " << q;
            ASSERT_EQ(c.ready_by_class, n.ready_by_class) << "pool " << q;
            ASSERT_EQ(c.retrying, n.retrying) << "pool " << q;
            ASSERT_EQ(c.blocked + c.scheduled, 0u) << "pool " << q;
            check_cumulative(c, x, q);
            if (::testing::Test::HasFatalFailure()) return;
            // stats() merges histograms (the bulk of this test's time):
            // read for the pools the call touched, and one more in turn so
            // that the window's sliding is read for every pool.
            if (touched.count(q) || q == turn % pools.size()) check_stats(q, c);
            if (::testing::Test::HasFatalFailure()) return;
            ASSERT_FALSE(m.full && has_room(q)) << "pool " << q << " has room again but got no SpaceAvailable";
            check_no_head_of_line(q, may_wait);
            if (::testing::Test::HasFatalFailure()) return;
        }
    }

    // After the call's ScaleTo actions: the default policy never scaled up
    // past, nor down below, the desired value of that evaluation (which
    // counters() shows). The user pool is asked at most once per call,
    // shown the pool as it was, and scaled only by an answer, which is
    // clamped and applied as is (scaler.hpp).
    void check_autoscaling(const Op& op) {
        for (const auto& [pool, before] : scaled) {
            const std::size_t desired = engine_desired(pool);
            const std::size_t n = pools[pool].capacity;
            if (n > before) {
                ASSERT_LE(n, desired) << "pool " << pool << " scaled up past its desired capacity";
            } else {
                ASSERT_GE(n, desired) << "pool " << pool << " scaled down below its desired capacity";
            }
        }
        if (!user_pool) return;
        ASSERT_LE(questions, 1u) << "the user scaler was asked twice in one call";
        const PoolModel& p = pools[*user_pool];
        if (op.kind == Op::Kind::ScalerAnswer) {
            const ScalerLog::Call& call = scaler_log->calls.back();
            ++cov.scaler_calls;
            cov.scaler_throws += call.threw ? 1 : 0;
            // A throw has no opinion: the capacity stays, except that one set
            // from outside beyond [min, max] is brought to the bound.
            const std::size_t wanted = call.threw ? p.eval_capacity : call.answer;
            const std::size_t target = std::clamp(wanted, p.config.min_workers, p.config.max_workers);
            ASSERT_EQ(p.capacity, target) << "the user scaler answered "
                                          << (call.threw ? "by throwing" : std::to_string(call.answer))
                                          << " at capacity " << p.eval_capacity;
            ASSERT_EQ(engine_desired(*user_pool), target);
            return;
        }
        ASSERT_EQ(p.capacity, p.eval_capacity) << "the user pool was scaled without an answer";
        if (questions == 0) return;
        const std::optional<ScalerInput> in = engine().scaler_question(*user_pool);
        ASSERT_TRUE(in.has_value()) << "AskScaler without an open question";
        ASSERT_EQ(in->now, now.time_since_epoch());
        ASSERT_EQ(in->capacity, p.eval_capacity);
        ASSERT_EQ(in->busy, p.eval_running);
        ASSERT_EQ(in->pending, p.eval_ready) << "the scaler was shown other pending counts than the model";
        ASSERT_EQ(in->min, p.config.min_workers);
        ASSERT_EQ(in->max, p.config.max_workers);
    }

    std::size_t engine_desired(PoolId pool) const { return engine().counters(pool).desired; }
    // What docs/guide/resources-and-bounds.md, docs/guide/operations.md make of this submit, from the model alone. Sets
    // `victims` to the tasks the overflow policy may shed.
    std::optional<SubmitError> predict(const TaskSpec& spec) {
        victims.clear();
        shed_expected = false;
        if (shutting_down) return SubmitError::ShuttingDown;
        std::map<std::string, std::uint64_t> sums;
        for (const ResourceUse& use : spec.resources) {
            const auto r = std::find_if(resources.begin(), resources.end(),
                                        [&](const ResourceState& x) { return x.decl.name == use.name; });
            if (r == resources.end()) return SubmitError::UnknownResource;
            sums[use.name] += use.amount;
        }
        for (const ResourceState& r : resources)
            if (sums.count(r.decl.name) && sums[r.decl.name] > r.decl.capacity())
                return SubmitError::ResourceExceedsCapacity;
        const PoolModel& p = pools[spec.pool];
        const bool pool_full = p.config.bounds.bounded() && pending_of(spec.pool) >= p.config.bounds.max_pending;
        const bool global_full = global_bounds.bounded() && pending_total() >= global_bounds.max_pending;
        if (!pool_full && !global_full) return std::nullopt;
        switch (p.config.overflow) {
            case OverflowPolicy::Wait: return SubmitError::Full;
            case OverflowPolicy::Reject: return SubmitError::Overloaded;
            default: break;
        }
        // The victim relieves the bound that is full: the pool's own, or
        // with only the global one full, any pool's (docs). Only Ready
        // tasks are shed.
        std::vector<std::size_t> scope;
        for (std::size_t idx : live)
            if (tasks[idx].state == S::Ready && (!pool_full || tasks[idx].pool == spec.pool)) scope.push_back(idx);
        std::optional<std::size_t> cls;
        bool newest = true;
        if (p.config.overflow == OverflowPolicy::ShedOldest) {
            cls = index_of(Priority::Low);
            newest = false;
        } else {
            for (std::size_t c = priority_count; c-- > index_of(spec.priority) + 1 && !cls;)
                for (std::size_t idx : scope)
                    if (index_of(tasks[idx].priority) == c) cls = c;
        }
        std::optional<Time> when;
        for (std::size_t idx : scope) {
            const TaskModel& t = tasks[idx];
            if (!cls || index_of(t.priority) != *cls) continue;
            if (!when || (newest ? t.ready_since > *when : t.ready_since < *when)) when = t.ready_since;
        }
        if (!when) return SubmitError::Overloaded;
        for (std::size_t idx : scope)  // ties in ready time: either is the newest / oldest
            if (index_of(tasks[idx].priority) == *cls && tasks[idx].ready_since == *when) victims.insert(idx);
        shed_expected = true;
        ++(newest ? cov.shed_lowest : cov.shed_oldest);
        return std::nullopt;
    }

    // docs/guide/ordering.md, docs/guide/resources-and-bounds.md: a task short of a resource never holds back one that
    // needs nothing, nor one that needs other resources.
    void check_no_head_of_line(PoolId q, const std::vector<bool>& may_wait) {
        const PoolModel& m = pools[q];
        if (m.running >= m.capacity) return;
        for (std::size_t i = 0; i < live.size(); ++i) {
            const TaskModel& t = tasks[live[i]];
            if (t.pool != q || t.state != S::Ready) continue;
            ASSERT_FALSE(t.needs.empty()) << "pool " << q << " has a free slot, yet " << show(t)
                                          << " waits although it needs no resource";
            ASSERT_TRUE(may_wait[i]) << "pool " << q << " has a free slot, yet " << show(t)
                                     << " waits although every resource it needs is there and no task short of one "
                                        "of them is ahead of it\n"
                                     << show_resources() << "other Ready tasks wanting them:\n"
                                     << show_rivals(live[i]);
            ++cov.waited_on_resource;
        }
    }

    // Which Ready tasks (by index into `live`) may wait for a resource: one
    // they need is short, or another Ready task that wants it is short of
    // it and may come first (each resource serves its waiters best class
    // first, in order).
    //
    // Lenient (the default) also lets a task wait behind a rival for the
    // same resource that cannot run for another reason (no free slot in its
    // pool, or itself waiting, for whatever reason this rule allows: a least
    // fixed point, so that a cycle of waiters excuses none of them), and
    // behind a waiter that left since the resource's units last came back.
    // The engine hands such units on to the next waiters after each
    // dispatch until none can use them (revisit_parked), so in strict mode
    // (the default) nobody may be held back that way.
    std::vector<bool> waiters() const {
        const auto wants = [](const TaskModel& t, std::size_t r) {
            return std::any_of(t.needs.begin(), t.needs.end(), [r](const Need& n) { return n.resource == r; });
        };
        const auto ready = [this](std::size_t i) { return tasks[live[i]].state == S::Ready; };
        std::vector<bool> out(live.size(), false);
        for (std::size_t i = 0; i < live.size(); ++i) {
            if (!ready(i)) continue;
            const TaskModel& t = tasks[live[i]];
            if (!strict && pools[t.pool].running >= pools[t.pool].capacity) out[i] = true;
            for (const Need& n : t.needs) {
                const ResourceState& r = resources[n.resource];
                if (r.maybe_short(n.amount) || (!strict && r.waiter_left)) out[i] = true;
                for (std::size_t j = 0; j < live.size() && !out[i]; ++j) {
                    if (j == i || !ready(j)) continue;
                    for (const Need& m : tasks[live[j]].needs)
                        if (m.resource == n.resource && r.maybe_short(m.amount)) out[i] = true;
                }
            }
        }
        for (bool grew = !strict; grew;) {
            grew = false;
            for (std::size_t i = 0; i < live.size(); ++i) {
                if (out[i] || !ready(i)) continue;
                for (std::size_t j = 0; j < live.size() && !out[i]; ++j)
                    if (j != i && out[j] && ready(j))
                        for (const Need& n : tasks[live[i]].needs)
                            if (wants(tasks[live[j]], n.resource)) out[i] = true;
                grew = grew || out[i];
            }
        }
        return out;
    }

    // docs/guide/operations.md over the engine's slices: a read at `now` sees the slice of
    // `now` and the five before it (sliding_window.hpp).
    void check_stats(PoolId q, const PoolCounters& c) {
        PoolModel& m = pools[q];
        const std::int64_t current = period(now);
        m.periods.erase(m.periods.begin(), m.periods.upper_bound(current - 6));
        std::array<std::uint64_t, kCounted> in{};
        for (const auto& [p, n] : m.periods)
            for (std::size_t k = 0; k < kCounted; ++k) in[k] += n[k];
        const PoolStats s = engine().stats(q, now);
        ASSERT_EQ(s.window, metrics_window);
        ASSERT_EQ(s.capacity, c.capacity) << "pool " << q;
        ASSERT_EQ(s.busy, c.running) << "pool " << q;
        ASSERT_EQ(s.pending, c.ready_by_class) << "pool " << q;
        ASSERT_EQ(s.retrying, c.retrying) << "pool " << q;
        ASSERT_EQ(s.desired, c.desired) << "pool " << q;
        ASSERT_EQ(s.dispatched, in[kDispatched]) << "pool " << q << ": dispatched in the window";
        ASSERT_EQ(s.waits, in[kDispatched]) << "pool " << q << ": a wait sample per dispatch";
        ASSERT_EQ(s.succeeded, in[kSucceeded]) << "pool " << q;
        ASSERT_EQ(s.failed, in[kFailed]) << "pool " << q;
        ASSERT_EQ(s.dead_lettered, in[kDeadLettered]) << "pool " << q;
        ASSERT_EQ(s.retried, in[kRetried]) << "pool " << q;
        ASSERT_EQ(s.shed, in[kShed]) << "pool " << q;
        ASSERT_EQ(s.runs, in[kRunEnded]) << "pool " << q << ": a run sample per attempt that ended";
        ASSERT_EQ(s.priority_adherence.has_value(), in[kDispatched] > 0) << "pool " << q;
    }

    // ---- failure messages -----------------------------------------------------------------------

    std::string show(const TaskModel& t) const {
        std::ostringstream os;
        os << "task " << t.id.value << " (pool " << t.pool << ", " << to_string(t.priority) << ", "
           << to_string(t.state) << ", attempts " << t.attempts << ", ready at " << to_seconds(t.ready_since - t0)
           << " s";
        for (const Need& n : t.needs) os << ", " << resources[n.resource].decl.name << " x" << n.amount;
        os << ")";
        return os.str();
    }

    // The other Ready tasks that need a resource `idx` needs.
    std::string show_rivals(std::size_t idx) const {
        std::ostringstream os;
        for (std::size_t other : live) {
            const TaskModel& u = tasks[other];
            if (other == idx || u.state != S::Ready) continue;
            const bool rival = std::any_of(u.needs.begin(), u.needs.end(), [&](const Need& n) {
                return std::any_of(tasks[idx].needs.begin(), tasks[idx].needs.end(),
                                   [&](const Need& m) { return m.resource == n.resource; });
            });
            if (rival) os << "  " << show(u) << "\n";
        }
        return os.str();
    }

    std::string show_spec(const TaskSpec& s) const {
        std::ostringstream os;
        os << "[pool " << s.pool << " " << to_string(s.priority);
        for (const ResourceUse& u : s.resources) os << " " << u.name << " x" << u.amount;
        if (s.timeout) os << " timeout " << to_seconds(*s.timeout) << " s";
        os << "]";
        return os.str();
    }

    std::string show_resources() const {
        std::ostringstream os;
        for (const ResourceState& r : resources) {
            os << "  " << r.decl.name << ": ";
            if (r.bucket())
                os << "bucket rate " << r.rate << "/s burst " << r.decl.burst << ", level " << r.level << "\n";
            else
                os << "semaphore " << r.held << "/" << r.decl.permits << " held\n";
        }
        return os.str();
    }
};

}  // namespace cronoq::core::test::resource_model
