#pragma once
// Helpers for driver tests: run a coroutine on an io_context to its end.
#include <cronoq/cronoq.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <stdexcept>
#include <optional>

namespace cronoq::test {

/// Runs `io` until `coro` has completed (other work may remain), and
/// returns its value or rethrows what it threw.
template <class T>
T run(asio::io_context& io, asio::awaitable<T> coro) {
    std::exception_ptr error;
    bool done = false;
    std::optional<std::conditional_t<std::is_void_v<T>, char, T>> out;
    asio::co_spawn(io, std::move(coro), [&](std::exception_ptr e, auto... v) {
        error = e;
        done = true;
        if constexpr (sizeof...(v) > 0) out.emplace(std::move(v)...);
        else out.emplace();
    });
    io.restart();
    while (!done && io.run_one()) {
    }
    if (!done) throw std::logic_error("the io_context ran out of work before the coroutine completed");
    if (error) std::rethrow_exception(error);
    if constexpr (!std::is_void_v<T>) return std::move(*out);
}

/// An io_context on virtual time: `advance(d)` moves a ManualClock and runs
/// what came due, without sleeping.
struct VirtualTime {
    asio::io_context io;
    std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();

    void advance(std::chrono::nanoseconds d) {
        clock->advance(d);
        io.restart();
        io.poll();
    }
};

}  // namespace cronoq::test
