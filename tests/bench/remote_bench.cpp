// BM_RemoteThroughput/<workers>: a scheduler with a remote pool and its
// WorkerServer in this process, `workers` worker processes
// (cronoq_bench_remote_worker, 64 slots each) over loopback. Each iteration
// batch: 10 000 trivial tasks (the worker answers the payload) submitted
// with one try_submit_many, then every result awaited, the last submitted
// first (remote_throughput says why). `tasks_per_s` is the
// figure; compare it with BM_GrpcEchoBaseline (the bare transport) and
// BM_DriverThroughput/1 (the same work, run in-process) of the same run.
//
// The workers connect before the untimed first batch: the benchmark waits
// until the pool's snapshot counts them all.
//
// `cpu_us_per_task` (with `server_cpu_us` and `worker_cpu_us`, per task):
// the CPU both processes spent in the timed part, every thread, over its
// tasks; compare it with BM_GrpcEchoBaseline's `cpu_us_per_round_trip`.
// On this shared 2-core machine it moves much less with the load than the
// rates do.
//
// GCC 12: no lambda or braced temporary inside a co_await full-expression.
#include <cronoq/codec.hpp>
#include <cronoq/cronoq.hpp>
#include <cronoq/remote/worker_server.hpp>

#include "bench_support.hpp"
#include "cpu_time.hpp"

#include <benchmark/benchmark.h>

#include <asio/co_spawn.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using namespace std::chrono_literals;
using Sched = cronoq::Scheduler<int, int>;

constexpr int remote_batch = 10000;
constexpr auto remote_hang_limit = 120s;  // a batch not done by then is taken for a hang

pid_t spawn_worker(const std::string& target) {
    std::string args[] = {CRONOQ_BENCH_REMOTE_WORKER, target};
    char* argv[] = {args[0].data(), args[1].data(), nullptr};
    pid_t pid = -1;
    if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv, environ) != 0) throw std::runtime_error("posix_spawn failed");
    return pid;
}

/// A scheduler with a remote pool, its WorkerServer and `workers` worker
/// processes, all connected once constructed (`error` says otherwise).
class RemoteSetup {
public:
    explicit RemoteSetup(std::size_t workers)
        : guard_(asio::make_work_guard(io_)),
          runner_([this] { io_.run(); }),
          sched_(Sched::builder().pool(cronoq::Pool<int, int>("bench").remote()).build(io_.get_executor())) {
        cronoq::WorkerServerConfig config;
        config.listen = "127.0.0.1:0";
        config.tokens = {"bench"};
        server_.emplace(cronoq::WorkerServer::start(sched_, config));
        for (std::size_t i = 0; i < workers; ++i) pids_.push_back(spawn_worker("127.0.0.1:" + std::to_string(server_->port())));
        if (!wait_for_workers(workers)) error = "the workers did not connect";
    }
    RemoteSetup(const RemoteSetup&) = delete;
    RemoteSetup& operator=(const RemoteSetup&) = delete;
    ~RemoteSetup() {
        kill_workers(SIGTERM);
        for (const pid_t pid : pids_) {
            int status = 0;
            ::waitpid(pid, &status, 0);
        }
        server_.reset();
        auto stop = [sched = sched_]() mutable -> asio::awaitable<void> {
            auto op = sched.shutdown(0s);
            co_await std::move(op);
        };
        auto stopped = asio::co_spawn(io_, stop, asio::use_future);
        stopped.wait();
        guard_.reset();
        runner_.join();
    }

    /// Runs `work` on the scheduler's io_context; empty if it returned the
    /// sum of 0..n-1, else what went wrong. A hang ends the process.
    std::string run(asio::awaitable<std::int64_t> work, int n, const char* what) {
        auto done = asio::co_spawn(io_, std::move(work), asio::use_future);
        if (done.wait_for(remote_hang_limit) != std::future_status::ready) {
            std::fprintf(stderr, "%s: a batch not done after %lld s, taken for a hang\n", what,
                         static_cast<long long>(std::chrono::seconds(remote_hang_limit).count()));
            kill_workers(SIGKILL);
            std::_Exit(EXIT_FAILURE);
        }
        try {
            const std::int64_t sum = done.get();
            return sum == cronoq_bench::expected_sum(n) ? std::string{} : "wrong sum " + std::to_string(sum);
        } catch (const std::exception& e) {
            return e.what();
        }
    }

