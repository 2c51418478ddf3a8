// The dashboard's JSON routes, page and metrics (docs/guide/dashboard.md).
#include "dashboard_fixture.hpp"

#include <gtest/gtest.h>

namespace api_test {

using namespace cronoq;
using namespace cronoq::test;
using namespace std::chrono_literals;

TEST(DashboardApi, PoolsListCapacityPendingAndPaused) {
    Served s;
    const auto r = s.get("/api/pools");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("content-type"), "application/json");
    const auto pools = Served::json(r)["pools"];
    ASSERT_EQ(pools.size(), 2u);
    EXPECT_EQ(pools[0]["name"], "work");
    EXPECT_EQ(pools[0]["capacity"], 2);
    EXPECT_EQ(pools[0]["paused"], false);
    EXPECT_TRUE(pools[0]["pending"].contains("normal"));
    EXPECT_TRUE(pools[0]["wait_ms"].contains("p99"));
}

TEST(DashboardApi, TasksFilteredByStatusWithCursorPaging) {
    Served s;
    std::vector<TaskId> dead;
    for (int i = 0; i < 5; ++i) dead.push_back(s.run(Task<std::string>("fail " + std::to_string(i)).pool("work")));
    s.run(Task<std::string>("fine").pool("work"));
    s.flush();
    const auto first = s.get("/api/tasks?status=dead_lettered&limit=3");
    ASSERT_EQ(first.status, 200) << first.body;
    const auto page1 = Served::json(first);
    ASSERT_EQ(page1["tasks"].size(), 3u);
    EXPECT_EQ(page1["tasks"][0]["id"], dead[4].value);  // newest first
    EXPECT_EQ(page1["tasks"][0]["status"], "dead_lettered");
    EXPECT_EQ(page1["tasks"][0]["last_error"], "it failed: fail 4");
    ASSERT_TRUE(page1["next_cursor"].is_string());
    const auto page2 = Served::json(s.get("/api/tasks?status=dead_lettered&limit=3&cursor=" + page1["next_cursor"].get<std::string>()));
    ASSERT_EQ(page2["tasks"].size(), 2u);
    EXPECT_EQ(page2["tasks"][1]["id"], dead[0].value);
    EXPECT_TRUE(page2["next_cursor"].is_null());
    EXPECT_EQ(Served::json(s.get("/api/tasks?status=succeeded"))["tasks"].size(), 1u);
}

TEST(DashboardApi, KeyPrefixSearch) {
    Served s;
    s.run(Task<std::string>("a").pool("work").key("invoice-17"));
    s.run(Task<std::string>("b").pool("work").key("report-3"));
    s.flush();
    const auto page = Served::json(s.get("/api/tasks?key_prefix=invoice-"));
    ASSERT_EQ(page["tasks"].size(), 1u);
    EXPECT_EQ(page["tasks"][0]["key"], "invoice-17");
}

TEST(DashboardApi, TaskDetailShowsAttemptsErrorPreviewsAndDependencies) {
    Served s;
    const TaskId parent = s.run(Task<std::string>("fail parent").pool("work").key("parent"));
    const TaskId done = s.run(Task<std::string>("hello").pool("other"));
    auto child = s.sched().try_submit(Task<std::string>("child").pool("work").depends_on(Dep::on_failure(TaskRef("parent"))));
    ASSERT_TRUE(child);
    s.flush();
    const auto failed = Served::json(s.get("/api/tasks/" + std::to_string(parent.value)));
    EXPECT_EQ(failed["attempt"], 1);
    EXPECT_EQ(failed["last_error"], "it failed: fail parent");
    EXPECT_EQ(failed["payload_preview"], "fail parent");
    const auto succeeded = Served::json(s.get("/api/tasks/" + std::to_string(done.value)));
    EXPECT_EQ(succeeded["output_preview"], "out:hello");
    const auto dependent = Served::json(s.get("/api/tasks/" + std::to_string(child.value().id().value)));
    ASSERT_EQ(dependent["depends_on"].size(), 1u);
    EXPECT_EQ(dependent["depends_on"][0]["key"], "parent");
    EXPECT_EQ(dependent["depends_on"][0]["when"], "failure");
    EXPECT_EQ(s.get("/api/tasks/999999").status, 404);
    EXPECT_EQ(s.get("/api/tasks/abc").status, 404);
}

