#pragma once
// What the examples share: each checks the claims it prints, and runs one
// demo coroutine on an io_context with a watchdog (a demo that hangs proves
// nothing). `run_example` returns main()'s exit code: 1 if a claim failed,
// the demo threw, or the watchdog fired.
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <system_error>

namespace example {

inline int failed_checks = 0;

inline void check(bool ok, const char* claim) {
    if (ok) return;
    ++failed_checks;
    std::printf("  CHECK FAILED: %s\n", claim);
}

inline asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

/// Runs `demo(io)` to its end. `io.run()` returns then: a scheduler that
/// has shut down keeps no operation pending.
template <class Demo>
int run_example(const char* name, Demo demo, std::chrono::seconds limit = std::chrono::seconds(30)) {
    asio::io_context io;
    asio::steady_timer watchdog(io, limit);
    watchdog.async_wait([&](std::error_code ec) {
        if (ec) return;
        std::printf("%s: still running after %lld s; giving up\n", name, static_cast<long long>(limit.count()));
        ++failed_checks;
        io.stop();
    });
    asio::co_spawn(io, demo(io), [&](std::exception_ptr e) {
        watchdog.cancel();
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            std::printf("%s: unexpected exception: %s\n", name, ex.what());
            ++failed_checks;
        }
    });
    io.run();
    if (failed_checks > 0) {
        std::printf("%s: %d check(s) failed\n", name, failed_checks);
        return 1;
    }
    std::printf("%s: all checks passed\n", name);
    return 0;
}

}  // namespace example
