// TaskContext, CancellationToken and offload: what an attempt sees.
#include <cronoq/cancellation_token.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/logging.hpp>
#include <cronoq/offload.hpp>
#include <cronoq/task_context.hpp>
#include <cronoq/task_error.hpp>

#include "attempt_state.hpp"

#include <asio/post.hpp>
#include <asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <stdexcept>
#include <system_error>

namespace cronoq {

// ---- CancellationToken ------------------------------------------------------------

void detail::log_contained_exception(const char* what) noexcept {
    try {
        throw;
    } catch (const std::exception& e) {
        logger()->warn("{} threw: {}", what, e.what());
    } catch (...) {
        logger()->warn("{} threw a non-standard exception", what);
    }
}

CancellationToken::CancellationToken() : state_(std::make_shared<detail::CancelState>()) {}

bool CancellationToken::is_cancelled() const { return state_->is_cancelled(); }

CancellationRegistration CancellationToken::on_cancel(std::function<void()> callback) const {
    const std::uint64_t id = state_->on_cancel(std::move(callback));
    return detail::Access::make<CancellationRegistration>(std::weak_ptr<detail::CancelState>(state_), id);
}

bool CancellationRegistration::remove() {
    auto state = std::exchange(state_, {}).lock();
    return state && state->remove(std::exchange(id_, 0));
}

// ---- TaskContext ----------------------------------------------------------------------

TaskId TaskContext::id() const { return detail::task_id(*state_->task); }
LeaseId TaskContext::lease() const { return state_->lease; }
std::uint32_t TaskContext::attempt() const { return state_->attempt; }
const std::string& TaskContext::pool() const { return *state_->task->pool; }
const std::string& TaskContext::kind() const { return state_->task->kind; }
const std::optional<std::string>& TaskContext::key() const { return state_->task->key(); }
const std::string& TaskContext::fair_key() const { return state_->task->fair_key(); }
const Tags& TaskContext::tags() const { return state_->task->tags(); }

std::optional<std::string> TaskContext::tag(std::string_view name) const {
    for (const auto& [k, v] : state_->task->tags())
        if (k == name) return v;
    return std::nullopt;
}

std::optional<std::chrono::system_clock::time_point> TaskContext::deadline() const { return state_->task->deadline; }
std::optional<std::chrono::nanoseconds> TaskContext::timeout() const { return state_->task->timeout; }
const std::optional<std::string>& TaskContext::traceparent() const { return state_->task->traceparent(); }

bool TaskContext::is_cancelled() const { return state_->cancel.is_cancelled(); }

asio::awaitable<void> TaskContext::cancelled() const {
    auto waits = state_->cancel.waits();  // the frame keeps the list alive
    co_await waits->async_wait(asio::use_awaitable);
}

CancellationToken TaskContext::cancellation_token() const {
    return detail::Access::make<CancellationToken>(std::shared_ptr<detail::CancelState>(state_, &state_->cancel));
}

void TaskContext::heartbeat() const {
    if (!state_->needs_heartbeat || state_->cancel.is_cancelled()) return;
    if (auto core = detail::core_of(*state_)) core->heartbeat(state_->lease);
}

// ---- offload ----------------------------------------------------------------------------

asio::awaitable<void> detail::offload_erased(const TaskContext& ctx, UniqueFunction<void()> job) {
    auto core = detail::core_of(*detail::Access::state(ctx));
    if (!core) throw std::logic_error("cronoq::offload: the scheduler of this context is gone");
    asio::any_io_executor blocking;
    try {
        blocking = core->blocking_executor();
    } catch (const std::system_error& e) {
        // Threads may be short for a while (a process limit): retry later.
        throw TaskError::retryable(std::string("offload: cannot start the blocking thread pool: ") + e.what());
    }
    auto done = WaitList::create();
    asio::post(blocking, [job = std::move(job), done]() mutable {
        job();
        // Destroy the job (and what it captured) before the waiter resumes:
        // nothing of it may outlive the co_await on this thread.
        job = UniqueFunction<void()>{};
        done->set();
    });
    core.reset();  // the job must not keep the scheduler alive
    // Not `total`: the job runs to its end whether or not it is awaited.
    auto wait = WaitList::async_wait(done, asio::use_awaitable, {},
                                     asio::cancellation_type::terminal | asio::cancellation_type::partial);
    co_await std::move(wait);
}

}  // namespace cronoq
