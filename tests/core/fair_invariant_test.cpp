// Randomized runs with fair keys, weights and caps (docs/design.md#fair-sharing):
// random submissions over a few pools (keys, classes, deadlines, resource
// needs), completions of every kind, cancels, capacity and weight changes.
// After every call: no key has more running attempts in a pool than its cap,
// and the engine's per-key counts match the model's. At the end (every task
// finished): exactly one terminal status per task, no key state left in any
// pool, and no key name left once retention has forgotten the tasks.
// CRONOQ_SEED / CRONOQ_STEPS as in the other suites (random_calls.hpp).
#include "engine_harness.hpp"
#include "random_calls.hpp"

#include <map>
#include <random>
#include <string>
#include <unordered_map>

namespace cronoq::core::test::fair_invariant_test {
namespace {

struct FairRun {
    explicit FairRun(std::uint64_t seed) : rng(seed), h(config()) {
        for (std::uint32_t cap : {0u, 1u, 3u}) {
            PoolConfig pc{"p" + std::to_string(cap), 2 + cap};
            if (cap > 0) pc.fairness.per_key_concurrency = cap;
            pc.fairness.weights = {{"k0", 4.0}, {"k1", 0.5}};
            caps.push_back(cap);
            h.add_pool(std::move(pc));
        }
    }
    static EngineConfig config() {
        EngineConfig c;
        c.retention = 0s;
        c.resources = {Resource::semaphore("db", 2)};
        c.priority.min_share = {0, 0, 0, 0.2};
        return c;
    }

    std::mt19937_64 rng;
    Harness h;
    std::vector<std::uint32_t> caps;
    Time now = t0;
    struct Task {
        PoolId pool;
        std::string key;
        LeaseId lease{};  // while running
        int terminal = 0;
    };
    std::unordered_map<std::uint64_t, Task> tasks;
    std::map<std::pair<PoolId, std::string>, int> running;  // by pool and key

    int pick(int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); }

    void apply_last() {
        for (const Action& a : h.last) {
            if (const Dispatch* d = std::get_if<Dispatch>(&a)) {
                Task& t = tasks.at(d->task.value);
                t.lease = d->lease;
                const int now_running = ++running[{t.pool, t.key}];
                if (caps[t.pool] > 0) {
                    ASSERT_LE(now_running, static_cast<int>(caps[t.pool])) << "key \"" << t.key << "\" over its cap";
                }
            } else if (const Status* st = std::get_if<Status>(&a)) {
                auto it = tasks.find(st->task.value);
                if (it == tasks.end()) continue;  // its submit is being applied
                Task& t = it->second;
                if (st->status != TaskStatus::Running && t.lease) {
                    --running[{t.pool, t.key}];
                    t.lease = LeaseId{};
                }
                if (is_terminal(st->status)) ++t.terminal;
            }
        }
    }

    void submit() {
        TaskSpec spec{.pool = static_cast<PoolId>(pick(3)), .priority = static_cast<Priority>(pick(4))};
        const int k = pick(6);
        spec.fair_key = k == 5 ? "" : "k" + std::to_string(k);
        if (pick(5) == 0) spec.deadline = now + std::chrono::milliseconds(pick(3000));
        if (pick(6) == 0) spec.resources = {{"db", 1}};
        if (pick(4) == 0) spec.retry = RetryPolicy{.max_attempts = 2, .initial_backoff = 10ms};
        const auto r = h.engine.submit(spec, now);
        ASSERT_TRUE(r.has_value()) << r.message();
        tasks[r.value().value] = Task{spec.pool, spec.fair_key};
        h.last.clear();
        h.engine.drain(h.last);
        apply_last();
    }
    void complete_one() {
        std::vector<std::uint64_t> ids;
        for (const auto& [id, t] : tasks)
            if (t.lease) ids.push_back(id);
        if (ids.empty()) return;
        std::sort(ids.begin(), ids.end());
        const Task& t = tasks.at(ids[static_cast<std::size_t>(pick(static_cast<int>(ids.size())))]);
        const int kind = pick(10);
        const Outcome o = kind < 7   ? Outcome::success()
                          : kind < 9 ? Outcome::retryable("again")
                                     : Outcome::permanent("no");
        h.complete(t.lease, o, now);
        apply_last();
    }
    void cancel_one() {
        if (tasks.empty()) return;
        auto it = tasks.begin();
        std::advance(it, pick(static_cast<int>(std::min<std::size_t>(tasks.size(), 50))));
        h.cancel(TaskId{it->first}, now);
        apply_last();
    }
    void check_counts() {
        for (PoolId p = 0; p < 3; ++p) {
            const PoolStats s = h.engine.stats(p, now);
            for (const FairKeyLoad& k : s.top_keys) {
                const auto it = running.find({p, k.key});
                ASSERT_EQ(static_cast<int>(k.running), it == running.end() ? 0 : it->second) << "key " << k.key;
                if (caps[p] > 0) {
                    ASSERT_LE(k.running, caps[p]);
                }
            }
        }
    }

