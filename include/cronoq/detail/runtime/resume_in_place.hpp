#pragma once
// Resumption in place: where the driver owns the thread, the waiters that
// WaitList::set completes resume there once no lock is held, instead of a
// trip round their executor's queue (docs/design.md, "Resumption in place").
#include <cronoq/detail/executor_target.hpp>
#include <cronoq/detail/unique_function.hpp>

#include <asio/any_io_executor.hpp>
#include <asio/io_context.hpp>
#include <asio/strand.hpp>

#include <cstddef>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

namespace cronoq::detail {

/// A waiter of a WaitList: called once, with no error when the flag is set
/// or `operation_aborted` when its wait is cancelled.
using Waiter = UniqueFunction<void(std::error_code)>;

/// Whether this thread runs `ex` now, so that `asio::dispatch` would run a
/// handler inline: asked of the executors the driver makes and that
/// coroutines run on (an io_context's, or a strand of one) by the type it
/// holds (`target_of`, checked), without wrapping a handler as dispatch
/// does to find out; false for any other.
inline bool runs_in_this_thread(const asio::any_io_executor& ex) noexcept {
    if (const auto* io = target_of<asio::io_context::executor_type>(ex)) return io->running_in_this_thread();
    if (const auto* s = target_of<asio::strand<asio::io_context::executor_type>>(ex)) return s->running_in_this_thread();
    if (const auto* s = target_of<asio::strand<asio::any_io_executor>>(ex)) return s->running_in_this_thread();
    return false;
}

/// Resumption in place. A context that the driver owns outright (an
/// attempt's completion, which Asio runs as a handler of its own) installs
/// one for its thread; once the driver asks for it (`want()`: it does when
/// the scheduler has gone idle, so that no other work could batch up behind
/// the waiter), `WaitList::set` leaves the waiters it completes here. They
/// run when the context calls `run()`, free of every lock, and a coroutine's
/// waiter then resumes its coroutine at once if this thread runs its
/// executor, as Asio's own `co_spawn` completion does, instead of a trip
/// round the executor's queue. Anywhere else (a call of the application's,
/// which may hold its own locks) and when not asked, `set` queues them at
/// once. Waiters that a resumed coroutine completes join the same list, so
/// resumptions never nest. One per thread at a time: an inner one is a no-op.
class ResumeInPlace {
public:
    ResumeInPlace() noexcept : outer_(current_ == nullptr) {
        if (outer_) current_ = this;
    }
    ResumeInPlace(const ResumeInPlace&) = delete;
    ResumeInPlace& operator=(const ResumeInPlace&) = delete;
    /// An exception left `run()` (a resumed handler threw, as it would out
    /// of `asio::dispatch`): what is left is queued, so no waiter is lost.
    ~ResumeInPlace() {
        if (!outer_) return;
        current_ = nullptr;
        if (first_) (*first_)(std::error_code{});
        for (; next_ < more_.size(); ++next_) more_[next_](std::error_code{});
    }

    /// From now on, `set` on this thread leaves its waiters to the current
    /// context, if there is one.
    static void want() noexcept {
        if (current_) current_->wanted_ = true;
    }

    /// Completes, in order, every waiter left here, until none is left.
    /// Throws what a handler resumed in place throws.
    void run() {
        if (!outer_) return;
        for (;;) {
            Waiter w;
            if (first_) {
                w = std::move(*first_);
                first_.reset();
            } else if (next_ < more_.size()) {
                w = std::move(more_[next_++]);
            } else {
                more_.clear();
                next_ = 0;
                break;
            }
            // Read (and cleared) by a coroutine's waiter only: cleared here
            // too, however the call ends, so that no later waiter on this
            // thread takes it.
            struct Clear {
                ~Clear() { in_place_ = false; }
            } clear;
            in_place_ = true;
            w(std::error_code{});
        }
    }

    /// Leaves `w` for the thread's current context, if there is one and
    /// the driver asked for it.
    static bool defer(Waiter& w) {
        ResumeInPlace* c = current_;
        if (!c || !c->wanted_) return false;
        if (!c->first_)
            c->first_.emplace(std::move(w));
        else
            c->more_.push_back(std::move(w));
        return true;
    }
    /// Whether the waiter being called may resume its coroutine here; true
    /// once per waiter that `run()` calls.
    static bool take_in_place() noexcept { return std::exchange(in_place_, false); }

private:
    bool outer_;
    bool wanted_ = false;
    // Most completions wake one waiter: kept inline, no allocation.
    std::optional<Waiter> first_;
    std::vector<Waiter> more_;
    std::size_t next_ = 0;  // the first of `more_` not run yet
    static inline thread_local ResumeInPlace* current_ = nullptr;
    static inline thread_local bool in_place_ = false;
};

}  // namespace cronoq::detail
