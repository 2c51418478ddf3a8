// The tenants workload (tenants.hpp): its trace, its own small event loop
// (one pool, one class, no deadlines, no failures) and its table.
#include "tenants.hpp"

#include "loop.hpp"  // never

#include <cronoq/core/engine.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>

namespace cronoq::sim {

const char* to_string(TenantPolicy p) {
    switch (p) {
        case TenantPolicy::Fifo: return "FIFO";
        case TenantPolicy::Strict: return "strict";
        case TenantPolicy::Cronoq: return "cronoq";
        case TenantPolicy::Fair: return "cronoq+fair";
        case TenantPolicy::FairWeighted: return "cronoq+fair w3";
    }
    return "?";
}

std::array<double, tenant_count> tenant_weights(TenantPolicy p) {
    std::array<double, tenant_count> w;
    w.fill(1.0);
    if (p == TenantPolicy::FairWeighted) w[0] = flood_weight;
    return w;
}

namespace {

Nanos to_nanos(double seconds) { return static_cast<Nanos>(std::llround(seconds * 1e9)); }
core::Time at(Nanos n) { return core::Time(core::Duration(n)); }
std::string tenant_name(std::size_t t) { return t == 0 ? "flood" : "small-" + std::to_string(t); }

// Waits, as the main tables measure them (report.hpp, Quantile): tasks that
// arrived in the first 90 % of the horizon; one never started counts with
// its wait so far and makes a percentile it may push up a lower bound.
Quantile quantile(std::vector<std::pair<Nanos, bool>> waits, double p) {
    Quantile q;
    if (waits.empty()) return q;
    std::sort(waits.begin(), waits.end());
    const auto index = static_cast<std::size_t>(std::ceil(p * static_cast<double>(waits.size()))) - 1;
    const std::size_t i = std::min(index, waits.size() - 1);
    q.empty = false;
    q.value = waits[i].first;
    for (std::size_t j = 0; j <= i; ++j) q.lower_bound = q.lower_bound || waits[j].second;
    return q;
}

// One policy's queue: the engine, or a FIFO written here.
class Queue {
public:
    Queue(TenantPolicy policy, const SimConfig& config) : policy_(policy) {
        if (!engine_policy()) return;
        engine_.emplace(config.engine);
        core::PoolConfig pool;
        pool.name = "tenants";
        pool.capacity = config.workers;
        if (policy == TenantPolicy::FairWeighted) pool.fairness.weights = {{tenant_name(0), flood_weight}};
        pool_ = engine_->add_pool(pool);
        for (std::size_t t = 0; t < tenant_count; ++t) names_[t] = tenant_name(t);
    }
    bool engine_policy() const { return policy_ != TenantPolicy::Fifo && policy_ != TenantPolicy::Strict; }

    /// Admits `task`; the tasks started, in order, go to `started`.
    void arrive(std::uint32_t task, std::uint8_t tenant, Nanos now, std::vector<std::uint32_t>& started) {
        if (!engine_) {
            fifo_.push_back(task);
            fill(started);
            return;
        }
        core::TaskSpec spec;
        spec.pool = pool_;
        if (policy_ != TenantPolicy::Cronoq) spec.fair_key = names_[tenant];
        auto id = engine_->submit(spec, at(now));
        if (!id) {
            ++refused_;
            return;
        }
        task_of_.emplace(id.value().value, task);
        drain(started);
    }
    /// `task`'s attempt ended at `now`.
    void complete(std::uint32_t task, Nanos now, std::vector<std::uint32_t>& started) {
        ++free_;
        if (!engine_) return fill(started);
        if (!engine_->complete(lease_.at(task), core::Outcome::success(), at(now))) ++refused_;
        drain(started);
    }
    std::size_t refused() const { return refused_; }

    std::size_t free_ = 0;  // a FIFO's free workers

private:
    void fill(std::vector<std::uint32_t>& started) {
        for (; free_ > 0 && !fifo_.empty(); --free_) {
            started.push_back(fifo_.front());
            fifo_.pop_front();
        }
    }
    void drain(std::vector<std::uint32_t>& started) {
        engine_->drain(actions_);
        for (const core::Action& a : actions_)
            if (const auto* d = std::get_if<core::Dispatch>(&a)) {
                const std::uint32_t task = task_of_.at(d->task.value);
                lease_[task] = d->lease;
                started.push_back(task);
            }
    }

