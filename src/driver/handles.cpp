// HandleState (behind TaskHandle and BlockingHandle) and EventStream.
#include <cronoq/detail/handle_state.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/event_stream.hpp>
#include <cronoq/task_failure.hpp>

#include "event_queue.hpp"

#include <asio/use_awaitable.hpp>

#include <algorithm>
#include <cassert>
#include <chrono>

namespace cronoq {

namespace detail {

void HandleState::finish(TaskStatus status, std::uint32_t attempt, std::string&& message, std::shared_ptr<const void> output) {
    // The first caller writes the outcome; readers read it only once they
    // see `done_` (acquire), so no lock is needed.
    if (claimed_.exchange(true, std::memory_order_acq_rel)) return;
    final_ = status;
    attempt_ = attempt;
    if (!message.empty()) message_ = std::make_unique<std::string>(std::move(message));
    output_ = std::move(output);
    set_status(status);
    done_.store(true, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) parking::unpark(this);
    done_waits_.set();
}

std::shared_ptr<const void> HandleState::outcome() const {
    // The caller saw `done_` set (finished(), or a wait that ended).
    assert(finished() && "outcome() before the task ended");
    if (final_ != TaskStatus::Succeeded) throw TaskFailure(final_, attempt_, message_ ? *message_ : std::string());
    return output_;
}

std::optional<std::shared_ptr<const void>> HandleState::wait_blocking(std::optional<std::chrono::nanoseconds> timeout) {
    if (!done_.load(std::memory_order_acquire)) {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        struct Leave {
            std::atomic<std::uint32_t>& n;
            ~Leave() { n.fetch_sub(1, std::memory_order_seq_cst); }
        } leave{sleepers_};
        const auto done = [this] { return done_.load(std::memory_order_seq_cst); };
        // wait_until adds nothing, but a deadline computed from now() and a
        // long timeout overflows into the past and returns at once: a
        // deadline beyond the clock's range is no deadline.
        const auto start = std::chrono::steady_clock::now();
        const auto room = std::chrono::steady_clock::time_point::max() - start;
        if (timeout && *timeout < room) {
            const auto deadline = start + std::max(*timeout, std::chrono::nanoseconds::zero());
            if (!parking::park_until(this, deadline, done)) return std::nullopt;
        } else {
            parking::park(this, done);
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
