// The driver through the public API, and plain Asio baselines.
//
//   BM_DriverRoundTrip             try_submit -> executor coroutine -> awaited
//                                  result(), one task at a time, one thread
//   BM_AsioCoSpawnBaseline         the same trivial coroutine co_spawned and
//                                  awaited, one at a time, one thread
//   BM_DriverRoundTripSharedValues BM_DriverRoundTrip with a payload and an
//                                  output too large to be held in place
//   BM_DriverThroughput/<n>        100 000 tasks submitted with one
//                                  try_submit_many, then every result awaited;
//                                  io_context run by n threads, 64 slots
//   BM_AsioCoSpawnThroughput/<n>   100 000 co_spawns of the trivial coroutine,
//                                  then a wait for all; io_context run by n
//                                  threads
//   BM_EngineCoSpawnFloor          BM_DriverThroughput/1 without the driver:
//                                  the engine's own work for each task and one
//                                  co_spawn per attempt, nothing else
//   BM_EngineRoundTripFloor        BM_DriverRoundTrip without the driver: the
//                                  engine's submit, dispatch and completion
//                                  around the awaited co_spawn of the baseline
//
// The single-threaded pair runs batches of `batch` round trips inside one
// driving coroutine per batch (KeepRunningBatch), so the ratio of their times
// per item is the driver's overhead over a bare co_spawn. The throughput pair
// is compared the same way, and each with itself from 1 to 2 threads.
//
// Counters, over the timed part only: `allocs_per_task` (calls of operator
// new in the whole binary, payloads and outputs included),
// `aligned_allocs_per_task` (Asio's recycling allocator taking new blocks:
// std::aligned_alloc, which operator new never sees; see alloc_counter.hpp)
// and, for the driver, `locks_per_task` (acquisitions of the engine's lock).
// Unlike the times, none of them moves with the machine's load.
//
// GCC 12: no lambda or braced temporary inside a co_await full-expression;
// every awaitable is named first.
#include <cronoq/core/engine.hpp>
#include <cronoq/cronoq.hpp>
#include <cronoq/diagnostics.hpp>

#include "alloc_counter.hpp"
#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Sched = cronoq::Scheduler<int, int>;

constexpr int batch = 1000;
// Past the engine's default retention_max (100 000 terminal tasks kept for
// status()): before that, every task grows the engine's tables. The timed
// loops start in the steady state a long-running service is in.
constexpr int warmup_batches = 101;
// One iteration of the throughput benchmarks; also the retention_max, so one
// untimed batch brings the engine to its steady state.
constexpr int throughput_tasks = 100000;
// A multi-threaded batch not done by then is taken for a hang: the run ends
// with a message instead of blocking (CI runs these benchmarks).
constexpr std::chrono::seconds hang_limit = 120s;

asio::awaitable<cronoq::Result<int>> echo(cronoq::TaskContext, std::shared_ptr<const int> x) { co_return *x; }

Sched make_scheduler(asio::io_context& io, std::size_t workers) {
    return Sched::builder()
        .pool(cronoq::Pool<int, int>("bench").workers(workers, workers, workers).executor_fn(echo))
        .build(io.get_executor());
}

using cronoq_bench::expected_sum;
using cronoq_bench::Runners;

template <class S>
void shut_down(asio::io_context& io, S& sched) {
    auto stop = [sched]() mutable -> asio::awaitable<void> {
        auto op = sched.shutdown(0s);
        co_await std::move(op);
    };
    asio::co_spawn(io, stop, asio::detached);
    io.restart();
    io.run();
}

// `delta` over the timed part, per task.
void per_task(benchmark::State& state, const char* counter, std::uint64_t delta, std::int64_t tasks) {
    state.counters[counter] = tasks > 0 ? static_cast<double>(delta) / static_cast<double>(tasks) : 0.0;
}

// Heap allocations from construction to report(), per task (alloc_counter.hpp).
struct AllocationsSince {
    std::uint64_t news = cronoq_bench::allocations();
    std::uint64_t aligned = cronoq_bench::aligned_allocations();

