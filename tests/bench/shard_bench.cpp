// Shards on one PostgreSQL store (docs/guide/replicas.md, "Shards"): does a
// second shard, with a leader of its own, add throughput? Built when the
// PostgreSQL component is (tests/bench/CMakeLists.txt, CRONOQ_BENCH_POSTGRES).
//
//   BM_ShardThroughput/<n>   per iteration: a fresh schema on a throw-away
//                            local server (postgres_server.hpp: fsync and
//                            synchronous_commit on, a Unix socket); n
//                            schedulers, each leading a shard of its own
//                            with one pool of 64 slots, on a store object
//                            (a connection) and an io_context thread of
//                            its own; timed: each submits 50 000 trivial
//                            tasks with one try_submit_many and awaits every
//                            result (each waits for the commit of its
//                            success), all shards at once, until the last
//                            is done. items_per_second is the total over
//                            every shard: /2 against /1 is the figure the
//                            issue asks for (the two leaders here share one
//                            process, where a deployment has one per host).
//
// GCC 12: every awaitable is named before it is awaited.
#include <cronoq/cronoq.hpp>
#include <cronoq/store/postgres_store.hpp>

#include "bench_support.hpp"
#include "postgres_server.hpp"

#include <benchmark/benchmark.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Sched = cronoq::Scheduler<int, int>;

constexpr int tasks_per_shard = 50000;
constexpr std::size_t slots = 64;
constexpr std::chrono::seconds hang_limit = 300s;

asio::awaitable<cronoq::Result<int>> echo(cronoq::TaskContext, std::shared_ptr<const int> v) { co_return *v; }

asio::awaitable<std::optional<Sched>> open_shard(std::shared_ptr<cronoq::Store> store, std::string shard) {
    auto ex = co_await asio::this_coro::executor;
    auto builder = Sched::builder();
    builder.shard(shard)
        .pool(cronoq::Pool<int, int>("pool-" + shard).workers(slots, slots, slots).executor_fn(echo))
        .store(std::move(store));
    auto opening = builder.open(ex);
    std::optional<Sched> sched(co_await std::move(opening));
    co_return sched;
}

/// One shard's leader: its store object, its io_context and thread.
struct ShardRun {
    asio::io_context io{1};
    std::optional<cronoq_bench::Runners> runners;
    std::shared_ptr<cronoq::Store> store;
    std::optional<Sched> sched;
};

void BM_ShardThroughput(benchmark::State& state) {
    const auto shards = static_cast<int>(state.range(0));
    std::optional<cronoq::bench::PostgresServer> server;
    try {
        server.emplace();
    } catch (const std::exception& e) {
        state.SkipWithError((std::string("PostgreSQL server: ") + e.what()).c_str());
        return;
    }
    int round = 0;
    std::int64_t done_tasks = 0;
    for (auto _ : state) {
        cronoq::PostgresStoreConfig config;
        config.schema = "shards_" + std::to_string(shards) + "_" + std::to_string(round++);
        std::vector<std::unique_ptr<ShardRun>> runs;
        std::string error;
        for (int k = 0; k < shards; ++k) {
            auto run = std::make_unique<ShardRun>();
            run->runners.emplace(run->io, 1);
            run->store = cronoq::PostgresStore::connect(server->conninfo(), config);
            // Appended, not "s" + to_string: GCC 12's -Wrestrict false positive at -O2.
            std::string shard = "s";
            shard += std::to_string(k);
            auto opened = asio::co_spawn(run->io, open_shard(run->store, std::move(shard)), asio::use_future);
            cronoq_bench::wait_or_abort(opened, "open", hang_limit);
            try {
                run->sched = opened.get();
            } catch (const std::exception& e) {
                error = std::string("open: ") + e.what();
            }
            runs.push_back(std::move(run));
        }
        if (!error.empty()) {
            state.SkipWithError(error.c_str());
            break;
        }
        const auto start = std::chrono::steady_clock::now();
        std::vector<std::future<std::int64_t>> done;
        for (auto& run : runs)
            done.push_back(asio::co_spawn(run->io, cronoq_bench::submit_many_and_sum(*run->sched, tasks_per_shard),
                                          asio::use_future));
        for (auto& d : done) {
            const std::string wrong =
                cronoq_bench::check_sum(d, cronoq_bench::expected_sum(tasks_per_shard), "BM_ShardThroughput", hang_limit);
            if (!wrong.empty() && error.empty()) error = wrong;
        }
        state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        for (auto& run : runs) {
            auto stop = [sched = *run->sched]() mutable -> asio::awaitable<void> {
                auto op = sched.shutdown(0s);
                co_await std::move(op);
            };
            auto stopped = asio::co_spawn(run->io, stop, asio::use_future);
            cronoq_bench::wait_or_abort(stopped, "shutdown", hang_limit);
            run->sched.reset();
            run->runners->stop();
            run->store.reset();
        }
        if (!error.empty()) {
            state.SkipWithError(error.c_str());
            break;
        }
        done_tasks += static_cast<std::int64_t>(shards) * tasks_per_shard;
    }
    state.SetItemsProcessed(done_tasks);
    state.counters["shards"] = shards;
}
BENCHMARK(BM_ShardThroughput)->Arg(1)->Arg(2)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
