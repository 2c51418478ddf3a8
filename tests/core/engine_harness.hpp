#pragma once
// Test harness for the sans-IO engine: every call drains the engine's
// actions, keeps those of the latest call in `last` and all of them in
// `history`, so tests read what one call did.
#include <cronoq/config_error.hpp>
#include <cronoq/core/engine.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

// gtest printers for the id and enum types, so failures read well.
namespace cronoq {
inline void PrintTo(TaskId id, std::ostream* os) { *os << "task#" << id.value; }
inline void PrintTo(LeaseId id, std::ostream* os) { *os << "lease#" << id.value; }
inline void PrintTo(TaskStatus s, std::ostream* os) { *os << to_string(s); }
inline void PrintTo(Priority p, std::ostream* os) { *os << to_string(p); }
inline void PrintTo(SubmitError e, std::ostream* os) { *os << to_string(e); }
namespace core {
inline void PrintTo(AbortReason r, std::ostream* os) { *os << to_string(r); }
}  // namespace core
}  // namespace cronoq

namespace cronoq::core::test {

using namespace std::chrono_literals;

/// The origin of every test's time axis: times are written `t0 + 10s`.
inline constexpr Time t0{};

class Harness {
public:
    explicit Harness(EngineConfig config = {}) : engine(std::move(config)) {}

    Engine engine;
    std::vector<Action> last;     ///< actions of the latest call
    std::vector<Action> history;  ///< every action so far, in order

    PoolId add_pool(PoolConfig config) { return engine.add_pool(std::move(config)); }

    /// Submits a task that must be accepted.
    TaskId submit(const TaskSpec& spec, Time now) {
        auto r = engine.submit(spec, now);
        collect();
        EXPECT_TRUE(r.has_value()) << "submit rejected: " << (r.has_value() ? "" : r.message());
        return r.has_value() ? r.value() : TaskId{};
    }
    SubmitResult<TaskId> try_submit(const TaskSpec& spec, Time now) {
        auto r = engine.submit(spec, now);
        collect();
        return r;
    }
    SubmitResult<std::vector<TaskId>> submit_batch(const std::vector<TaskSpec>& specs, Time now) {
        auto r = engine.submit_batch(specs, now);
        collect();
        return r;
    }
    bool complete(LeaseId lease, const Outcome& outcome, Time now) {
        const bool ok = engine.complete(lease, outcome, now);
        collect();
        return ok;
    }
    bool heartbeat(LeaseId lease, Time now) {
        const bool ok = engine.heartbeat(lease, now);
        collect();
        return ok;
    }
    bool cancel(TaskId task, Time now) {
        const bool ok = engine.cancel(task, now);
        collect();
        return ok;
    }
    bool skip_blocked(TaskId task, std::string reason, Time now) {
        const bool ok = engine.skip_blocked(task, std::move(reason), now);
        collect();
        return ok;
    }
    void set_capacity(PoolId pool, std::size_t capacity, Time now) {
        engine.set_capacity(pool, capacity, now);
        collect();
    }
    void tick(Time now) {
        engine.tick(now);
        collect();
    }
    bool pause(PoolId pool, Time now) {
        const bool changed = engine.pause(pool, now);
        collect();
        return changed;
    }
    bool resume(PoolId pool, Time now) {
        const bool changed = engine.resume(pool, now);
        collect();
        return changed;
    }
    WorkerId connect_worker(PoolId pool, std::size_t slots, Time now) {
        const WorkerId w = engine.connect_worker(pool, slots, {}, now);
        collect();
        return w;
    }
    bool answer_scaler(PoolId pool, std::optional<std::size_t> desired, Time now) {
        const bool open = engine.answer_scaler(pool, desired, now);
        collect();
        return open;
    }
    void shutdown(Time now, Time grace_end) {
        engine.shutdown(now, grace_end);
        collect();
    }
    void hand_over(Time now, Time grace_end) {
        engine.hand_over(now, grace_end);
        collect();
    }
    std::vector<SubmitResult<TaskId>> restore(const std::vector<RestoredTask>& tasks, Time now) {
        auto r = engine.restore(tasks, now);
        collect();
        return r;
    }
    SubmitResult<TaskId> resubmit(TaskId old, const TaskSpec& spec, Time now) {
        auto r = engine.resubmit(old, spec, now);
        collect();
        return r;
    }

    // ---- what the latest call did ------------------------------------------
    template <class A>
    std::vector<A> last_of() const {
        std::vector<A> out;
        for (const Action& a : last)
            if (const A* x = std::get_if<A>(&a)) out.push_back(*x);
        return out;
    }
    std::vector<Dispatch> dispatches() const { return last_of<Dispatch>(); }
    std::vector<Abort> aborts() const { return last_of<Abort>(); }
    std::vector<Status> statuses() const { return last_of<Status>(); }

    std::vector<TaskId> dispatched_tasks() const {
        std::vector<TaskId> out;
        for (const Dispatch& d : dispatches()) out.push_back(d.task);
        return out;
    }

    /// The single dispatch of the latest call (a test failure otherwise).
    Dispatch only_dispatch() const {
        const auto d = dispatches();
        EXPECT_EQ(d.size(), 1u) << "expected exactly one Dispatch";
        return d.empty() ? Dispatch{} : d.front();
    }

    /// Every Status of `task` so far.
    std::vector<Status> statuses_of(TaskId task) const {
        std::vector<Status> out;
        for (const Action& a : history)
            if (const Status* s = std::get_if<Status>(&a); s && s->task == task) out.push_back(*s);
        return out;
    }
    /// The latest Dispatch of `task` so far.
    std::optional<Dispatch> last_dispatch_of(TaskId task) const {
        std::optional<Dispatch> out;
        for (const Action& a : history)
            if (const Dispatch* d = std::get_if<Dispatch>(&a); d && d->task == task) out = *d;
        return out;
    }
    /// The live lease of `task` (its latest dispatch).
    LeaseId lease_of(TaskId task) const {
        auto d = last_dispatch_of(task);
        EXPECT_TRUE(d.has_value()) << "task was never dispatched";
        return d ? d->lease : LeaseId{};
    }

    /// With every task of `pool` queued behind capacity 0: opens one slot at
    /// `now` and completes each dispatched task at once, returning the order
    /// in which the engine dispatched them.
    std::vector<TaskId> dispatch_order(PoolId pool, Time now) {
        std::vector<TaskId> order;
        set_capacity(pool, 1, now);
        for (;;) {
            const auto d = dispatches();
            if (d.empty()) break;
            EXPECT_EQ(d.size(), 1u);
            order.push_back(d.front().task);
            if (order.size() > 10000) break;
            EXPECT_TRUE(complete(d.front().lease, Outcome::success(), now));
        }
        return order;
    }

    /// Statuses the latest call emitted for `task`.
    std::vector<TaskStatus> last_statuses_of(TaskId task) const {
        std::vector<TaskStatus> out;
        for (const Status& st : statuses())
            if (st.task == task) out.push_back(st.status);
        return out;
    }

private:
    void collect() {
        engine.drain(last);
        history.insert(history.end(), last.begin(), last.end());
    }
};

/// An engine configuration with these shared resources.
inline EngineConfig with_resources(std::vector<Resource> resources) {
    EngineConfig c;
    c.resources = std::move(resources);
    return c;
}

/// A task of `pool` that needs `uses`.
inline TaskSpec needing(PoolId pool, std::vector<ResourceUse> uses, Priority p = Priority::Normal) {
    TaskSpec spec{.pool = pool, .priority = p};
    spec.resources = std::move(uses);
    return spec;
}

}  // namespace cronoq::core::test
