#pragma once
// One mechanism behind every awaitable wait in the driver: a flag that
// coroutines wait to see set. `set()` completes every current and later wait
// until `reset()`. A waiting coroutine keeps outstanding work on its
// executor, so `io_context::run()` does not return under it; cancelling the
// waiting coroutine (its cancellation slot) ends only its own wait, with
// `asio::error::operation_aborted`. Completions are queued on the waiter's
// executor (a coroutine's deferred, any other handler's posted), never run
// inline, except where the driver owns the thread and asks for it (see
// `ResumeInPlace`). Thread-safe.
#include <cronoq/detail/runtime/light_mutex.hpp>
#include <cronoq/detail/runtime/resume_in_place.hpp>
#include <cronoq/detail/unique_function.hpp>

#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/async_result.hpp>
#include <asio/defer.hpp>
#include <asio/error.hpp>
#include <asio/execution/outstanding_work.hpp>
#include <asio/post.hpp>
#include <asio/prefer.hpp>
#include <asio/use_awaitable.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace cronoq::detail {

/// Whether a wait with completion token `T` resumes a coroutine: `T` is
/// `asio::use_awaitable_t<E>` itself, whose handler (Asio's own, named only
/// in asio::detail) resumes the awaiting coroutine, inside a `co_spawn` that
/// keeps work on its executor until the coroutine returns. Judged by the
/// public token rather than by the handler's type; a token that adapts it
/// (`as_tuple(use_awaitable)`, `redirect_error`, `deferred`) answers false
/// and gets the general path, which is always correct.
template <class T>
struct is_coroutine_token : std::false_type {};
template <class Executor>
struct is_coroutine_token<asio::use_awaitable_t<Executor>> : std::true_type {};

class WaitList : public std::enable_shared_from_this<WaitList> {
public:
    using Waiter = detail::Waiter;  // resume_in_place.hpp

    static std::shared_ptr<WaitList> create() { return std::make_shared<WaitList>(); }

    bool is_set() const {
        std::lock_guard lock(mu_);
        return set_;
    }

    void set() {
        std::unique_lock lock(mu_);
        set_ = true;
        if (!first_ && !more_) return;  // nobody waits: most often so
        complete_all(lock);
    }

    void reset() {
        std::lock_guard lock(mu_);
        set_ = false;
    }

    /// Completes with no error once the flag is set (at once if it is).
    template <class Token>
    auto async_wait(Token&& token) {
        return async_wait(std::forward<Token>(token), UniqueFunction<void()>{});
    }

    /// As above; when the waiting coroutine is cancelled, `on_cancel` runs
    /// first, in the context of the cancellation, so that the owner of the
    /// list can take the waiter out of its own queues at once (before the
    /// aborted coroutine resumes). It may also run for a wait that was just
    /// completed but has not resumed yet: it must tolerate that.
    template <class Token>
    auto async_wait(Token&& token, UniqueFunction<void()> on_cancel) {
        return async_wait(shared_from_this(), std::forward<Token>(token), std::move(on_cancel));
    }