    void report(benchmark::State& state) const {
        per_task(state, "allocs_per_task", cronoq_bench::allocations() - news, state.iterations());
        per_task(state, "aligned_allocs_per_task", cronoq_bench::aligned_allocations() - aligned, state.iterations());
    }
};

template <class T>
void wait_or_abort(std::future<T>& f, const char* what) {
    cronoq_bench::wait_or_abort(f, what, hang_limit);
}

// Empty if the batch of `n` tasks adds up, else what went wrong.
std::string check_sum(std::future<std::int64_t>& done, int n, const char* what) {
    return cronoq_bench::check_sum(done, expected_sum(n), what, hang_limit);
}

// ---- BM_DriverRoundTrip -------------------------------------------------------

// Runs `round_trips(n)` (a coroutine adding up the outputs of n round
// trips, one after the other: submit, the executor runs, the awaited
// result comes back; cronoq_bench::one_at_a_time for the driver) on `io`
// by this thread, in batches of `batch`: `warmups` batches untimed, then
// the timed ones, whose allocations it reports. `timed(true)`
// and `timed(false)` are called around the timed part. Marks the benchmark
// failed on a wrong sum or an exception.
template <class RoundTrips, class Timed>
void round_trip_batches(benchmark::State& state, asio::io_context& io, int warmups, RoundTrips round_trips, Timed timed) {
    auto run_batch = [&] {
        bool done = false;
        bool ok = false;
        asio::co_spawn(io, round_trips(batch), [&](std::exception_ptr e, std::int64_t s) {
            done = true;
            ok = !e && s == expected_sum(batch);
        });
        io.restart();
        io.run();  // returns when the batch is done: nothing else holds work
        return done && ok;
    };
    bool ok = true;
    for (int i = 0; i < warmups && ok; ++i) ok = run_batch();
    if (!ok) state.SkipWithError("warm-up: a round trip failed");
    const AllocationsSince allocations;
    timed(true);
    while (ok && state.KeepRunningBatch(batch)) {
        if (!run_batch()) {
            state.SkipWithError("a round trip failed, did not finish or returned the wrong value");
            break;
        }
    }
    allocations.report(state);
    timed(false);
    state.SetItemsProcessed(state.iterations());
}

void BM_DriverRoundTrip(benchmark::State& state) {
    asio::io_context io(1);  // run by this thread alone, and made for it (concurrency hint 1)
    Sched sched = make_scheduler(io, 1);
    std::uint64_t locks_before = 0;
    round_trip_batches(
        state, io, warmup_batches, [&](int n) { return cronoq_bench::one_at_a_time(sched, n); },
        [&](bool start) {
            if (start)
                locks_before = cronoq::diagnostics::lock_acquisitions(sched);
            else
                per_task(state, "locks_per_task", cronoq::diagnostics::lock_acquisitions(sched) - locks_before, state.iterations());
        });
    shut_down(io, sched);
}
BENCHMARK(BM_DriverRoundTrip);

// ---- BM_DriverRoundTripSharedValues -------------------------------------------

// A payload and an output too large to be held in place (24 bytes; see
// detail/erased_value.hpp): each is an allocation of its own, as any
// payload or output that is not small and trivially copyable is.
struct Wide {
    std::int64_t value = 0;
    std::int64_t more[2] = {0, 0};
};
using WideSched = cronoq::Scheduler<Wide, Wide>;

asio::awaitable<cronoq::Result<Wide>> echo_wide(cronoq::TaskContext, std::shared_ptr<const Wide> x) { co_return *x; }

asio::awaitable<std::int64_t> wide_round_trips(WideSched sched, int n) {
    std::int64_t sum = 0;
    for (int i = 0; i < n; ++i) {
        auto submitted = sched.try_submit(cronoq::Task<Wide>(Wide{i}));
        if (!submitted) throw std::runtime_error("try_submit: " + submitted.message());
        auto wait = submitted.value().result();
        std::shared_ptr<const Wide> out = co_await std::move(wait);
        sum += out->value;
    }
    co_return sum;
}

