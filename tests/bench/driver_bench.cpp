// The driver through the public API, and a plain Asio baseline.
//
//   BM_DriverRoundTrip             try_submit -> executor coroutine -> awaited
//                                  result(), one task at a time, one thread
//   BM_AsioCoSpawnBaseline         the same trivial coroutine co_spawned and
//                                  awaited, one at a time, one thread
//   BM_DriverRoundTripThreads/<n>  batches of tasks submitted at once and
//                                  awaited, io_context run by n threads
//
// The single-threaded pair runs batches of `batch` round trips inside one
// driving coroutine per batch (KeepRunningBatch), so the ratio of their times
// per item is the driver's overhead over a bare co_spawn.
//
// GCC 12: no lambda or braced temporary inside a co_await full-expression;
// every awaitable is named first.
#include <cronoq/cronoq.hpp>

#include <benchmark/benchmark.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Sched = cronoq::Scheduler<int, int>;

constexpr int batch = 1000;
// Past the engine's default retention_max (100 000 terminal tasks kept for
// status()): before that, every task grows the engine's tables. The timed
// loops start in the steady state a long-running service is in.
constexpr int warmup_batches = 101;

asio::awaitable<cronoq::Result<int>> echo(cronoq::TaskContext, std::shared_ptr<const int> x) { co_return *x; }

Sched make_scheduler(asio::io_context& io, std::size_t workers) {
    return Sched::builder()
        .pool(cronoq::Pool<int, int>("bench").workers(workers, workers, workers).executor_fn(echo))
        .build(io.get_executor());
}

// Sum of 0..n-1: what every batch must add up to.
constexpr std::int64_t expected_sum(int n) { return static_cast<std::int64_t>(n) * (n - 1) / 2; }

void shut_down(asio::io_context& io, Sched& sched) {
    auto stop = [sched]() mutable -> asio::awaitable<void> {
        auto op = sched.shutdown(0s);
        co_await std::move(op);
    };
    asio::co_spawn(io, stop, asio::detached);
    io.restart();
    io.run();
}

// ---- BM_DriverRoundTrip -------------------------------------------------------

// `n` round trips, one after the other: submit, the executor runs, the
// awaited result comes back.
asio::awaitable<std::int64_t> round_trips(Sched sched, int n) {
    std::int64_t sum = 0;
    for (int i = 0; i < n; ++i) {
        auto submitted = sched.try_submit(cronoq::Task<int>(i));
        if (!submitted) throw std::runtime_error("try_submit: " + submitted.message());
        auto wait = submitted.value().result();
        std::shared_ptr<const int> out = co_await std::move(wait);
        sum += *out;
    }
    co_return sum;
}

void BM_DriverRoundTrip(benchmark::State& state) {
    asio::io_context io;
    Sched sched = make_scheduler(io, 1);
    std::int64_t sum = 0;
    bool ok = true;
    auto run_batch = [&] {
        asio::co_spawn(io, round_trips(sched, batch), [&](std::exception_ptr e, std::int64_t s) {
            ok = ok && !e;
            sum = s;
        });
        io.restart();
        io.run();  // returns when the batch is done: an idle scheduler holds no work
        return ok && sum == expected_sum(batch);
    };
    for (int i = 0; i < warmup_batches && ok; ++i) ok = run_batch();
    if (!ok) state.SkipWithError("warm-up: a round trip failed");
    while (ok && state.KeepRunningBatch(batch)) {
        if (!run_batch()) {
            state.SkipWithError("a round trip failed or returned the wrong value");
            break;
        }
    }
    shut_down(io, sched);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DriverRoundTrip);

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
    asio::io_context io;
    std::int64_t sum = 0;
    bool ok = true;
    while (state.KeepRunningBatch(batch)) {
        asio::co_spawn(io, spawn_round_trips(batch), [&](std::exception_ptr e, std::int64_t s) {
            ok = ok && !e;
            sum = s;
        });
        io.restart();
        io.run();
        if (!ok || sum != expected_sum(batch)) {
            state.SkipWithError("a co_spawn failed or returned the wrong value");
            break;
        }
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AsioCoSpawnBaseline);

// ---- BM_DriverRoundTripThreads/<threads> --------------------------------------

// Submits `n` tasks at once, then awaits every result.
asio::awaitable<std::int64_t> submit_and_await_all(Sched sched, int n) {
    std::vector<cronoq::TaskHandle<int>> handles;
    handles.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        auto submitted = sched.try_submit(cronoq::Task<int>(i));
        if (!submitted) throw std::runtime_error("try_submit: " + submitted.message());
        handles.push_back(std::move(submitted).value());
    }
    std::int64_t sum = 0;
    for (const auto& h : handles) {
        auto wait = h.result();
        std::shared_ptr<const int> out = co_await std::move(wait);
        sum += *out;
    }
    co_return sum;
}

// The io_context is run by `threads` threads; the benchmark thread only
// starts each batch and waits for its sum (real time is measured). The pool
// has 64 slots, so attempts of a batch run concurrently.
void BM_DriverRoundTripThreads(benchmark::State& state) {
    const auto threads = static_cast<int>(state.range(0));
    asio::io_context io(threads);
    auto guard = asio::make_work_guard(io);
    std::vector<std::thread> runners;
    for (int i = 0; i < threads; ++i) runners.emplace_back([&io] { io.run(); });
    Sched sched = make_scheduler(io, 64);
    auto run_batch = [&] {
        auto done = asio::co_spawn(io, submit_and_await_all(sched, batch), asio::use_future);
        try {
            return done.get() == expected_sum(batch);
        } catch (const std::exception&) {
            return false;
        }
    };

    bool ok = true;
    for (int i = 0; i < warmup_batches && ok; ++i) ok = run_batch();
    if (!ok) state.SkipWithError("warm-up: a task failed");
    while (ok && state.KeepRunningBatch(batch)) {
        if (!run_batch()) {
            state.SkipWithError("a task failed or returned the wrong value");
            break;
        }
    }
    auto stop = asio::co_spawn(
        io, [sched]() mutable -> asio::awaitable<void> {
            auto op = sched.shutdown(0s);
            co_await std::move(op);
        },
        asio::use_future);
    stop.get();
    guard.reset();
    for (auto& t : runners) t.join();
    state.SetItemsProcessed(state.iterations());
    state.counters["threads"] = threads;
}
BENCHMARK(BM_DriverRoundTripThreads)->Arg(1)->Arg(4)->UseRealTime();

}  // namespace