    /// As above, for a list that lives inside another object: `self`
    /// points to it and keeps that object alive (an aliasing pointer).
    /// `honoured`: the cancellation types that end the wait; a signal of
    /// none of them is ignored (e.g. `total` for a wait whose operation may
    /// already have had its effect).
    template <class Token>
    static auto async_wait(std::shared_ptr<WaitList> self, Token&& token, UniqueFunction<void()> on_cancel = {},
                           asio::cancellation_type honoured = asio::cancellation_type::all) {
        return asio::async_initiate<Token, void(std::error_code)>(
            [self = std::move(self), on_cancel = std::move(on_cancel), honoured](auto handler) mutable {
                self->initiate<is_coroutine_token<std::decay_t<Token>>::value>(self, std::move(handler), std::move(on_cancel), honoured);
            },
            token);
    }

private:
    template <bool Coroutine, class Handler>
    void initiate(const std::shared_ptr<WaitList>& self, Handler handler, UniqueFunction<void()> on_cancel,
                  asio::cancellation_type honoured) {
        auto slot = asio::get_associated_cancellation_slot(handler);
        Waiter waiter;
        if constexpr (Coroutine) {
            // A coroutine's own: co_spawn keeps work on its executor until
            // the coroutine returns, so the wait needs no guard of its own.
            waiter = [h = std::move(handler)](std::error_code ec) mutable {
                const auto ex = asio::get_associated_executor(h);
                // In place when asked: what asio::dispatch does when it
                // runs the handler inline, without wrapping it for the
                // type-erased executor. Otherwise deferred, as a
                // continuation of the handler that completes it: on a
                // thread of the io_context it runs after that handler, on
                // the same thread, rather than waking an idle one (post did,
                // for every resumption). Asio still wakes another if this
                // thread goes on to other queued work first; from outside
                // the io_context it is a post.
                if (ResumeInPlace::take_in_place() && runs_in_this_thread(ex))
                    std::move(h)(ec);
                else
                    asio::defer(ex, [h = std::move(h), ec]() mutable { std::move(h)(ec); });
            };
        } else {
            auto work = asio::prefer(asio::get_associated_executor(handler), asio::execution::outstanding_work.tracked);
            waiter = [h = std::move(handler), work](std::error_code ec) mutable {
                asio::post(work, [h = std::move(h), ec]() mutable { std::move(h)(ec); });
            };
        }
        std::unique_lock lock(mu_);
        if (set_) {
            lock.unlock();
            waiter(std::error_code{});
            return;
        }
        const std::uint64_t id = next_id_++;
        // Assign the slot before `set()` on another thread can see the waiter
        // and resume the coroutine: the slot belongs to that coroutine. The
        // slot's handler itself only ever runs in the coroutine's context.
        if (slot.is_connected()) {
            slot.assign([self, id, on_cancel = std::move(on_cancel), honoured](asio::cancellation_type type) mutable {
                if ((type & honoured) == asio::cancellation_type::none) return;
                if (on_cancel) on_cancel();
                if (Waiter w = self->remove(id)) w(asio::error::operation_aborted);
            });
        }
        if (!first_) {
            first_id_ = id;
            first_ = std::move(waiter);
        } else {
            if (!more_) more_ = std::make_unique<std::vector<Entry>>();
            more_->emplace_back(id, std::move(waiter));
        }
    }

    // Takes every waiter, lets go of `lock` (mu_), then completes them.
    void complete_all(std::unique_lock<LightMutex>& lock) {
        Waiter first = std::move(first_);
        std::unique_ptr<std::vector<Entry>> more = std::move(more_);
        lock.unlock();
        if (first) complete(first);
        if (more)
            for (auto& [id, w] : *more) complete(w);
    }

    // set()'s completion of a waiter: left for the thread's ResumeInPlace
    // if it wants it, else queued now.
    static void complete(Waiter& w) {
        if (!ResumeInPlace::defer(w)) w(std::error_code{});
    }

    Waiter remove(std::uint64_t id) {
        std::lock_guard lock(mu_);
        if (first_ && first_id_ == id) return std::move(first_);
        // Few waiters wait on one flag: a linear search beats a tree.
        if (!more_) return {};
        auto it = std::find_if(more_->begin(), more_->end(), [id](const auto& w) { return w.first == id; });
        if (it == more_->end()) return {};
        Waiter w = std::move(it->second);
        more_->erase(it);
        return w;
    }

    using Entry = std::pair<std::uint64_t, Waiter>;
    mutable LightMutex mu_;
    bool set_ = false;
    std::uint64_t next_id_ = 0;
    std::unique_ptr<std::vector<Entry>> more_;  // a pointer: a second waiter is rare
    // Most lists have one waiter at a time (a handle's result, a submitter's
    // turn): it is kept inline, so waiting allocates nothing. Last: a list
    // made and ended without a waiter touches only its first word (and a
    // list that ends an object, as a task's record, costs that object no
    // cache line for the callable's storage).
    std::uint64_t first_id_ = 0;
    Waiter first_;
};

}  // namespace cronoq::detail
