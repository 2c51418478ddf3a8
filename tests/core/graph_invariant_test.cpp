// Randomized invariant test of the engine's graph and calendar features:
// fixed starts (SPEC §6), dependencies, keys and batches (SPEC §7), with
// cancels, completions of every kind, capacity changes and a shutdown
// (SPEC §12). invariant_test.cpp covers ordering, retries, leases and
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
//     starts fall within max_hold to hold those slots (SPEC §6 holds);
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
#include "engine_harness.hpp"

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

namespace cronoq::core::test {
namespace {

using S = TaskStatus;
using K = Dep::Kind;

constexpr std::array<std::uint64_t, 5> default_seeds{101, 102, 103, 104, 105};
constexpr int default_steps = 2500;

std::vector<std::uint64_t> seeds() {
    if (const char* env = std::getenv("CRONOQ_SEED"); env && *env) return {std::strtoull(env, nullptr, 10)};
    return {default_seeds.begin(), default_seeds.end()};
}

int steps() {
    if (const char* env = std::getenv("CRONOQ_STEPS"); env && *env) return std::atoi(env);
    return default_steps;
}

// The fixed seeds at full length: what the coverage checks are tuned for
// (a short run, or some other seed, may miss a rare feature).
bool default_run() {
    const char* seed = std::getenv("CRONOQ_SEED");
    return !(seed && *seed) && steps() >= default_steps;
}

// SplitMix64: the test's own generator, the same sequence everywhere.
class Random {
public:
    explicit Random(std::uint64_t seed) : state_(seed * 0x2545F4914F6CDD1Dull + 0x9E3779B97F4A7C15ull) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
    bool chance(int percent) { return below(100) < static_cast<std::uint64_t>(percent); }
    Duration between(Duration lo, Duration hi) {
        return lo + Duration(static_cast<Duration::rep>(below(static_cast<std::uint64_t>((hi - lo).count()) + 1)));
    }
    template <class T, std::size_t N>
    const T& pick(const std::array<T, N>& a) {
        return a[below(N)];
    }

private:
    std::uint64_t state_;
};

// SPEC §7, written out here rather than taken from dep_met, so that the
// engine's helper is checked too.
bool meets(K kind, S parent) {
    switch (kind) {
        case K::OnSuccess: return parent == S::Succeeded;
        case K::OnFailure: return parent == S::Failed || parent == S::DeadLettered;
        case K::OnComplete: return is_terminal(parent);
    }
    return false;
}

const char* kind_text(K k) {
    switch (k) {
        case K::OnSuccess: return "on_success";
        case K::OnFailure: return "on_failure";
        case K::OnComplete: return "on_complete";
    }
    return "?";
}

const char* miss_text(MissPolicy p) {
    switch (p) {
        case MissPolicy::RunLate: return "RunLate";
        case MissPolicy::Skip: return "Skip";
        case MissPolicy::Fail: return "Fail";
    }
    return "?";
}

std::string seconds(Duration d) {
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

// Where a dependency of a batch member points, by SPEC §7's resolution.
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

struct Op {
    enum class Kind { Submit, Complete, DeadComplete, Cancel, SetCapacity, Tick, Shutdown };
    Kind kind = Kind::Tick;
    TaskId task{};
    LeaseId lease{};
    Outcome outcome{};
    bool silent = false;  // the call must emit no action
};

const char* op_name(Op::Kind k) {
    switch (k) {
        case Op::Kind::Submit: return "submit";
        case Op::Kind::Complete: return "complete";
        case Op::Kind::DeadComplete: return "complete (dead lease)";
        case Op::Kind::Cancel: return "cancel";
        case Op::Kind::SetCapacity: return "set_capacity";
        case Op::Kind::Tick: return "tick";
        case Op::Kind::Shutdown: return "shutdown";
    }
    return "?";
}

// What a run exercised, so that a generator that stops reaching a feature
// is noticed.
struct Coverage {
    std::uint64_t accepted = 0, held_key = 0, batches = 0;
    std::map<SubmitError, std::uint64_t> rejected;
    std::uint64_t skipped = 0, await_skipped = 0, awaited_bound = 0, missed = 0, failed_start = 0;
    std::uint64_t on_time = 0, late = 0, scheduled = 0;
    std::map<S, std::uint64_t> cancelled_from;
};

class Sim {
public:
    static constexpr Duration retention = 30s;
    static constexpr std::size_t retention_max = 60;
    static constexpr int key_space = 24;

    explicit Sim(std::uint64_t seed) : seed_(seed), rnd_(seed), engine_(config(seed)) {
        // Pool 0 rejects unknown keys, pool 1 awaits them, pool 2 either.
        for (int i = 0; i < 3; ++i) add_pool(random_pool(i));
    }

    void run(int n, bool shutdown_midway) {
        for (step_ = 0; step_ < n; ++step_) {
            if (shutdown_midway && step_ == n * 17 / 20)
                do_shutdown(now_ + rnd_.between(0s, 4s));
            else
                random_step();
            if (failed()) return;
        }
    }

    /// Lets every task end: opens slots, completes whatever runs with
    /// success and ticks through starts, backoffs and await timeouts; then
    /// shuts down (idle).
    void finish_by_completing() {
        for (PoolId p = 0; p < pools_.size(); ++p) {
            do_set_capacity(p, std::max<std::size_t>(1, pools_[p].max_workers), false);
            if (failed()) return;
        }
        for (int guard = 0; guard < 200000 && !live_.empty(); ++guard) {
            bool any = false;
            for (std::size_t idx : std::vector<std::size_t>(live_)) {
                if (tasks_[idx].state != S::Running) continue;
                any = true;
                do_complete(idx, Outcome::success(), false);
                if (failed()) return;
            }
            if (live_.empty() || any) continue;
            const auto wake = engine_.next_wakeup();
            if (!wake) break;  // stuck: reported below
            now_ = std::max(now_, *wake);
            do_tick();
            if (failed()) return;
        }
        ASSERT_TRUE(live_.empty()) << "stuck: " << live_.size()
                                   << " live task(s), none running, no wakeup; first: " << show(tasks_[live_.front()]);
        do_shutdown(now_);
    }

    void finish_by_shutdown() { do_shutdown(now_); }

    /// What must hold once everything has ended.
    void check_end() {
        ASSERT_EQ(engine_.live_tasks(), 0u);
        ASSERT_FALSE(engine_.next_wakeup().has_value()) << "a timer outlived every task";
        for (const TaskModel& t : tasks_) {
            ASSERT_TRUE(t.announced) << show(t);
            ASSERT_EQ(t.terminal_events, 1) << show(t);
        }
        for (PoolId p = 0; p < pools_.size(); ++p) {
            const PoolCounters c = engine_.counters(p);
            EXPECT_EQ(c.blocked + c.scheduled + c.ready + c.running + c.retrying, 0u) << "pool " << p;
            EXPECT_EQ(c.succeeded + c.failed + c.dead_lettered + c.cancelled + c.skipped + c.missed, c.submitted)
                << "pool " << p << ": every submitted task ends exactly once";
        }
    }

    const Coverage& coverage() const { return cov_; }

private:
    static EngineConfig config(std::uint64_t seed) {
        EngineConfig c;
        c.seed = seed;
        c.retention = retention;
        c.retention_max = retention_max;
        return c;
    }

    bool failed() {
        if (!::testing::Test::HasFailure()) return false;
        if (!reported_) {
            reported_ = true;
            ADD_FAILURE() << "seed " << seed_ << ": failed at step " << step_ << " (" << last_op_
                          << ") at t=" << seconds(now_ - t0) << "; rerun with CRONOQ_SEED=" << seed_
                          << " CRONOQ_STEPS=" << steps() << "\npools:\n"
                          << show_pools() << "actions of that call:\n"
                          << dump_actions();
        }
        return true;
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

    void add_pool(PoolConfig c) {
        const PoolId id = engine_.add_pool(c);
        ASSERT_EQ(id, pools_.size());
        PoolModel m;
        m.capacity = c.capacity;
        m.max_workers = c.max_workers == 0 ? c.capacity : c.max_workers;
        // SPEC §6: reservable_fraction of max_workers, at least one slot.
        m.limit = std::max<std::size_t>(
            1, static_cast<std::size_t>(std::floor(c.reservable_fraction * static_cast<double>(m.max_workers))));
        m.config = std::move(c);
        pools_.push_back(std::move(m));
    }

    // ---- random calls ---------------------------------------------------------------------------

    void random_step() {
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
        if (live_.empty()) return std::nullopt;
        const std::size_t start = rnd_.below(live_.size());
        for (std::size_t i = 0; i < live_.size(); ++i) {
            const std::size_t idx = live_[(start + i) % live_.size()];
            if (tasks_[idx].announced && pred(tasks_[idx])) return idx;
        }
        return std::nullopt;
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

    std::optional<SubmitError> invalid(const TaskSpec& spec) const {
        if (spec.pool >= pools_.size()) return SubmitError::UnknownPool;
        if (spec.duration_hint && spec.duration_hint->count() <= 0) return SubmitError::Invalid;
        if (spec.start_tolerance.count() < 0) return SubmitError::Invalid;
        if (spec.key && spec.key->empty()) return SubmitError::Invalid;
        for (const Dep& d : spec.depends_on)
            if (d.ref.key && d.ref.key->empty()) return SubmitError::Invalid;
        return std::nullopt;
    }

    bool blocked_task(std::size_t idx) const { return tasks_[idx].announced && tasks_[idx].state == S::Blocked; }

    // SPEC §7 resolution of every reference, then every check of SPEC §6/§7.
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

    // Cycle (SPEC §7): the graph after admission has a cycle. Its nodes are
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
        // Model entries for the admitted tasks; their first Status comes in
        // this call's actions.
        std::vector<std::size_t> index(specs.size());
        std::vector<std::size_t> fresh;
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

    void do_tick() {
        Op op{Op::Kind::Tick};
        describe(op);
        engine_.tick(now_);
        apply(op, {});
    }

    void do_shutdown(Time grace_end) {
        Op op{Op::Kind::Shutdown};
        describe(op, " grace to +" + seconds(grace_end - now_));
        engine_.shutdown(now_, grace_end);
        shutting_down_ = true;
        grace_end_ = std::min(grace_end_, grace_end);
        apply(op, {});
        if (failed()) return;
        ASSERT_TRUE(engine_.is_shutting_down());
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

    // SPEC §6: a fixed start may be Ready from its start on; a Skip / Fail
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

    void apply(const Op& op, const std::vector<std::size_t>& fresh) {
        engine_.drain(actions_);
        ASSERT_FALSE(engine_.has_actions());
        if (op.silent) {
            ASSERT_TRUE(actions_.empty())
                << "a call that must change nothing emitted " << actions_.size() << " action(s)";
        }
        for (std::size_t idx : fresh) live_.push_back(idx);
        for (std::size_t i = 0; i < actions_.size(); ++i) {
            const Action& a = actions_[i];
            if (const auto* d = std::get_if<Dispatch>(&a)) {
                ASSERT_LT(i + 1, actions_.size()) << "Dispatch without its Status Running";
                const auto* st = std::get_if<Status>(&actions_[i + 1]);
                ASSERT_TRUE(st && st->task == d->task && st->status == S::Running && st->attempt == d->attempt &&
                            st->pool == d->pool && st->at == now_)
                    << "Dispatch of task " << d->task.value << " not followed by its Status Running";
                on_dispatch(*d);
                ++i;
            } else if (const auto* ab = std::get_if<Abort>(&a)) {
                ASSERT_LT(i + 1, actions_.size()) << "Abort without a Status";
                const auto* st = std::get_if<Status>(&actions_[i + 1]);
                ASSERT_TRUE(st && st->task == ab->task) << "Abort not followed by the task's Status";
                on_abort(*ab, op);
                if (::testing::Test::HasFatalFailure()) return;
                on_status(*st, op, ab->reason);
                ++i;
            } else if (const auto* st = std::get_if<Status>(&a)) {
                on_status(*st, op, std::nullopt);
            } else if (const auto* fg = std::get_if<Forget>(&a)) {
                const auto it = by_id_.find(fg->task.value);
                ASSERT_NE(it, by_id_.end()) << "Forget of an unknown task";
                TaskModel& t = tasks_[it->second];
                ASSERT_TRUE(t.announced && is_terminal(t.state)) << "Forget of a task that has not ended: " << show(t);
                ASSERT_FALSE(t.forgotten) << "a task forgotten twice";
                t.forgotten = true;
                if (t.key) {
                    auto k = keys_.find(*t.key);
                    if (k != keys_.end() && k->second == it->second) keys_.erase(k);
                }
            } else {
                FAIL() << "unexpected action (ScaleTo / SpaceAvailable) without autoscaling or bounds";
            }
            if (::testing::Test::HasFatalFailure()) return;
        }
        for (std::size_t idx : fresh) {
            ASSERT_TRUE(tasks_[idx].announced) << "an admitted task emitted no Status: " << show(tasks_[idx]);
        }
        live_.erase(std::remove_if(live_.begin(), live_.end(),
                                   [this](std::size_t idx) { return is_terminal(tasks_[idx].state); }),
                    live_.end());
        check();
    }

    void end_lease(TaskModel& t) {
        dead_leases_.push_back(t.lease);
        t.lease = LeaseId{};
        --pools_[t.pool].running;
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
            // SPEC §6: a due start goes ahead of ready work of its pool.
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
            ASSERT_EQ(c.submitted, x.submitted) << "pool " << q;
            ASSERT_EQ(c.dispatched, x.dispatched) << "pool " << q;
            ASSERT_EQ(c.succeeded, x.succeeded) << "pool " << q;
            ASSERT_EQ(c.failed, x.failed) << "pool " << q;
            ASSERT_EQ(c.dead_lettered, x.dead_lettered) << "pool " << q;
            ASSERT_EQ(c.cancelled, x.cancelled) << "pool " << q;
            ASSERT_EQ(c.retried, x.retried) << "pool " << q;
            ASSERT_EQ(c.skipped, x.skipped) << "pool " << q;
            ASSERT_EQ(c.missed, x.missed) << "pool " << q;
            ASSERT_EQ(c.starts_on_time, x.starts_on_time) << "pool " << q;
            ASSERT_EQ(c.starts_late, x.starts_late) << "pool " << q;
            // SPEC §6: a due start is dispatched at its start, so it waits
            // only for a slot.
            if (n.due_ready > 0) {
                ASSERT_GE(c.running, m.capacity) << "pool " << q << ": a due start waits beside a free slot";
            }
            // SPEC §6 holds: other ready work waits beside free slots only
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

    std::string dump_actions() const {
        std::ostringstream os;
        for (const Action& a : actions_) {
            if (const auto* d = std::get_if<Dispatch>(&a))
                os << "  Dispatch task " << d->task.value << " lease " << d->lease.value << " pool " << d->pool
                   << " attempt " << d->attempt << "\n";
            else if (const auto* ab = std::get_if<Abort>(&a))
                os << "  Abort task " << ab->task.value << " lease " << ab->lease.value << " " << to_string(ab->reason)
                   << "\n";
            else if (const auto* st = std::get_if<Status>(&a))
                os << "  Status task " << st->task.value << " pool " << st->pool << " " << to_string(st->status)
                   << " attempt " << st->attempt << " \"" << st->message << "\"\n";
            else if (const auto* fg = std::get_if<Forget>(&a))
                os << "  Forget task " << fg->task.value << "\n";
            else
                os << "  (other action)\n";
        }
        return os.str();
    }

    void describe(const Op& op, const std::string& extra = {}) {
        std::ostringstream os;
        os << op_name(op.kind);
        if (op.task) os << " task " << op.task.value;
        if (op.lease) os << " lease " << op.lease.value;
        os << extra;
        last_op_ = os.str();
    }

    std::uint64_t seed_;
    Random rnd_;
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
    int step_ = 0;
    bool reported_ = false;
    std::vector<Action> actions_;
    std::string last_op_;
    Coverage cov_;
};

class GraphInvariantTest : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(GraphInvariantTest, RandomCallsThenShutdownMidway) {
    const std::uint64_t seed = GetParam();
    SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with CRONOQ_SEED=" + std::to_string(seed) + ")");
    Sim sim(seed);
    sim.run(steps(), /*shutdown_midway=*/true);
    if (HasFailure()) return;
    sim.finish_by_shutdown();
    if (HasFailure()) return;
    sim.check_end();
}

TEST_P(GraphInvariantTest, RandomCallsThenCompleteEverything) {
    const std::uint64_t seed = GetParam();
    SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with CRONOQ_SEED=" + std::to_string(seed) + ")");
    Sim sim(seed);
    sim.run(steps(), /*shutdown_midway=*/false);
    if (HasFailure()) return;
    sim.finish_by_completing();
    if (HasFailure()) return;
    sim.check_end();
    // The run reached what it is meant to check.
    if (!default_run()) return;
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

INSTANTIATE_TEST_SUITE_P(GraphInvariantSeeds, GraphInvariantTest, ::testing::ValuesIn(seeds()));

// ---- regressions --------------------------------------------------------------------------------
// Minimal forms of three engine bugs found while this test was written: each
// failed on the engine of that day and passes on the fixed one. With the
// first or the third put back, the random test above fails on its default
// seeds (the idle-slot check; the Cycle prediction).

// A pool of two slots: one busy, one held for a fixed start 10 s ahead, and
// a 60 s task waiting because it would overrun that start.
struct GraphInvariantRegressionHeldSlot : ::testing::Test {
    Harness h;
    PoolId pool = h.add_pool(PoolConfig{"p", 2});
    TaskId busy = h.submit(TaskSpec{.pool = pool}, t0);

    TaskSpec fixed_start() const {
        TaskSpec spec{.pool = pool};
        spec.start = t0 + 10s;
        spec.duration_hint = 1s;
        return spec;
    }
    TaskId long_task() {
        TaskSpec spec{.pool = pool};
        spec.duration_hint = 60s;
        return h.submit(spec, t0);
    }
};

// Was: cancelling the start released its hold, but nothing made the engine
// look at the pool again, so the free slot stayed idle (with no wakeup)
// until the busy task ended. The same for a start that ended Missed/Failed
// or Skipped while it held a slot.
TEST_F(GraphInvariantRegressionHeldSlot, CancellingAStartFreesItsHeldSlot) {
    const TaskId start = h.submit(fixed_start(), t0);
    const TaskId waiting = long_task();
    ASSERT_EQ(h.engine.status(waiting), TaskStatus::Ready) << "the free slot is held for the start";
    h.cancel(start, t0 + 1s);
    EXPECT_EQ(h.engine.status(waiting), TaskStatus::Running);
}

// Was: a fixed start still Blocked on a dependency held a slot while its
// start was ahead; once the start had passed the hold no longer applied,
// but no timer or change woke the pool, so the slot stayed idle until the
// parent ended.
TEST_F(GraphInvariantRegressionHeldSlot, AStartPassedWhileBlockedHoldsNoSlot) {
    TaskSpec spec = fixed_start();
    spec.depends_on.push_back(Dep::on_success(busy));
    h.submit(spec, t0);
    const TaskId waiting = long_task();
    h.tick(t0 + 11s);
    EXPECT_EQ(h.engine.status(waiting), TaskStatus::Running);
}

// Was: a batch whose members take keys that two Blocked tasks await, each
// member depending on the other's awaiter, was admitted: the cycle
// a -> "k1" -> b -> "k2" -> a runs through two awaited keys, and the engine
// looked for each key's awaiters only among that member's own ancestors.
// All four tasks then stayed Blocked for good.
TEST(GraphInvariantRegression, ACycleThroughTwoAwaitedKeysOfABatchIsRejected) {
    Harness h;
    const PoolId pool =
        h.add_pool(PoolConfig{.name = "p", .capacity = 1, .unknown_dependency = UnknownDependency::Await{60s}});
    auto awaiting = [&](std::string key) {
        TaskSpec spec{.pool = pool};
        spec.depends_on.push_back(Dep::on_success(std::move(key)));
        return h.submit(spec, t0);
    };
    const TaskId a = awaiting("k1");
    const TaskId b = awaiting("k2");
    TaskSpec k1{.pool = pool}, k2{.pool = pool};
    k1.key = "k1";
    k1.depends_on.push_back(Dep::on_success(b));
    k2.key = "k2";
    k2.depends_on.push_back(Dep::on_success(a));
    const auto r = h.submit_batch({k1, k2}, t0);
    ASSERT_FALSE(r.has_value()) << "the cycle a -> k1 -> b -> k2 -> a was admitted";
    EXPECT_EQ(r.error(), SubmitError::Cycle);
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.find_key("k1"), std::nullopt);
    EXPECT_EQ(h.engine.status(a), TaskStatus::Blocked);
}

}  // namespace
}  // namespace cronoq::core::test
