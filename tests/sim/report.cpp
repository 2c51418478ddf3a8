#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

std::string percent(std::size_t part, std::size_t whole) {
    if (whole == 0) return "n/a";
    return printf_string("%.1f %%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

}  // namespace

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
    std::array<std::vector<std::pair<Nanos, bool>>, priority_count> waits;
    const Nanos measure_end = measured_until(trace);
    Nanos busy = 0;
    for (std::size_t i = 0; i < trace.tasks.size(); ++i) {
        const TaskRec& t = trace.tasks[i];
        const Nanos started = run.dispatched[i], ended = run.finished[i];
        const bool low = t.priority == Priority::Low;
        ++row.arrived;
        const bool measured = t.arrival < measure_end;
        if (started == not_yet) {
            ++row.queued;
            if (measured) waits[index_of(t.priority)].emplace_back(trace.horizon - t.arrival, true);
            if (low) {
                ++row.low_unstarted;
                row.oldest_low_unstarted = std::max(row.oldest_low_unstarted, trace.horizon - t.arrival);
            }
        } else {
            if (measured) waits[index_of(t.priority)].emplace_back(started - t.arrival, false);
            if (low) {
                row.low_started = true;
                row.max_low_wait = std::max(row.max_low_wait, started - t.arrival);
            }
            busy += (ended == not_yet ? trace.horizon : ended) - started;
            ++(ended == not_yet ? row.running : row.finished);
        }
        if (t.has_deadline && t.deadline <= trace.horizon) {
            ++row.deadline_known;
            if (ended != not_yet && ended <= t.deadline) ++row.deadline_hit;
        }
    }
    for (std::size_t c = 0; c < priority_count; ++c) {
        std::sort(waits[c].begin(), waits[c].end());
        row.p50[c] = percentile(waits[c], 0.50);
        row.p99[c] = percentile(waits[c], 0.99);
    }
    row.utilization = static_cast<double>(busy) / (static_cast<double>(trace.workers) * static_cast<double>(trace.horizon));
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
    const std::vector<std::string> header{"policy",   "Crit p50", "Crit p99",  "High p50",     "High p99",
                                          "Norm p50", "Norm p99", "Low p50",   "Low p99",      "deadline hit",
                                          "adherence", "max Low wait", "Low not started", "util"};
    std::vector<std::vector<std::string>> cells;
    for (const Row& r : rows) {
        std::vector<std::string> line{to_string(r.policy)};
        for (std::size_t c = 0; c < priority_count; ++c) {
            line.push_back(format_quantile(r.p50[c]));
            line.push_back(format_quantile(r.p99[c]));
        }
        line.push_back(percent(r.deadline_hit, r.deadline_known));
        line.push_back(percent(r.contended_best, r.contended));
        // The starvation bound: the longest wait of a Low task, or the age
        // of a Low task still queued when that is longer.
        if (r.low_unstarted > 0 && (!r.low_started || r.oldest_low_unstarted > r.max_low_wait))
            line.push_back("> " + format_duration(r.oldest_low_unstarted));
        else
            line.push_back(r.low_started ? format_duration(r.max_low_wait) : "-");
        line.push_back(format_count(r.low_unstarted));
        line.push_back(printf_string("%.1f %%", 100.0 * r.utilization));
        cells.push_back(std::move(line));
    }

    std::string out;
    if (format == Format::Markdown) {
        out += "#### " + describe(trace, config) + "\n\n";
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
    out += describe(trace, config) + "\n";
    emit(header);
    std::size_t total = 0;
    for (std::size_t w : width) total += w + 2;
    out += std::string(total - 2, '-') + "\n";
    for (const auto& line : cells) emit(line);
    return out + "\n";
}

}  // namespace cronoq::sim
