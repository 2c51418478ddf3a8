#pragma once
// Pool<P, O>: a named set of worker slots and the executor that runs there.
#include <cronoq/autoscale.hpp>
#include <cronoq/bounds.hpp>
#include <cronoq/dep.hpp>
#include <cronoq/detail/access.hpp>
#include <cronoq/detail/erased.hpp>
#include <cronoq/duration.hpp>
#include <cronoq/executor.hpp>
#include <cronoq/fairness.hpp>
#include <cronoq/offload.hpp>
#include <cronoq/result.hpp>
#include <cronoq/retry_policy.hpp>
#include <cronoq/task_context.hpp>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace cronoq {

namespace detail {
template <class T>
struct is_awaitable : std::false_type {};
template <class T, class Ex>
struct is_awaitable<asio::awaitable<T, Ex>> : std::true_type {};
}  // namespace detail

/// A value type; every setter returns `*this`. Validated by
/// `Scheduler::Builder::build()`, which throws ConfigError naming the pool
/// and the field. Setters taking a duration accept any `std::chrono`
/// duration and saturate it into nanoseconds (`saturating_ns`).
template <class P, class O>
class Pool {
public:
    explicit Pool(std::string name) {
        state_.engine.name = std::move(name);
        state_.engine.capacity = 1;
    }

    /// Concurrent attempts: starts at `initial`, kept within [min, max].
    /// For a remote pool only `max` counts: the cap on the slots granted
    /// to its workers (no cap without this call).
    Pool& workers(std::size_t min, std::size_t initial, std::size_t max) {
        state_.workers_given = true;
        state_.min_workers = min;
        state_.engine.capacity = initial;
        state_.max_workers = max;
        return *this;
    }

    /// `f(TaskContext, std::shared_ptr<const P>)` returning
    /// `asio::awaitable<Result<O>>` runs as a coroutine on the pool's
    /// executor. A plain callable returning `Result<O>` or `O` runs on the
    /// scheduler's blocking thread pool (never on the event loop) and sees
    /// cancellation through `ctx.is_cancelled()` and the token.
    template <class F>
    Pool& executor_fn(F f) {
        state_.engine.remote = false;
        using R = std::invoke_result_t<F&, TaskContext, std::shared_ptr<const P>>;
        auto fn = std::make_shared<F>(std::move(f));
        if constexpr (detail::is_awaitable<R>::value) {
            static_assert(std::is_same_v<R, asio::awaitable<Result<O>>>,
                          "a coroutine executor must return asio::awaitable<cronoq::Result<O>>");
            state_.executor.spawn =
                spawner([fn](TaskContext ctx, std::shared_ptr<const P> p) { return (*fn)(std::move(ctx), std::move(p)); });
        } else {
            static_assert(std::is_same_v<R, Result<O>> || std::is_convertible_v<R, Result<O>> ||
                              (std::is_void_v<O> && std::is_void_v<R>),
                          "a plain executor must return cronoq::Result<O> or O");
            state_.executor.spawn = spawner(
                [fn](TaskContext ctx, std::shared_ptr<const P> p) { return offloaded(fn, std::move(ctx), std::move(p)); });
        }
        state_.executor.abort = nullptr;
        return *this;
    }

    /// An object satisfying `Executor<E, P, O>`, by value or shared.
    template <Executor<P, O> E>
    Pool& executor(E e) {
        return executor(std::make_shared<E>(std::move(e)));
    }
    template <Executor<P, O> E>
    Pool& executor(std::shared_ptr<E> e) {
        state_.engine.remote = false;
        state_.executor.spawn =
            spawner([e](TaskContext ctx, std::shared_ptr<const P> p) { return e->execute(std::move(ctx), std::move(p)); });
        if constexpr (AbortableExecutor<E>)
            state_.executor.abort = [e](LeaseId lease) { e->abort(lease); };
        else
            state_.executor.abort = nullptr;
        return *this;
    }

    /// Attempts of this pool run on remote workers (docs/remote.md), not on a
    /// local executor (an executor set before is dropped; one set after
    /// makes the pool local again). Its capacity is the sum of the slots
    /// granted to its connected workers, capped by `workers(...)`'s max if
    /// given; `autoscale` and `scaler` are a ConfigError at build. Payloads
    /// go out encoded by `codec<P>` and outputs come back through
    /// `codec<O>` (include <cronoq/codec.hpp>; a missing codec fails to
    /// compile, naming the type): a payload the codec refuses, or larger
    /// than the worker server accepts, is `SubmitError::Invalid` at
    /// submit; an output it cannot decode fails the task permanently
    /// ("decode: ..."). Workers heartbeat each lease within `lease_ttl`
    /// (default 30 s here); timeouts are enforced by the scheduler.
    Pool& remote() {
        state_.engine.remote = true;
        state_.codec = detail::erase_codec<P, O>();
        state_.executor = {};
        return *this;
    }

