#include "recurring.hpp"

#include <date/date.h>

namespace cronoq::detail {

std::string utc_rfc3339(std::chrono::system_clock::time_point t) {
    return date::format("%FT%TZ", std::chrono::floor<std::chrono::seconds>(t));
}

std::chrono::system_clock::time_point take_due(Schedule& s, std::chrono::system_clock::time_point now) {
    auto due = s.next;
    for (;;) {
        const auto after = s.expr.next_after(due, s.request.tz);
        if (!after) {
            s.next = std::chrono::system_clock::time_point::max();  // none within 400 years
            return due;
        }
        if (*after > now) {
            s.next = *after;
            return due;
        }
        ++s.skipped;
        due = *after;
    }
}

void follow_wall_clock(Schedule& s, std::chrono::system_clock::time_point wall, core::Time now) {
    const auto nanos = [](std::chrono::system_clock::time_point t) {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    };
    if (s.seen_wall) {
        const std::int64_t elapsed = core::diff_saturated(now, s.seen_at).count();
        // Where the new wall clock stood at the last look.
        const std::int64_t then = core::sub_saturated(nanos(wall), elapsed);
        const std::int64_t step_back = core::sub_saturated(nanos(*s.seen_wall), then);
        if (step_back >= std::chrono::nanoseconds(step_tolerance).count() &&
            (s.expr.is_wildcard() || step_back >= std::chrono::nanoseconds(clock_reset).count())) {
            const auto reference = std::chrono::system_clock::time_point(
                std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(then)));
            const auto next = s.expr.next_after(reference, s.request.tz);
            // Never later than before: an occurrence already due stays due.
            if (next && *next < s.next) s.next = *next;
        }
    }
    s.seen_wall = wall;
    s.seen_at = now;
}

std::string occurrence_key(const Schedule& s, std::chrono::system_clock::time_point at) {
    std::string key = s.request.task.key ? *s.request.task.key : s.request.name;
    key.append("@");
    key.append(utc_rfc3339(at));
    return key;
}

std::optional<TaskRequest> occurrence(Schedule& s, std::chrono::system_clock::time_point at,
                                      std::optional<TaskStatus> previous) {
    const bool previous_live = previous && !is_terminal(*previous);
    if (previous && *previous != TaskStatus::Succeeded && is_terminal(*previous)) s.broken = true;
    TaskRequest r = s.request.task;
    switch (s.request.overlap) {
        case OverlapPolicy::Skip:
            if (previous_live) {
                ++s.skipped;
                return std::nullopt;
            }
            break;
        case OverlapPolicy::Allow: break;
        case OverlapPolicy::Queue:
            if (previous_live) r.depends_on.push_back(Dep::on_complete(*s.last));
            break;
        case OverlapPolicy::QueueOnSuccess:
            // Chained on the previous occurrence: after a failure, each one
            // is Skipped through its edge, until the schedule is re-added.
            if (previous) {
                r.depends_on.push_back(Dep::on_success(*s.last));
            } else if (s.broken) {
                ++s.skipped;  // the failed occurrence is forgotten: nothing to chain on
                return std::nullopt;
            }
            break;
    }
    r.key = occurrence_key(s, at);
    r.tags.emplace_back("cronoq.recurring", s.request.name);
    r.start_at = at;
    r.start_in.reset();
    if (s.request.deadline_after) {
        r.deadline_at = at + std::chrono::duration_cast<std::chrono::system_clock::duration>(*s.request.deadline_after);
        r.deadline_in.reset();
    }
    return r;
}

}  // namespace cronoq::detail