TEST(DashboardApi, RecurringListsNextOccurrences) {
    Served s;
    s.sched().add_recurring(Recurring<std::string>("nightly", "0 3 * * *", Task<std::string>("n").pool("other")));
    const auto list = Served::json(s.get("/api/recurring"))["recurring"];
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0]["name"], "nightly");
    EXPECT_EQ(list[0]["pool"], "other");
    ASSERT_EQ(list[0]["next"].size(), 5u);
    for (int i = 0; i < 5; ++i) EXPECT_NE(list[0]["next"][i].get<std::string>().find("T03:00:00.000Z"), std::string::npos);
    EXPECT_LT(list[0]["next"][0].get<std::string>(), list[0]["next"][1].get<std::string>());
}

TEST(DashboardApi, StoreFiguresAndMetrics) {
    Served s;
    s.run(Task<std::string>("x").pool("work"));
    const auto store = Served::json(s.get("/api/store"))["store"];
    ASSERT_TRUE(store.is_object());
    EXPECT_GE(store["commits"].get<int>(), 1);
    EXPECT_EQ(store["leading"], true);
    const auto metrics = s.get("/metrics");
    ASSERT_EQ(metrics.status, 200);
    EXPECT_NE(metrics.header("content-type").find("text/plain; version=0.0.4"), std::string::npos);
    EXPECT_NE(metrics.body.find("cronoq_pool_capacity{pool=\"work\"} 2"), std::string::npos) << metrics.body;
    EXPECT_NE(metrics.body.find("cronoq_store_commits_total"), std::string::npos);
}

TEST(DashboardApi, RetryAndCancelActions) {
    Served s;
    const TaskId dead = s.run(Task<std::string>("fail once").pool("work"));
    s.flush();
    const auto retried = s.post("/api/tasks/" + std::to_string(dead.value) + "/retry");
    ASSERT_EQ(retried.status, 200) << retried.body;
    const auto again = TaskId{Served::json(retried)["retried_as"].get<std::uint64_t>()};
    EXPECT_NE(again, dead);
    EXPECT_TRUE(s.sched().status(again).has_value());
    const TaskId ok = s.run(Task<std::string>("fine").pool("work"));
    EXPECT_EQ(s.post("/api/tasks/" + std::to_string(ok.value) + "/retry").status, 409);
    EXPECT_EQ(s.post("/api/tasks/424242/retry").status, 404);

    auto later = s.sched().try_submit(Task<std::string>("later").pool("work").start_in(1h));
    ASSERT_TRUE(later);
    const std::string cancel = "/api/tasks/" + std::to_string(later.value().id().value) + "/cancel";
    ASSERT_EQ(s.post(cancel).status, 200);
    EXPECT_EQ(s.sched().status(later.value().id()), TaskStatus::Cancelled);
    EXPECT_EQ(s.post(cancel).status, 409);
}

TEST(DashboardApi, BulkRetryOfDeadLetters) {
    Served s;
    for (int i = 0; i < 3; ++i) s.run(Task<std::string>("fail " + std::to_string(i)).pool("work"));
    s.run(Task<std::string>("fail elsewhere").pool("other").retry(RetryPolicy::none()));
    s.flush();
    const auto r = s.post("/api/dead_letters/retry?pool=work");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(Served::json(r)["retried"], 3);
}

