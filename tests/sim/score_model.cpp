#include "score_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cronoq::sim {

namespace {

double seconds(Nanos n) { return static_cast<double>(n) / 1e9; }

// Scores within this many points count as equal. The closed forms combine
// times of up to ~1e5 s weighted by up to 1000 points/s, whose rounding
// stays below 1e-7 points; 1e-6 points is half a microsecond of aging.
constexpr double score_tolerance = 1e-6;

}  // namespace

// ---- MinTree ----------------------------------------------------------------

ScoreModel::MinTree::MinTree(std::size_t n) {
    while (size_ < n) size_ <<= 1;
    nodes_.assign(2 * size_, Mins{});
}

ScoreModel::Mins ScoreModel::MinTree::combine(const Mins& a, const Mins& b) {
    return {std::min(a.ready, b.ready), std::min(a.ramp, b.ramp), std::min(a.overdue, b.overdue),
            std::min(a.latest, b.latest)};
}

void ScoreModel::MinTree::set(std::size_t pos, const Mins& leaf) {
    pos += size_;
    nodes_[pos] = leaf;
    for (pos >>= 1; pos > 0; pos >>= 1) nodes_[pos] = combine(nodes_[2 * pos], nodes_[2 * pos + 1]);
}

ScoreModel::Mins ScoreModel::MinTree::query(std::size_t lo, std::size_t hi) const {
    Mins acc;
    for (lo += size_, hi += size_; lo < hi; lo >>= 1, hi >>= 1) {
        if (lo & 1) acc = combine(acc, nodes_[lo++]);
        if (hi & 1) acc = combine(acc, nodes_[--hi]);
    }
    return acc;
}

std::optional<std::size_t> ScoreModel::MinTree::first() const {
    if (nodes_[1].ready == inf) return std::nullopt;
    std::size_t node = 1;
    while (node < size_) node = nodes_[2 * node].ready != inf ? 2 * node : 2 * node + 1;
    return node - size_;
}

// ---- ScoreModel -------------------------------------------------------------

ScoreModel::ScoreModel(const Trace& trace, const core::EngineConfig& config, bool verify)
    : trace_(trace), config_(config), classes_(priority_count), verify_(verify) {
    const UrgencyConfig& u = config_.urgency;
    const PriorityConfig& p = config_.priority;
    // The closed forms below need each piece of the score to have a slope.
    if (u.window.count() <= 0 || u.overdue_rate <= 0 || p.aging_rate <= 0)
        throw std::invalid_argument("ScoreModel needs a positive urgency window, overdue rate and aging rate");
    ramp_slope_ = u.max / core::to_seconds(u.window);
    overdue_span_ = u.overdue_cap / u.overdue_rate;
    age_cap_wait_ = p.age_cap / p.aging_rate;

    const std::size_t n = trace.tasks.size();
    rank_.assign(n, 0);
    state_.assign(n, State::Waiting);
    in_capped_.assign(n, false);
    if (verify_) ready_pos_.assign(n, 0);
    for (std::uint32_t i = 0; i < n; ++i) {
        const TaskRec& t = trace.tasks[i];
        ClassState& c = classes_[index_of(t.priority)];
        (t.has_deadline ? c.by_arrival : c.plain).push_back(i);
    }
    for (ClassState& c : classes_) {
        c.by_latest = c.by_arrival;
        std::sort(c.by_latest.begin(), c.by_latest.end(), [&](std::uint32_t a, std::uint32_t b) {
            const Nanos la = trace.tasks[a].latest_start, lb = trace.tasks[b].latest_start;
            return la != lb ? la < lb : a < b;
        });
        c.latest.reserve(c.by_latest.size());
        for (std::size_t k = 0; k < c.by_latest.size(); ++k) {
            rank_[c.by_latest[k]] = static_cast<std::uint32_t>(k);
            c.latest.push_back(seconds(trace.tasks[c.by_latest[k]].latest_start));
        }
        c.aging = MinTree(c.by_latest.size());
        c.capped = MinTree(c.by_latest.size());
    }
}

