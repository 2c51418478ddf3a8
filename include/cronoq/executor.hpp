#pragma once
// The Executor concept (docs/guide/executors.md).
#include <cronoq/ids.hpp>
#include <cronoq/result.hpp>
#include <cronoq/task_context.hpp>

#include <asio/awaitable.hpp>

#include <concepts>
#include <memory>

namespace cronoq {

/// Runs one attempt of a task in-process. The returned coroutine runs on a
/// strand of its own over the pool's executor. Returning (or throwing) a
/// `TaskError` reports it; any other exception fails the attempt permanently
/// as "panic: <what()>".
template <class E, class P, class O>
concept Executor = requires(E& e, TaskContext ctx, std::shared_ptr<const P> payload) {
    { e.execute(std::move(ctx), std::move(payload)) } -> std::same_as<asio::awaitable<Result<O>>>;
};

/// An executor may also have `void abort(LeaseId)`: when the engine abandons
/// an attempt, the driver calls it first (on the attempt's strand), before
/// the context reports cancellation and before Asio cancellation reaches the
/// coroutine, so per-lease resources are released synchronously.
template <class E>
concept AbortableExecutor = requires(E& e, LeaseId lease) { e.abort(lease); };

}  // namespace cronoq
