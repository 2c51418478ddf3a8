// prometheus_text and the figures since the start behind it (docs/guide/operations.md,
// "Prometheus"): families with HELP and TYPE, escaped pool names, cumulative
// buckets whose +Inf equals the count, and the engine filling the totals and
// the fixed-bucket histograms beyond the metrics window.
#include "core/fixed_histogram.hpp"
#include "engine_harness.hpp"

#include <cronoq/prometheus.hpp>
#include <cronoq/snapshot.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

namespace cronoq::core::test::prometheus_test {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

/// The value of the one sample line that starts with `series` followed by a space.
std::optional<std::string> value_of(const std::string& text, const std::string& series) {
    std::optional<std::string> found;
    for (const std::string& line : lines_of(text)) {
        if (line.rfind(series + " ", 0) != 0) continue;
        EXPECT_FALSE(found.has_value()) << "twice: " << series;
        found = line.substr(series.size() + 1);
    }
    return found;
}

Snapshot one_pool(std::string name) {
    Snapshot s;
    PoolSnapshot& p = s.pools.emplace_back();
    p.name = std::move(name);
    p.capacity = 4;
    p.busy = 2;
    p.pending = {1, 0, 3, 0};
    p.totals.submitted = 10;
    p.totals.attempts_started = 9;
    p.totals.retried = 2;
    p.totals.succeeded = 6;
    p.totals.dead_lettered = 1;
    return s;
}

TEST(PrometheusTest, EveryFamilyHasHelpAndTypeBeforeItsSamples) {
    Snapshot s = one_pool("main");
    s.store = StoreSnapshot{};
    const std::string text = prometheus_text(s);
    const std::map<std::string, std::string> families{
        {"cronoq_tasks_submitted_total", "counter"}, {"cronoq_tasks_finished_total", "counter"},
        {"cronoq_attempts_started_total", "counter"}, {"cronoq_attempts_retried_total", "counter"},
        {"cronoq_pool_capacity", "gauge"},          {"cronoq_pool_busy", "gauge"},
        {"cronoq_pool_pending", "gauge"},           {"cronoq_pool_paused", "gauge"},
        {"cronoq_wait_seconds", "histogram"},
        {"cronoq_run_seconds", "histogram"},        {"cronoq_store_commits_total", "counter"},
        {"cronoq_store_commit_seconds", "histogram"}, {"cronoq_store_uncommitted_changes", "gauge"}};
    for (const auto& [name, type] : families) {
        EXPECT_NE(text.find("# HELP " + name + " "), std::string::npos) << name;
        EXPECT_NE(text.find("# TYPE " + name + " " + type + "\n"), std::string::npos) << name;
        // TYPE comes before the family's first sample.
        EXPECT_LT(text.find("# TYPE " + name + " "), text.find("\n" + name + "{") == std::string::npos
                                                         ? text.find("\n" + name + " ")
                                                         : text.find("\n" + name + "{"))
            << name;
    }
    EXPECT_EQ(value_of(text, R"(cronoq_tasks_submitted_total{pool="main"})"), "10");
    EXPECT_EQ(value_of(text, R"(cronoq_tasks_finished_total{pool="main",status="succeeded"})"), "6");
    EXPECT_EQ(value_of(text, R"(cronoq_tasks_finished_total{pool="main",status="dead_lettered"})"), "1");
    EXPECT_EQ(value_of(text, R"(cronoq_attempts_started_total{pool="main"})"), "9");
    EXPECT_EQ(value_of(text, R"(cronoq_attempts_retried_total{pool="main"})"), "2");
    EXPECT_EQ(value_of(text, R"(cronoq_pool_capacity{pool="main"})"), "4");
    EXPECT_EQ(value_of(text, R"(cronoq_pool_busy{pool="main"})"), "2");
    EXPECT_EQ(value_of(text, R"(cronoq_pool_pending{pool="main",class="normal"})"), "3");
    EXPECT_EQ(value_of(text, R"(cronoq_pool_paused{pool="main"})"), "0");
    EXPECT_EQ(value_of(text, "cronoq_store_commits_total"), "0");
    EXPECT_EQ(text.back(), '\n');
}

TEST(PrometheusTest, APausedPoolShowsOne) {
    Snapshot s = one_pool("main");
    s.pools.front().paused = true;
    EXPECT_EQ(value_of(prometheus_text(s), R"(cronoq_pool_paused{pool="main"})"), "1");
}

TEST(PrometheusTest, WithoutAStoreThereAreNoStoreMetricsAndWithoutRemotePoolsNoWorkerGauge) {
    const std::string text = prometheus_text(one_pool("main"));
    EXPECT_EQ(text.find("cronoq_store_"), std::string::npos);
    EXPECT_EQ(text.find("cronoq_remote_workers"), std::string::npos);
    Snapshot remote = one_pool("gpu");
    remote.pools[0].remote_workers = 3;
    EXPECT_EQ(value_of(prometheus_text(remote), R"(cronoq_remote_workers{pool="gpu"})"), "3");
}

TEST(PrometheusTest, PoolNamesAreEscapedAsLabelValues) {
    const std::string text = prometheus_text(one_pool("a\"b\\c\nd"));
    EXPECT_EQ(value_of(text, R"(cronoq_pool_capacity{pool="a\"b\\c\nd"})"), "4");
    // No raw newline inside a sample: every line is a comment or starts with a name.
    for (const std::string& line : lines_of(text)) EXPECT_TRUE(line.rfind("cronoq_", 0) == 0 || line.rfind("# ", 0) == 0) << line;
}

// The five-step search picks std::lower_bound's bucket at, around and
// between every bound, and past the last.
TEST(PrometheusTest, HistogramBucketSearchMatchesLowerBound) {
    const auto& bounds = SecondsHistogram::bounds_ns;
    std::vector<std::int64_t> values{0, 1, std::numeric_limits<std::int64_t>::max()};
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        for (std::int64_t d : {-1, 0, 1}) values.push_back(bounds[i] + d);
        if (i > 0) values.push_back(bounds[i - 1] + (bounds[i] - bounds[i - 1]) / 2);
    }
    for (std::int64_t v : values) {
        const auto expected = static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
        EXPECT_EQ(detail::FixedHistogram::bucket_of(v), expected) << v;
    }
}

