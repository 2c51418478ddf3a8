// One shard's leader in a process of its own, for BM_ShardThroughputProcesses
// (tests/bench/shard_bench.cpp):
//
//   cronoq_bench_shard_leader <conninfo> <schema> <shard> <tasks>
//
// Opens the PostgreSQL store's `schema` as the leader of `shard`, with one
// pool of 64 slots, and writes "ready". On a line from stdin it submits
// tasks 0..tasks-1 with one try_submit_many, awaits every result (each waits
// for the commit of its success) and writes "done <sum>". Any error is one
// line "error <what>" and exit status 1.
//
// GCC 12: every awaitable is named before it is awaited.
#include <cronoq/cronoq.hpp>
#include <cronoq/store/postgres_store.hpp>

#include "../bench_support.hpp"
#include "shard_leader.hpp"

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

namespace {

using namespace std::chrono_literals;
using cronoq_bench::shards::open_leader;
using cronoq_bench::shards::Sched;

constexpr std::chrono::seconds hang_limit = 300s;


int run(const std::string& conninfo, const std::string& schema, const std::string& shard, int tasks) {
    asio::io_context io{1};
    cronoq_bench::Runners runners(io, 1);
    cronoq::PostgresStoreConfig config;
    config.schema = schema;
    auto store = cronoq::PostgresStore::connect(conninfo, config);
    auto opened = asio::co_spawn(io, open_leader(store, shard), asio::use_future);
    cronoq_bench::wait_or_abort(opened, "open", hang_limit);
    std::optional<Sched> sched = opened.get();
    std::cout << "ready" << std::endl;
    std::string go;
    if (!std::getline(std::cin, go)) throw std::runtime_error("stdin closed before the start");
    auto done = asio::co_spawn(io, cronoq_bench::submit_many_and_sum(*sched, tasks), asio::use_future);
    const std::string wrong =
        cronoq_bench::check_sum(done, cronoq_bench::expected_sum(tasks), "BM_ShardThroughputProcesses", hang_limit);
    if (!wrong.empty()) throw std::runtime_error(wrong);
    std::cout << "done " << cronoq_bench::expected_sum(tasks) << std::endl;
    auto stop = [s = *sched]() mutable -> asio::awaitable<void> {
        auto op = s.shutdown(0s);
        co_await std::move(op);
    };
    auto stopped = asio::co_spawn(io, stop, asio::use_future);
    cronoq_bench::wait_or_abort(stopped, "shutdown", hang_limit);
    sched.reset();
    runners.stop();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s <conninfo> <schema> <shard> <tasks>\n", argv[0]);
        return 2;
    }
    try {
        return run(argv[1], argv[2], argv[3], std::stoi(argv[4]));
    } catch (const std::exception& e) {
        std::cout << "error " << e.what() << std::endl;
        return 1;
    }
}
