#pragma once
// What each soak task is told to do, drawn from a seeded generator, and the
// terminal status each plan must end in.
#include <cronoq/cronoq.hpp>

#include <asio/experimental/awaitable_operators.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string_view>

namespace soak {

enum class Outcome : std::uint8_t {
    Succeed,            // returns its index
    SucceedRacingCancel,  // returns its index, while another thread cancels it
    RetryThenSucceed,   // fails retryably on attempt 1, then returns its index
    AlwaysRetryable,    // fails retryably on every attempt: dead-lettered
    Permanent,          // fails permanently
    Throw,              // throws: a permanent "panic: ..." failure
    AwaitCancel,        // runs until another thread cancels it
};
inline constexpr std::size_t outcome_count = 7;

constexpr std::array<std::string_view, outcome_count> outcome_names{
    "succeed", "succeed_racing_cancel", "retry_then_succeed", "always_retryable", "permanent", "throw", "await_cancel"};

struct Plan {
    std::uint32_t index = 0;
    Outcome outcome = Outcome::Succeed;
};

/// Per mille of each outcome, in enum order; they add up to 1000.
constexpr std::array<unsigned, outcome_count> outcome_per_mille{690, 20, 100, 50, 50, 10, 80};

inline Plan draw_plan(std::uint32_t index, std::mt19937_64& rng) {
    unsigned roll = static_cast<unsigned>(rng() % 1000);
    std::size_t pick = 0;
    while (roll >= outcome_per_mille[pick]) roll -= outcome_per_mille[pick++];
    return Plan{index, static_cast<Outcome>(pick)};
}

/// Whether another thread cancels the task by id.
constexpr bool is_cancelled_by_id(Outcome o) { return o == Outcome::SucceedRacingCancel || o == Outcome::AwaitCancel; }

/// Whether `status` is an end this plan allows. A racing cancel may land
/// before the attempt starts, while it runs, or after it succeeded.
constexpr bool allows(Outcome o, cronoq::TaskStatus status) {
    using cronoq::TaskStatus;
    switch (o) {
    case Outcome::Succeed:
    case Outcome::RetryThenSucceed: return status == TaskStatus::Succeeded;
    case Outcome::SucceedRacingCancel: return status == TaskStatus::Succeeded || status == TaskStatus::Cancelled;
    case Outcome::AlwaysRetryable: return status == TaskStatus::DeadLettered;
    case Outcome::Permanent:
    case Outcome::Throw: return status == TaskStatus::Failed;
    case Outcome::AwaitCancel: return status == TaskStatus::Cancelled;
    }
    return false;
}

/// Retries the engine must count for one task of this plan.
constexpr std::uint64_t retries_of(Outcome o, std::uint32_t max_attempts) {
    if (o == Outcome::RetryThenSucceed) return 1;
    if (o == Outcome::AlwaysRetryable) return max_attempts - 1;
    return 0;
}

/// An attempt of a soak task. An AwaitCancel task that is never cancelled
/// gives up after `await_limit` and fails, which the final check reports.
inline asio::awaitable<cronoq::Result<int>> run_plan(cronoq::TaskContext ctx, std::shared_ptr<const Plan> plan) {
    using namespace asio::experimental::awaitable_operators;
    constexpr auto await_limit = std::chrono::seconds(10);
    const auto index = static_cast<int>(plan->index);
    switch (plan->outcome) {
    case Outcome::Succeed:
    case Outcome::SucceedRacingCancel: co_return index;
    case Outcome::RetryThenSucceed:
        if (ctx.attempt() == 1) co_return cronoq::TaskError::retryable("soak: first attempt fails");
        co_return index;
    case Outcome::AlwaysRetryable: co_return cronoq::TaskError::retryable("soak: always fails");
    case Outcome::Permanent: co_return cronoq::TaskError::permanent("soak: permanent");
    case Outcome::Throw: throw std::runtime_error("soak: thrown");
    case Outcome::AwaitCancel: {
        asio::steady_timer limit(co_await asio::this_coro::executor, await_limit);
        // Operands named first: the README's habit for GCC 12 coroutines.
        auto cancelled = ctx.cancelled();
        auto expired = limit.async_wait(asio::use_awaitable);
        auto first = co_await (std::move(cancelled) || std::move(expired));
        if (first.index() == 0) co_return cronoq::TaskError::cancelled();
        co_return cronoq::TaskError::permanent("soak: the cancellation never arrived");
    }
    }
    co_return cronoq::TaskError::permanent("soak: unknown plan");
}

}  // namespace soak
