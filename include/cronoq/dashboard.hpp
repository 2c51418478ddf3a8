#pragma once
// Dashboard: a scheduler's web dashboard and JSON API (docs/guide/dashboard.md),
// component cronoq::dashboard (CMake option CRONOQ_WITH_DASHBOARD).
#include <cronoq/detail/access.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/scheduler.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace cronoq {

/// Where and how the dashboard serves.
struct DashboardConfig {
    /// `host:port` (`[v6]:port` for IPv6); port 0 picks a free port
    /// (`Dashboard::port()`). The host is an IP address or `localhost`.
    std::string listen = "127.0.0.1:7071";
    /// Empty: no token, and `listen` must be a loopback address. Otherwise
    /// every request needs it: `Authorization: Bearer <token>`, or the
    /// HttpOnly cookie a form `POST /login` (field `token`) sets; hence
    /// printable ASCII without spaces, quotes, commas, semicolons or
    /// backslashes.
    std::string token;
    /// No actions: the page shows no action controls and the action routes
    /// answer 403.
    bool read_only = false;
};

/// Serves a scheduler's page (`/`), its JSON API (`/api/...`) and its
/// Prometheus text (`/metrics`) on the scheduler's `io_context`
/// (docs/guide/dashboard.md lists the routes). Actions (retry, cancel,
/// pause, resume) refuse cross-site requests (an `Origin` other than the
/// dashboard's own, or `Sec-Fetch-Site` other than `same-origin`/`none`);
/// without a token, a request must also name a loopback host (`Host`), so
/// that another site cannot reach it through DNS rebinding.
///
/// Threads: handlers run on the scheduler's executor; calls that read a
/// store (a page of tasks, a task's detail) read it there, in a short
/// transaction, as `Scheduler::find` does.
///
/// Lifetime: the dashboard holds the scheduler weakly; once the scheduler
/// is gone the API answers 503. The listening socket keeps the
/// `io_context`'s `run()` from returning until `stop()`.
class Dashboard {
public:
    /// Binds `config.listen` and starts serving. Throws `ConfigError` for a
    /// malformed `listen`, a non-loopback one without a token, a token a
    /// cookie cannot carry, or a
    /// scheduler not built on an `asio::io_context`; `std::system_error`
    /// when the address cannot be bound.
    template <class P, class O>
    static Dashboard start(Scheduler<P, O>& scheduler, DashboardConfig config) {
        return start_for_core(detail::Access::core(scheduler), std::move(config));
    }
    /// The same over a scheduler's untyped core (what `start` forwards to).
    static Dashboard start_for_core(std::shared_ptr<detail::SchedulerCore> core, DashboardConfig config);

    Dashboard(Dashboard&&) noexcept;
    Dashboard& operator=(Dashboard&&) noexcept;
    /// Stops (see `stop`).
    ~Dashboard();

    /// The bound port (the one picked when `listen` asked for port 0).
    std::uint16_t port() const;
    /// Closes the listening socket and every connection; idempotent. On a
    /// thread that runs the `io_context`, or once it has stopped, at once;
    /// from another thread it waits until the io_context has run the close,
    /// so that thread must not be the only one that would run it.
    void stop();

private:
    struct Impl;
    explicit Dashboard(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace cronoq
