// Who may use the dashboard (docs/guide/dashboard.md, "Access"): the token,
// loopback, cross-site refusal, read-only mode, and payloads that hold
// markup.
#include "dashboard_fixture.hpp"

#include <cronoq/config_error.hpp>

#include <gtest/gtest.h>

namespace access_test {

using namespace cronoq;
using namespace cronoq::test;

TEST(DashboardAccess, NonLoopbackWithoutTokenIsAConfigError) {
    EXPECT_THROW(Served(DashboardConfig{"0.0.0.0:0", "", false}), ConfigError);
    EXPECT_THROW(Served(DashboardConfig{"127.0.0.1", "", false}), ConfigError);       // no port
    EXPECT_THROW(Served(DashboardConfig{"127.0.0.1:70000", "", false}), ConfigError);  // past 65535
    EXPECT_THROW(Served(DashboardConfig{"example.com:0", "t", false}), ConfigError);   // not an address
    EXPECT_THROW(Served(DashboardConfig{"127.0.0.1:0", "a b", false}), ConfigError);   // not a cookie value
    EXPECT_THROW(Served(DashboardConfig{"127.0.0.1:0", "a;b", false}), ConfigError);
}

TEST(DashboardAccess, OffLoopbackEveryRequestNeedsTheToken) {
    Served s(DashboardConfig{"0.0.0.0:0", "s3cret", false});
    const auto without = s.get("/api/pools", {"Host: dashboard.example:80"});
    EXPECT_EQ(without.status, 401);
    EXPECT_EQ(without.header("www-authenticate"), "Bearer realm=\"cronoq\"");
    EXPECT_EQ(s.get("/api/pools", {"Host: dashboard.example:80", "Authorization: Bearer wrong"}).status, 401);
    EXPECT_EQ(s.get("/metrics").status, 401);
    EXPECT_EQ(s.post("/api/tasks/1/retry").status, 401);
    const auto page = s.get("/");
    EXPECT_EQ(page.status, 401);
    EXPECT_NE(page.body.find("action=\"/login\""), std::string::npos);  // the sign-in form
    EXPECT_EQ(s.get("/api/pools", {"Host: dashboard.example:80", "Authorization: Bearer s3cret"}).status, 200);
}

TEST(DashboardAccess, LoginSetsAnHttpOnlyCookieThatAuthorizes) {
    Served s(DashboardConfig{"127.0.0.1:0", "s3cret", false});
    EXPECT_EQ(s.post("/login", {"Content-Type: application/x-www-form-urlencoded"}, "token=wrong").status, 401);
    const auto login = s.post("/login", {"Content-Type: application/x-www-form-urlencoded"}, "token=s3cret");
    ASSERT_EQ(login.status, 303);
    const std::string cookie = login.header("set-cookie");
    EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
    EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos);
    const std::string pair = cookie.substr(0, cookie.find(';'));
    EXPECT_EQ(s.get("/api/pools", {"Cookie: theme=dark; " + pair}).status, 200);
    EXPECT_EQ(s.get("/api/pools", {"Cookie: cronoq_dashboard_token=nope"}).status, 401);
}

TEST(DashboardAccess, WithoutTokenTheHostMustBeLoopback) {
    Served s;
    EXPECT_EQ(s.get("/api/pools", {"Host: localhost:" + std::to_string(s.port())}).status, 200);
    EXPECT_EQ(s.get("/api/pools", {"Host: [::1]:" + std::to_string(s.port())}).status, 200);
    // A page of another site whose name was rebound to 127.0.0.1.
    EXPECT_EQ(s.get("/api/pools", {"Host: attacker.example:" + std::to_string(s.port())}).status, 403);
}