    void step() {
        now += std::chrono::milliseconds(pick(40));
        switch (pick(12)) {
            case 0: case 1: case 2: case 3: case 4: submit(); break;
            case 5: case 6: case 7: complete_one(); break;
            case 8: cancel_one(); break;
            case 9: h.set_capacity(static_cast<PoolId>(pick(3)), static_cast<std::size_t>(pick(6)), now); apply_last(); break;
            case 10: h.engine.set_fair_weight(static_cast<PoolId>(pick(3)), "k" + std::to_string(pick(5)), 0.25 + pick(8), now);
                     h.last.clear(); h.engine.drain(h.last); apply_last(); break;
            default: h.tick(now); apply_last(); break;
        }
        check_counts();
    }

    void finish_everything() {
        for (PoolId p = 0; p < 3; ++p) {
            h.set_capacity(p, 4, now);
            apply_last();
        }
        for (int guard = 0; guard < 200000; ++guard) {
            bool live = false;
            for (const auto& [id, t] : tasks) live = live || t.terminal == 0;
            if (!live) break;
            now += 50ms;
            if (!h.engine.has_actions()) complete_one();
            h.tick(now);
            apply_last();
            if (::testing::Test::HasFatalFailure()) return;
        }
    }
};

TEST(FairInvariants, CapsHoldAndEveryTaskEndsOnceAndKeysAreReleased) {
    for (const std::uint64_t seed : seeds_or(std::array<std::uint64_t, 5>{11, 12, 13, 14, 15})) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        FairRun run(seed);
        const int steps = steps_or(3000);
        for (int i = 0; i < steps && !::testing::Test::HasFatalFailure(); ++i) run.step();
        if (::testing::Test::HasFatalFailure()) return;
        run.finish_everything();
        if (::testing::Test::HasFatalFailure()) return;
        for (const auto& [id, t] : run.tasks) ASSERT_EQ(t.terminal, 1) << "task " << id;
        run.h.tick(run.now + 1s);
        for (PoolId p = 0; p < 3; ++p) {
            EXPECT_EQ(run.h.engine.stats(p, run.now).active_keys, 0u);
            EXPECT_TRUE(run.h.engine.stats(p, run.now).top_keys.empty());
        }
        EXPECT_EQ(run.h.engine.known_fair_keys(), 0u);
    }
}

// Over a long backlogged run, each key's share of dispatches stays within
// a few dispatches of its weighted share, whatever the random weights.
TEST(FairInvariants, SharesStayWithinBoundsOverLongRuns) {
    for (const std::uint64_t seed : seeds_or(std::array<std::uint64_t, 5>{21, 22, 23, 24, 25})) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::mt19937_64 rng(seed);
        FairnessConfig f;
        double total = 0;
        for (int k = 0; k < 6; ++k) {
            const double w = 0.25 + static_cast<double>(rng() % 16) / 4.0;
            f.weights["k" + std::to_string(k)] = w;
            total += w;
        }
        Harness h;
        PoolConfig pc{"p", 0};
        pc.fairness = f;
        const PoolId pool = h.add_pool(std::move(pc));
        std::unordered_map<std::uint64_t, int> key_of;
        constexpr int per_key = 3000;
        for (int i = 0; i < per_key; ++i)
            for (int k = 0; k < 6; ++k) {
                TaskSpec spec{.pool = pool};
                spec.fair_key = "k" + std::to_string(k);
                key_of[h.submit(spec, t0).value] = k;
            }
        std::array<int, 6> served{};
        h.set_capacity(pool, 1, t0 + 1s);
        const int n = per_key;  // every key stays backlogged throughout
        for (int i = 0; i < n; ++i) {
            const Dispatch d = h.only_dispatch();
            ++served[static_cast<std::size_t>(key_of[d.task.value])];
            ASSERT_TRUE(h.complete(d.lease, Outcome::success(), t0 + 1s));
        }
        for (int k = 0; k < 6; ++k) {
            const double share = f.weights["k" + std::to_string(k)] / total * n;
            EXPECT_NEAR(served[static_cast<std::size_t>(k)], share, 2.0) << "key k" << k;
        }
    }
}

}  // namespace
}  // namespace cronoq::core::test::fair_invariant_test
