#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

namespace cronoq::sim {

namespace {

// Nearest-rank percentile over (wait, censored) pairs.
Quantile percentile(std::vector<std::pair<Nanos, bool>>& waits, double p) {
    Quantile q;
    if (waits.empty()) return q;
    const auto n = waits.size();
    auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(n)));
    k = std::clamp<std::size_t>(k, 1, n) - 1;
    q.empty = false;
    q.value = waits[k].first;
    // Exact only if no censored wait sorts at or below the chosen one.
    for (std::size_t i = 0; i < n && waits[i].first <= q.value; ++i)
        if (waits[i].second) {
            q.lower_bound = true;
            break;
        }
    return q;
}

std::string printf_string(const char* format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

std::string format_quantile(const Quantile& q) {
    if (q.empty) return "-";
    return (q.lower_bound ? "> " : "") + format_duration(q.value);
}

// A grid with a title, as a Markdown table or aligned text.
std::string grid(const std::string& title, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& cells, Format format) {
    std::string out;
    if (format == Format::Markdown) {
        out += "#### " + title + "\n\n";
        auto emit = [&](const std::vector<std::string>& line) {
            out += "|";
            for (const std::string& c : line) out += " " + c + " |";
            out += "\n";
        };
        emit(header);
        out += "|---|";
        for (std::size_t i = 1; i < header.size(); ++i) out += "---:|";
        out += "\n";
        for (const auto& line : cells) emit(line);
        return out + "\n";
    }
    std::vector<std::size_t> width(header.size());
    for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
    for (const auto& line : cells)
        for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
    auto emit = [&](const std::vector<std::string>& line) {
        for (std::size_t i = 0; i < line.size(); ++i) {
            const std::string pad(width[i] - line[i].size(), ' ');
            out += i == 0 ? line[i] + pad : "  " + pad + line[i];
        }
        out += "\n";
    };
    out += title + "\n";
    emit(header);
    std::size_t total = 0;
    for (std::size_t w : width) total += w + 2;
    out += std::string(total - 2, '-') + "\n";
    for (const auto& line : cells) emit(line);
    return out + "\n";
}

// Which fixed starts a worker could have met: a start needs a worker free
// between its task's arrival and the start + the tolerance, either spare at
// the arrival (idle, and not waited for by an earlier start) or freed by an
// attempt ending in that window (and no earlier than max_hold before the
// start, as the engine holds no longer), and one freed worker serves one
// start.
// Matching starts to the run's own frees, earliest deadline first, to the
// earliest free each can use gives the most starts that could be met
// without preempting or knowing future submissions; the rest are
// unreachable.
void count_reachable_starts(const Trace& trace, const RunResult& run, Row& row) {
    std::vector<std::uint32_t> starts;
    for (std::uint32_t i = 0; i < trace.tasks.size(); ++i) {
        const TaskRec& t = trace.tasks[i];
        if (t.has_start() && !run.rejected[i] && t.start <= trace.horizon - start_tolerance) starts.push_back(i);
    }
    std::sort(starts.begin(), starts.end(),
              [&](std::uint32_t a, std::uint32_t b) { return trace.tasks[a].start < trace.tasks[b].start; });
    std::multiset<Nanos> frees(run.completions.begin(), run.completions.end());
    for (std::uint32_t i : starts) {
        const TaskRec& t = trace.tasks[i];
        const Nanos started = run.dispatched[i];
        const bool hit = started != not_yet && started - t.start <= start_tolerance;
        bool reachable = run.spare_at_arrival[i];
        if (!reachable) {
            // A worker freed earlier than max_hold (30 s) before the start
            // is not kept for it, by design.
            const auto free = frees.lower_bound(std::max(t.arrival, t.start - max_hold));
            if (free != frees.end() && *free <= t.start + start_tolerance) {
                frees.erase(free);
                reachable = true;
            }
        }
        row.starts_unreachable += !reachable;
        row.starts_hit_reachable += hit && reachable;
    }
}

}  // namespace