    TenantPolicy policy_;
    std::optional<core::Engine> engine_;
    core::PoolId pool_ = 0;
    std::array<std::string, tenant_count> names_;
    std::unordered_map<std::uint64_t, std::uint32_t> task_of_;
    std::unordered_map<std::uint32_t, LeaseId> lease_;
    std::vector<core::Action> actions_;
    std::deque<std::uint32_t> fifo_;
    std::size_t refused_ = 0;
};

}  // namespace

TenantTrace make_tenant_trace(const Workload& workload, std::size_t workload_index, double load,
                              std::size_t load_index, const SimConfig& config) {
    // A stream of its own per (seed, workload, load), apart from the main traces'.
    Rng rng(config.seed * 0x9e3779b97f4a7c15ULL + 0x7e4a47ULL * (workload_index * 8 + load_index + 1));
    TenantTrace trace;
    trace.workload = &workload;
    trace.load = load;
    const double mean = workload.mean_service_seconds();
    const double horizon_s = config.tasks_at_unit_load * mean / static_cast<double>(config.workers);
    trace.horizon = to_nanos(horizon_s);
    // Tasks per second: `load` x what the workers serve. A small tenant's
    // burst brings `burst_size` tasks at once: the arrival events are fewer.
    const double task_rate = load * static_cast<double>(config.workers) / mean;
    const double flood_rate = task_rate * flood_task_share;
    const double burst_rate = task_rate * (1 - flood_task_share) / static_cast<double>(burst_size);
    const double event_rate = flood_rate + burst_rate;
    double t = 0;
    for (;;) {
        t += rng.exponential(1.0 / event_rate);
        if (t > horizon_s) break;
        const bool burst = rng.uniform() * event_rate < burst_rate;
        const auto tenant = static_cast<std::uint8_t>(burst ? 1 + rng.next() % (tenant_count - 1) : 0);
        for (std::size_t i = 0; i < (burst ? burst_size : 1); ++i)
            trace.tasks.push_back(TenantTask{to_nanos(t), to_nanos(workload.draw_service_seconds(rng)), tenant});
    }
    return trace;
}

TenantRow run_tenants(const TenantTrace& trace, TenantPolicy policy, const SimConfig& config) {
    TenantRow row;
    row.policy = policy;
    const auto weights = tenant_weights(policy);
    Queue queue(policy, config);
    queue.free_ = config.workers;
    std::array<std::size_t, tenant_count> waiting{};
    std::vector<Nanos> started_at(trace.tasks.size(), -1);
    using Completion = std::pair<Nanos, std::uint32_t>;
    std::priority_queue<Completion, std::vector<Completion>, std::greater<>> running;
    std::vector<std::uint32_t> started;
    std::size_t ended = 0;
    // Each dispatch: the tenants waiting just before it are owed their
    // weighted share of it.
    const auto dispatch = [&](Nanos now) {
        for (const std::uint32_t task : started) {
            double total = 0;
            for (std::size_t t = 0; t < tenant_count; ++t)
                if (waiting[t] > 0) total += weights[t];
            for (std::size_t t = 0; t < tenant_count; ++t)
                if (waiting[t] > 0) row.owed[t] += weights[t] / total;
            const TenantTask& tt = trace.tasks[task];
            --waiting[tt.tenant];
            ++row.served[tt.tenant];
            ++row.dispatches;
            started_at[task] = now;
            running.emplace(now + tt.service, task);
        }
        started.clear();
    };
    std::size_t next = 0;
    for (;;) {
        const Nanos arrival = next < trace.tasks.size() ? trace.tasks[next].arrival : never;
        const Nanos completion = running.empty() ? never : running.top().first;
        const Nanos now = std::min(arrival, completion);
        if (now == never || now > trace.horizon) break;
        if (completion <= arrival) {  // as the engine: what is due runs before a call
            const std::uint32_t task = running.top().second;
            running.pop();
            ++ended;
            queue.complete(task, now, started);
        } else {
            const TenantTask& tt = trace.tasks[next];
            ++waiting[tt.tenant];
            queue.arrive(static_cast<std::uint32_t>(next++), tt.tenant, now, started);
        }
        dispatch(now);
    }
    std::size_t still_waiting = 0;
    for (std::size_t w : waiting) still_waiting += w;
    row.unaccounted = next - ended - running.size() - still_waiting + queue.refused();

    const Nanos measured = trace.horizon / 10 * 9;
    std::vector<std::pair<Nanos, bool>> small, flood;
    for (std::size_t i = 0; i < trace.tasks.size() && trace.tasks[i].arrival < measured; ++i) {
        const TenantTask& tt = trace.tasks[i];
        const bool unstarted = started_at[i] < 0;
        const Nanos wait = (unstarted ? trace.horizon : started_at[i]) - tt.arrival;
        (tt.tenant == 0 ? flood : small).emplace_back(wait, unstarted);
    }
    row.small_p50 = quantile(small, 0.50);
    row.small_p99 = quantile(small, 0.99);
    row.flood_p99 = quantile(flood, 0.99);
    return row;
}

std::string render_tenants(const TenantTrace& trace, const std::vector<TenantRow>& rows, Format format) {
    const auto q = [](const Quantile& v) {
        if (v.empty) return std::string("-");
        return (v.lower_bound ? "> " : "") + format_duration(v.value);
    };
    char title[256];
    std::snprintf(title, sizeof title, "Tenants (%s) %.1fx: %s, %s tasks (flood 90 %%, 9 small tenants in bursts of %zu)",
                  trace.workload->key, trace.load, trace.workload->service_text, format_count(trace.tasks.size()).c_str(),
                  burst_size);
    std::string out = format == Format::Markdown ? std::string("#### ") + title + "\n\n" : std::string(title) + "\n";
    const char* head[] = {"policy", "flood share", "flood served/owed", "small served/owed (min-max)",
                          "small p50 wait", "small p99 wait", "flood p99 wait"};
    std::vector<std::array<std::string, 7>> cells;
    for (const TenantRow& r : rows) {
        double lo = 1e9, hi = 0;
        for (std::size_t t = 1; t < tenant_count; ++t) {
            if (r.owed[t] <= 0) continue;
            lo = std::min(lo, r.ratio(t));
            hi = std::max(hi, r.ratio(t));
        }
        char share[32], flood_ratio[32], small_ratio[48];
        std::snprintf(share, sizeof share, "%.1f %%", r.dispatches ? 100.0 * r.served[0] / r.dispatches : 0.0);
        std::snprintf(flood_ratio, sizeof flood_ratio, "%.2f", r.ratio(0));
        if (hi > 0) std::snprintf(small_ratio, sizeof small_ratio, "%.2f-%.2f", lo, hi);
        else std::snprintf(small_ratio, sizeof small_ratio, "-");
        cells.push_back({to_string(r.policy), share, flood_ratio, small_ratio, q(r.small_p50), q(r.small_p99),
                         q(r.flood_p99)});
    }
    if (format == Format::Markdown) {
        out += "|";
        for (const char* h : head) out += std::string(" ") + h + " |";
        out += "\n|";
        for (std::size_t i = 0; i < 7; ++i) out += i == 0 ? "---|" : "---:|";
        out += "\n";
        for (const auto& c : cells) {
            out += "|";
            for (const auto& v : c) out += " " + v + " |";
            out += "\n";
        }
        return out + "\n";
    }
    std::array<std::size_t, 7> width{};
    for (std::size_t i = 0; i < 7; ++i) width[i] = std::string(head[i]).size();
    for (const auto& c : cells)
        for (std::size_t i = 0; i < 7; ++i) width[i] = std::max(width[i], c[i].size());
    const auto line = [&](const std::array<std::string, 7>& c) {
        std::string l = " ";
        for (std::size_t i = 0; i < 7; ++i) {
            // Appended piece by piece: `" " + std::string&&` trips GCC 12's
            // -Wrestrict at -O2 (a false positive, GCC bug 105329).
            const std::string pad(width[i] - c[i].size(), ' ');
            l += ' ';
            l += i == 0 ? c[i] : pad;
            l += i == 0 ? pad : c[i];
            l += ' ';
        }
        return l + "\n";
    };
    out += line({head[0], head[1], head[2], head[3], head[4], head[5], head[6]});
    for (const auto& c : cells) out += line(c);
    return out + "\n";
}

}  // namespace cronoq::sim
