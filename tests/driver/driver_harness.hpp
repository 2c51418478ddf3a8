#pragma once
// Helpers for driver tests: run a coroutine on an io_context to its end.
#include <cronoq/cronoq.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>

#include <exception>
#include <optional>

namespace cronoq::test {

/// Runs `coro` on `io` until the io_context has no work left, and rethrows
/// what the coroutine threw.
template <class T>
T run(asio::io_context& io, asio::awaitable<T> coro) {
    std::exception_ptr error;
    std::optional<std::conditional_t<std::is_void_v<T>, char, T>> out;
    asio::co_spawn(io, std::move(coro), [&](std::exception_ptr e, auto... v) {
        error = e;
        if constexpr (sizeof...(v) > 0) out.emplace(std::move(v)...);
        else out.emplace();
    });
    io.restart();
    io.run();
    if (error) std::rethrow_exception(error);
    if constexpr (!std::is_void_v<T>) return std::move(*out);
}

}  // namespace cronoq::test
