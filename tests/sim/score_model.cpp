#include "score_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cronoq::sim {

namespace {

double seconds(Nanos n) { return static_cast<double>(n) / 1e9; }

// Scores within this many points count as equal. The lines combine times of
// up to ~1e5 s weighted by up to 1000 points/s, whose rounding stays below
// 1e-7 points; 1e-6 points is half a microsecond of aging.
constexpr double score_tolerance = 1e-6;

}  // namespace

ScoreModel::ScoreModel(const Trace& trace, const core::EngineConfig& config, bool verify)
    : trace_(trace),
      config_(config),
      classes_(priority_count),
      is_ready_(trace.tasks.size(), false),
      tree_(trace.tasks.size()),
      verify_(verify) {
    for (std::size_t c = 0; c < priority_count; ++c) {
        share_units_[c] = std::llround(config_.priority.min_share[c] * static_cast<double>(unit));
        sharing_ = sharing_ || share_units_[c] > 0;
    }
    if (verify_) ready_pos_.assign(trace.tasks.size(), 0);
}

double ScoreModel::window_seconds(const TaskRec& t) const {
    // As the engine: the expected duration is deadline - latest start.
    const UrgencyConfig& u = config_.urgency;
    const double expected = core::to_seconds(core::Duration(t.deadline - t.latest_start));
    return std::max(core::to_seconds(u.window), u.window_factor * expected);
}

