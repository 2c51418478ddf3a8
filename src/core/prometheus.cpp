// prometheus_text: written here rather than taken from prometheus-cpp
// (docs/decisions.md, "Prometheus text without prometheus-cpp").
#include <cronoq/prometheus.hpp>

#include <cronoq/snapshot.hpp>
#include <cronoq/task_status.hpp>

#include <charconv>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace cronoq {

namespace {

/// A label set, already escaped, as `name="value",...` without braces.
using Labels = std::string;

void append_escaped(std::string& out, std::string_view value) {
    for (const char c : value) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '"': out += "\\\""; break;
            case '\n': out += "\\n"; break;
            default: out += c;
        }
    }
}

Labels label(std::string_view name, std::string_view value) {
    std::string out(name);
    out += "=\"";
    append_escaped(out, value);
    out += '"';
    return out;
}

Labels join(const Labels& a, const Labels& b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    return a + "," + b;
}

void append_number(std::string& out, double value) {
    char buffer[32];
    // Shortest text that reads back as the same double.
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, ec == std::errc() ? end : buffer);
}

/// A bucket bound as written by hand ("0.00025", not "2.5e-04"): the same
/// `le` text as other exporters' buckets of that bound.
std::string bound_text(std::size_t i) {
    char buffer[32];
    const auto [end, ec] =
        std::to_chars(buffer, buffer + sizeof buffer, SecondsHistogram::bound_seconds(i), std::chars_format::fixed);
    return std::string(buffer, ec == std::errc() ? end : buffer);
}

void append_number(std::string& out, std::uint64_t value) { out += std::to_string(value); }

class Writer {
public:
    /// Opens a metric family; its samples must follow before the next one.
    void family(std::string_view name, std::string_view type, std::string_view help) {
        name_ = name;
        out_ += "# HELP ";
        out_ += name;
        out_ += ' ';
        out_ += help;  // constant text: no backslash or newline to escape
        out_ += "\n# TYPE ";
        out_ += name;
        out_ += ' ';
        out_ += type;
        out_ += '\n';
    }

    template <class Number>
    void sample(const Labels& labels, Number value, std::string_view suffix = {}) {
        out_ += name_;
        out_ += suffix;
        if (!labels.empty()) {
            out_ += '{';
            out_ += labels;
            out_ += '}';
        }
        out_ += ' ';
        append_number(out_, value);
        out_ += '\n';
    }

    void histogram(const Labels& labels, const SecondsHistogram& h) {
        for (std::size_t i = 0; i < SecondsHistogram::bucket_count; ++i) {
            sample(join(labels, label("le", bound_text(i))), h.buckets[i], "_bucket");
        }
        sample(join(labels, label("le", "+Inf")), h.count, "_bucket");
        sample(labels, h.sum, "_sum");
        sample(labels, h.count, "_count");
    }

    std::string take() { return std::move(out_); }

private:
    std::string out_;
    std::string_view name_;
};

void write_totals(Writer& w, const std::vector<PoolSnapshot>& pools) {
    w.family("cronoq_tasks_submitted_total", "counter", "Tasks admitted to the pool since the scheduler started.");
    for (const PoolSnapshot& p : pools) w.sample(label("pool", p.name), p.totals.submitted);
    w.family("cronoq_tasks_finished_total", "counter",
             "Tasks that reached a terminal status since the scheduler started, by status.");
    for (const PoolSnapshot& p : pools) {
        const core::PoolTotals& t = p.totals;
        const std::pair<TaskStatus, std::uint64_t> by_status[] = {
            {TaskStatus::Succeeded, t.succeeded}, {TaskStatus::Failed, t.failed},
            {TaskStatus::DeadLettered, t.dead_lettered}, {TaskStatus::Cancelled, t.cancelled},
            {TaskStatus::Skipped, t.skipped}, {TaskStatus::Missed, t.missed}, {TaskStatus::Shed, t.shed}};
        for (const auto& [status, n] : by_status)
            w.sample(join(label("pool", p.name), label("status", to_string(status))), n);
    }
    w.family("cronoq_attempts_started_total", "counter", "Attempts dispatched since the scheduler started.");
    for (const PoolSnapshot& p : pools) w.sample(label("pool", p.name), p.totals.attempts_started);
    w.family("cronoq_attempts_retried_total", "counter",
             "Failed attempts followed by a retry since the scheduler started.");
    for (const PoolSnapshot& p : pools) w.sample(label("pool", p.name), p.totals.retried);
}