TEST(DashboardApi, PauseAndResumeAPool) {
    Served s;
    const auto paused = s.post("/api/pools/work/pause");
    ASSERT_EQ(paused.status, 200) << paused.body;
    EXPECT_EQ(Served::json(paused)["paused"], true);
    EXPECT_EQ(Served::json(s.get("/api/pools"))["pools"][0]["paused"], true);
    EXPECT_EQ(Served::json(s.get("/api/pools"))["pools"][1]["paused"], false);
    auto held = s.sched().try_submit(Task<std::string>("held").pool("work"));
    ASSERT_TRUE(held);
    EXPECT_EQ(s.sched().status(held.value().id()), TaskStatus::Ready);  // admitted, not dispatched
    ASSERT_EQ(s.post("/api/pools/work/resume").status, 200);
    EXPECT_EQ(Served::json(s.get("/api/pools"))["pools"][0]["paused"], false);
    s.wait(held.value());
    EXPECT_EQ(s.sched().status(held.value().id()), TaskStatus::Succeeded);
    EXPECT_EQ(s.post("/api/pools/nope/pause").status, 404);
}

TEST(DashboardApi, WithoutAStoreTasksComeFromTheScheduler) {
    Served s(DashboardConfig{"127.0.0.1:0", "", false}, Served::Memory);
    const TaskId dead = s.run(Task<std::string>("fail here").pool("work").key("k-dead"));
    s.run(Task<std::string>("fine").pool("work").key("k-fine"));
    const auto page = Served::json(s.get("/api/tasks?status=dead_lettered"));
    ASSERT_EQ(page["tasks"].size(), 1u);
    EXPECT_EQ(page["tasks"][0]["id"], dead.value);
    const auto detail = Served::json(s.get("/api/tasks/" + std::to_string(dead.value)));
    EXPECT_EQ(detail["status"], "dead_lettered");
    EXPECT_EQ(detail["attempt"], 1);
    EXPECT_EQ(detail["last_error"], "it failed: fail here");
    EXPECT_EQ(detail["key"], "k-dead");
    EXPECT_TRUE(Served::json(s.get("/api/store"))["store"].is_null());
    const auto retried = s.post("/api/tasks/" + std::to_string(dead.value) + "/retry");
    EXPECT_EQ(retried.status, 200) << retried.body;
}

TEST(DashboardApi, BadParametersAre400AndUnknownRoutes404) {
    Served s;
    EXPECT_EQ(s.get("/api/tasks?status=sleeping").status, 400);
    EXPECT_EQ(s.get("/api/tasks?limit=many").status, 400);
    EXPECT_EQ(s.get("/api/tasks?submitted_after=yesterday").status, 400);
    EXPECT_EQ(s.get("/api/tasks/%zz").status, 400);
    EXPECT_EQ(s.get("/api/nothing").status, 404);
    EXPECT_EQ(s.get("/elsewhere").status, 404);
}

TEST(DashboardPage, ServedFromTheLibraryUnder150kB) {
    Served s;
    const auto page = s.get("/");
    ASSERT_EQ(page.status, 200);
    EXPECT_EQ(page.header("content-type"), "text/html; charset=utf-8");
    EXPECT_NE(page.body.find("<script src=\"/app.js\""), std::string::npos);
    EXPECT_EQ(page.body.find("http://"), std::string::npos);  // nothing fetched from elsewhere
    EXPECT_EQ(page.body.find("https://"), std::string::npos);
    const auto script = s.get("/app.js");
    const auto style = s.get("/style.css");
    ASSERT_EQ(script.status, 200);
    ASSERT_EQ(style.status, 200);
    EXPECT_LT(page.body.size() + script.body.size() + style.body.size(), 150u * 1024u);
}

TEST(DashboardServer, PortZeroPicksFreePortsAndStopIsIdempotent) {
    Served a, b;
    EXPECT_NE(a.port(), 0);
    EXPECT_NE(b.port(), 0);
    EXPECT_NE(a.port(), b.port());
    const auto port = a.port();
    a.dashboard().stop();
    a.dashboard().stop();
    EXPECT_THROW(http(port, "GET", "/api/pools"), std::exception);
}

}  // namespace api_test