ScoreModel::Mins ScoreModel::leaf(std::uint32_t task) const {
    const TaskRec& t = trace_.tasks[task];
    const double r = seconds(t.arrival), l = seconds(t.latest_start);
    const double a = config_.priority.aging_rate;
    return {r, a * r + ramp_slope_ * l, a * r + config_.urgency.overdue_rate * l, l};
}

void ScoreModel::arrive(std::uint32_t task) {
    state_[task] = State::Ready;
    ++ready_;
    if (verify_) {
        ready_pos_[task] = static_cast<std::uint32_t>(ready_list_.size());
        ready_list_.push_back(task);
    }
    const TaskRec& t = trace_.tasks[task];
    if (t.has_deadline) classes_[index_of(t.priority)].aging.set(rank_[task], leaf(task));
}

double ScoreModel::score(std::uint32_t task, Nanos now) const {
    // The engine's expressions, in the engine's order (src/core/engine.cpp).
    const TaskRec& t = trace_.tasks[task];
    const PriorityConfig& p = config_.priority;
    const double waited = std::max(0.0, core::to_seconds(core::Duration(now - t.arrival)));
    double s = p.base[index_of(t.priority)] + std::min(p.aging_rate * waited, p.age_cap);
    if (t.has_deadline) {
        const UrgencyConfig& u = config_.urgency;
        const double until = core::to_seconds(core::Duration(t.latest_start - now));
        const double window = core::to_seconds(u.window);
        double urgency;
        if (until > window)
            urgency = 0.0;
        else if (until >= 0)
            urgency = window > 0 ? u.max * (1.0 - until / window) : u.max;
        else
            urgency = u.max + std::min(u.overdue_rate * -until, u.overdue_cap);
        s += urgency;
    }
    return s;
}

void ScoreModel::promote(ClassState& c, Nanos now) {
    const double cap_wait = age_cap_wait_;
    while (c.promote_next < c.by_arrival.size()) {
        const std::uint32_t task = c.by_arrival[c.promote_next];
        if (core::to_seconds(core::Duration(now - trace_.tasks[task].arrival)) < cap_wait) break;
        if (state_[task] == State::Ready) {
            c.aging.clear(rank_[task]);
            c.capped.set(rank_[task], leaf(task));
            in_capped_[task] = true;
        }
        ++c.promote_next;
    }
}

std::optional<std::uint32_t> ScoreModel::plain_head(ClassState& c) {
    while (c.plain_head < c.plain.size() && state_[c.plain[c.plain_head]] == State::Gone) ++c.plain_head;
    if (c.plain_head < c.plain.size() && state_[c.plain[c.plain_head]] == State::Ready) return c.plain[c.plain_head];
    return std::nullopt;
}