std::string format_percent(std::size_t part, std::size_t whole) {
    if (whole == 0) return "n/a";
    return printf_string("%.1f %%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

std::string format_starved(const std::array<bool, priority_count>& starved) {
    static constexpr std::array<const char*, priority_count> initial{"C", "H", "N", "L"};
    std::string out;
    for (std::size_t c = 0; c < priority_count; ++c) {
        if (!starved[c]) continue;
        if (!out.empty()) out += ' ';
        out += initial[c];
    }
    return out.empty() ? "-" : out;
}

Nanos measured_until(const Trace& trace) { return trace.horizon - trace.horizon / 10; }

std::string format_duration(Nanos ns) {
    if (ns == 0) return "0";
    const double s = static_cast<double>(ns) / 1e9;
    if (s < 0.001) return printf_string("%.3f ms", s * 1e3);
    if (s < 0.01) return printf_string("%.2f ms", s * 1e3);
    if (s < 1) return printf_string("%.0f ms", s * 1e3);
    if (s < 10) return printf_string("%.2f s", s);
    if (s < 100) return printf_string("%.1f s", s);
    if (s < 10000) return printf_string("%.0f s", s);
    return printf_string("%.1f h", s / 3600);
}

std::string format_count(std::size_t n) {
    std::string digits = std::to_string(n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ' ';
        out += digits[i];
    }
    return out;
}

Row summarize(const Trace& trace, const RunResult& run) {
    Row row;
    row.policy = run.policy;
    row.contended = run.contended;
    row.contended_best = run.contended_best;
    row.judged = run.judged;
    row.retries = run.retries;
    std::array<std::vector<std::pair<Nanos, bool>>, priority_count> waits;
    const Nanos measure_end = measured_until(trace);
    const auto starve_end = static_cast<Nanos>(static_cast<double>(trace.horizon) * starved_before);
    for (std::size_t i = 0; i < trace.tasks.size(); ++i) {
        const TaskRec& t = trace.tasks[i];
        ++row.arrived;
        if (run.rejected[i]) {
            ++row.rejected;
            continue;
        }
        const Nanos started = run.dispatched[i], ended = run.finished[i];
        const std::size_t cls = index_of(t.priority);
        const bool low = t.priority == Priority::Low;
        const Nanos ready = t.ready_at();
        const bool measured = ready < measure_end;
        if (ended != not_yet) {
            ++row.ended;
            row.failed += run.ended[i] == Ended::Failed;
            row.dead_lettered += run.ended[i] == Ended::DeadLettered;
        }
        if (started == not_yet) {
            if (ready <= trace.horizon) {
                if (measured) waits[cls].emplace_back(trace.horizon - ready, true);
                if (ready <= starve_end) row.starved[cls] = true;
                if (low) {
                    ++row.low_unstarted;
                    row.oldest_low_unstarted = std::max(row.oldest_low_unstarted, trace.horizon - ready);
                }
            }
        } else {
            if (measured) waits[cls].emplace_back(started - ready, false);
            if (low) {
                row.low_started = true;
                row.max_low_wait = std::max(row.max_low_wait, started - ready);
            }
        }
        if (t.has_deadline && t.deadline <= trace.horizon) {
            ++row.deadline_known;
            if (run.ended[i] == Ended::Succeeded && ended <= t.deadline) ++row.deadline_hit;
        }
        if (t.has_start() && t.start <= trace.horizon - start_tolerance) {
            ++row.starts_known;
            row.starts_hit += started != not_yet && started - t.start <= start_tolerance;
        }
    }
    count_reachable_starts(trace, run, row);
    row.running = run.running_at_horizon;
    row.waiting = run.waiting_at_horizon;
    for (std::size_t c = 0; c < priority_count; ++c) {
        std::sort(waits[c].begin(), waits[c].end());
        row.p50[c] = percentile(waits[c], 0.50);
        row.p99[c] = percentile(waits[c], 0.99);
    }
    row.utilization = static_cast<double>(run.busy) / (static_cast<double>(trace.workers) * static_cast<double>(trace.horizon));
    return row;
}

std::string describe(const Trace& trace, const SimConfig& config) {
    std::array<std::size_t, priority_count> per_class{};
    std::size_t with_deadline = 0;
    for (const TaskRec& t : trace.tasks) {
        ++per_class[index_of(t.priority)];
        with_deadline += t.has_deadline;
    }
    const Workload& w = *trace.workload;
    // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on a
    // chain of operator+ that starts from a literal.
    std::string s;
    s += '(';
    s += w.key;
    s += ") ";
    s += w.name;
    s += ", ";
    s += w.service_text;
    s += ", load " + printf_string("%.1fx", trace.load);
    s += ": " + std::to_string(config.workers) + " workers, horizon " + format_duration(trace.horizon);
    s += ", " + format_count(trace.tasks.size()) + " tasks (Critical " + format_count(per_class[0]);
    s += ", High " + format_count(per_class[1]) + ", Normal " + format_count(per_class[2]);
    s += ", Low " + format_count(per_class[3]) + "), " + format_count(with_deadline) + " with a deadline";
    return s;
}

std::string render_table(const Trace& trace, const SimConfig& config, const std::vector<Row>& rows, Format format) {
    const std::vector<std::string> header{"policy",   "Crit p50",  "Crit p99",     "High p50",        "High p99",
                                          "Norm p50", "Norm p99",  "Low p50",      "Low p99",         "deadline hit",
                                          "adherence", "starved", "max Low wait", "Low not started", "util"};
    std::vector<std::vector<std::string>> cells;
    for (const Row& r : rows) {
        std::vector<std::string> line{to_string(r.policy)};
        for (std::size_t c = 0; c < priority_count; ++c) {
            line.push_back(format_quantile(r.p50[c]));
            line.push_back(format_quantile(r.p99[c]));
        }
        line.push_back(format_percent(r.deadline_hit, r.deadline_known));
        line.push_back(r.judged ? format_percent(r.contended_best, r.contended) : "-");
        line.push_back(format_starved(r.starved));
        // The longest wait of a Low task, or the age of a Low task still
        // queued when that is longer.
        if (r.low_unstarted > 0 && (!r.low_started || r.oldest_low_unstarted > r.max_low_wait))
            line.push_back("> " + format_duration(r.oldest_low_unstarted));
        else
            line.push_back(r.low_started ? format_duration(r.max_low_wait) : "-");
        line.push_back(format_count(r.low_unstarted));
        line.push_back(printf_string("%.1f %%", 100.0 * r.utilization));
        cells.push_back(std::move(line));
    }
    return grid(describe(trace, config), header, cells, format);
}

std::string render_fixed_starts(const std::vector<VariantRows>& traces, Format format) {
    std::vector<std::string> header{"trace", "tasks", "fixed starts"};
    for (Policy p : policies) header.push_back(std::string(to_string(p)) + " hit");
    header.insert(header.begin() + 5, "cronoq unreachable");
    header.push_back("rejected (cronoq)");
    std::vector<std::vector<std::string>> cells;
    for (const VariantRows& v : traces) {
        std::vector<std::string> line{v.trace, format_count(v.tasks), format_count(v.rows[2].starts_known)};
        for (const Row& r : v.rows) line.push_back(format_percent(r.starts_hit, r.starts_known));
        line.insert(line.begin() + 5, format_count(v.rows[0].starts_unreachable));
        line.push_back(format_count(v.rows[0].rejected));
        cells.push_back(std::move(line));
    }
    return grid("Fixed starts: 10 % of tasks start 1-60 s after arrival; hit = dispatched within 1 s of the start",
                header, cells, format);
}

std::string render_failures(const std::vector<VariantRows>& traces, Format format) {
    const std::vector<std::string> header{"trace",    "policy",       "Crit p99", "High p99",      "Norm p99",
                                          "Low p99",  "deadline hit", "retried",  "dead-lettered", "failed",
                                          "starved",  "util"};
    std::vector<std::vector<std::string>> cells;
    for (const VariantRows& v : traces) {
        for (const Row& r : v.rows) {
            std::vector<std::string> line{v.trace, to_string(r.policy)};
            for (std::size_t c = 0; c < priority_count; ++c) line.push_back(format_quantile(r.p99[c]));
            line.push_back(format_percent(r.deadline_hit, r.deadline_known));
            line.push_back(format_count(r.retries));
            line.push_back(format_count(r.dead_lettered));
            line.push_back(format_count(r.failed));
            line.push_back(format_starved(r.starved));
            line.push_back(printf_string("%.1f %%", 100.0 * r.utilization));
            cells.push_back(std::move(line));
        }
    }
    return grid("Failures (5 % of attempts retryable, 1 % permanent) and deadlines without a duration_hint", header,
                cells, format);
}

}  // namespace cronoq::sim
