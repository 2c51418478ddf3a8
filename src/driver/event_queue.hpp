#pragma once
// A subscriber's bounded queue of status events: drop-oldest, never blocks
// the publisher.
#include <cronoq/detail/wait_list.hpp>
#include <cronoq/status_event.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

namespace cronoq::detail {

class EventQueue {
public:
    explicit EventQueue(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

    /// A queue taken from a builder goes to the first scheduler made after
    /// it, whichever copy of the builder made it: true once only.
    bool claim() { return !claimed_.exchange(true); }
    /// The capacity, once the scheduler that adopts the queue is known.
    void set_capacity(std::size_t capacity) {
        std::lock_guard lock(mu_);
        capacity_ = capacity == 0 ? 1 : capacity;
        while (events_.size() > capacity_) {
            events_.pop_front();
            ++dropped_;
        }
    }

    void push(StatusEvent e) {
        std::lock_guard lock(mu_);
        if (closed_) return;
        if (events_.size() == capacity_) {
            events_.pop_front();
            ++dropped_;
        }
        events_.push_back(std::move(e));
        waits_->set();
    }

    /// Resets the wake-up flag under the same lock as `push` sets it, so a
    /// waiter never misses an event.
    std::optional<StatusEvent> try_pop() {
        std::lock_guard lock(mu_);
        if (events_.empty()) {
            if (!closed_) waits_->reset();
            return std::nullopt;
        }
        StatusEvent e = std::move(events_.front());
        events_.pop_front();
        return e;
    }

    bool finished() const {
        std::lock_guard lock(mu_);
        return closed_ && events_.empty();
    }

    void close() {
        std::lock_guard lock(mu_);
        closed_ = true;
        waits_->set();
    }

    std::uint64_t dropped() const {
        std::lock_guard lock(mu_);
        return dropped_;
    }

    WaitList& waits() { return *waits_; }

private:
    mutable std::mutex mu_;
    std::deque<StatusEvent> events_;
    std::size_t capacity_;
    std::uint64_t dropped_ = 0;
    bool closed_ = false;
    std::atomic<bool> claimed_{false};
    std::shared_ptr<WaitList> waits_ = WaitList::create();
};

}  // namespace cronoq::detail