TEST(PrometheusTest, HistogramBucketsAreCumulativeAndInfEqualsTheCount) {
    detail::FixedHistogram h;
    using namespace std::chrono_literals;
    for (const std::chrono::nanoseconds d : {0ns, 100'000ns, 101'000ns, 3'000'000ns, 3'000'000ns, 2'000'000'000ns,
                                              std::chrono::nanoseconds(2h)})
        h.record(d);
    h.record(-5ms);  // counts as 0
    const SecondsHistogram read = h.read();
    EXPECT_EQ(read.count, 8u);
    EXPECT_EQ(read.buckets[0], 3u);  // 0, -5 ms and 100 µs: "le" includes the bound
    EXPECT_EQ(read.buckets[1], 4u);  // 101 µs <= 250 µs
    EXPECT_EQ(read.buckets.back(), 7u);  // all but 2 h
    EXPECT_NEAR(read.sum, 0.0001 + 0.000101 + 0.006 + 2 + 7200, 1e-9);

    Snapshot s = one_pool("p");
    s.pools[0].run_histogram = read;
    const std::string text = prometheus_text(s);
    std::uint64_t previous = 0;
    for (std::size_t i = 0; i < SecondsHistogram::bucket_count; ++i) {
        std::ostringstream le;
        le << SecondsHistogram::bound_seconds(i);
        const auto v = value_of(text, R"(cronoq_run_seconds_bucket{pool="p",le=")" + le.str() + "\"}");
        ASSERT_TRUE(v.has_value()) << le.str();
        EXPECT_GE(std::stoull(*v), previous);
        previous = std::stoull(*v);
    }
    EXPECT_EQ(value_of(text, R"(cronoq_run_seconds_bucket{pool="p",le="+Inf"})"), "8");
    EXPECT_EQ(value_of(text, R"(cronoq_run_seconds_count{pool="p"})"), "8");
    EXPECT_EQ(value_of(text, R"(cronoq_run_seconds_bucket{pool="p",le="0.0001"})"), "3");
    const auto sum = value_of(text, R"(cronoq_run_seconds_sum{pool="p"})");
    ASSERT_TRUE(sum.has_value());
    EXPECT_NEAR(std::stod(*sum), read.sum, 1e-9);
}

TEST(PrometheusTest, TheEngineKeepsTotalsAndHistogramsPastTheWindow) {
    Harness h;
    const PoolId pool =
        h.add_pool(PoolConfig{.name = "p", .capacity = 1, .retry = RetryPolicy{2, 0s, 1.0, 0s, false}});
    const TaskId a = h.submit(TaskSpec{.pool = pool, .priority = Priority::High}, t0);
    h.submit(TaskSpec{.pool = pool}, t0);
    h.complete(h.lease_of(a), Outcome::retryable("again"), t0 + 1s);  // a retries at once, ahead of b (High)
    h.complete(h.dispatches().front().lease, Outcome::retryable("again"), t0 + 3s);  // a dead-lettered
    h.complete(h.dispatches().front().lease, Outcome::success(), t0 + 6s);           // b succeeds after 3 s
    // Ten minutes later the window (60 s) has forgotten all of it; the totals have not.
    const PoolStats s = h.engine.stats(pool, t0 + 10min);
    EXPECT_EQ(s.dispatched, 0u);
    EXPECT_EQ(s.totals.submitted, 2u);
    EXPECT_EQ(s.totals.attempts_started, 3u);
    EXPECT_EQ(s.totals.retried, 1u);
    EXPECT_EQ(s.totals.succeeded, 1u);
    EXPECT_EQ(s.totals.dead_lettered, 1u);
    EXPECT_EQ(s.run_histogram.count, 3u);
    EXPECT_NEAR(s.run_histogram.sum, 1.0 + 2.0 + 3.0, 1e-9);
    EXPECT_EQ(s.wait_histogram[index_of(Priority::High)].count, 2u);    // a's two attempts
    EXPECT_EQ(s.wait_histogram[index_of(Priority::Normal)].count, 1u);  // b, after 3 s
    EXPECT_NEAR(s.wait_histogram[index_of(Priority::Normal)].sum, 3.0, 1e-9);
    EXPECT_EQ(s.wait_histogram[index_of(Priority::Critical)].count, 0u);
}

}  // namespace
}  // namespace cronoq::core::test::prometheus_test
