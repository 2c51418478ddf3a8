#pragma once
// The executor an attempt's completion is bound to: it runs what it is
// given at once (docs/design.md, "Starting attempts").
#include <asio/execution/blocking.hpp>
#include <asio/execution/context.hpp>
#include <asio/execution/executor.hpp>
#include <asio/execution_context.hpp>

#include <utility>

namespace cronoq::detail {

/// Runs every function it is given at once, in the caller's frame.
///
/// `co_spawn` hands a coroutine's result to its completion handler through
/// the handler's executor: dispatched there when the coroutine suspended
/// at least once (on the lane, which runs it at once), posted when it
/// returned without suspending, so as not to run the handler inside
/// `co_spawn`'s caller. The driver is that caller (a start, after the
/// step, outside every lock) and wants that end served at once: one trip
/// round the io_context less per task, and a task awaited right after it
/// was submitted found finished. Bound to the attempt's completion only,
/// so that it is the one handler run this way; the driver knows where that
/// happens (inside a start, scheduler_attempts.cpp) and resumes no waiter
/// there. `require(blocking.never)` is granted without being kept: that
/// is the point.
class ImmediateExecutor {
public:
    explicit ImmediateExecutor(asio::execution_context& context) noexcept : context_(&context) {}

    template <class F>
    void execute(F&& f) const {
        std::forward<F>(f)();
    }
    ImmediateExecutor require(asio::execution::blocking_t::never_t) const noexcept { return *this; }
    asio::execution_context& query(asio::execution::context_t) const noexcept { return *context_; }
    static constexpr asio::execution::blocking_t query(asio::execution::blocking_t) noexcept {
        return asio::execution::blocking.always;
    }
    friend bool operator==(const ImmediateExecutor& a, const ImmediateExecutor& b) noexcept {
        return a.context_ == b.context_;
    }
    friend bool operator!=(const ImmediateExecutor& a, const ImmediateExecutor& b) noexcept { return !(a == b); }

private:
    asio::execution_context* context_;
};

static_assert(asio::execution::is_executor<ImmediateExecutor>::value);

}  // namespace cronoq::detail