// BM_DriverRoundTrip with shared values: what they cost beside it.
void BM_DriverRoundTripSharedValues(benchmark::State& state) {
    asio::io_context io(1);
    WideSched sched = WideSched::builder()
                          .pool(cronoq::Pool<Wide, Wide>("bench").workers(1, 1, 1).executor_fn(echo_wide))
                          .build(io.get_executor());
    round_trip_batches(
        state, io, warmup_batches, [&](int n) { return wide_round_trips(sched, n); }, [](bool) {});
    shut_down(io, sched);
}
BENCHMARK(BM_DriverRoundTripSharedValues);

// ---- BM_AsioCoSpawnBaseline ---------------------------------------------------

asio::awaitable<int> f(int x) { co_return x; }

// `n` co_spawns of `f`, each awaited before the next, on the caller's executor.
asio::awaitable<std::int64_t> spawn_round_trips(int n) {
    auto ex = co_await asio::this_coro::executor;
    std::int64_t sum = 0;
    for (int i = 0; i < n; ++i) {
        auto op = asio::co_spawn(ex, f(i), asio::use_awaitable);
        sum += co_await std::move(op);
    }
    co_return sum;
}

void BM_AsioCoSpawnBaseline(benchmark::State& state) {
    asio::io_context io(1);  // run by this thread alone, and made for it (concurrency hint 1)
    // One warm-up batch fills Asio's per-thread recycling caches, as a
    // running service has them.
    round_trip_batches(state, io, 1, spawn_round_trips, [](bool) {});
}
BENCHMARK(BM_AsioCoSpawnBaseline);

// ---- BM_EngineRoundTripFloor --------------------------------------------------

// The engine's pool for a floor benchmark: the driver benchmark's pool as the
// engine sees it (default configuration, `capacity` slots).
cronoq::core::PoolConfig bench_pool(std::size_t capacity) {
    cronoq::core::PoolConfig pool;
    pool.name = "bench";
    pool.capacity = capacity;
    return pool;
}

// BM_AsioCoSpawnBaseline with the engine's work for each task around it: a
// submission, its dispatch, the awaited co_spawn and the completion, one task
// at a time. What BM_DriverRoundTrip would cost if the driver cost nothing.
asio::awaitable<std::int64_t> engine_round_trips(cronoq::core::Engine& engine, cronoq::core::Time& now, int n) {
    auto ex = co_await asio::this_coro::executor;
    std::vector<cronoq::core::Action> actions;
    std::int64_t sum = 0;
    for (int i = 0; i < n; ++i) {
        cronoq::core::TaskSpec spec;
        spec.user = static_cast<std::uint64_t>(i);
        now += std::chrono::nanoseconds(1);
        if (!engine.submit(spec, now)) throw std::runtime_error("submit rejected");
        engine.drain(actions);
        const cronoq::core::Dispatch* d = nullptr;
        for (const auto& a : actions)
            if ((d = std::get_if<cronoq::core::Dispatch>(&a))) break;
        if (!d) throw std::runtime_error("not dispatched");
        const cronoq::LeaseId lease = d->lease;
        auto op = asio::co_spawn(ex, f(static_cast<int>(d->user)), asio::use_awaitable);
        sum += co_await std::move(op);
        now += std::chrono::nanoseconds(1);
        if (!engine.complete(lease, cronoq::core::Outcome::success(), now)) throw std::runtime_error("a late completion");
        engine.drain(actions);
    }
    co_return sum;
}

void BM_EngineRoundTripFloor(benchmark::State& state) {
    asio::io_context io(1);
    cronoq::core::Engine engine;
    engine.add_pool(bench_pool(1));  // as make_scheduler(io, 1)
    cronoq::core::Time now{};
    round_trip_batches(
        state, io, warmup_batches, [&](int n) { return engine_round_trips(engine, now, n); }, [](bool) {});
}
BENCHMARK(BM_EngineRoundTripFloor);

