#pragma once
// Clock: where the driver gets engine time and how it waits for it.
#include <cronoq/core/time.hpp>

#include <asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <memory>

namespace cronoq {

/// Maps real (or virtual) time to engine time. The driver reads `now()` for
/// every engine call and arms one `Timer` at the engine's next wakeup.
/// Implementations must be thread-safe.
class Clock {
public:
    /// A one-shot wakeup. `arm` replaces any earlier arming; `disarm` cancels
    /// it. A replaced or cancelled callback may still run once, late: callers
    /// tolerate stale calls. While armed, a timer keeps outstanding work on
    /// its executor, like an `asio::steady_timer` wait.
    class Timer {
    public:
        virtual ~Timer() = default;
        virtual void arm(core::Time at, std::function<void()> on_due) = 0;
        virtual void disarm() = 0;
    };

    virtual ~Clock() = default;
    /// Monotonic engine time.
    virtual core::Time now() const = 0;
    /// Wall-clock time, for deadlines and fixed starts given as time points.
    virtual std::chrono::system_clock::time_point system_now() const = 0;
    /// A timer whose callback runs on `executor`.
    virtual std::unique_ptr<Timer> make_timer(asio::any_io_executor executor) = 0;

    /// The real clock: `std::chrono::steady_clock` and `asio::steady_timer`.
    static std::shared_ptr<Clock> steady();
};

}  // namespace cronoq
