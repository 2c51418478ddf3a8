// Scheduler::snapshot() and its JSON form (docs/guide/operations.md) on a ManualClock.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace snapshot_test {

using namespace std::chrono_literals;
using namespace cronoq;

TEST(Snapshot, FiguresAndJson) {
    asio::io_context io;
    auto clock = std::make_shared<ManualClock>();
    auto sched = Scheduler<int, int>::builder()
                     .clock(clock)
                     .pool(Pool<int, int>("work").workers(1, 2, 2).retry(RetryPolicy::none()).executor_fn(
                         [](TaskContext, std::shared_ptr<const int> n) -> asio::awaitable<Result<int>> {
                             if (*n < 0) co_return TaskError::permanent("negative");
                             co_return *n;
                         }))
                     .pool(Pool<int, int>("idle").executor_fn(
                         [](TaskContext, std::shared_ptr<const int> n) -> asio::awaitable<Result<int>> { co_return *n; }))
                     .build(io.get_executor());
    for (int i = -2; i < 8; ++i) sched.try_submit(Task<int>(i).pool("work")).value();
    sched.try_submit(Task<int>(0).pool("work").priority(Priority::High).start_in(1h)).value();
    io.run_for(0s);
    io.restart();
    io.poll();
    const Snapshot snap = sched.snapshot();
    ASSERT_EQ(snap.pools.size(), 2u);
    const PoolSnapshot& work = snap.pools[0];
    EXPECT_EQ(work.name, "work");
    EXPECT_EQ(work.window, 60s);
    EXPECT_EQ(work.capacity, 2u);
    EXPECT_EQ(work.dispatched, 10u);
    EXPECT_EQ(work.succeeded, 8u);
    EXPECT_EQ(work.failed, 2u);
    EXPECT_EQ(work.scheduled, 1u);
    ASSERT_TRUE(work.priority_adherence.has_value());
    EXPECT_FALSE(work.fixed_start_hit_rate.has_value());
    EXPECT_EQ(snap.pools[1].dispatched, 0u);

    const nlohmann::json j = snap.to_json();
    ASSERT_TRUE(j.contains("pools"));
    ASSERT_EQ(j["pools"].size(), 2u);
    const auto& w = j["pools"][0];
    EXPECT_EQ(w["name"], "work");
    EXPECT_EQ(w["succeeded"], 8);
    EXPECT_EQ(w["failed"], 2);
    EXPECT_EQ(w["scheduled"], 1);
    EXPECT_TRUE(w["wait_ms"].contains("p99"));
    EXPECT_TRUE(w["run_ms"].contains("p50"));
    EXPECT_TRUE(w["pending"].contains("critical"));
    EXPECT_TRUE(w["fixed_start_hit_rate"].is_null());
    EXPECT_TRUE(j["pools"][1]["priority_adherence"].is_null());
    // The text form, for code that does not include nlohmann/json.hpp.
    EXPECT_EQ(snap.to_json_string(), j.dump());
    EXPECT_EQ(nlohmann::json::parse(snap.to_json_string(2)), j);
    EXPECT_NE(snap.to_json_string(2).find("\n  \"pools\""), std::string::npos);

    // Since the start, for Prometheus (docs/guide/operations.md, "Prometheus").
    EXPECT_EQ(work.totals.submitted, 11u);
    EXPECT_EQ(work.totals.attempts_started, 10u);
    EXPECT_EQ(work.totals.succeeded, 8u);
    EXPECT_EQ(work.totals.failed, 2u);
    EXPECT_EQ(work.run_histogram.count, 10u);
    EXPECT_EQ(work.wait_histogram[index_of(Priority::Normal)].count, 10u);
    EXPECT_EQ(w["totals"]["submitted"], 11);
    EXPECT_EQ(w["totals"]["failed"], 2);
    EXPECT_EQ(w["run_seconds"]["count"], 10);
    const auto& buckets = w["wait_seconds"]["normal"]["buckets"];
    ASSERT_EQ(buckets.size(), SecondsHistogram::bucket_count);
    EXPECT_EQ(buckets[0][0], 0.0001);
    EXPECT_EQ(buckets[0][1], 10) << "no time passed on the manual clock: every wait is 0";
    EXPECT_EQ(w["wait_seconds"]["high"]["count"], 0);
    test::run(io, sched.shutdown(0s));
}
}  // namespace snapshot_test
