#pragma once
// with_cancellation: run an executor's work until it ends or the attempt is
// cancelled, whichever comes first (docs/guide/executors.md, "Cancellation").
#include <cronoq/result.hpp>
#include <cronoq/task_context.hpp>
#include <cronoq/task_error.hpp>

#include <asio/awaitable.hpp>
#include <asio/co_spawn.hpp>
#include <asio/experimental/deferred.hpp>
#include <asio/experimental/parallel_group.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

namespace cronoq {

namespace detail {

// What a work's coroutine leaves in the race: its value, or a placeholder
// for work with none, so that one race serves both.
template <class T>
using held_t = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

// co_spawn needs a default-constructible result; std::optional gives one for
// any T, so the work's own type needs nothing.
template <class T>
asio::awaitable<std::optional<held_t<T>>> hold_result(asio::awaitable<T> work) {
    if constexpr (std::is_void_v<T>) {
        co_await std::move(work);
        co_return std::monostate{};
    } else {
        co_return co_await std::move(work);
    }
}

}  // namespace detail

/// Runs `work` on the awaiting coroutine's executor, racing it against the
/// attempt's cancellation (`ctx.cancelled()`):
///
/// - `work` ends first: its value (`Result<T>` holding it), or its exception
///   rethrown, at once. This is what Asio's `work || ctx.cancelled()` does
///   not do: its `||` waits for the first branch to *succeed*, so a `work`
///   that throws at once stays hidden until the attempt is cancelled or times
///   out.
/// - The attempt is cancelled first (task cancelled, timeout, lease expiry,
///   shutdown): `work` gets Asio's terminal cancellation, and once it has
///   ended, `TaskError::cancelled()` is returned, whatever `work` threw.
///
/// Completion: either way only after `work` has ended; a `work` that ignores
/// Asio cancellation is waited for (the scheduler's `abandon_after` still
/// bounds the attempt). Resumes on the awaiting coroutine's executor.
///
/// Asio cancellation of the awaiting coroutine (`terminal`, `partial`,
/// `total`) reaches `work` and the wait on `ctx` alike; the call then throws
/// what ended first (typically `std::system_error` with
/// `asio::error::operation_aborted`).
///
/// Typical use in an executor:
///
///     auto fetched = co_await cronoq::with_cancellation(ctx, fetch(url));
///     if (!fetched) co_return fetched.error();   // the attempt was cancelled
///     co_return parse(fetched.value());
///
/// Work with no value (`asio::awaitable<void>`) gives a `Result<void>`.
template <class T>
asio::awaitable<Result<T>> with_cancellation(TaskContext ctx, asio::awaitable<T> work) {
    auto executor = co_await asio::this_coro::executor;
    // Named before the co_await: GCC 12 destroys temporaries of a
    // co_await's full-expression twice.
    auto group = asio::experimental::make_parallel_group(
        asio::co_spawn(executor, detail::hold_result(std::move(work)), asio::experimental::deferred),
        asio::co_spawn(executor, ctx.cancelled(), asio::experimental::deferred));
    auto [order, work_error, value, cancel_error] =
        co_await std::move(group).async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
    if (order[0] == 0) {
        if (work_error) std::rethrow_exception(work_error);
        if constexpr (std::is_void_v<T>)
            co_return Result<void>{};
        else
            co_return Result<T>(std::move(*value));
    }
    if (cancel_error) std::rethrow_exception(cancel_error);  // the awaiting coroutine was cancelled
    co_return TaskError::cancelled();
}

}  // namespace cronoq
