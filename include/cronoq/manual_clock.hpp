#pragma once
// ManualClock: virtual time for driver tests (no sleeping).
#include <cronoq/clock.hpp>
#include <cronoq/duration.hpp>

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
    /// goes backwards) and fires the timers now due, earliest first. Any
    /// `std::chrono::duration`; time saturates at the end of its range
    /// (`nanoseconds::max()` or `hours::max()` is "forever", not a wrap into
    /// the past).
    template <class Rep, class Period>
    void advance(std::chrono::duration<Rep, Period> d) {
        advance_by(saturating_ns(d));
    }
    /// Advances to the earliest armed timer, if any; returns whether one was.
    bool advance_to_next();
    /// Steps wall time (`system_now()`) to `t`, backwards or forwards, without
    /// moving engine time or firing timers: what an NTP step or an operator
    /// setting the system clock does to a real machine. Later `advance`s
    /// move both from there.
    void set_system_time(std::chrono::system_clock::time_point t);

    static std::chrono::system_clock::time_point default_start();

private:
    struct Entry;
    class ManualTimer;
    void advance_by(std::chrono::nanoseconds d);
    void fire_due();

    mutable std::mutex mu_;
    core::Time now_;
    std::chrono::system_clock::time_point system_start_;
    std::vector<std::shared_ptr<Entry>> armed_;
};

}  // namespace cronoq
