#pragma once
// Fixed-start reservations of one pool (docs/guide/time-and-cron.md). A fixed-start task
// reserves a slot over [start, start + expected duration); at no instant may
// more than `limit` reservations overlap.
#include <cronoq/core/time.hpp>
#include <cronoq/ids.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <span>
#include <utility>
#include <vector>

namespace cronoq::core::detail {

struct Interval {
    Time start;
    Time end;
};

class Reservations {
public:
    void set_limit(std::size_t limit) { limit_ = limit; }
    std::size_t limit() const { return limit_; }
    bool empty() const { return by_start_.empty(); }
    std::size_t size() const { return by_start_.size(); }

    void add(Interval i, TaskId task) { by_start_.emplace(i.start, Entry{i.end, task}); }

    void remove(Time start, TaskId task) {
        auto [first, last] = by_start_.equal_range(start);
        for (auto it = first; it != last; ++it)
            if (it->second.task == task) {
                by_start_.erase(it);
                return;
            }
    }

    /// Whether adding `extra` keeps every instant at or below the limit.
    /// Proportional to the reservations that start before the last new end.
    bool fits(std::span<const Interval> extra) const {
        if (extra.empty()) return true;
        Time lo = extra.front().start, hi = extra.front().end;
        for (const Interval& i : extra) {
            lo = std::min(lo, i.start);
            hi = std::max(hi, i.end);
        }
        // +1 at a start, -1 at an end; ends sort first at the same instant
        // (intervals are half-open: one ending as another starts is fine).
        std::vector<std::pair<Time, int>> events;
        for (auto it = by_start_.begin(); it != by_start_.end() && it->first < hi; ++it)
            if (it->second.end > lo) {
                events.emplace_back(it->first, +1);
                events.emplace_back(it->second.end, -1);
            }
        for (const Interval& i : extra) {
            events.emplace_back(i.start, +1);
            events.emplace_back(i.end, -1);
        }
        std::sort(events.begin(), events.end());
        std::ptrdiff_t open = 0;
        for (const auto& [at, delta] : events) {
            open += delta;
            if (open > static_cast<std::ptrdiff_t>(limit_)) return false;
        }
        return true;
    }

    /// The most reservations that overlap at any instant of [from, until).
    std::size_t peak(Time from, Time until) const {
        std::vector<std::pair<Time, int>> events;
        for (auto it = by_start_.begin(); it != by_start_.end() && it->first < until; ++it)
            if (it->second.end > from) {
                events.emplace_back(std::max(it->first, from), +1);
                events.emplace_back(it->second.end, -1);
            }
        std::sort(events.begin(), events.end());
        std::ptrdiff_t open = 0, most = 0;
        for (const auto& [at, delta] : events) {
            open += delta;
            most = std::max(most, open);
        }
        return static_cast<std::size_t>(most);
    }

private:
    struct Entry {
        Time end;
        TaskId task;
    };
    std::multimap<Time, Entry> by_start_;
    std::size_t limit_ = 1;
};

}  // namespace cronoq::core::detail