    Sched& sched() { return sched_; }
    /// The CPU seconds the worker processes have used so far.
    double workers_cpu_seconds() const {
        double total = 0;
        for (const pid_t pid : pids_) total += cronoq_bench::cpu_seconds_of(pid);
        return total;
    }
    std::string error;

private:
    bool wait_for_workers(std::size_t n) {
        const auto until = std::chrono::steady_clock::now() + remote_hang_limit;
        while (std::chrono::steady_clock::now() < until) {
            const auto snapshot = sched_.snapshot();
            if (!snapshot.pools.empty() && snapshot.pools.front().remote_workers.value_or(0) >= n) return true;
            std::this_thread::sleep_for(5ms);  // setup only, before the timed part
        }
        return false;
    }
    void kill_workers(int signal) {
        for (const pid_t pid : pids_) ::kill(pid, signal);
    }

    asio::io_context io_{1};
    asio::executor_work_guard<asio::io_context::executor_type> guard_;
    std::thread runner_;
    Sched sched_;
    std::optional<cronoq::WorkerServer> server_;
    std::vector<pid_t> pids_;
};

/// BM_RemoteThroughput, its consumer awaiting the results last first
/// (`last_first`) or in submission order. Awaited in submission order, each
/// result that came back while the consumer slept woke the scheduler's
/// io_context thread (a post from gRPC's thread: about one wake-up per 3
/// tasks, docs/history/performance-notebook.md, "Remote workers: context
/// switches, not bytes"); the last task ends about last, so the others are
/// then ready and read without a wait. Every task's result is still awaited
/// and read.
void remote_throughput(benchmark::State& state, bool last_first) {
    RemoteSetup setup(static_cast<std::size_t>(state.range(0)));
    auto run_batch = [&] {
        return setup.run(cronoq_bench::submit_many_and_sum(setup.sched(), remote_batch, last_first), remote_batch,
                         "BM_RemoteThroughput");
    };
    std::string error = setup.error;
    if (error.empty()) error = run_batch();
    if (!error.empty()) state.SkipWithError(("warm-up: " + error).c_str());
    const auto t0 = std::chrono::steady_clock::now();
    const double server_cpu0 = cronoq_bench::cpu_seconds_self();
    const double worker_cpu0 = setup.workers_cpu_seconds();
    while (error.empty() && state.KeepRunningBatch(remote_batch)) {
        error = run_batch();
        if (!error.empty()) state.SkipWithError(error.c_str());
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - t0;
    const double tasks = static_cast<double>(state.iterations());
    const double server_cpu = (cronoq_bench::cpu_seconds_self() - server_cpu0) * 1e6 / tasks;
    const double worker_cpu = (setup.workers_cpu_seconds() - worker_cpu0) * 1e6 / tasks;
    state.counters["tasks_per_s"] = tasks / elapsed.count();
    state.counters["server_cpu_us"] = server_cpu;
    state.counters["worker_cpu_us"] = worker_cpu;
    state.counters["cpu_us_per_task"] = server_cpu + worker_cpu;
    state.SetItemsProcessed(state.iterations());
}

void BM_RemoteThroughput(benchmark::State& state) { remote_throughput(state, true); }
BENCHMARK(BM_RemoteThroughput)->Arg(1)->Arg(4)->UseRealTime()->Unit(benchmark::kMillisecond);

// BM_RemoteThroughputInOrder/1: the same, the results awaited in submission
// order, as before: each result that came back while the consumer slept
// wakes the io_context thread. The worker path's own figure, apart from
// the consumer.
void BM_RemoteThroughputInOrder(benchmark::State& state) { remote_throughput(state, false); }
BENCHMARK(BM_RemoteThroughputInOrder)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// BM_RemoteRoundTrip: one task at a time on one worker process, the latency
// of a lone task (lease out, complete back): batching must not make it wait.
void BM_RemoteRoundTrip(benchmark::State& state) {
    constexpr int round_trips = 200;
    RemoteSetup setup(1);
    auto run_batch = [&] {
        return setup.run(cronoq_bench::one_at_a_time(setup.sched(), round_trips), round_trips, "BM_RemoteRoundTrip");
    };
    std::string error = setup.error;
    if (error.empty()) error = run_batch();
    if (!error.empty()) state.SkipWithError(("warm-up: " + error).c_str());
    while (error.empty() && state.KeepRunningBatch(round_trips)) {
        error = run_batch();
        if (!error.empty()) state.SkipWithError(error.c_str());
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RemoteRoundTrip)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
