#pragma once
// What graph_invariant_test.cpp checks on every call: the answer a submit
// must get (plan: docs/guide/time-and-cron.md, docs/guide/dependencies-and-keys.md from the model alone), the tasks it
// admitted entered in the model (admit), the actions of the call applied to
// the model (apply), the invariants after it (check), and the model's view
// in failure messages.
#include "graph_model.hpp"

namespace cronoq::core::test::graph_model {

class GraphChecks : public GraphModel {
protected:
    using GraphModel::GraphModel;

    std::string failure_context() override { return "pools:\n" + show_pools(); }

    std::optional<SubmitError> invalid(const TaskSpec& spec) const {
        if (spec.pool >= pools_.size()) return SubmitError::UnknownPool;
        if (spec.duration_hint && spec.duration_hint->count() <= 0) return SubmitError::Invalid;
        if (spec.start_tolerance.count() < 0) return SubmitError::Invalid;
        if (spec.key && spec.key->empty()) return SubmitError::Invalid;
        for (const Dep& d : spec.depends_on)
            if (d.ref.key && d.ref.key->empty()) return SubmitError::Invalid;
        return std::nullopt;
    }

    // docs/guide/dependencies-and-keys.md resolution of every reference, then every check of docs/guide/time-and-cron.md, docs/guide/dependencies-and-keys.md.
    Plan plan(const std::vector<TaskSpec>& specs) const {
        Plan p;
        const std::size_t n = specs.size();
        p.holder.resize(n);
        p.refs.resize(n);
        p.invalid.resize(n);
        if (shutting_down_) {
            p.errors.insert(SubmitError::ShuttingDown);
            return p;
        }
        for (std::size_t i = 0; i < n; ++i)
            if (auto e = invalid(specs[i])) {
                p.errors.insert(*e);
                p.invalid[i] = true;
            }
        std::unordered_map<std::string, std::size_t> defined;
        for (std::size_t i = 0; i < n; ++i) {
            if (!specs[i].key || p.invalid[i]) continue;
            if (!defined.emplace(*specs[i].key, i).second) p.errors.insert(SubmitError::DuplicateKeyInBatch);
            if (auto k = keys_.find(*specs[i].key); k != keys_.end()) p.holder[i] = k->second;
        }
        auto admitted = [&](std::size_t i) { return !p.invalid[i] && !p.holder[i]; };
        for (std::size_t i = 0; i < n; ++i) {
            if (!admitted(i)) continue;
            for (const Dep& d : specs[i].depends_on) {
                Ref ref;
                ref.kind = d.kind;
                if (d.ref.id) {
                    auto it = by_id_.find(d.ref.id->value);
                    if (it != by_id_.end() && !tasks_[it->second].forgotten) {
                        ref.to = Ref::To::Task;
                        ref.index = it->second;
                    }
                } else if (auto in_batch = defined.find(*d.ref.key); in_batch != defined.end()) {
                    if (p.holder[in_batch->second]) {
                        ref.to = Ref::To::Task;
                        ref.index = *p.holder[in_batch->second];
                    } else {
                        ref.to = Ref::To::Member;
                        ref.index = in_batch->second;
                    }
                } else if (auto held = keys_.find(*d.ref.key); held != keys_.end()) {
                    ref.to = Ref::To::Task;
                    ref.index = held->second;
                } else if (pools_[specs[i].pool].config.unknown_dependency.awaits()) {
                    ref.to = Ref::To::Await;
                    ref.key = *d.ref.key;
                }
                if (ref.to == Ref::To::Unknown) p.errors.insert(SubmitError::UnknownDependency);
                p.refs[i].push_back(std::move(ref));
            }
        }
        cycles(defined, p);

        // Reservations: live fixed starts of the pool plus the admitted ones.
        for (PoolId q = 0; q < pools_.size(); ++q) {
            std::vector<std::pair<Time, int>> events;  // -1 sorts first: half-open intervals
            bool added = false;
            for (std::size_t idx : live_) {
                const TaskModel& t = tasks_[idx];
                if (t.pool != q || !t.has_start) continue;
                events.emplace_back(t.start, +1);
                events.emplace_back(t.start + t.hint, -1);
            }
            for (std::size_t i = 0; i < n; ++i) {
                if (!admitted(i) || specs[i].pool != q || !specs[i].start) continue;
                events.emplace_back(*specs[i].start, +1);
                events.emplace_back(*specs[i].start + *specs[i].duration_hint, -1);
                added = true;
            }
            if (!added) continue;
            std::sort(events.begin(), events.end());
            std::size_t open = 0, most = 0;
            for (const auto& [at, delta] : events) {
                open = delta > 0 ? open + 1 : open - 1;
                most = std::max(most, open);
            }
            if (most > pools_[q].limit) p.errors.insert(SubmitError::ReservationConflict);
        }
        return p;
    }