// Runs `run_batch` (one batch of `throughput_tasks`; it returns what went
// wrong, empty if nothing) once untimed, then timed, and reports the timed
// part's allocations. `timed(true)` and `timed(false)` are called around
// the timed part.
template <class RunBatch, class Timed>
void throughput_batches(benchmark::State& state, RunBatch& run_batch, Timed timed) {
    std::string error = run_batch();
    if (!error.empty()) state.SkipWithError(("warm-up: " + error).c_str());
    const AllocationsSince allocations;
    timed(true);
    while (error.empty() && state.KeepRunningBatch(throughput_tasks)) {
        error = run_batch();
        if (!error.empty()) state.SkipWithError(error.c_str());
    }
    allocations.report(state);
    timed(false);
    state.SetItemsProcessed(state.iterations());
}

// ---- BM_DriverThroughput/<threads> --------------------------------------------

// The io_context is run by `threads` threads; the benchmark thread only
// starts each batch and waits for its sum, so real time is measured. The
// pool has 64 slots, so attempts of a batch run concurrently.
void BM_DriverThroughput(benchmark::State& state) {
    const auto threads = static_cast<int>(state.range(0));
    asio::io_context io(threads);
    Runners runners(io, threads);
    Sched sched = make_scheduler(io, 64);
    auto run_batch = [&] {
        auto done = asio::co_spawn(io, cronoq_bench::submit_many_and_sum(sched, throughput_tasks), asio::use_future);
        return check_sum(done, throughput_tasks, "BM_DriverThroughput");
    };
    std::uint64_t locks_before = 0;
    throughput_batches(state, run_batch, [&](bool start) {
        if (start)
            locks_before = cronoq::diagnostics::lock_acquisitions(sched);
        else
            per_task(state, "locks_per_task", cronoq::diagnostics::lock_acquisitions(sched) - locks_before, state.iterations());
    });

    auto stop = [sched]() mutable -> asio::awaitable<void> {
        auto op = sched.shutdown(0s);
        co_await std::move(op);
    };
    auto stopped = asio::co_spawn(io, stop, asio::use_future);
    wait_or_abort(stopped, "BM_DriverThroughput: shutdown");
    runners.stop();
}
BENCHMARK(BM_DriverThroughput)->Arg(1)->Arg(2)->UseRealTime();

// ---- BM_AsioCoSpawnThroughput/<threads> ---------------------------------------

// Completion of one batch of co_spawns, shared by their handlers.
struct SpawnedBatch {
    explicit SpawnedBatch(int n) : outputs(static_cast<std::size_t>(n)), remaining(n) {}
    // A slot per task rather than one shared sum: a counter every handler
    // adds to would be a second cache line bounced between the threads, a
    // cost the driver's single awaiting coroutine does not pay.
    std::vector<int> outputs;
    std::atomic<int> remaining;
    std::atomic<bool> failed{false};
    std::promise<std::int64_t> all_done;
};

