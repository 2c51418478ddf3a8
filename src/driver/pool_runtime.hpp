#pragma once
// A pool as the driver runs it: its definition, where its attempts run, and
// the submitters waiting for room in it (docs/design.md).
#include <cronoq/detail/erased.hpp>
#include <cronoq/detail/wait_list.hpp>
#include <cronoq/ids.hpp>

#include <asio/any_io_executor.hpp>

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace cronoq::detail {

struct PoolRuntime {
    PoolDefinition def;
    asio::any_io_executor executor;  // where attempts run
    // Shared with every task's info, so that a TaskContext outliving the
    // scheduler still knows its pool's name.
    std::shared_ptr<const std::string> name;
    // Where attempts run, chosen by lease: Asio requires cancellation to be
    // emitted where the coroutine runs. Over an io_context that may be run
    // by several threads, a fixed set of strands (costing nothing per
    // attempt; each small enough for the type-erased executor to hold
    // without allocating). Over an io_context made for one thread
    // (concurrency hint 1), the pool's executor alone: one thread already
    // serializes an attempt and its abort. See docs/design.md.
    std::vector<asio::any_io_executor> lanes;
    const asio::any_io_executor& lane(LeaseId lease) const { return lanes[lease.value % lanes.size()]; }
    // Submitters waiting for room under OverflowPolicy::Wait, in order; the
    // head is woken when the engine announces space (guarded by the
    // engine's mutex).
    std::deque<std::shared_ptr<WaitList>> waiting_submits;
    bool scaler_failing = false;  // the user scaler's last call threw (scaler_calls.cpp)
};

/// Every pool, in the order declared; fixed once the scheduler is built
/// (but each pool's waiting submitters).
using Pools = std::vector<PoolRuntime>;

}  // namespace cronoq::detail