    // Cycle (docs/guide/dependencies-and-keys.md): the graph after admission has a cycle. Its nodes are
    // the admitted members and the Blocked tasks; its edges, each pending
    // dependency, with keys that Blocked tasks await bound to the members
    // that define them. The graph before the call has none (it only ever
    // holds what was admitted), so a cycle runs through a member.
    void cycles(const std::unordered_map<std::string, std::size_t>& defined, Plan& p) const {
        const std::size_t n = p.refs.size();
        auto admitted = [&](std::size_t i) { return !p.invalid[i] && !p.holder[i]; };
        // Member i is node i; the task with model index x is node n + x.
        auto next = [&](std::size_t node) {
            std::vector<std::size_t> out;
            if (node < n) {
                for (const Ref& r : p.refs[node]) {
                    if (r.to == Ref::To::Member) out.push_back(r.index);
                    if (r.to == Ref::To::Task && blocked_task(r.index)) out.push_back(n + r.index);
                }
                return out;
            }
            for (const EdgeModel& e : tasks_[node - n].edges) {
                if (e.parent) {
                    if (blocked_task(*e.parent)) out.push_back(n + *e.parent);
                } else if (auto d = defined.find(e.awaited); d != defined.end() && admitted(d->second)) {
                    out.push_back(d->second);
                }
            }
            return out;
        };
        std::unordered_map<std::size_t, int> color;  // 1: on the path, 2: done
        for (std::size_t root = 0; root < n; ++root) {
            if (!admitted(root) || color[root]) continue;
            std::vector<std::pair<std::size_t, std::vector<std::size_t>>> path;
            color[root] = 1;
            path.emplace_back(root, next(root));
            while (!path.empty()) {
                auto& [node, todo] = path.back();
                if (todo.empty()) {
                    color[node] = 2;
                    path.pop_back();
                    continue;
                }
                const std::size_t child = todo.back();
                todo.pop_back();
                if (color[child] == 1) {
                    p.errors.insert(SubmitError::Cycle);
                    return;
                }
                if (color[child] == 2) continue;
                color[child] = 1;
                path.emplace_back(child, next(child));
            }
        }
    }

    // Model entries for the tasks an accepted submit admitted as `p` planned
    // (`fresh`: their indices); their first Status comes in the call's
    // actions. A spec whose key is held gets its holder's id back.
    void admit(const std::vector<TaskSpec>& specs, const std::vector<TaskId>& ids, const Plan& p,
               std::vector<std::size_t>& fresh) {
        std::vector<std::size_t> index(specs.size());
        for (std::size_t i = 0; i < specs.size(); ++i) {
            if (p.holder[i]) {
                ASSERT_EQ(ids[i], tasks_[*p.holder[i]].id)
                    << "spec " << i << ": key \"" << *specs[i].key << "\" is held: its holder's id must come back";
                ++cov_.held_key;
                index[i] = *p.holder[i];
                continue;
            }
            ASSERT_GT(ids[i].value, last_id_) << "task ids must increase";
            ASSERT_FALSE(by_id_.count(ids[i].value)) << "id " << ids[i].value << " given twice";
            index[i] = tasks_.size();
            by_id_[ids[i].value] = tasks_.size();
            tasks_.push_back(model_of(specs[i], ids[i]));
            fresh.push_back(index[i]);
            ++pools_[specs[i].pool].expect.submitted;
            ++cov_.accepted;
        }
        for (std::size_t idx : fresh) last_id_ = std::max(last_id_, tasks_[idx].id.value);
        for (std::size_t i = 0; i < specs.size(); ++i) {
            if (p.holder[i]) continue;
            TaskModel& t = tasks_[index[i]];
            for (const Ref& r : p.refs[i]) {
                EdgeModel e;
                e.kind = r.kind;
                if (r.to == Ref::To::Task) e.parent = r.index;
                if (r.to == Ref::To::Member) e.parent = index[r.index];
                if (r.to == Ref::To::Await) {
                    e.awaited = r.key;
                    t.await_until = now_ + pools_[t.pool].config.unknown_dependency.timeout();
                }
                t.edges.push_back(std::move(e));
            }
        }
    }