// One co_spawn of `f` per task, each with a handler that stores its result;
// the last handler to run adds them up.
void spawn_all(asio::io_context& io, SpawnedBatch& b, int n) {
    for (int i = 0; i < n; ++i) {
        auto on_done = [&b, i](std::exception_ptr e, int x) {
            if (e)
                b.failed.store(true, std::memory_order_relaxed);
            else
                b.outputs[static_cast<std::size_t>(i)] = x;
            // acq_rel: the last one sees every other handler's output and failure.
            if (b.remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
            if (b.failed.load(std::memory_order_relaxed)) {
                b.all_done.set_exception(std::make_exception_ptr(std::runtime_error("a co_spawn failed")));
                return;
            }
            std::int64_t sum = 0;
            for (int out : b.outputs) sum += out;
            b.all_done.set_value(sum);
        };
        asio::co_spawn(io, f(i), on_done);
    }
}

// The same shape as BM_DriverThroughput with a bare co_spawn per task.
void BM_AsioCoSpawnThroughput(benchmark::State& state) {
    const auto threads = static_cast<int>(state.range(0));
    asio::io_context io(threads);
    // Every batch outlives the threads: the last handler may still be inside
    // set_value when the benchmark thread sees the result.
    std::vector<std::unique_ptr<SpawnedBatch>> batches;
    Runners runners(io, threads);
    auto run_batch = [&] {
        SpawnedBatch& b = *batches.emplace_back(std::make_unique<SpawnedBatch>(throughput_tasks));
        auto done = b.all_done.get_future();
        asio::post(io, [&io, &b] { spawn_all(io, b, throughput_tasks); });
        return check_sum(done, throughput_tasks, "BM_AsioCoSpawnThroughput");
    };

    // The warm-up fills Asio's per-thread recycling caches, as a running
    // service has them.
    throughput_batches(state, run_batch, [](bool) {});
    runners.stop();
}
BENCHMARK(BM_AsioCoSpawnThroughput)->Arg(1)->Arg(2)->UseRealTime();

// ---- BM_EngineCoSpawnFloor ----------------------------------------------------

// What BM_DriverThroughput/1 would cost if the driver itself cost nothing:
// the same engine (default configuration, one pool of 64 slots) receives the
// same 100 000 submissions, and each dispatch is one co_spawn of the trivial
// coroutine whose completion reports to the engine, on one thread. No
// record, handle, payload, output, clock, lock or event: a floor for the
// driver's throughput that a faster driver can approach and never pass, so
// that `BM_DriverThroughput/1 / BM_EngineCoSpawnFloor` is the share of the
// achievable rate the driver reaches.
class FloorBatch {
public:
    explicit FloorBatch(asio::io_context& io) : io_(io) { engine_.add_pool(bench_pool(64)); }

    // Runs on the io_context's thread: submits `n` tasks (payload i in
    // TaskSpec::user) and starts what the engine dispatches.
    void start(int n, std::promise<std::int64_t>& done) {
        done_ = &done;
        remaining_ = n;
        sum_ = 0;
        for (int i = 0; i < n; ++i) {
            cronoq::core::TaskSpec spec;
            spec.user = static_cast<std::uint64_t>(i);
            tick();
            if (!engine_.submit(spec, now_)) return fail("submit rejected");
        }
        spawn_dispatched();
    }

private:
    void tick() { now_ += std::chrono::nanoseconds(1); }
    void fail(const char* what) {
        if (done_) done_->set_exception(std::make_exception_ptr(std::runtime_error(what)));
        done_ = nullptr;
    }

    void spawn_dispatched() {
        engine_.drain(actions_);
        for (const cronoq::core::Action& a : actions_) {
            const auto* d = std::get_if<cronoq::core::Dispatch>(&a);
            if (!d) continue;
            asio::co_spawn(io_, f(static_cast<int>(d->user)), [this, lease = d->lease](std::exception_ptr e, int x) {
                if (e) return fail("the coroutine threw");
                tick();
                if (!engine_.complete(lease, cronoq::core::Outcome::success(), now_)) return fail("a late completion");
                sum_ += x;
                if (--remaining_ == 0 && done_) {
                    done_->set_value(sum_);
                    done_ = nullptr;
                    return;
                }
                spawn_dispatched();
            });
        }
    }

    asio::io_context& io_;
    cronoq::core::Engine engine_;
    cronoq::core::Time now_{};
    std::vector<cronoq::core::Action> actions_;
    std::promise<std::int64_t>* done_ = nullptr;
    int remaining_ = 0;
    std::int64_t sum_ = 0;
};

void BM_EngineCoSpawnFloor(benchmark::State& state) {
    asio::io_context io(1);
    Runners runners(io, 1);
    FloorBatch floor(io);
    std::vector<std::unique_ptr<std::promise<std::int64_t>>> batches;  // as in BM_AsioCoSpawnThroughput
    auto run_batch = [&] {
        auto& done = *batches.emplace_back(std::make_unique<std::promise<std::int64_t>>());
        auto result = done.get_future();
        asio::post(io, [&floor, &done] { floor.start(throughput_tasks, done); });
        return check_sum(result, throughput_tasks, "BM_EngineCoSpawnFloor");
    };
    throughput_batches(state, run_batch, [](bool) {});
    runners.stop();
}
BENCHMARK(BM_EngineCoSpawnFloor)->UseRealTime();

}  // namespace
