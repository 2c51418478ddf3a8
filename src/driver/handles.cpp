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

void HandleState::finish(TaskStatus status, std::uint32_t attempt, std::string&& message, ErasedValue output) {
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

std::shared_ptr<const void> HandleState::outcome(const std::shared_ptr<HandleState>& state) {
    const HandleState& s = *state;
    // The caller saw `done_` set (finished(), or a wait that ended).
    assert(s.finished() && "outcome before the task ended");
    if (s.final_ != TaskStatus::Succeeded) throw TaskFailure(s.final_, s.attempt_, s.message_ ? *s.message_ : std::string());
    // Written once, before `done_`: an output held in place stays as it is
    // for as long as the state lives.
    return s.output_.share(state);
}

std::optional<std::shared_ptr<const void>> HandleState::wait_blocking(const std::shared_ptr<HandleState>& state,
                                                                      std::optional<std::chrono::nanoseconds> timeout) {
    HandleState& s = *state;
    if (!s.done_.load(std::memory_order_acquire)) {
        s.sleepers_.fetch_add(1, std::memory_order_seq_cst);
        struct Leave {
            std::atomic<std::uint32_t>& n;
            ~Leave() { n.fetch_sub(1, std::memory_order_seq_cst); }
        } leave{s.sleepers_};
        const auto done = [&s] { return s.done_.load(std::memory_order_seq_cst); };
        // wait_until adds nothing, but a deadline computed from now() and a
        // long timeout overflows into the past and returns at once: a
        // deadline beyond the clock's range is no deadline.
        const auto start = std::chrono::steady_clock::now();
        const auto room = std::chrono::steady_clock::time_point::max() - start;
        if (timeout && *timeout < room) {
            const auto deadline = start + std::max(*timeout, std::chrono::nanoseconds::zero());
            if (!parking::park_until(&s, deadline, done)) return std::nullopt;
        } else {
            parking::park(&s, done);
        }
    }
    return outcome(state);
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