double ScoreModel::best_score(Nanos now) {
    const PriorityConfig& p = config_.priority;
    const UrgencyConfig& u = config_.urgency;
    const double T = seconds(now);
    const double W = core::to_seconds(u.window);
    double best = -inf;
    for (std::size_t k = 0; k < priority_count; ++k) {
        ClassState& c = classes_[k];
        const double base = p.base[k];
        if (auto head = plain_head(c)) best = std::max(best, score(*head, now));
        if (c.by_latest.empty()) continue;
        promote(c, now);
        // Regions of the latest-start order, from the most urgent:
        // overdue at the cap [0, cap_end), overdue [cap_end, ramp_begin),
        // in the window [ramp_begin, calm_begin), no urgency [calm_begin, n).
        const auto at = [&](double x, bool upper) {
            const auto it = upper ? std::upper_bound(c.latest.begin(), c.latest.end(), x)
                                  : std::lower_bound(c.latest.begin(), c.latest.end(), x);
            return static_cast<std::size_t>(it - c.latest.begin());
        };
        const std::size_t n = c.latest.size();
        const std::size_t calm_begin = at(T + W, true);
        const std::size_t ramp_begin = at(T, false);
        const std::size_t cap_end = at(T - overdue_span_, true);
        const double a = p.aging_rate;
        const double top = u.max + u.overdue_cap;

        // Still aging: aging = a * (T - ready).
        if (auto m = c.aging.query(calm_begin, n); m.ready != inf) best = std::max(best, base + a * (T - m.ready));
        if (auto m = c.aging.query(ramp_begin, calm_begin); m.ramp != inf)
            best = std::max(best, base + u.max + (a + ramp_slope_) * T - m.ramp);
        if (auto m = c.aging.query(cap_end, ramp_begin); m.overdue != inf)
            best = std::max(best, base + u.max + (a + u.overdue_rate) * T - m.overdue);
        if (auto m = c.aging.query(0, cap_end); m.ready != inf) best = std::max(best, base + a * (T - m.ready) + top);

        // Aging capped: only the latest start matters.
        const double aged = base + p.age_cap;
        if (auto m = c.capped.query(calm_begin, n); m.ready != inf) best = std::max(best, aged);
        if (auto m = c.capped.query(ramp_begin, calm_begin); m.latest != inf)
            best = std::max(best, aged + u.max - ramp_slope_ * (m.latest - T));
        if (auto m = c.capped.query(cap_end, ramp_begin); m.latest != inf)
            best = std::max(best, aged + u.max + u.overdue_rate * (T - m.latest));
        if (auto m = c.capped.query(0, cap_end); m.ready != inf) best = std::max(best, aged + top);
    }
    return best;
}

bool ScoreModel::ranks_before(std::uint32_t a, std::uint32_t b, Nanos now) const {
    // detail::Rank::beats: higher score, then earlier ready time, then lower
    // id (ids follow submission, that is trace, order).
    const double sa = score(a, now), sb = score(b, now);
    if (sa != sb) return sa > sb;
    const Nanos ra = trace_.tasks[a].arrival, rb = trace_.tasks[b].arrival;
    if (ra != rb) return ra < rb;
    return a < b;
}

std::optional<std::uint32_t> ScoreModel::head_rule_choice(Nanos now) {
    std::optional<std::uint32_t> best;
    auto consider = [&](std::uint32_t task) {
        if (!best || ranks_before(task, *best, now)) best = task;
    };
    for (ClassState& c : classes_) {
        if (auto head = plain_head(c)) consider(*head);
        if (c.by_latest.empty()) continue;
        const auto in_aging = c.aging.first();
        const auto in_capped = c.capped.first();
        if (in_aging || in_capped) {
            const std::size_t pos = std::min(in_aging.value_or(c.by_latest.size()), in_capped.value_or(c.by_latest.size()));
            consider(c.by_latest[pos]);
        }
    }
    return best;
}

ScoreModel::Verdict ScoreModel::dispatch(std::uint32_t task, Nanos now) {
    if (state_[task] != State::Ready) throw std::logic_error("dispatch of a task that is not ready");
    Verdict v{ready_ > 1, true};
    if (v.contended) {
        const double best = best_score(now);
        v.best = score(task, now) >= best - score_tolerance;
        if (verify_) {
            double scanned = -inf;
            for (std::uint32_t other : ready_list_) scanned = std::max(scanned, score(other, now));
            if (std::abs(scanned - best) > score_tolerance) ++verify_mismatches_;
        }
    }
    state_[task] = State::Gone;
    --ready_;
    if (verify_) {
        const std::uint32_t pos = ready_pos_[task];
        ready_list_[pos] = ready_list_.back();
        ready_pos_[ready_list_[pos]] = pos;
        ready_list_.pop_back();
    }
    const TaskRec& t = trace_.tasks[task];
    if (t.has_deadline) {
        ClassState& c = classes_[index_of(t.priority)];
        (in_capped_[task] ? c.capped : c.aging).clear(rank_[task]);
    }
    return v;
}

}  // namespace cronoq::sim
