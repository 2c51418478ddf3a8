#pragma once
// The one door from the driver into the public value types (Task,
// Recurring, Pool, Scheduler, TaskHandle, BlockingHandle, TaskContext,
// CancellationToken, CancellationRegistration, EventStream): they befriend
// `Access` instead of exposing their detail state, or a constructor from
// it, to users. `state` and `take` read a member named `state_`;
// `remote_host` reaches a Scheduler's core.
#include <type_traits>
#include <utility>

namespace cronoq::detail {

struct Access {
    /// Makes a `T` from its detail state.
    template <class T, class... Args>
    static T make(Args&&... args) {
        return T(std::forward<Args>(args)...);
    }
    /// The detail state behind `t` (for a Task, a copy of its whole request).
    template <class T>
    static const auto& state(const T& t)
        requires(!requires { t.state_.view(); })
    {
        return t.state_;
    }
    template <class T>
    static auto state(const T& t)
        requires requires { t.state_.view(); }
    {
        return t.state_.view();
    }
    /// The detail state behind `t`, to be consumed in place.
    template <class T>
    static auto& state_of(T& t) {
        return t.state_;
    }
    /// The detail state of `t`, moved out (a builder handing over what it
    /// built).
    template <class T>
        requires(!std::is_lvalue_reference_v<T>)
    static auto take(T&& t) {
        return std::move(t.state_);
    }
    /// The `detail::SchedulerCore` behind a `Scheduler<P, O>` (a
    /// `std::shared_ptr`), e.g. for its `remote_host()`.
    template <class T>
    static auto core(const T& scheduler) {
        return scheduler.owner_->core;
    }
    /// The `detail::RemoteHost` of a `Scheduler` (its core's remote pools),
    /// for `WorkerServer::start`.
    template <class S>
    static auto remote_host(S& scheduler) {
        return scheduler.owner_->core->remote_host();
    }
};

}  // namespace cronoq::detail
