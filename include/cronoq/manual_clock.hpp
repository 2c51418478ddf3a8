#pragma once
// ManualClock: virtual time for driver tests (no sleeping).
#include <cronoq/clock.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

namespace cronoq {

/// A clock that moves only when told. `advance(d)` moves engine and wall
/// time forward together and posts every timer that has come due to its
/// executor; run the io_context (`poll()`, `run_one()`) to process them.
/// Thread-safe.
class ManualClock : public Clock {
public:
    /// Wall time starts at `start` (default 2026-01-01T00:00:00Z); engine
    /// time starts at an arbitrary fixed origin.
    explicit ManualClock(std::chrono::system_clock::time_point start = default_start());

    core::Time now() const override;
    std::chrono::system_clock::time_point system_now() const override;
    std::unique_ptr<Timer> make_timer(asio::any_io_executor executor) override;

    /// Moves time forward by `d` (negative durations are ignored: time never
    /// goes backwards) and fires the timers now due, earliest first.
    void advance(std::chrono::nanoseconds d);
    /// Advances to the earliest armed timer, if any; returns whether one was.
    bool advance_to_next();

    static std::chrono::system_clock::time_point default_start();

private:
    struct Entry;
    class ManualTimer;
    void fire_due();

    mutable std::mutex mu_;
    core::Time now_;
    std::chrono::system_clock::time_point system_start_;
    std::vector<std::shared_ptr<Entry>> armed_;
};

}  // namespace cronoq
