// BM_RemoteThroughput: a scheduler with a remote pool and its WorkerServer
// in this process, one worker process (cronoq_bench_remote_worker, 64
// slots) over loopback. Each iteration batch: 10 000 trivial tasks (the
// worker answers the payload) submitted with one try_submit_many, then every
// result awaited. `tasks_per_s` is the figure; compare it with
// BM_DriverThroughput/1 of the same run (the same work, run in-process).
//
// The worker connects during the untimed first batch, which waits for it:
// the pool has no capacity before.
//
// GCC 12: no lambda or braced temporary inside a co_await full-expression.
#include <cronoq/codec.hpp>
#include <cronoq/cronoq.hpp>
#include <cronoq/remote/worker_server.hpp>

#include "bench_support.hpp"

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

void BM_RemoteThroughput(benchmark::State& state) {
    asio::io_context io(1);
    auto guard = asio::make_work_guard(io);
    std::thread runner([&io] { io.run(); });
    auto sched = Sched::builder().pool(cronoq::Pool<int, int>("bench").remote()).build(io.get_executor());
    cronoq::WorkerServerConfig config;
    config.listen = "127.0.0.1:0";
    config.tokens = {"bench"};
    std::optional<cronoq::WorkerServer> server(cronoq::WorkerServer::start(sched, config));
    const pid_t worker = spawn_worker("127.0.0.1:" + std::to_string(server->port()));

    auto run_batch = [&]() -> std::string {
        auto done = asio::co_spawn(io, cronoq_bench::submit_many_and_sum(sched, remote_batch), asio::use_future);
        if (done.wait_for(remote_hang_limit) != std::future_status::ready) {
            std::fprintf(stderr, "BM_RemoteThroughput: a batch not done after %lld s, taken for a hang\n",
                         static_cast<long long>(std::chrono::seconds(remote_hang_limit).count()));
            ::kill(worker, SIGKILL);
            std::_Exit(EXIT_FAILURE);
        }
        try {
            const std::int64_t sum = done.get();
            const std::int64_t expected = cronoq_bench::expected_sum(remote_batch);
            return sum == expected ? std::string{} : "wrong sum " + std::to_string(sum);
        } catch (const std::exception& e) {
            return e.what();
        }
    };
    std::string error = run_batch();  // waits for the worker to connect
    if (!error.empty()) state.SkipWithError(("warm-up: " + error).c_str());
    const auto t0 = std::chrono::steady_clock::now();
    while (error.empty() && state.KeepRunningBatch(remote_batch)) {
        error = run_batch();
        if (!error.empty()) state.SkipWithError(error.c_str());
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - t0;
    state.counters["tasks_per_s"] = static_cast<double>(state.iterations()) / elapsed.count();

    ::kill(worker, SIGTERM);
    int status = 0;
    ::waitpid(worker, &status, 0);
    server.reset();
    auto stop = [sched]() mutable -> asio::awaitable<void> {
        auto op = sched.shutdown(0s);
        co_await std::move(op);
    };
    auto stopped = asio::co_spawn(io, stop, asio::use_future);
    stopped.wait();
    guard.reset();
    runner.join();
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RemoteThroughput)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
