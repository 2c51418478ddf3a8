// The engine alone, under virtual time: no Asio, no clock, no threads.
//
//   BM_EngineDispatchComplete/<backlog>  steady state: one completion, which
//                                        dispatches the next task, and one
//                                        replacement submission per iteration
//   BM_EngineDispatchCompleteFair/<backlog>  the same, the tasks spread over
//                                        10 000 fair keys (all active)
//   BM_EngineDispatchCompleteFairFewKeys/<backlog>  the same over 100 keys
//   BM_EngineSubmit                      submissions into a growing queue
//   BM_EngineMemoryPerTask               resident bytes per queued task
//   BM_EngineMemoryPerTaskFair           the same over 10 000 fair keys
#include <cronoq/core/engine.hpp>

#include <benchmark/benchmark.h>

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <variant>
#include <vector>

namespace {

using namespace std::chrono_literals;
using cronoq::LeaseId;
using cronoq::Priority;
namespace core = cronoq::core;

constexpr core::Time t0{};

core::TaskSpec spec_for(std::uint64_t i) {
    core::TaskSpec spec;
    spec.priority = static_cast<Priority>(i % cronoq::priority_count);
    return spec;
}

// Fair keys "tenant-0" ... in turn, four tasks (one of each class) per turn,
// so that every key has tasks in the class the backlog holds (the names made
// once, outside the timing).
constexpr std::size_t fair_keys = 10000;
struct KeyedSpecs {
    std::vector<std::string> names;
    explicit KeyedSpecs(std::size_t keys) {
        for (std::size_t k = 0; k < keys; ++k) names.push_back("tenant-" + std::to_string(k));
    }
    core::TaskSpec operator()(std::uint64_t i) const {
        core::TaskSpec spec = spec_for(i);
        if (!names.empty()) spec.fair_key = names[(i / cronoq::priority_count) % names.size()];
        return spec;
    }
};

// Appends the lease of every Dispatch in `actions` to `running`.
void collect_leases(const std::vector<core::Action>& actions, std::deque<LeaseId>& running) {
    for (const core::Action& a : actions)
        if (const auto* d = std::get_if<core::Dispatch>(&a)) running.push_back(d->lease);
}

// ---- BM_EngineDispatchComplete ------------------------------------------------

// A pool of 1024 slots, all busy, with `backlog` tasks queued behind them.
// Each iteration completes the oldest running attempt (the engine dispatches
// the best queued task into the freed slot) and submits a replacement, so the
// backlog stays constant. One dispatch decision per iteration.
void dispatch_complete(benchmark::State& state, std::size_t keys) {
    const auto backlog = static_cast<std::size_t>(state.range(0));
    constexpr std::size_t capacity = 1024;
    const KeyedSpecs spec_for(keys);

    core::Engine engine;
    engine.add_pool(core::PoolConfig{"bench", capacity});
    std::vector<core::Action> actions;
    std::deque<LeaseId> running;
    std::uint64_t submitted = 0;
    for (; submitted < backlog + capacity; ++submitted) {
        if (!engine.submit(spec_for(submitted), t0)) {
            state.SkipWithError("setup: submit rejected");
            return;
        }
        engine.drain(actions);
        collect_leases(actions, running);
    }
    if (running.size() != capacity) {
        state.SkipWithError("setup: the pool is not full");
        return;
    }
    const core::Outcome success = core::Outcome::success();
    core::Time now = t0;
    auto step = [&] {
        now += 1us;
        const LeaseId lease = running.front();
        running.pop_front();
        const bool live = engine.complete(lease, success, now);
        benchmark::DoNotOptimize(live);
        engine.drain(actions);
        collect_leases(actions, running);
        auto id = engine.submit(spec_for(submitted++), now);
        benchmark::DoNotOptimize(id);
        engine.drain(actions);
        collect_leases(actions, running);
    };
    // Until retention_max (100 000) tasks have ended, every end grows the
    // retained set; time the steady state past it.
    for (std::size_t i = 0; i < core::EngineConfig{}.retention_max + capacity; ++i) step();
    // The backlog was submitted at once, every class alike; aging lets its
    // older tasks of low classes win over newer ones of higher classes, so
    // for a while (about twice the backlog in steps) it still drifts between
    // two classes, the queue of one draining and the other's filling. In
    // the steady state it is all in one class (the replacements of the other
    // classes are dispatched as they come): time that, not the drift.
    const auto settled = [&] {
        const core::PoolCounters c = engine.counters(0);
        return c.ready <= *std::max_element(c.ready_by_class.begin(), c.ready_by_class.end()) + 1;
    };
    std::size_t settle_steps = 0;
    for (; !settled(); ++settle_steps) {
        if (settle_steps > 8 * (backlog + capacity)) {
            state.SkipWithError("setup: the backlog did not settle in one class");
            return;
        }
        step();
    }

    for (auto _ : state) step();

    const auto c = engine.counters(0);
    if (c.running != capacity || c.ready != backlog) state.SkipWithError("the steady state did not hold");
    state.SetItemsProcessed(state.iterations());
    state.counters["settle_steps"] = static_cast<double>(settle_steps);
    if (keys > 0) {
        const std::size_t active = engine.stats(0, now).active_keys;
        state.counters["active_keys"] = static_cast<double>(active);
        if (active != keys) state.SkipWithError("not every key is active");
    }
    state.SetLabel("items = dispatch decisions");
}
void BM_EngineDispatchComplete(benchmark::State& state) { dispatch_complete(state, 0); }
BENCHMARK(BM_EngineDispatchComplete)->Arg(1000)->Arg(100000)->Arg(1000000);
// Beside BM_EngineDispatchComplete/100000: what fair sharing between 10 000
// active keys costs a decision (docs/design.md#fair-sharing).
void BM_EngineDispatchCompleteFair(benchmark::State& state) { dispatch_complete(state, fair_keys); }
BENCHMARK(BM_EngineDispatchCompleteFair)->Arg(100000);
// The same over 100 keys, whose state stays in cache: what the fair order
// itself costs a decision, without the misses of 10 000 keys' state.
void BM_EngineDispatchCompleteFairFewKeys(benchmark::State& state) { dispatch_complete(state, 100); }
BENCHMARK(BM_EngineDispatchCompleteFairFewKeys)->Arg(100000);

// ---- BM_EngineSubmit ----------------------------------------------------------

// Submissions into a pool with no slots, so every task stays queued. The
// engine is rebuilt (outside the timed region) every `rebuild_every`
// submissions to bound memory.
void BM_EngineSubmit(benchmark::State& state) {
    constexpr std::uint64_t rebuild_every = std::uint64_t{1} << 20;
    auto make = [] {
        core::Engine e;
        e.add_pool(core::PoolConfig{"bench", 0});
        return e;
    };
    core::Engine engine = make();
    std::vector<core::Action> actions;
    std::uint64_t n = 0;
    std::uint64_t in_engine = 0;
    core::Time now = t0;

    for (auto _ : state) {
        if (in_engine == rebuild_every) {
            state.PauseTiming();
            engine = make();
            in_engine = 0;
            state.ResumeTiming();
        }
        now += 1ns;
        auto id = engine.submit(spec_for(n++), now);
        benchmark::DoNotOptimize(id);
        engine.drain(actions);
        ++in_engine;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EngineSubmit);

// ---- BM_EngineMemoryPerTask ---------------------------------------------------

std::size_t resident_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long size = 0, resident = 0;
    const int got = std::fscanf(f, "%lu %lu", &size, &resident);
    std::fclose(f);
    if (got != 2) return 0;
    return static_cast<std::size_t>(resident) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// Resident growth per queued task at one million queued tasks. malloc_trim
// before each reading returns memory freed by earlier benchmarks (and the
// old buffers of grown containers) to the system, so the figure is the
// engine's footprint, not the allocator's leftovers.
void memory_per_task(benchmark::State& state, std::size_t keys) {
    constexpr std::uint64_t tasks = 1000000;
    const KeyedSpecs spec_for(keys);
    std::size_t before = 0, after = 0;
    for (auto _ : state) {
        state.PauseTiming();
        malloc_trim(0);
        before = resident_bytes();
        state.ResumeTiming();
        core::Engine engine;
        engine.add_pool(core::PoolConfig{"bench", 0});
        std::vector<core::Action> actions;
        for (std::uint64_t i = 0; i < tasks; ++i) {
            auto id = engine.submit(spec_for(i), t0 + std::chrono::nanoseconds(i));
            benchmark::DoNotOptimize(id);
            engine.drain(actions);
        }
        state.PauseTiming();
        actions = {};  // the action buffers are not per-task state
        engine.drain(actions);
        actions = {};
        malloc_trim(0);
        after = resident_bytes();
        if (engine.counters(0).ready != tasks) state.SkipWithError("not every task is queued");
        state.ResumeTiming();
    }
    const double growth = after > before ? static_cast<double>(after - before) : 0.0;
    state.counters["bytes_per_task"] = growth / static_cast<double>(tasks);
    state.counters["rss_growth_MiB"] = growth / (1024.0 * 1024.0);
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(tasks));
}
void BM_EngineMemoryPerTask(benchmark::State& state) { memory_per_task(state, 0); }
BENCHMARK(BM_EngineMemoryPerTask)->Iterations(1)->Unit(benchmark::kMillisecond);
void BM_EngineMemoryPerTaskFair(benchmark::State& state) { memory_per_task(state, fair_keys); }
BENCHMARK(BM_EngineMemoryPerTaskFair)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
