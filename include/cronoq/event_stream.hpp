#pragma once
// EventStream: a subscriber's bounded queue of status events.
#include <cronoq/detail/access.hpp>
#include <cronoq/status_event.hpp>

#include <asio/awaitable.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace cronoq {

namespace detail {
class EventQueue;
}

/// Receives every status transition from the moment it was created, in
/// order. The queue is bounded: when it is full, the oldest event is dropped
/// and counted in `dropped()`; the scheduler never waits on a subscriber.
/// Move-only; destroying it unsubscribes. Thread-safe.
class EventStream {
public:
    EventStream(EventStream&&) noexcept;
    EventStream& operator=(EventStream&&) noexcept;
    ~EventStream();

    /// Waits for the next event. A real Asio operation, completed on the
    /// awaiting coroutine's executor.
    ///
    /// Completion: the next event, in order; empty once the stream is
    /// closed and drained (the scheduler shut down or `close()` was
    /// called). Throws nothing but the cancellation below.
    ///
    /// Asio cancellation: honours `terminal`, `partial` and `total` (a
    /// coroutine's default filter lets only `terminal` through): the wait
    /// ends with `operation_aborted` and loses no event.
    asio::awaitable<std::optional<StatusEvent>> next();
    /// The next event if one is queued; never waits.
    std::optional<StatusEvent> try_next();
    /// Events lost to the bound since the stream was created.
    std::uint64_t dropped() const;
    /// Stops receiving; queued events can still be read.
    void close();

private:
    friend struct detail::Access;
    explicit EventStream(std::shared_ptr<detail::EventQueue> queue);

    std::shared_ptr<detail::EventQueue> queue_;
};

}  // namespace cronoq
