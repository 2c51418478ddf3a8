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
//   BM_ShardThroughputProcesses/<n>
//                            the same, each leader a process of its own
//                            (shard/shard_bench_leader.cpp), as deployed:
//                            timed from the moment every leader leads and
//                            is told to start until the last has every
//                            result.
//
// GCC 12: every awaitable is named before it is awaited.
#include <cronoq/cronoq.hpp>
#include <cronoq/store/postgres_store.hpp>

#include "bench_support.hpp"
#include "postgres_server.hpp"
#include "shard/shard_leader.hpp"

#include <benchmark/benchmark.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace {

using namespace std::chrono_literals;
using cronoq_bench::shards::open_leader;
using cronoq_bench::shards::Sched;

constexpr int tasks_per_shard = 50000;
constexpr std::chrono::seconds hang_limit = 300s;


/// The name of the `k`th shard: "s0", "s1"...
std::string shard_name(int k) {
    // Appended, not "s" + to_string: GCC 12's -Wrestrict false positive at -O2.
    std::string shard = "s";
    shard += std::to_string(k);
    return shard;
}

/// What both benchmarks share: a throw-away server, a fresh schema per
/// iteration named `prefix`<shards>_<round>, and the figures.
/// `iteration(conninfo, schema, shards)` opens that many leaders, runs
/// them and gives the time it measured, in seconds, or an error.
template <class Iteration>
void run_iterations(benchmark::State& state, const std::string& prefix, Iteration&& iteration) {
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
        const std::string schema = prefix + std::to_string(shards) + "_" + std::to_string(round++);
        std::string error;
        const double seconds = iteration(server->conninfo(), schema, shards, error);
        if (!error.empty()) {
            state.SkipWithError(error.c_str());
            break;
        }
        state.SetIterationTime(seconds);
        done_tasks += static_cast<std::int64_t>(shards) * tasks_per_shard;
    }
    state.SetItemsProcessed(done_tasks);
    state.counters["shards"] = shards;
}

/// One shard's leader: its store object, its io_context and thread.
struct ShardRun {
    asio::io_context io{1};
    std::optional<cronoq_bench::Runners> runners;
    std::shared_ptr<cronoq::Store> store;
    std::optional<Sched> sched;
};

/// Times the shards' leaders in this process, each on an io_context thread of its own.
double run_in_process(const std::string& conninfo, const std::string& schema, int shards, std::string& error) {
    cronoq::PostgresStoreConfig config;
    config.schema = schema;
    std::vector<std::unique_ptr<ShardRun>> runs;
    for (int k = 0; k < shards; ++k) {
        auto run = std::make_unique<ShardRun>();
        run->runners.emplace(run->io, 1);
        run->store = cronoq::PostgresStore::connect(conninfo, config);
        auto opened = asio::co_spawn(run->io, open_leader(run->store, shard_name(k)), asio::use_future);
        cronoq_bench::wait_or_abort(opened, "open", hang_limit);
        try {
            run->sched = opened.get();
        } catch (const std::exception& e) {
            error = std::string("open: ") + e.what();
        }
        runs.push_back(std::move(run));
    }
    if (!error.empty()) return 0;
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
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
    return seconds;
}

void BM_ShardThroughput(benchmark::State& state) { run_iterations(state, "shards_", run_in_process); }
BENCHMARK(BM_ShardThroughput)->Arg(1)->Arg(2)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

/// A shard's leader process (cronoq_bench_shard_leader), spoken to by lines
/// on its stdin and stdout.
class LeaderProcess {
public:
    LeaderProcess(const std::string& conninfo, const std::string& schema, const std::string& shard) {
        int to_child[2];
        int from_child[2];
        if (::pipe(to_child) != 0 || ::pipe(from_child) != 0) throw std::runtime_error("pipe failed");
        posix_spawn_file_actions_t actions;
        ::posix_spawn_file_actions_init(&actions);
        ::posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
        ::posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
        for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]})
            ::posix_spawn_file_actions_addclose(&actions, fd);
        std::string args[] = {CRONOQ_BENCH_SHARD_LEADER, conninfo, schema, shard, std::to_string(tasks_per_shard)};
        char* argv[] = {args[0].data(), args[1].data(), args[2].data(), args[3].data(), args[4].data(), nullptr};
        const int spawned = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv, environ);
        ::posix_spawn_file_actions_destroy(&actions);
        ::close(to_child[0]);
        ::close(from_child[1]);
        in_ = ::fdopen(to_child[1], "w");
        out_ = ::fdopen(from_child[0], "r");
        if (spawned != 0 || !in_ || !out_) throw std::runtime_error("posix_spawn failed");
    }
    LeaderProcess(const LeaderProcess&) = delete;
    LeaderProcess& operator=(const LeaderProcess&) = delete;
    ~LeaderProcess() {
        if (in_) std::fclose(in_);
        if (out_) std::fclose(out_);
        if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
    }

    /// The leader's next line ("ready", "done <sum>", "error <what>").
    std::string read_line() {
        char buffer[512];
        if (!std::fgets(buffer, sizeof buffer, out_)) return "error the leader process ended";
        std::string line(buffer);
        if (!line.empty() && line.back() == '\n') line.pop_back();
        return line;
    }
    void start() {
        std::fputs("go\n", in_);
        std::fflush(in_);
    }

private:
    pid_t pid_ = -1;
    std::FILE* in_ = nullptr;
    std::FILE* out_ = nullptr;
};

/// Times the shards' leaders as processes of their own, as deployed.
double run_as_processes(const std::string& conninfo, const std::string& schema, int shards, std::string& error) {
    cronoq::PostgresStoreConfig config;
    config.schema = schema;
    // The schema made here first: the leaders open a store that exists.
    cronoq::PostgresStore::connect(conninfo, config).reset();
    std::vector<std::unique_ptr<LeaderProcess>> leaders;
    for (int k = 0; k < shards && error.empty(); ++k) {
        leaders.push_back(std::make_unique<LeaderProcess>(conninfo, config.schema, shard_name(k)));
        // One at a time, as BM_ShardThroughput opens them.
        if (auto line = leaders.back()->read_line(); line != "ready") error = "open: " + line;
    }
    if (!error.empty()) return 0;
    const std::string done_line = "done " + std::to_string(cronoq_bench::expected_sum(tasks_per_shard));
    const auto start = std::chrono::steady_clock::now();
    for (auto& leader : leaders) leader->start();
    for (auto& leader : leaders)
        if (auto line = leader->read_line(); line != done_line && error.empty()) error = line;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    leaders.clear();  // each shuts down and exits; waited for
    return seconds;
}

void BM_ShardThroughputProcesses(benchmark::State& state) {
    run_iterations(state, "shard_processes_", run_as_processes);
}
BENCHMARK(BM_ShardThroughputProcesses)->Arg(1)->Arg(2)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