    void apply(const Op& op, const std::vector<std::size_t>& fresh) {
        engine_.drain(actions_);
        ASSERT_FALSE(engine_.has_actions());
        if (op.silent) {
            ASSERT_TRUE(actions_.empty())
                << "a call that must change nothing emitted " << actions_.size() << " action(s)";
        }
        for (std::size_t idx : fresh) live_.push_back(idx);
        walk_actions(now_, [&](const auto& x, const auto&... status) {
            using X = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<X, Dispatch>) {
                on_dispatch(x);
            } else if constexpr (std::is_same_v<X, Abort>) {
                on_abort(x, op);
                if (::testing::Test::HasFatalFailure()) return;
                on_status(status..., op, x.reason);
            } else if constexpr (std::is_same_v<X, Status>) {
                on_status(x, op, std::nullopt);
            } else if constexpr (std::is_same_v<X, Forget>) {
                on_forget(x);
            } else {
                FAIL() << "unexpected action (ScaleTo / SpaceAvailable / AskScaler) without autoscaling or bounds";
            }
        });
        if (::testing::Test::HasFatalFailure()) return;
        for (std::size_t idx : fresh) {
            ASSERT_TRUE(tasks_[idx].announced) << "an admitted task emitted no Status: " << show(tasks_[idx]);
        }
        live_.erase(std::remove_if(live_.begin(), live_.end(),
                                   [this](std::size_t idx) { return is_terminal(tasks_[idx].state); }),
                    live_.end());
        check();
    }

    // ---- invariants after every call ------------------------------------------------------------

    void check() {
        struct Count {
            std::size_t blocked = 0, scheduled = 0, ready = 0, running = 0, retrying = 0;
            std::size_t due_ready = 0, other_ready = 0;
        };
        std::vector<Count> count(pools_.size());
        std::optional<Time> due;       // the earliest event the engine must wake for
        std::optional<Time> possible;  // a timer that may be live with nothing to do
        auto earliest = [](std::optional<Time>& slot, Time t) { slot = slot ? std::min(*slot, t) : t; };
        for (std::size_t idx : live_) {
            const TaskModel& t = tasks_[idx];
            const auto st = engine_.status(t.id);
            ASSERT_TRUE(st.has_value()) << "live task forgotten: " << show(t);
            ASSERT_EQ(*st, t.state) << show(t);
            const Edges e = edges_of(t);
            ASSERT_FALSE(e.broken) << "an edge is broken but the task was not Skipped in the same call: " << show(t);
            Count& c = count[t.pool];
            switch (t.state) {
                case S::Blocked:
                    ++c.blocked;
                    ASSERT_FALSE(e.all_met) << "every edge is met but the task is still Blocked: " << show(t);
                    if (e.unbound) {
                        ASSERT_TRUE(*t.await_until > now_)
                            << "an awaited key did not come in time but the task was not Skipped: " << show(t);
                        earliest(due, *t.await_until);
                    } else if (t.await_until && *t.await_until > now_) {
                        earliest(possible, *t.await_until);  // its keys came; the timer may stay
                    }
                    break;
                case S::Scheduled:
                    ++c.scheduled;
                    ASSERT_TRUE(e.all_met) << show(t);
                    ASSERT_TRUE(t.has_start && t.start > now_) << "still Scheduled at or after its start: " << show(t);
                    earliest(due, t.start);
                    break;
                case S::Ready:
                    ++c.ready;
                    ASSERT_TRUE(e.all_met) << show(t);
                    if (t.due_start()) {
                        ++c.due_ready;
                        ASSERT_TRUE(now_ >= t.start) << "Ready before its start: " << show(t);
                        if (t.on_miss != MissPolicy::RunLate) {
                            ASSERT_TRUE(now_ - t.start <= t.tolerance)
                                << "a Skip/Fail start past its tolerance is still Ready: " << show(t);
                            earliest(due, t.start + t.tolerance + 1ns);
                        }
                    } else {
                        ++c.other_ready;
                    }
                    break;
                case S::Running: ++c.running; break;
                case S::Retrying:
                    ++c.retrying;
                    ASSERT_TRUE(t.retry_at > now_) << "backoff over but still Retrying: " << show(t);
                    earliest(due, t.retry_at);
                    break;
                default: FAIL() << "live task in state " << to_string(t.state);
            }
        }
        std::size_t all_running = 0;
        for (PoolId q = 0; q < pools_.size(); ++q) {
            const PoolCounters c = engine_.counters(q);
            const PoolModel& m = pools_[q];
            const Count& n = count[q];
            const PoolCounters& x = m.expect;
            ASSERT_EQ(c.capacity, m.capacity) << "pool " << q;
            ASSERT_EQ(c.running, m.running) << "pool " << q << ": running differs from the live leases";
            ASSERT_EQ(c.running, n.running) << "pool " << q;
            ASSERT_EQ(c.blocked, n.blocked) << "pool " << q;
            ASSERT_EQ(c.scheduled, n.scheduled) << "pool " << q;
            ASSERT_EQ(c.ready, n.ready) << "pool " << q;
            ASSERT_EQ(c.retrying, n.retrying) << "pool " << q;
            check_cumulative(c, x, q);
            if (::testing::Test::HasFatalFailure()) return;
            // docs/guide/time-and-cron.md: a due start is dispatched at its start, so it waits
            // only for a slot.
            if (n.due_ready > 0) {
                ASSERT_GE(c.running, m.capacity) << "pool " << q << ": a due start waits beside a free slot";
            }
            // docs/guide/time-and-cron.md holds: other ready work waits beside free slots only
            // while at least as many starts fall within max_hold.
            if (n.other_ready > 0 && c.running < m.capacity) {
                const std::size_t free = m.capacity - c.running;
                std::size_t upcoming = 0;
                for (std::size_t idx : live_) {
                    const TaskModel& t = tasks_[idx];
                    if (t.pool == q && t.has_start && t.start > now_ && t.start < now_ + m.config.max_hold) ++upcoming;
                }
                ASSERT_GE(upcoming, free)
                    << "pool " << q << ": " << free << " slot(s) idle while " << n.other_ready
                    << " task(s) are Ready and only " << upcoming << " start(s) fall within max_hold";
            }
            all_running += n.running;
        }
        ASSERT_EQ(engine_.live_tasks(), live_.size());
        ASSERT_EQ(engine_.late_reports(), late_reports_);

        // next_wakeup(): the earliest live timer, never a past one.
        if (shutting_down_ && all_running > 0 && grace_end_ > now_) earliest(due, grace_end_);
        std::optional<Time> expect = due;
        if (possible) earliest(expect, *possible);
        const auto wake = engine_.next_wakeup();
        if (!expect) {
            ASSERT_FALSE(wake.has_value()) << "next_wakeup() at +" << seconds(*wake - now_) << " with nothing timed";
        } else {
            ASSERT_TRUE(wake.has_value()) << "timed work at +" << seconds(*expect - now_) << " but no next_wakeup()";
            ASSERT_TRUE(*wake == *expect) << "next_wakeup() at +" << seconds(*wake - now_)
                                          << ", the model's first timer at +" << seconds(*expect - now_);
        }

        // Keys and retained tasks: a sample each call.
        for (int i = 0; i < 3; ++i) {
            const std::string key = "k" + std::to_string(rnd_.below(key_space));
            const auto held = keys_.find(key);
            ASSERT_EQ(engine_.find_key(key),
                      held == keys_.end() ? std::nullopt : std::optional<TaskId>(tasks_[held->second].id))
                << "find_key(\"" << key << "\")";
        }
        if (!tasks_.empty()) {
            const TaskModel& t = tasks_[tasks_.size() - 1 - rnd_.below(std::min<std::size_t>(tasks_.size(), 200))];
            if (t.forgotten) {
                ASSERT_FALSE(engine_.status(t.id).has_value()) << "forgotten, yet status() answers: " << show(t);
            } else {
                ASSERT_EQ(engine_.status(t.id), t.state) << show(t);
            }
        }
    }

