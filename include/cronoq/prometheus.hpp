#pragma once
// prometheus_text: a Snapshot in the Prometheus text exposition format
// (docs/guide/operations.md, "Prometheus").
#include <string>

namespace cronoq {

struct Snapshot;

/// The snapshot as Prometheus text exposition format (version 0.0.4), each
/// metric with HELP and TYPE, in base units (seconds): per pool the totals
/// since the scheduler started (`cronoq_tasks_submitted_total`,
/// `cronoq_tasks_finished_total{status}`, `cronoq_attempts_started_total`,
/// `cronoq_attempts_retried_total`), the gauges `cronoq_pool_capacity`,
/// `cronoq_pool_busy`, `cronoq_pool_pending{class}`,
/// `cronoq_remote_workers` (remote pools), the histograms
/// `cronoq_wait_seconds{class}` and `cronoq_run_seconds`; with a store
/// `cronoq_store_commits_total`, `cronoq_store_failed_commits_total`,
/// `cronoq_store_commit_seconds`, `cronoq_store_uncommitted_changes` and
/// `cronoq_store_leading`. Pool names are escaped as label values.
/// Serve it with `Content-Type: text/plain; version=0.0.4`.
std::string prometheus_text(const Snapshot& snapshot);

}  // namespace cronoq
