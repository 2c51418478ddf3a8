// cronoq-store on a PostgreSQL store: the same commands and output as for
// a SQLite file, the schema named with --schema.
#include "pg_support.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sys/wait.h>

namespace cronoq::test::tool_test {
namespace {

using namespace std::chrono_literals;

struct ToolRun {
    int status = -1;
    std::string out;
};

/// Runs the tool with `args` (stdout captured, stderr to /dev/null).
ToolRun tool(const std::string& args) {
    const std::string command = std::string(CRONOQ_STORE_TOOL) + " " + args + " 2>/dev/null";
    ToolRun run;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return run;
    char buffer[4096];
    while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) run.out.append(buffer, n);
    const int status = ::pclose(pipe);
    run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return run;
}

TEST(PgTool, ReadsAPostgresStoreWithTheSameCommands) {
    ASSERT_FALSE(pg_conninfo().empty()) << "CRONOQ_TEST_PG is not set: run through ctest (label postgres)";
    PgSchema schema;
    {
        Reports reports;
        PostgresStoreConfig config = schema.config();
        config.keep_finished = std::chrono::hours(100000);  // no background prune
        auto store = PostgresStore::connect(pg_conninfo(), config);
        store->journal().lead(reports.handlers());
        ASSERT_TRUE(reports.wait_leading());
        const auto old = std::chrono::system_clock::now() - 72h;
        const auto s = store->journal().enqueue(store::Batch{
            {store::TaskInserted{task_row(1, "order-1")}, store::TaskInserted{task_row(2)},
             store::TaskTransition{TaskId{2}, TaskStatus::Succeeded, 1, "", old, {}, "out"}}});
        ASSERT_TRUE(reports.wait_committed(s));
    }
    const std::string store = std::string("--store '") + CRONOQ_TEST_PG_URI + "' --schema " + schema.name();
    const ToolRun stats = tool(store + " --json stats");
    ASSERT_EQ(stats.status, 0) << stats.out;
    const auto json = nlohmann::json::parse(stats.out);
    EXPECT_EQ(json["tasks"], 2) << stats.out;
    EXPECT_EQ(json["leader"]["epoch"], 1) << stats.out;

    const ToolRun list = tool(store + " --json list --status ready");
    ASSERT_EQ(list.status, 0);
    const auto rows = nlohmann::json::parse(list.out);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0]["id"], 1);
    EXPECT_EQ(rows[0]["key"], "order-1");

    const ToolRun show = tool(store + " --json show order-1");
    ASSERT_EQ(show.status, 0);
    EXPECT_EQ(nlohmann::json::parse(show.out)["id"], 1);
    EXPECT_EQ(tool(store + " show 99").status, 1);

    const ToolRun prune = tool(store + " --json prune --older-than 1d");
    ASSERT_EQ(prune.status, 0);
    EXPECT_EQ(nlohmann::json::parse(prune.out)["pruned"], 1);

    const ToolRun missing = tool(std::string("--store '") + CRONOQ_TEST_PG_URI + "' --schema no_such_schema stats");
    EXPECT_EQ(missing.status, 1);
}

// docs/store.md, cronoq-store: no lease holder, no expiry (not 1970).
TEST(PgTool, StatsWithoutALeaderHasNoLeaseExpiry) {
    ASSERT_FALSE(pg_conninfo().empty()) << "CRONOQ_TEST_PG is not set: run through ctest (label postgres)";
    PgSchema schema;
    PostgresStore::connect(pg_conninfo(), schema.config());  // creates the schema, never leads
    const std::string store = std::string("--store '") + CRONOQ_TEST_PG_URI + "' --schema " + schema.name();
    const ToolRun stats = tool(store + " --json stats");
    ASSERT_EQ(stats.status, 0) << stats.out;
    const auto leader = nlohmann::json::parse(stats.out)["leader"];
    EXPECT_TRUE(leader["holder"].is_null()) << stats.out;
    EXPECT_TRUE(leader["lease_expires_at"].is_null()) << stats.out;
}

// docs/store.md, "Paused pools": while a leader runs, committed to the
// inbox for it (as a client's pause); written while none does, recovered by
// the next leader.
TEST(PgTool, PauseAndResumeGoThroughTheInboxUnderALeaderAndWriteTheRowWithoutOne) {
    ASSERT_FALSE(pg_conninfo().empty()) << "CRONOQ_TEST_PG is not set: run through ctest (label postgres)";
    PgSchema schema;
    const std::string store = std::string("--store '") + CRONOQ_TEST_PG_URI + "' --schema " + schema.name();
    {
        Reports reports;
        auto leader = PostgresStore::connect(pg_conninfo(), schema.config());
        leader->journal().lead(reports.handlers());
        ASSERT_TRUE(reports.wait_leading());
        EXPECT_EQ(tool(store + " pause emails").status, 0) << "committed for the leader";
        const auto inbox = leader->journal().read_inbox(10);
        ASSERT_EQ(inbox.size(), 1u);
        EXPECT_EQ(inbox[0].op, cronoq::store::InboxEntry::Op::Pause);
        EXPECT_EQ(inbox[0].pool, "emails");
        leader->journal().release();
        ASSERT_TRUE(reports.wait_lost());
    }
    const ToolRun paused = tool(store + " --json pause emails");
    ASSERT_EQ(paused.status, 0) << paused.out;
    EXPECT_EQ(nlohmann::json::parse(paused.out)["paused"], true);
    EXPECT_EQ(tool(store + " pause other").status, 0);
    EXPECT_EQ(tool(store + " resume other").status, 0);
    const ToolRun stats = tool(store + " --json stats");
    ASSERT_EQ(stats.status, 0);
    EXPECT_EQ(nlohmann::json::parse(stats.out)["paused_pools"], nlohmann::json::array({"emails"}));

    Reports reports;
    auto next = PostgresStore::connect(pg_conninfo(), schema.config());
    next->journal().lead(reports.handlers());
    ASSERT_TRUE(reports.wait_leading());
    ASSERT_TRUE(reports.recovered.has_value());
    EXPECT_EQ(reports.recovered->paused_pools, std::vector<std::string>{"emails"});
    EXPECT_TRUE(reports.recovered->inbox.empty()) << "the later row did not supersede the queued pause";
}

}  // namespace
}  // namespace cronoq::test::tool_test