    // ---- failure messages (see also GraphModel::show) --------------------------------------------

    std::string show_specs(const std::vector<TaskSpec>& specs) const {
        std::ostringstream os;
        for (std::size_t i = 0; i < specs.size(); ++i) {
            const TaskSpec& s = specs[i];
            os << (i ? "; " : "") << "[pool " << s.pool;
            if (s.key) os << " key \"" << *s.key << "\"";
            if (s.start)
                os << " start +" << seconds(*s.start - now_) << " tol " << seconds(s.start_tolerance) << " "
                   << miss_text(s.on_miss);
            if (s.duration_hint) os << " hint " << seconds(*s.duration_hint);
            for (const Dep& d : s.depends_on) {
                os << " " << kind_text(d.kind) << "(";
                if (d.ref.id) os << "id " << d.ref.id->value;
                if (d.ref.key) os << "\"" << *d.ref.key << "\"";
                os << ")";
            }
            os << "]";
        }
        return os.str();
    }

    static std::string show_errors(const std::set<SubmitError>& errors) {
        std::string out = "{";
        for (SubmitError e : errors) {
            if (out.size() > 1) out += ", ";
            out += to_string(e);
        }
        return out + "}";
    }

    std::string show_pools() const {
        std::ostringstream os;
        for (PoolId q = 0; q < pools_.size(); ++q) {
            const PoolModel& m = pools_[q];
            os << "  pool " << q << ": capacity " << m.capacity << ", max_workers " << m.max_workers << ", fraction "
               << m.config.reservable_fraction << " (limit " << m.limit << "), max_hold " << seconds(m.config.max_hold)
               << ", "
               << (m.config.unknown_dependency.awaits() ? "Await " + seconds(m.config.unknown_dependency.timeout())
                                                        : "Reject")
               << ", max_attempts " << m.config.retry.max_attempts << ", backoff "
               << seconds(m.config.retry.initial_backoff) << "\n";
        }
        return os.str();
    }
};

}  // namespace cronoq::core::test::graph_model