double ScoreModel::score(std::uint32_t task, Nanos now) const {
    // The engine's expressions, in the engine's order (src/core/engine_state.hpp).
    const TaskRec& t = trace_.tasks[task];
    const PriorityConfig& p = config_.priority;
    const double waited = std::max(0.0, core::to_seconds(core::Duration(now - t.arrival)));
    double s = p.base[index_of(t.priority)] + std::min(p.aging_rate * waited, p.age_cap);
    if (t.has_deadline) {
        const UrgencyConfig& u = config_.urgency;
        const double until = core::to_seconds(core::Duration(t.latest_start - now));
        const double window = window_seconds(t);
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

ScoreModel::Piece ScoreModel::piece_at(std::uint32_t task, double t) const {
    const TaskRec& rec = trace_.tasks[task];
    const PriorityConfig& p = config_.priority;
    const double r = seconds(rec.arrival);
    Piece piece{p.base[index_of(rec.priority)], 0.0, inf};
    // Aging: a * (t - r) until it reaches the cap.
    if (p.aging_rate > 0 && t - r < p.age_cap / p.aging_rate) {
        piece.k -= p.aging_rate * r;
        piece.m += p.aging_rate;
        piece.until = r + p.age_cap / p.aging_rate;
    } else {
        piece.k += p.aging_rate > 0 ? p.age_cap : 0.0;
    }
    if (!rec.has_deadline) return piece;
    const UrgencyConfig& u = config_.urgency;
    const double latest = seconds(rec.latest_start);
    const double window = window_seconds(rec);
    if (latest - t > window) {
        piece.until = std::min(piece.until, latest - window);  // urgency 0 until the window opens
    } else if (latest - t > 0) {
        // The ramp: max * (1 - (latest - t) / window).
        piece.k += u.max - u.max * latest / window;
        piece.m += u.max / window;
        piece.until = std::min(piece.until, latest);
    } else if (u.overdue_rate > 0 && t - latest < u.overdue_cap / u.overdue_rate) {
        piece.k += u.max - u.overdue_rate * latest;
        piece.m += u.overdue_rate;
        piece.until = std::min(piece.until, latest + u.overdue_cap / u.overdue_rate);
    } else {
        piece.k += u.max + (u.overdue_rate > 0 ? u.overdue_cap : 0.0);
    }
    return piece;
}

void ScoreModel::advance(double t) {
    while (!breakpoints_.empty() && breakpoints_.top().first <= t) {
        const std::uint32_t task = breakpoints_.top().second;
        breakpoints_.pop();
        if (!is_ready_[task]) continue;
        const Piece piece = piece_at(task, t);
        tree_.set(task, piece.k, piece.m, t);
        // Rounding may put the next breakpoint at t itself: take it next time.
        if (piece.until < inf) breakpoints_.emplace(std::max(piece.until, std::nextafter(t, inf)), task);
    }
}

void ScoreModel::arrive(std::uint32_t task, Nanos now) {
    const double t = seconds(now);
    advance(t);
    is_ready_[task] = true;
    ++ready_;
    if (verify_) {
        ready_pos_[task] = static_cast<std::uint32_t>(ready_list_.size());
        ready_list_.push_back(task);
    }
    const TaskRec& rec = trace_.tasks[task];
    ClassState& c = classes_[index_of(rec.priority)];
    ++c.ready;
    if (rec.has_deadline)
        c.deadlines.emplace(rec.latest_start, task);
    else
        c.plain.push_back(task);
    const Piece piece = piece_at(task, t);
    tree_.set(task, piece.k, piece.m, t);
    if (piece.until < inf) breakpoints_.emplace(std::max(piece.until, std::nextafter(t, inf)), task);
}

bool ScoreModel::ranks_before(std::uint32_t a, std::uint32_t b, Nanos now) const {
    // detail::Rank::beats: higher score, then earlier ready time, then lower
    // id (ids follow submission, that is trace, order).
    const double sa = score(a, now), sb = score(b, now);
    if (sa != sb) return sa > sb;
    return waited_longer(a, b);
}

bool ScoreModel::waited_longer(std::uint32_t a, std::uint32_t b) const {
    const Nanos ra = trace_.tasks[a].arrival, rb = trace_.tasks[b].arrival;
    if (ra != rb) return ra < rb;
    return a < b;
}

std::optional<std::uint32_t> ScoreModel::head_rule_choice(Nanos now) {
    std::optional<std::uint32_t> best;
    std::array<std::optional<std::uint32_t>, priority_count> oldest{};
    std::size_t contenders = 0;
    for (std::size_t k = 0; k < priority_count; ++k) {
        ClassState& c = classes_[k];
        while (!c.plain.empty() && !is_ready_[c.plain.front()]) c.plain.pop_front();
        while (!c.deadlines.empty() && !is_ready_[c.deadlines.top().second]) c.deadlines.pop();
        auto consider = [&](std::uint32_t task) {
            if (!best || ranks_before(task, *best, now)) best = task;
            if (!oldest[k] || waited_longer(task, *oldest[k])) oldest[k] = task;
        };
        if (!c.plain.empty()) consider(c.plain.front());
        if (!c.deadlines.empty()) consider(c.deadlines.top().second);
        contenders += oldest[k].has_value();
    }
    if (!best || !sharing_) return best;
    // Deficit counting, as detail::ReadyQueue does it.
    pending_credit_ = credit_;
    pending_ = true;
    std::optional<std::size_t> owed;
    if (contenders >= 2) {
        for (std::size_t k = 0; k < priority_count; ++k) {
            if (!oldest[k]) continue;
            pending_credit_[k] += share_units_[k];
            if (pending_credit_[k] >= unit && (!owed || pending_credit_[k] > pending_credit_[*owed])) owed = k;
        }
    }
    if (owed) {
        pending_credit_[*owed] -= unit;
        return oldest[*owed];
    }
    const std::size_t k = index_of(trace_.tasks[*best].priority);
    if (*oldest[k] == *best) pending_credit_[k] = std::max<std::int64_t>(0, pending_credit_[k] - unit);
    return best;
}

ScoreModel::Verdict ScoreModel::dispatch(std::uint32_t task, Nanos now) {
    if (!is_ready_[task]) throw std::logic_error("dispatch of a task that is not ready");
    const double t = seconds(now);
    advance(t);
    Verdict v{ready_ > 1, true};
    if (v.contended) {
        const double best = tree_.max(t);
        v.best = score(task, now) >= best - score_tolerance;
        if (verify_) {
            double scanned = -inf;
            for (std::uint32_t other : ready_list_) scanned = std::max(scanned, score(other, now));
            if (std::abs(scanned - best) > score_tolerance) ++verify_mismatches_;
        }
    }
    is_ready_[task] = false;
    tree_.clear(task, t);
    --ready_;
    if (verify_) {
        const std::uint32_t pos = ready_pos_[task];
        ready_list_[pos] = ready_list_.back();
        ready_pos_[ready_list_[pos]] = pos;
        ready_list_.pop_back();
    }
    const std::size_t k = index_of(trace_.tasks[task].priority);
    if (pending_) {
        credit_ = pending_credit_;
        pending_ = false;
    }
    if (--classes_[k].ready == 0) credit_[k] = 0;
    return v;
}

}  // namespace cronoq::sim
