#pragma once
// A shard's leader as both shard benchmarks open it (tests/bench/shard_bench.cpp,
// shard/shard_bench_leader.cpp): one pool "pool-<shard>" of 64 slots whose
// executor returns its input.
//
// GCC 12: every awaitable is named before it is awaited.
#include <cronoq/cronoq.hpp>

#include <asio/awaitable.hpp>
#include <asio/this_coro.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace cronoq_bench::shards {

using Sched = cronoq::Scheduler<int, int>;

inline constexpr std::size_t slots = 64;

inline asio::awaitable<cronoq::Result<int>> echo(cronoq::TaskContext, std::shared_ptr<const int> v) { co_return *v; }

/// Opens `store` as the leader of `shard`, on the calling coroutine's executor.
inline asio::awaitable<std::optional<Sched>> open_leader(std::shared_ptr<cronoq::Store> store, std::string shard) {
    auto ex = co_await asio::this_coro::executor;
    auto builder = Sched::builder();
    builder.shard(shard)
        .pool(cronoq::Pool<int, int>("pool-" + shard).workers(slots, slots, slots).executor_fn(echo))
        .store(std::move(store));
    auto opening = builder.open(ex);
    std::optional<Sched> sched(co_await std::move(opening));
    co_return sched;
}

}  // namespace cronoq_bench::shards
