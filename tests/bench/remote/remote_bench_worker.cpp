// cronoq_bench_remote_worker <target>: the worker process of
// BM_RemoteThroughput (remote_bench.cpp): one RemoteWorker<int, int> of pool
// "bench" with 64 slots whose handler answers its payload. Ends on SIGTERM
// (stop(): the drain), or when the benchmark process is gone.
#include <cronoq/remote/remote_worker.hpp>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <target>\n", argv[0]);
        return 2;
    }
    cronoq::RemoteWorkerOptions options;
    options.target = argv[1];
    options.pool = "bench";
    options.slots = 64;
    options.token = "bench";
    options.name = "bench-worker";
    options.drain_timeout = std::chrono::seconds(1);
    asio::io_context io(1);
    cronoq::RemoteWorker<int, int> worker(
        options, [](cronoq::RemoteLease<int> lease) -> asio::awaitable<cronoq::Result<int>> { co_return *lease.payload(); });
    asio::signal_set signals(io, SIGTERM);
    signals.async_wait([&](std::error_code ec, int) {
        if (!ec) worker.stop();
    });
    int status = 0;
    asio::co_spawn(io, worker.run(), [&](std::exception_ptr e) {
        signals.cancel();
        try {
            if (e) std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            std::fprintf(stderr, "bench worker: %s\n", ex.what());
            status = 1;
        }
    });
    io.run();
    return status;
}
