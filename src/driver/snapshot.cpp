// Snapshot::to_json: the one translation unit that builds JSON.
#include <cronoq/snapshot.hpp>

#include <nlohmann/json.hpp>

namespace cronoq {

namespace {

double ms(std::chrono::nanoseconds d) { return std::chrono::duration<double, std::milli>(d).count(); }

nlohmann::json optional_number(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

// [{"key": ..., "ready": n, "running": n}, ...], most ready first.
nlohmann::json top_keys(const std::vector<FairKeyLoad>& keys) {
    nlohmann::json out = nlohmann::json::array();
    for (const FairKeyLoad& k : keys) out.push_back({{"key", k.key}, {"ready", k.ready}, {"running", k.running}});
    return out;
}

// {"buckets": [[le_seconds, cumulative count], ...], "sum": seconds, "count": n}; the
// +Inf bucket is "count".
nlohmann::json histogram(const SecondsHistogram& h) {
    nlohmann::json buckets = nlohmann::json::array();
    for (std::size_t i = 0; i < SecondsHistogram::bucket_count; ++i)
        buckets.push_back({SecondsHistogram::bound_seconds(i), h.buckets[i]});
    return {{"buckets", std::move(buckets)}, {"sum", h.sum}, {"count", h.count}};
}

nlohmann::json totals(const core::PoolTotals& t) {
    return {{"submitted", t.submitted},         {"attempts_started", t.attempts_started},
            {"retried", t.retried},             {"succeeded", t.succeeded},
            {"failed", t.failed},               {"dead_lettered", t.dead_lettered},
            {"cancelled", t.cancelled},         {"skipped", t.skipped},
            {"missed", t.missed},               {"shed", t.shed}};
}

}  // namespace

nlohmann::json Snapshot::to_json() const {
    nlohmann::json out;
    out["pools"] = nlohmann::json::array();
    for (const PoolSnapshot& p : pools) {
        nlohmann::json pending;
        nlohmann::json wait_seconds;
        for (std::size_t c = 0; c < priority_count; ++c) {
            pending[to_string(static_cast<Priority>(c))] = p.pending[c];
            wait_seconds[to_string(static_cast<Priority>(c))] = histogram(p.wait_histogram[c]);
        }
        out["pools"].push_back({
            {"name", p.name},
            {"window_s", std::chrono::duration<double>(p.window).count()},
            {"capacity", p.capacity},
            {"busy", p.busy},
            {"held", p.held},
            {"desired", p.desired},
            {"pending", pending},
            {"blocked", p.blocked},
            {"scheduled", p.scheduled},
            {"retrying", p.retrying},
            {"paused", p.paused},
            {"dispatched", p.dispatched},
            {"succeeded", p.succeeded},
            {"failed", p.failed},
            {"retried", p.retried},
            {"dead_lettered", p.dead_lettered},
            {"shed", p.shed},
            {"wait_ms", {{"p50", ms(p.wait_p50)}, {"p90", ms(p.wait_p90)}, {"p99", ms(p.wait_p99)}}},
            {"run_ms", {{"p50", ms(p.run_p50)}, {"p99", ms(p.run_p99)}}},
            {"utilization", p.utilization},
            {"worker_seconds", p.worker_seconds},
            {"priority_adherence", optional_number(p.priority_adherence)},
            {"fixed_start_hit_rate", optional_number(p.fixed_start_hit_rate)},
            {"totals", totals(p.totals)},
            {"wait_seconds", std::move(wait_seconds)},
            {"run_seconds", histogram(p.run_histogram)},
            {"active_keys", p.active_keys},
            {"top_keys", top_keys(p.top_keys)},
        });
        if (p.remote_workers) out["pools"].back()["remote_workers"] = *p.remote_workers;
    }
    if (store) {
        out["store"] = {
            {"commits", store->commits},
            {"failed_commits", store->failed_commits},
            {"changes_committed", store->changes_committed},
            {"mean_batch_size", store->mean_batch_size},
            {"commit_latency_ms", {{"p50", ms(store->commit_latency_p50)}, {"p99", ms(store->commit_latency_p99)}}},
            {"pending_changes", store->pending_changes},
            {"leading", store->leading},
            {"epoch", store->epoch},
            {"commit_seconds", histogram(store->commit_seconds)},
        };
    }
    return out;
}

std::string Snapshot::to_json_string(int indent) const { return to_json().dump(indent); }

}  // namespace cronoq
