#pragma once
// offload(): run blocking work off the event loop (docs/guide/executors.md).
#include <cronoq/cancellation_token.hpp>
#include <cronoq/detail/unique_function.hpp>
#include <cronoq/task_context.hpp>

#include <asio/awaitable.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>

namespace cronoq {

namespace detail {
/// Runs `job` on the blocking pool of the scheduler that owns `ctx`.
asio::awaitable<void> offload_erased(const TaskContext& ctx, UniqueFunction<void()> job);
}  // namespace detail

/// Runs `fn()` (or `fn(CancellationToken)`) on the scheduler's blocking
/// thread pool, never on the event loop. The attempt's cancellation is
/// visible to `fn` through the token.
///
/// Completion: what `fn` returned, on the awaiting coroutine's executor.
/// Throws what `fn` threw; if the blocking pool's threads cannot be
/// started (a process limit), `TaskError::retryable` without running
/// `fn`: the attempt fails and is retried under its policy.
///
/// Asio cancellation: honours `terminal` and `partial` (a coroutine's
/// default filter lets only `terminal` through), not `total`: the wait
/// ends at once with `operation_aborted`, but `fn` cannot be interrupted
/// and runs to its end, its result dropped, so the operation may have had
/// its effect.
template <class F>
auto offload(const TaskContext& ctx, F fn) {
    constexpr bool takes_token = std::is_invocable_v<F&, CancellationToken>;
    using R = typename std::conditional_t<takes_token, std::invoke_result<F&, CancellationToken>, std::invoke_result<F&>>::type;
    struct Slot {
        std::optional<std::conditional_t<std::is_void_v<R>, char, R>> value;
        std::exception_ptr error;
    };
    return [](TaskContext context, F work) -> asio::awaitable<R> {
        auto slot = std::make_shared<Slot>();
        CancellationToken token = context.cancellation_token();
        // Build the job and the awaitable in statements of their own: GCC 12
        // destroys by-value temporaries of a co_await full-expression twice.
        detail::UniqueFunction<void()> job([slot, token, fn = std::move(work)]() mutable {
            try {
                if constexpr (std::is_void_v<R>) {
                    if constexpr (takes_token) fn(token); else fn();
                    slot->value.emplace();
                } else {
                    if constexpr (takes_token) slot->value.emplace(fn(token)); else slot->value.emplace(fn());
                }
            } catch (...) {
                slot->error = std::current_exception();
            }
        });
        auto done = detail::offload_erased(context, std::move(job));
        co_await std::move(done);
        if (slot->error) std::rethrow_exception(slot->error);
        if constexpr (!std::is_void_v<R>) co_return std::move(*slot->value);
    }(ctx, std::move(fn));
}

}  // namespace cronoq
