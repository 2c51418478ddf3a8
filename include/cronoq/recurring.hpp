#pragma once
// Recurring<P>: a task template run on a cron schedule (docs/guide/time-and-cron.md).
#include <cronoq/detail/access.hpp>
#include <cronoq/detail/task_request.hpp>
#include <cronoq/duration.hpp>
#include <cronoq/start_policy.hpp>
#include <cronoq/task.hpp>

#include <chrono>
#include <string>
#include <utility>

namespace cronoq {

/// A value type; every setter returns `*this`. Added with
/// `Scheduler::add_recurring`, which validates it (cron text, time zone,
/// pool) and throws `ConfigError` without registering anything.
///
/// Each occurrence is a fixed-start task built from the template: its start
/// is the occurrence time, its key `<template key or name>@<UTC RFC 3339
/// start>` (e.g. `nightly@2026-03-29T01:00:00Z`), with the tag
/// `cronoq.recurring=<name>`. Occurrences are submitted when they are due.
///
/// Steps of the wall clock are noticed within a minute. After a forward
/// step a schedule runs once, at the latest occurrence passed. After a step
/// back (of a second or more), a wildcard schedule (see `CronExpr`) follows
/// the new time and fires again at repeated times, unless the earlier
/// occurrence of that time is still retained under the same key; a
/// fixed-time schedule is not repeated for a step back shorter than 3 hours
/// and follows the new time for a longer one.
template <class P>
class Recurring {
public:
    /// `cron`: 5 fields (minute precision) or 6 (leading seconds), or a
    /// macro such as `@daily`; see `CronExpr`.
    Recurring(std::string name, std::string cron, Task<P> task_template) {
        state_.name = std::move(name);
        state_.cron = std::move(cron);
        state_.task = detail::Access::take(std::move(task_template));
    }

    /// The IANA zone the cron fields are read in (default "UTC"); daylight
    /// saving follows the rule of `CronExpr::next_after`.
    Recurring& tz(std::string iana_name) { state_.tz = std::move(iana_name); return *this; }
    /// What happens when an occurrence is due while the previous one is
    /// still live (default `OverlapPolicy::Skip`).
    Recurring& overlap(OverlapPolicy p) { state_.overlap = p; return *this; }
    /// Each occurrence's soft deadline, counted from its start.
    /// Any `std::chrono::duration`, saturated into nanoseconds.
    template <class Rep, class Period>
    Recurring& deadline_after(std::chrono::duration<Rep, Period> d) {
        state_.deadline_after = saturating_ns(d);
        return *this;
    }

private:
    friend struct detail::Access;
    detail::RecurringRequest state_;
};

}  // namespace cronoq
