// HandleState (behind TaskHandle and BlockingHandle) and EventStream.
#include <cronoq/detail/handle_state.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/event_stream.hpp>
#include <cronoq/task_failure.hpp>

#include "event_queue.hpp"

#include <asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>

namespace cronoq {

namespace detail {

void HandleState::finish(TaskStatus status, std::uint32_t attempt, std::string message, std::shared_ptr<const void> output) {
    {
        std::lock_guard lock(mu_);
        if (done_) return;
        done_ = true;
        final_ = status;
        attempt_ = attempt;
        message_ = std::move(message);
        output_ = std::move(output);
        set_status(status);
    }
    cv_.notify_all();
    done_waits_.set();
}

std::shared_ptr<const void> HandleState::outcome() const {
    std::lock_guard lock(mu_);
    if (final_ != TaskStatus::Succeeded) throw TaskFailure(final_, attempt_, message_);
    return output_;
}

std::optional<std::shared_ptr<const void>> HandleState::wait_blocking(std::optional<std::chrono::nanoseconds> timeout) {
    {
        std::unique_lock lock(mu_);
        // wait_for adds the timeout to steady_clock::now() unchecked: a long
        // timeout overflows into the past and returns at once. A deadline
        // beyond the clock's range is no deadline.
        const auto start = std::chrono::steady_clock::now();
        const auto room = std::chrono::steady_clock::time_point::max() - start;
        if (timeout && *timeout < room) {
            const auto deadline = start + std::max(*timeout, std::chrono::nanoseconds::zero());
            if (!cv_.wait_until(lock, deadline, [this] { return done_; })) return std::nullopt;
        } else {
            cv_.wait(lock, [this] { return done_; });
        }
    }
    return outcome();
}

bool HandleState::cancel() {
    auto core = core_.lock();
    return core && core->cancel(id_);
}

}  // namespace detail

EventStream::EventStream(std::shared_ptr<detail::EventQueue> queue) : queue_(std::move(queue)) {}
EventStream::EventStream(EventStream&&) noexcept = default;
EventStream& EventStream::operator=(EventStream&& other) noexcept {
    if (this != &other) {
        close();
        queue_ = std::move(other.queue_);
    }
    return *this;
}
EventStream::~EventStream() { close(); }

asio::awaitable<std::optional<StatusEvent>> EventStream::next() {
    auto queue = queue_;
    for (;;) {
        if (auto e = queue->try_pop()) co_return e;
        if (queue->finished()) co_return std::nullopt;
        co_await queue->waits().async_wait(asio::use_awaitable);
    }
}

std::optional<StatusEvent> EventStream::try_next() { return queue_->try_pop(); }
std::uint64_t EventStream::dropped() const { return queue_->dropped(); }

void EventStream::close() {
    if (queue_) queue_->close();
}

}  // namespace cronoq
