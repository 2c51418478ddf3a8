#pragma once
// docs/guide/ordering.md ordering as the randomized tests check it: the score, the heads
// of each class's queues, and the guaranteed shares (deficit counting), for
// a pool without resources or fixed starts (every head may take a free
// slot). Given the ready tasks of a pool at a dispatch, it says whether the
// engine's choice is allowed, and keeps each pool's credit as the engine
// must.
#include "random_calls.hpp"

#include <cronoq/core/engine.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace cronoq::core::test {

/// What the ordering needs to know of a ready task.
struct ReadyTask {
    std::uint64_t id = 0;
    Priority priority = Priority::Normal;
    Time ready_since{};
    std::uint64_t ready_seq = 0;  ///< order of becoming ready: FIFO order within a class
    bool has_deadline = false;
    Time deadline{};
    Time latest_start{};
};

/// Shares and a window factor drawn from `seed` with a generator of their
/// own, so that the calls a test draws from its seed stay the same. Seeds
/// 1, 5, 9, ... keep the defaults.
inline void randomize_ordering(EngineConfig& config, std::uint64_t seed) {
    if (seed % 4 == 1) return;
    Random r(seed ^ 0x5eed0f5a4e5ull);
    double sum = 0;
    for (double& share : config.priority.min_share) {
        share = r.chance(50) ? 0.0 : static_cast<double>(1 + r.below(300)) / 1000.0;
        sum += share;
    }
    if (sum >= 1)
        for (double& share : config.priority.min_share) share /= 2;
    config.urgency.window_factor = r.pick(std::array<double, 6>{0.0, 0.5, 1.0, 1.5, 2.0, 4.0});
}

/// The engine config of a model run: its seed, its retention and this
/// seed's shares and window factor.
inline EngineConfig model_config(std::uint64_t seed, Duration retention, std::size_t retention_max) {
    EngineConfig c;
    c.seed = seed;
    c.retention = retention;
    c.retention_max = retention_max;
    randomize_ordering(c, seed);
    return c;
}

class OrderingModel {
public:
    explicit OrderingModel(const EngineConfig& config) : priority_(config.priority), urgency_(config.urgency) {
        for (std::size_t c = 0; c < priority_count; ++c) {
            share_units_[c] = std::llround(priority_.min_share[c] * static_cast<double>(unit));
            sharing_ = sharing_ || share_units_[c] > 0;
        }
    }

    /// The docs/guide/ordering.md score, computed as the engine must.
    double score(const ReadyTask& t, Time now) const {
        const double waited = std::max(0.0, to_seconds(now - t.ready_since));
        double s = priority_.base[index_of(t.priority)] + std::min(priority_.aging_rate * waited, priority_.age_cap);
        if (t.has_deadline) {
            const double until = to_seconds(t.latest_start - now);
            const double expected = to_seconds(t.deadline - t.latest_start);
            const double window = std::max(to_seconds(urgency_.window), urgency_.window_factor * expected);
            if (until > window) {
            } else if (until >= 0) {
                s += window > 0 ? urgency_.max * (1.0 - until / window) : urgency_.max;
            } else {
                s += urgency_.max + std::min(urgency_.overdue_rate * -until, urgency_.overdue_cap);
            }
        }
        return s;
    }