    /// Every running attempt must call `ctx.heartbeat()` within each `d`.
    template <class Rep, class Period>
    Pool& lease_ttl(std::chrono::duration<Rep, Period> d) {
        state_.engine.lease_ttl = saturating_ns(d);
        return *this;
    }
    template <class Rep, class Period>
    Pool& default_timeout(std::chrono::duration<Rep, Period> d) {
        state_.engine.default_timeout = saturating_ns(d);
        return *this;
    }
    Pool& retry(RetryPolicy policy) { state_.engine.retry = policy; return *this; }
    /// Expected run time of a task before one of its kind has been seen.
    template <class Rep, class Period>
    Pool& default_duration(std::chrono::duration<Rep, Period> d) {
        state_.engine.default_duration = saturating_ns(d);
        return *this;
    }
    /// Share of `max` workers that fixed-start reservations may hold at any
    /// instant (default 0.5, always at least one slot).
    Pool& reservable_fraction(double f) { state_.engine.reservable_fraction = f; return *this; }
    /// From how long before a fixed start a slot is kept free for it
    /// (default 30 s).
    template <class Rep, class Period>
    Pool& max_hold(std::chrono::duration<Rep, Period> d) {
        state_.engine.max_hold = saturating_ns(d);
        return *this;
    }
    /// Dependencies on keys no task holds: `Reject` (default) or `Await`.
    Pool& unknown_dependency(UnknownDependency policy) { state_.engine.unknown_dependency = policy; return *this; }
    /// Moves the capacity within [min, max] of `workers` from queue
    /// pressure (docs/guide/resources-and-bounds.md; see AutoscaleConfig). Scaling down never aborts a
    /// running attempt.
    Pool& autoscale(AutoscaleConfig config) { state_.engine.autoscale = config; return *this; }
    /// A user autoscaling policy (see the Scaler concept); turns autoscaling
    /// on with a default AutoscaleConfig (its `interval` sets how often the
    /// policy is asked) unless `autoscale` was called.
    template <Scaler S>
    Pool& scaler(S s) {
        auto policy = std::make_shared<S>(std::move(s));
        state_.scaler = [policy](const ScalerInput& in) { return static_cast<std::size_t>(policy->desired(in)); };
        state_.engine.user_scaler = true;
        if (!state_.engine.autoscale) state_.engine.autoscale = AutoscaleConfig{};
        return *this;
    }
    /// Cap on this pool's tasks that are not yet running, and what a
    /// submission beyond it does (docs/guide/resources-and-bounds.md; default unbounded, `Wait`).
    Pool& bounds(Bounds b) { state_.engine.bounds = b; return *this; }
    Pool& overflow(OverflowPolicy policy) { state_.engine.overflow = policy; return *this; }
    /// Weights of the pool's fair keys and a cap on one key's running
    /// attempts (docs/guide/fairness.md; default: every key weighs 1, no
    /// cap). A weight that is not finite and > 0, or a cap of 0, is a
    /// ConfigError at build naming the field and the key.
    Pool& fairness(FairnessConfig config) { state_.engine.fairness = std::move(config); return *this; }
    /// Where this pool's attempts run (default: the scheduler's executor).
    Pool& run_on(asio::any_io_executor ex) { state_.run_on = std::move(ex); return *this; }

private:
    friend struct detail::Access;

    // The erased form of an executor: `make(ctx, payload)` makes one
    // attempt's coroutine, which spawn_attempt spawns.
    template <class Make>
    static auto spawner(Make make) {
        return [make = std::move(make)](const asio::any_io_executor& lane, asio::cancellation_slot slot, TaskContext ctx,
                                        std::shared_ptr<const void> p, detail::AttemptCompletion done) {
            // `make` by reference: it is the pool's, which lives as long as
            // the scheduler, and `done` holds the scheduler until the end.
            detail::spawn_attempt<O>(
                lane, slot,
                [&make, ctx = std::move(ctx), p = std::static_pointer_cast<const P>(std::move(p))]() mutable {
                    return make(std::move(ctx), std::move(p));
                },
                std::move(done));
        };
    }

    // A plain executor's attempt: the call, on the blocking thread pool,
    // awaited.
    template <class F>
    static asio::awaitable<Result<O>> offloaded(std::shared_ptr<F> fn, TaskContext ctx, std::shared_ptr<const P> payload) {
        using R = std::invoke_result_t<F&, TaskContext, std::shared_ptr<const P>>;
        auto job = offload(ctx, [fn, ctx, payload]() -> Result<O> {
            if constexpr (std::is_void_v<R>) {
                (*fn)(ctx, payload);
                return Result<O>{};
            } else {
                return (*fn)(ctx, payload);
            }
        });
        Result<O> r = co_await std::move(job);
        co_return r;
    }

    detail::PoolDefinition state_;
};

}  // namespace cronoq