TEST(DashboardAccess, CrossSiteActionsAreRefused) {
    Served s;
    const TaskId dead = s.run(Task<std::string>("fail").pool("work"));
    s.flush();
    const std::string retry = "/api/tasks/" + std::to_string(dead.value) + "/retry";
    const std::string self = "http://127.0.0.1:" + std::to_string(s.port());
    EXPECT_EQ(s.post(retry, {"Origin: https://attacker.example"}).status, 403);
    EXPECT_EQ(s.post(retry, {"Origin: null"}).status, 403);
    EXPECT_EQ(s.post(retry, {"Origin: " + self, "Sec-Fetch-Site: cross-site"}).status, 403);
    EXPECT_EQ(s.post(retry, {"Sec-Fetch-Site: same-site"}).status, 403);
    EXPECT_EQ(s.post("/api/pools/work/pause", {"Origin: https://attacker.example"}).status, 403);
    EXPECT_EQ(s.sched().status(dead), TaskStatus::DeadLettered);  // nothing was retried
    // Reading is not an action: a cross-site GET is refused by the browser's
    // same-origin policy, not here.
    EXPECT_EQ(s.get("/api/pools", {"Origin: https://attacker.example"}).status, 200);
    const auto same = s.post(retry, {"Origin: " + self, "Sec-Fetch-Site: same-origin"});
    EXPECT_EQ(same.status, 200) << same.body;
}

TEST(DashboardAccess, ReadOnlyRefusesEveryAction) {
    Served s(DashboardConfig{"127.0.0.1:0", "", true});
    const TaskId dead = s.run(Task<std::string>("fail").pool("work"));
    s.flush();
    EXPECT_EQ(Served::json(s.get("/api/config"))["read_only"], true);
    EXPECT_EQ(s.post("/api/tasks/" + std::to_string(dead.value) + "/retry").status, 403);
    EXPECT_EQ(s.post("/api/tasks/" + std::to_string(dead.value) + "/cancel").status, 403);
    EXPECT_EQ(s.post("/api/pools/work/pause").status, 403);
    EXPECT_EQ(s.post("/api/pools/work/resume").status, 403);
    EXPECT_EQ(s.post("/api/dead_letters/retry").status, 403);
    EXPECT_EQ(s.sched().status(dead), TaskStatus::DeadLettered);
    EXPECT_EQ(s.get("/api/tasks/" + std::to_string(dead.value)).status, 200);
}

TEST(DashboardAccess, PayloadHoldingScriptStaysData) {
    Served s;
    const std::string markup = "<script>window.__cronoq_injected=1</script><img src=x onerror=alert(1)>";
    const TaskId id = s.run(Task<std::string>(markup).pool("work").key("</script><script>alert(2)</script>"));
    s.flush();
    const auto r = s.get("/api/tasks/" + std::to_string(id.value));
    ASSERT_EQ(r.status, 200);
    // Served as JSON that a browser must not sniff into HTML, under a policy
    // that runs no inline script even if it were.
    EXPECT_EQ(r.header("content-type"), "application/json");
    EXPECT_EQ(r.header("x-content-type-options"), "nosniff");
    EXPECT_NE(r.header("content-security-policy").find("default-src 'self'"), std::string::npos);
    EXPECT_EQ(r.header("content-security-policy").find("unsafe-inline"), std::string::npos);
    const auto task = Served::json(r);
    EXPECT_EQ(task["payload_preview"], markup);
    EXPECT_EQ(task["output_preview"], "out:" + markup);
    // The page is static: no task data is ever written into its HTML.
    const auto page = s.get("/");
    EXPECT_EQ(page.body.find("__cronoq_injected"), std::string::npos);
    EXPECT_NE(page.header("content-security-policy").find("default-src 'self'"), std::string::npos);
    // The page's script writes values as text only.
    const auto script = s.get("/app.js").body;
    EXPECT_EQ(script.find("innerHTML"), std::string::npos);
    EXPECT_EQ(script.find("insertAdjacentHTML"), std::string::npos);
    EXPECT_EQ(script.find("document.write"), std::string::npos);
}

}  // namespace access_test
