// cronoq-store, the built tool, run as a process: output, messages and exit
// codes.
#include "store_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>

extern char** environ;

namespace cronoq::test::tool_test {
namespace {

using namespace std::chrono_literals;

struct ToolRun {
    int status = -1;
    std::string out, err;
};

std::string slurp(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

ToolRun run_tool(const ScratchDir& dir, std::vector<std::string> args) {
    const auto out = dir.file("tool.out"), err = dir.file("tool.err");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    args.insert(args.begin(), CRONOQ_STORE_TOOL);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    ToolRun run;
    if (::posix_spawn(&pid, CRONOQ_STORE_TOOL, &actions, nullptr, argv.data(), environ) == 0) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    posix_spawn_file_actions_destroy(&actions);
    run.out = slurp(out);
    run.err = slurp(err);
    return run;
}

/// A store with a few tasks: 1 and 2 dead-lettered (2 keyed), 3 running,
/// 4 succeeded eight days ago.
class ToolTest : public ::testing::Test {
protected:
    void SetUp() override {
        // keep_finished past the oldest row: the leader's background prune
        // must leave the pruning to the tool here.
        store = SqliteStore::open(dir.file("s.db"), SqliteStoreConfig{Durability::Full, 10s, 30 * 24h});
        store->journal().lead(reports.handlers());
        ASSERT_TRUE(reports.wait_leading());
        store::Batch batch;
        const auto add = [&](std::uint64_t id, TaskStatus status, std::optional<std::string> key,
                             std::chrono::system_clock::duration age) {
            store::TaskRow row = task_row(id, std::move(key));
            row.status = status;
            row.attempt = status == TaskStatus::DeadLettered ? 3 : 1;
            row.last_error = status == TaskStatus::DeadLettered ? "upstream timed out" : "";
            row.updated_at = std::chrono::system_clock::now() - age;
            batch.changes.push_back(store::TaskInserted{row});
        };
        add(1, TaskStatus::DeadLettered, std::nullopt, 1h);
        add(2, TaskStatus::DeadLettered, "invoice-7", 1h);
        add(3, TaskStatus::Running, std::nullopt, 0h);
        add(4, TaskStatus::Succeeded, "report", 8 * 24h);
        ASSERT_TRUE(reports.wait_committed(store->journal().enqueue(std::move(batch))));
    }
    std::string file() const { return dir.file("s.db").string(); }

    ScratchDir dir;
    Reports reports;
    std::shared_ptr<SqliteStore> store;
};

TEST_F(ToolTest, ListPrintsTaskObjectsAsJson) {
    const ToolRun run = run_tool(dir, {"--store", file(), "--json", "list", "--status", "dead_lettered"});
    ASSERT_EQ(run.status, 0) << run.err;
    const auto tasks = nlohmann::json::parse(run.out);
    ASSERT_TRUE(tasks.is_array());
    ASSERT_EQ(tasks.size(), 2u);
    const auto& task = tasks[1];
    std::vector<std::string> fields;
    for (const auto& [name, value] : task.items()) fields.push_back(name);
    EXPECT_EQ(fields, (std::vector<std::string>{"attempt", "id", "key", "kind", "last_error", "pool", "status",
                                                "submitted_at", "updated_at"}));
    EXPECT_EQ(task["id"], 2);
    EXPECT_EQ(task["key"], "invoice-7");
    EXPECT_EQ(task["status"], "dead_lettered");
    EXPECT_EQ(task["attempt"], 3);
    EXPECT_EQ(task["last_error"], "upstream timed out");
    EXPECT_TRUE(tasks[0]["key"].is_null());
    EXPECT_EQ(task["updated_at"].get<std::string>().size(), 24u);  // 2026-12-01T10:38:04.123Z

    const ToolRun limited = run_tool(dir, {"--store", file(), "--json", "list", "--status", "dead_lettered",
                                           "--limit", "1"});
    ASSERT_EQ(limited.status, 0) << limited.err;
    EXPECT_EQ(nlohmann::json::parse(limited.out).size(), 1u);
}

TEST_F(ToolTest, ShowFindsATaskByIdOrKey) {
    const ToolRun by_id = run_tool(dir, {"--store", file(), "--json", "show", "3"});
    ASSERT_EQ(by_id.status, 0) << by_id.err;
    EXPECT_EQ(nlohmann::json::parse(by_id.out)["status"], "running");
    const ToolRun by_key = run_tool(dir, {"--store", file(), "--json", "show", "invoice-7"});
    ASSERT_EQ(by_key.status, 0) << by_key.err;
    EXPECT_EQ(nlohmann::json::parse(by_key.out)["id"], 2);
    const ToolRun text = run_tool(dir, {"--store", file(), "show", "invoice-7"});
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("payload: payload-2"), std::string::npos) << text.out;
    const ToolRun missing = run_tool(dir, {"--store", file(), "show", "nope"});
    EXPECT_EQ(missing.status, 1);
    EXPECT_TRUE(missing.out.empty());
    EXPECT_NE(missing.err.find("no task"), std::string::npos) << missing.err;
}

TEST_F(ToolTest, StatsCountsTasksByStatusWhileALeaderRuns) {
    const ToolRun run = run_tool(dir, {"--store", file(), "--json", "stats"});
    ASSERT_EQ(run.status, 0) << run.err;
    const auto stats = nlohmann::json::parse(run.out);
    EXPECT_EQ(stats["tasks"], 4);
    EXPECT_EQ(stats["tasks_by_status"]["dead_lettered"], 2);
    EXPECT_EQ(stats["schema_version"], 1);
    EXPECT_EQ(stats["leader"]["epoch"], 1);
    EXPECT_FALSE(stats["leader"]["holder"].is_null());
    const ToolRun text = run_tool(dir, {"--store", file(), "stats"});
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("dead_lettered: 2"), std::string::npos) << text.out;
    // The leader goes on committing while the tool reads.
    EXPECT_TRUE(reports.wait_committed(store->journal().enqueue(insert_batch(5))));
}

TEST_F(ToolTest, PruneRemovesOldTerminalTasks) {
    const ToolRun run = run_tool(dir, {"--store", file(), "--json", "prune", "--older-than", "7d"});
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_EQ(nlohmann::json::parse(run.out)["pruned"], 1);
    EXPECT_FALSE(store->get_task(TaskId{4}));
    EXPECT_TRUE(store->get_task(TaskId{1}));
    const ToolRun bad = run_tool(dir, {"--store", file(), "prune", "--older-than", "soon"});
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("duration"), std::string::npos) << bad.err;
}