void write_gauges(Writer& w, const std::vector<PoolSnapshot>& pools) {
    w.family("cronoq_pool_capacity", "gauge", "Worker slots of the pool.");
    for (const PoolSnapshot& p : pools) w.sample(label("pool", p.name), std::uint64_t{p.capacity});
    w.family("cronoq_pool_busy", "gauge", "Attempts running in the pool.");
    for (const PoolSnapshot& p : pools) w.sample(label("pool", p.name), std::uint64_t{p.busy});
    w.family("cronoq_pool_pending", "gauge", "Tasks ready and waiting for a slot, by priority class.");
    for (const PoolSnapshot& p : pools)
        for (std::size_t c = 0; c < priority_count; ++c)
            w.sample(join(label("pool", p.name), label("class", to_string(static_cast<Priority>(c)))),
                     std::uint64_t{p.pending[c]});
    w.family("cronoq_pool_paused", "gauge", "1 while the pool is paused: it admits tasks but dispatches none.");
    for (const PoolSnapshot& p : pools) w.sample(label("pool", p.name), std::uint64_t{p.paused ? 1u : 0u});
    bool remote = false;
    for (const PoolSnapshot& p : pools) remote = remote || p.remote_workers.has_value();
    if (!remote) return;
    w.family("cronoq_remote_workers", "gauge", "Remote workers connected to the pool.");
    for (const PoolSnapshot& p : pools)
        if (p.remote_workers) w.sample(label("pool", p.name), std::uint64_t{*p.remote_workers});
}

void write_histograms(Writer& w, const std::vector<PoolSnapshot>& pools) {
    w.family("cronoq_wait_seconds", "histogram",
             "Time from ready to dispatch since the scheduler started, by priority class.");
    for (const PoolSnapshot& p : pools)
        for (std::size_t c = 0; c < priority_count; ++c)
            w.histogram(join(label("pool", p.name), label("class", to_string(static_cast<Priority>(c)))),
                        p.wait_histogram[c]);
    w.family("cronoq_run_seconds", "histogram", "Attempt run time, any outcome, since the scheduler started.");
    for (const PoolSnapshot& p : pools) w.histogram(label("pool", p.name), p.run_histogram);
}

void write_store(Writer& w, const StoreSnapshot& s) {
    w.family("cronoq_store_commits_total", "counter", "Successful store transactions since the store opened.");
    w.sample({}, s.commits);
    w.family("cronoq_store_failed_commits_total", "counter", "Failed store commit attempts (retried).");
    w.sample({}, s.failed_commits);
    w.family("cronoq_store_commit_seconds", "histogram", "Latency of successful store transactions.");
    w.histogram({}, s.commit_seconds);
    w.family("cronoq_store_uncommitted_changes", "gauge", "Changes written to the store's queue, not yet committed.");
    w.sample({}, s.pending_changes);
    w.family("cronoq_store_leading", "gauge", "1 while this process leads on its store.");
    w.sample({}, std::uint64_t{s.leading ? 1u : 0u});
}

}  // namespace

std::string prometheus_text(const Snapshot& snapshot) {
    Writer w;
    write_totals(w, snapshot.pools);
    write_gauges(w, snapshot.pools);
    write_histograms(w, snapshot.pools);
    if (snapshot.store) write_store(w, *snapshot.store);
    return w.take();
}

}  // namespace cronoq
