#pragma once
// Task<P>: the description of one unit of work, built fluently (docs/guide/README.md).
#include <cronoq/dep.hpp>
#include <cronoq/detail/access.hpp>
#include <cronoq/detail/task_request.hpp>
#include <cronoq/duration.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/priority.hpp>
#include <cronoq/retry_policy.hpp>
#include <cronoq/start_policy.hpp>
#include <cronoq/task_ref.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace cronoq {

/// A value type; every setter returns `*this`. Validated at submit.
/// Setters taking a duration accept any `std::chrono::duration` and
/// saturate it into nanoseconds (`saturating_ns`): `start_in(hours::max())`
/// is a start that never comes, not one an hour ago.
template <class P>
class Task {
public:
    explicit Task(P payload) { state_.payload = detail::ErasedValue::make(std::move(payload)); }
    static Task from_shared(std::shared_ptr<const P> payload) { return Task(std::move(payload), shared_tag{}); }

    /// The pool to run in; default: the first pool declared.
    Task& pool(std::string name) { state_.pool = std::move(name); return *this; }
    /// A label for metrics and learned run times, e.g. "resize".
    Task& kind(std::string name) { state_.kind = std::move(name); return *this; }
    Task& priority(Priority p) { state_.priority = p; return *this; }
    /// The tenant it counts against (docs/guide/fairness.md), e.g. a
    /// customer: between the ready tasks of one pool and class, dispatches
    /// go to fair keys in proportion to their weights, so that one key's
    /// flood does not starve the others. Tasks without one (or with "")
    /// share the key "". Handed to attempts as `TaskContext::fair_key()`.
    Task& fair_key(std::string k) { state_.more().fair_key = std::move(k); return *this; }
    /// Idempotency: while a live or retained task holds this key, submitting
    /// it again runs nothing new and returns a handle to that task. Handed
    /// to attempts as `TaskContext::key()`; names the task in a `TaskRef`.
    Task& key(std::string k) { state_.more().key = std::move(k); return *this; }
    /// A soft deadline: urgency rises as its latest start nears (docs/guide/ordering.md).
    template <class Rep, class Period>
    Task& deadline_in(std::chrono::duration<Rep, Period> d) {
        state_.more().deadline_in = saturating_ns(d);
        state_.more().deadline_at.reset();
        return *this;
    }
    Task& deadline_at(std::chrono::system_clock::time_point t) { state_.more().deadline_at = t; state_.more().deadline_in.reset(); return *this; }
    /// A fixed start (docs/guide/time-and-cron.md): the task is `Scheduled` until then and
    /// dispatched at it, ahead of ordinary ready work; the pool keeps a slot
    /// free for it from `max_hold` before. It reserves a slot for its
    /// expected duration; more reservations at once than the pool's
    /// `reservable_fraction` allows fail with `ReservationConflict`.
    Task& start_at(std::chrono::system_clock::time_point t) { state_.more().start_at = t; state_.more().start_in.reset(); return *this; }
    template <class Rep, class Period>
    Task& start_in(std::chrono::duration<Rep, Period> d) {
        state_.more().start_in = saturating_ns(d);
        state_.more().start_at.reset();
        return *this;
    }
    /// How late a start may be before `on_miss` applies (default 1 s).
    template <class Rep, class Period>
    Task& start_tolerance(std::chrono::duration<Rep, Period> d) {
        state_.more().start_tolerance = saturating_ns(d);
        return *this;
    }
    Task& on_miss(MissPolicy p) { state_.more().on_miss = p; return *this; }
    /// Waits for another task (docs/guide/dependencies-and-keys.md): `Blocked` until every edge is met,
    /// `Skipped` as soon as one cannot be. May be called several times.
    Task& depends_on(Dep dep) { state_.more().depends_on.push_back(std::move(dep)); return *this; }
    /// Needs `amount` units of a resource declared on the scheduler
    /// (`Builder::resource`) for each attempt: all of a task's resources
    /// are taken together at dispatch; a semaphore's units are held until
    /// the attempt ends, a token bucket's are spent. Unknown names are
    /// `UnknownResource` at submit; more than the resource could ever grant
    /// is `ResourceExceedsCapacity`.
    Task& resource(std::string name, std::uint32_t amount) {
        state_.more().resources.push_back({std::move(name), amount});
        return *this;
    }
    /// Per attempt; an attempt still running after `d` fails retryably.
    template <class Rep, class Period>
    Task& timeout(std::chrono::duration<Rep, Period> d) {
        state_.more().timeout = saturating_ns(d);
        return *this;
    }
    Task& retry(RetryPolicy policy) { state_.more().retry = policy; return *this; }
    Task& tag(std::string k, std::string v) { state_.more().tags.emplace_back(std::move(k), std::move(v)); return *this; }
    /// Remote pools only (docs/remote.md; `SubmitError::Invalid` on a local
    /// pool): the task runs only on a worker registered with this label
    /// and value (and every other label given). It waits for such a worker
    /// without holding back tasks that other workers can run. Setting a
    /// name again replaces its value.
    Task& label(std::string name, std::string value) {
        for (auto& [n, v] : state_.more().labels)
            if (n == name) {
                v = std::move(value);
                return *this;
            }
        state_.more().labels.emplace_back(std::move(name), std::move(value));
        return *this;
    }
    /// W3C trace context handed to every attempt; default: the
    /// "traceparent" tag, if any.
    Task& traceparent(std::string tp) { state_.more().traceparent = std::move(tp); return *this; }
    /// Expected run time, for the deadline's latest start.
    template <class Rep, class Period>
    Task& duration_hint(std::chrono::duration<Rep, Period> d) {
        state_.more().duration_hint = saturating_ns(d);
        return *this;
    }

private:
    friend struct detail::Access;
    struct shared_tag {};
    Task(std::shared_ptr<const P> payload, shared_tag) { state_.payload = std::shared_ptr<const void>(std::move(payload)); }
    detail::TaskState state_;
};

}  // namespace cronoq