TEST_F(ToolTest, ErrorsExitNonZeroWithAMessage) {
    const ToolRun missing = run_tool(dir, {"--store", dir.file("absent.db").string(), "stats"});
    EXPECT_EQ(missing.status, 1);
    EXPECT_NE(missing.err.find("no such store file"), std::string::npos) << missing.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("absent.db")));

    std::ofstream(dir.file("notes.txt")) << "not a database at all, just some words in a text file\n";
    const ToolRun not_store = run_tool(dir, {"--store", dir.file("notes.txt").string(), "stats"});
    EXPECT_EQ(not_store.status, 1);
    EXPECT_NE(not_store.err.find("not a cronoq store"), std::string::npos) << not_store.err;

    RawDb(dir.file("other.db")).exec("CREATE TABLE t (x)");
    const ToolRun other = run_tool(dir, {"--store", dir.file("other.db").string(), "list", "--status", "ready"});
    EXPECT_EQ(other.status, 1);
    EXPECT_NE(other.err.find("not a cronoq store"), std::string::npos) << other.err;

    {
        SqliteStore::open(dir.file("new.db"));
        RawDb(dir.file("new.db")).exec("PRAGMA user_version = 9");
    }
    const ToolRun newer = run_tool(dir, {"--store", dir.file("new.db").string(), "stats"});
    EXPECT_EQ(newer.status, 1);
    EXPECT_NE(newer.err.find("newer"), std::string::npos) << newer.err;

    // A server that is not there (a socket folder that does not exist).
    const ToolRun postgres = run_tool(dir, {"--store", "postgresql:///db?host=/nonexistent-cronoq-dir", "stats"});
    EXPECT_EQ(postgres.status, 1);
#ifdef CRONOQ_STORE_TOOL_POSTGRES
    EXPECT_NE(postgres.err.find("cannot connect to the PostgreSQL server"), std::string::npos) << postgres.err;
#else
    EXPECT_NE(postgres.err.find("not built with PostgreSQL support"), std::string::npos) << postgres.err;
#endif

    const ToolRun usage = run_tool(dir, {"--store", file(), "list", "--status", "sleeping"});
    EXPECT_EQ(usage.status, 2);
    EXPECT_NE(usage.err.find("unknown status"), std::string::npos) << usage.err;
    EXPECT_EQ(run_tool(dir, {"stats"}).status, 2);
    EXPECT_EQ(run_tool(dir, {"--store", file(), "frobnicate"}).status, 2);
}

}  // namespace
}  // namespace cronoq::test::tool_test