    /// Checks that the engine may dispatch `t` at `now` from a pool whose
    /// ready tasks are `ready` (`t` among them), and moves the pool's
    /// credit on. Empty if allowed, else why not.
    std::string check_dispatch(std::size_t pool, const ReadyTask& t, const std::vector<ReadyTask>& ready, Time now) {
        if (credit_.size() <= pool) credit_.resize(pool + 1);
        std::array<std::int64_t, priority_count>& credit = credit_[pool];
        std::array<const ReadyTask*, priority_count> fifo_head{};
        std::array<const ReadyTask*, priority_count> deadline_head{};
        for (const ReadyTask& o : ready) {
            if (o.has_deadline) {
                const ReadyTask*& h = deadline_head[index_of(o.priority)];
                if (!h || o.latest_start < h->latest_start || (o.latest_start == h->latest_start && o.id < h->id))
                    h = &o;
            } else {
                const ReadyTask*& h = fifo_head[index_of(o.priority)];
                if (!h || o.ready_seq < h->ready_seq) h = &o;
            }
        }
        // Shares: who is owed this dispatch.
        std::size_t contenders = 0;
        for (std::size_t c = 0; c < priority_count; ++c) contenders += fifo_head[c] || deadline_head[c];
        std::optional<std::size_t> owed;
        if (sharing_ && contenders >= 2) {
            for (std::size_t c = 0; c < priority_count; ++c) {
                if (!fifo_head[c] && !deadline_head[c]) continue;
                credit[c] += share_units_[c];
                if (credit[c] >= unit && (!owed || credit[c] > credit[*owed])) owed = c;
            }
        }
        // A class's head that has waited longest.
        auto oldest_head = [&](std::size_t c) {
            const ReadyTask* oldest = nullptr;
            for (const ReadyTask* h : {fifo_head[c], deadline_head[c]}) {
                if (!h) continue;
                if (!oldest || h->ready_since < oldest->ready_since ||
                    (h->ready_since == oldest->ready_since && h->id < oldest->id))
                    oldest = h;
            }
            return oldest;
        };
        if (owed) {
            const ReadyTask* oldest = oldest_head(*owed);
            credit[*owed] -= unit;
            ++owed_dispatches_;
            if (oldest->id != t.id)
                return "dispatched " + show(t, now) + " but the share owed to " + to_string(static_cast<Priority>(*owed)) +
                       " goes to " + show(*oldest, now);
            return {};
        }
        // Only the class's oldest work pays: an urgent younger task won by
        // score does not use up the share.
        if (sharing_ && oldest_head(index_of(t.priority))->id == t.id) {
            std::int64_t& paid = credit[index_of(t.priority)];
            paid = std::max<std::int64_t>(0, paid - unit);
        }
        const double st = score(t, now);
        auto head_beats = [&](const ReadyTask& h) {
            const double sh = score(h, now);
            if (sh > st + 1e-9) return true;
            if (sh != st) return false;
            if (h.ready_since != t.ready_since) return h.ready_since < t.ready_since;
            return h.id < t.id;
        };
        for (const auto* heads : {&fifo_head, &deadline_head})
            for (const ReadyTask* h : *heads)
                if (h && h->id != t.id && head_beats(*h))
                    return "dispatched " + show(t, now) + " over the queue head " + show(*h, now);
        // (Deadline tasks behind their heap head are not compared: the
        // heads-only rule can pass over one that has aged more, by design.)
        for (const ReadyTask& o : ready) {
            if (o.has_deadline || o.id == t.id) continue;
            if (score(o, now) > st + 1e-9) return "dispatched " + show(t, now) + " over " + show(o, now);
            const ReadyTask* h = fifo_head[index_of(o.priority)];
            if (h != &o && o.ready_since < h->ready_since) return "FIFO out of order at " + show(o, now);
        }
        const ReadyTask* own_head = fifo_head[index_of(t.priority)];
        if (!t.has_deadline && own_head->id != t.id)
            return "dispatched " + show(t, now) + " out of FIFO order, ahead of " + show(*own_head, now);
        return {};
    }

    /// The last ready task of a class in `pool` left Ready: its credit goes.
    void class_emptied(std::size_t pool, Priority p) {
        if (pool < credit_.size()) credit_[pool][index_of(p)] = 0;
    }

    bool sharing() const { return sharing_; }
    /// Dispatches so far that a share decided (coverage).
    std::uint64_t owed_dispatches() const { return owed_dispatches_; }

    std::string show(const ReadyTask& x, Time now) const {
        std::ostringstream os;
        os << "task " << x.id << " (" << to_string(x.priority) << ", score " << score(x, now) << ", ready at "
           << to_seconds(x.ready_since.time_since_epoch()) << " s, #" << x.ready_seq;
        if (x.has_deadline) os << ", latest start " << to_seconds(x.latest_start.time_since_epoch()) << " s";
        os << ")";
        return os.str();
    }

private:
    static constexpr std::int64_t unit = 1'000'000'000;  // a dispatch, in the engine's credit units
    PriorityConfig priority_;
    UrgencyConfig urgency_;
    std::array<std::int64_t, priority_count> share_units_{};
    bool sharing_ = false;
    std::uint64_t owed_dispatches_ = 0;
    std::vector<std::array<std::int64_t, priority_count>> credit_;  // per pool
};

}  // namespace cronoq::core::test
