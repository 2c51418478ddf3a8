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
#include <unistd.h>

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

/// Runs the tool with `args`, and with `input` as its stdin when given.
ToolRun run_tool(const ScratchDir& dir, std::vector<std::string> args, const std::optional<std::string>& input = {}) {
    const auto out = dir.file("tool.out"), err = dir.file("tool.err"), in = dir.file("tool.in");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (input) {
        std::ofstream(in) << *input;
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, in.c_str(), O_RDONLY, 0);
    }
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

/// A store with a few tasks: 1 and 2 dead-lettered (2 keyed, of fair key
/// "tenant-9"), 3 running, 4 succeeded eight days ago.
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
            if (id == 2) row.fair_key = "tenant-9";
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
    const auto& task = tasks[0];  // newest first
    std::vector<std::string> fields;
    for (const auto& [name, value] : task.items()) fields.push_back(name);
    EXPECT_EQ(fields, (std::vector<std::string>{"attempt", "fair_key", "id", "key", "kind", "last_error", "pool",
                                                "status", "submitted_at", "updated_at"}));
    EXPECT_EQ(task["id"], 2);
    EXPECT_EQ(task["key"], "invoice-7");
    EXPECT_EQ(task["status"], "dead_lettered");
    EXPECT_EQ(task["attempt"], 3);
    EXPECT_EQ(task["last_error"], "upstream timed out");
    EXPECT_TRUE(tasks[1]["key"].is_null());
    EXPECT_EQ(task["fair_key"], "tenant-9");
    EXPECT_TRUE(tasks[1]["fair_key"].is_null());
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
    EXPECT_EQ(nlohmann::json::parse(by_key.out)["fair_key"], "tenant-9");
    EXPECT_TRUE(nlohmann::json::parse(by_id.out)["fair_key"].is_null());
    const ToolRun text = run_tool(dir, {"--store", file(), "show", "invoice-7"});
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("payload: payload-2"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("fair_key: tenant-9"), std::string::npos) << text.out;
    const ToolRun listed = run_tool(dir, {"--store", file(), "list", "--fair-key", "tenant-9"});
    ASSERT_EQ(listed.status, 0) << listed.err;
    EXPECT_NE(listed.out.find("fair_key=tenant-9"), std::string::npos) << listed.out;
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
    EXPECT_EQ(stats["schema_version"], 4);
    EXPECT_EQ(stats["leader"]["epoch"], 1);
    EXPECT_FALSE(stats["leader"]["holder"].is_null());
    const ToolRun text = run_tool(dir, {"--store", file(), "stats"});
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("dead_lettered: 2"), std::string::npos) << text.out;
    // The leader goes on committing while the tool reads.
    EXPECT_TRUE(reports.wait_committed(store->journal().enqueue(insert_batch(5))));
}

// Shards and their leaders (docs/store.md, "Shards"): the fixture leads
// "default" (no pools), a second store leads "b" with pool "pb".
TEST_F(ToolTest, StatsShowsShardsTheirLeadersAndPools) {
    Reports b_reports;
    auto b = SqliteStore::open(dir.file("s.db"));
    store::LeadHandlers handlers = b_reports.handlers();
    handlers.shard = "b";
    handlers.pools = {"pb"};
    b->journal().lead(std::move(handlers));
    ASSERT_TRUE(b_reports.wait_leading());
    const ToolRun run = run_tool(dir, {"--store", file(), "--json", "stats"});
    ASSERT_EQ(run.status, 0) << run.err;
    const auto shards = nlohmann::json::parse(run.out)["shards"];
    ASSERT_EQ(shards.size(), 2u) << run.out;
    EXPECT_EQ(shards[0]["shard"], "b");
    EXPECT_EQ(shards[0]["led"], true);
    EXPECT_EQ(shards[0]["epoch"], 1);
    EXPECT_EQ(shards[0]["pools"], nlohmann::json::array({"pb"}));
    EXPECT_NE(shards[0]["holder"].get<std::string>().find("pid " + std::to_string(::getpid())), std::string::npos);
    EXPECT_EQ(shards[1]["shard"], "default");
    EXPECT_EQ(shards[1]["led"], true);
    b->journal().release();
    ASSERT_TRUE(b_reports.wait_lost());
    const ToolRun text = run_tool(dir, {"--store", file(), "stats"});
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("shards:\n  b: no leader (epoch 1); pools pb\n  default: led by pid "), std::string::npos)
        << text.out;
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

// docs/store.md, cronoq-store: bytes that are not UTF-8 print as U+FFFD, so
// --json output always parses.
TEST_F(ToolTest, JsonOutputReplacesBytesThatAreNotUtf8) {
    store::TaskRow row = task_row(6, std::string("key-\xff\xfe"));
    row.kind = "kind-\xc3";  // a sequence cut short
    row.status = TaskStatus::DeadLettered;
    row.last_error = "boom \x80 at the end";
    store::Batch batch;
    batch.changes.push_back(store::TaskInserted{row});
    ASSERT_TRUE(reports.wait_committed(store->journal().enqueue(std::move(batch))));
    const std::string bad = "\xef\xbf\xbd";  // U+FFFD

    const ToolRun list = run_tool(dir, {"--store", file(), "--json", "list", "--status", "dead_lettered"});
    ASSERT_EQ(list.status, 0) << list.err;
    const auto tasks = nlohmann::json::parse(list.out);
    ASSERT_EQ(tasks.size(), 3u);
    EXPECT_EQ(tasks[0]["key"], "key-" + bad + bad);
    EXPECT_EQ(tasks[0]["kind"], "kind-" + bad);
    EXPECT_EQ(tasks[0]["last_error"], "boom " + bad + " at the end");

    // A key prefix is compared byte for byte, invalid UTF-8 included.
    const ToolRun prefix = run_tool(dir, {"--store", file(), "--json", "list", "--key-prefix", "key-\xff"});
    ASSERT_EQ(prefix.status, 0) << prefix.err;
    ASSERT_EQ(nlohmann::json::parse(prefix.out).size(), 1u) << prefix.out;
    EXPECT_EQ(nlohmann::json::parse(prefix.out)[0]["id"], 6);
    EXPECT_EQ(nlohmann::json::parse(run_tool(dir, {"--store", file(), "--json", "list", "--key-prefix", "key-\xfe"}).out).size(), 0u);

    const ToolRun show = run_tool(dir, {"--store", file(), "--json", "show", "6"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_EQ(nlohmann::json::parse(show.out)["key"], "key-" + bad + bad);
    // Text output prints the bytes as stored.
    const ToolRun text = run_tool(dir, {"--store", file(), "show", "6"});
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("kind: kind-\xc3\n"), std::string::npos) << text.out;

    // A status as stored, whatever its bytes, is a key of tasks_by_status.
    RawDb(dir.file("s.db")).exec("UPDATE tasks SET status = 'odd' || CAST(x'ff' AS TEXT) WHERE id = 6");
    const ToolRun stats = run_tool(dir, {"--store", file(), "--json", "stats"});
    ASSERT_EQ(stats.status, 0) << stats.err;
    EXPECT_EQ(nlohmann::json::parse(stats.out)["tasks"], 5);
}

TEST_F(ToolTest, StatsWithoutALeaderHasNoLeaseExpiry) {
    {
        SqliteStore::open(dir.file("idle.db"));
    }
    const std::string idle = dir.file("idle.db").string();
    const ToolRun run = run_tool(dir, {"--store", idle, "--json", "stats"});
    ASSERT_EQ(run.status, 0) << run.err;
    const auto leader = nlohmann::json::parse(run.out)["leader"];
    EXPECT_TRUE(leader["holder"].is_null()) << leader;
    EXPECT_TRUE(leader["lease_expires_at"].is_null()) << leader;
    const ToolRun text = run_tool(dir, {"--store", idle, "stats"});
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("leader: none"), std::string::npos) << text.out;
    EXPECT_EQ(text.out.find("1970"), std::string::npos) << text.out;

    // The fixture's store leads: its lease has an expiry.
    const ToolRun led = run_tool(dir, {"--store", file(), "--json", "stats"});
    ASSERT_EQ(led.status, 0) << led.err;
    const auto lease = nlohmann::json::parse(led.out)["leader"]["lease_expires_at"];
    ASSERT_TRUE(lease.is_string()) << lease;
    EXPECT_EQ(lease.get<std::string>().size(), 24u);
}

// docs/store.md, "Paused pools": while a leader runs, committed to the
// inbox for it (as a client's pause); written while none does, recovered by
// the next leader.
TEST_F(ToolTest, PauseAndResumeGoThroughTheInboxUnderALeaderAndWriteTheRowWithoutOne) {
    const ToolRun queued = run_tool(dir, {"--store", file(), "--json", "pause", "emails"});
    ASSERT_EQ(queued.status, 0) << queued.err;
    EXPECT_EQ(nlohmann::json::parse(queued.out), (nlohmann::json{{"pool", "emails"}, {"paused", true}}));
    ASSERT_EQ(run_tool(dir, {"--store", file(), "resume", "emails"}).status, 0);
    const auto inbox = store->journal().read_inbox(10);
    ASSERT_EQ(inbox.size(), 2u);
    EXPECT_EQ(inbox[0].op, cronoq::store::InboxEntry::Op::Pause);
    EXPECT_EQ(inbox[0].pool, "emails");
    EXPECT_EQ(inbox[1].op, cronoq::store::InboxEntry::Op::Resume);
    EXPECT_EQ(inbox[1].pool, "emails");
    store->journal().release();
    ASSERT_TRUE(reports.wait_lost());
    store.reset();

    const ToolRun paused = run_tool(dir, {"--store", file(), "--json", "pause", "emails"});
    ASSERT_EQ(paused.status, 0) << paused.err;
    EXPECT_EQ(nlohmann::json::parse(paused.out), (nlohmann::json{{"pool", "emails"}, {"paused", true}}));
    ASSERT_EQ(run_tool(dir, {"--store", file(), "pause", "other"}).status, 0);
    const ToolRun resumed = run_tool(dir, {"--store", file(), "resume", "other"});
    ASSERT_EQ(resumed.status, 0) << resumed.err;
    EXPECT_NE(resumed.err.find("resumed"), std::string::npos) << resumed.err;
    const ToolRun stats = run_tool(dir, {"--store", file(), "stats"});
    EXPECT_NE(stats.out.find("paused pools: emails\n"), std::string::npos) << stats.out;
    EXPECT_EQ(run_tool(dir, {"--store", file(), "pause"}).status, 2) << "a pool is required";

    Reports next_reports;
    auto next = SqliteStore::open(dir.file("s.db"));
    next->journal().lead(next_reports.handlers());
    ASSERT_TRUE(next_reports.wait_leading());
    ASSERT_TRUE(next_reports.recovered.has_value());
    EXPECT_EQ(next_reports.recovered->paused_pools, std::vector<std::string>{"emails"});
    EXPECT_TRUE(next_reports.recovered->inbox.empty()) << "the later row did not supersede the queued pause and resume";
}

TEST_F(ToolTest, NumericArgumentsAreDigitsOnly) {
    for (const std::string limit : {"-1", "-0", "+1", " 1", "1x", "0x10", "", "1.5", "18446744073709551616"}) {
        const ToolRun run = run_tool(dir, {"--store", file(), "list", "--status", "ready", "--limit", limit});
        EXPECT_EQ(run.status, 2) << "--limit \"" << limit << "\": " << run.err;
        EXPECT_NE(run.err.find("--limit needs a number"), std::string::npos) << run.err;
    }
    const ToolRun zero = run_tool(dir, {"--store", file(), "--json", "list", "--status", "dead_lettered", "--limit", "0"});
    ASSERT_EQ(zero.status, 0) << zero.err;
    EXPECT_EQ(nlohmann::json::parse(zero.out).size(), 1u) << "the limit is clamped to [1, 1000]";
    const ToolRun all = run_tool(dir, {"--store", file(), "--json", "list", "--status", "dead_lettered", "--limit",
                                       "18446744073709551615"});
    ASSERT_EQ(all.status, 0) << all.err;
    EXPECT_EQ(nlohmann::json::parse(all.out).size(), 2u);

    for (const std::string age : {"-1d", "-0s", "+1d", "1d ", "1.5d", "d", "106752d", "9223372036854775808s"}) {
        const ToolRun run = run_tool(dir, {"--store", file(), "prune", "--older-than", age});
        EXPECT_EQ(run.status, 2) << "--older-than \"" << age << "\": " << run.err;
        EXPECT_NE(run.err.find("--older-than needs a duration"), std::string::npos) << run.err;
    }
    EXPECT_TRUE(store->get_task(TaskId{4}));  // nothing pruned
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
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"--cursor", "x"}, {"--submitted-after", "yesterday"},
          {"--submitted-before", "2026-02-30T00:00:00Z"}, {"--submitted-after", "2026-12-01T10:00:00+01:00"},
          {"--pool"}, {"--colour", "red"}}) {
        std::vector<std::string> all{"--store", file(), "list"};
        all.insert(all.end(), args.begin(), args.end());
        const ToolRun bad = run_tool(dir, all);
        EXPECT_EQ(bad.status, 2) << args[0] << ": " << bad.err;
        EXPECT_NE(bad.err.find(args[0]), std::string::npos) << bad.err;
    }
}

TEST_F(ToolTest, HelpNamesListsFilters) {
    const ToolRun help = run_tool(dir, {"--help"});
    EXPECT_EQ(help.status, 0) << help.err;
    for (const char* flag : {"--status", "--pool", "--kind", "--key-prefix", "--fair-key", "--submitted-after",
                             "--submitted-before", "--limit", "--cursor"})
        EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
    EXPECT_EQ(run_tool(dir, {"--store", file(), "list", "-h"}).status, 0);
}

TEST_F(ToolTest, ListFiltersAndPages) {
    const auto ids = [&](std::vector<std::string> args) {
        std::vector<std::string> all{"--store", file(), "--json", "list"};
        all.insert(all.end(), args.begin(), args.end());
        const ToolRun run = run_tool(dir, all);
        EXPECT_EQ(run.status, 0) << run.err;
        std::vector<std::uint64_t> out;
        for (const auto& task : nlohmann::json::parse(run.out.empty() ? "[]" : run.out)) out.push_back(task["id"]);
        return std::make_pair(out, run.err);
    };
    using V = std::vector<std::uint64_t>;
    EXPECT_EQ(ids({}).first, (V{4, 3, 2, 1}));
    EXPECT_EQ(ids({"--status", "running,succeeded"}).first, (V{4, 3}));
    EXPECT_EQ(ids({"--status", "running", "--status", "dead_lettered"}).first, (V{3, 2, 1}));
    EXPECT_EQ(ids({"--pool", "default", "--kind", "work", "--key-prefix", "inv"}).first, (V{2}));
    EXPECT_EQ(ids({"--key-prefix", ""}).first, (V{4, 2}));
    EXPECT_EQ(ids({"--fair-key", ""}).first, (V{4, 3, 1})) << "the tasks without a fair key";
    EXPECT_EQ(ids({"--fair-key", "tenant-9"}).first, (V{2}));
    EXPECT_EQ(ids({"--pool", "other"}).first, V{});
    EXPECT_EQ(ids({"--submitted-after", "1h"}).first.size(), 4u) << "submitted just now";
    EXPECT_EQ(ids({"--submitted-before", "2000-01-01T00:00:00Z"}).first, V{});
    EXPECT_EQ(ids({"--submitted-after", "2000-01-01T00:00:00.5Z"}).first.size(), 4u);
    // Paging: the cursor on stderr leads to the next page; the last has none.
    const auto first = ids({"--limit", "3"});
    EXPECT_EQ(first.first, (V{4, 3, 2}));
    const auto at = first.second.find("more: --cursor ");
    ASSERT_NE(at, std::string::npos) << first.second;
    std::string cursor = first.second.substr(at + 15);
    cursor = cursor.substr(0, cursor.find('\n'));
    const auto second = ids({"--limit", "3", "--cursor", cursor});
    EXPECT_EQ(second.first, (V{1}));
    EXPECT_EQ(second.second.find("more:"), std::string::npos) << second.second;
}

// submit and cancel are a client of the store (docs/store.md, cronoq-store):
// the fixture's leader takes nothing up, so the rows read as committed.
TEST_F(ToolTest, SubmitCommitsATaskAsAClientAndPrintsItsId) {
    const ToolRun run = run_tool(dir, {"--store", file(), "submit", R"({"n": 1})", "--pool", "p", "--key", "job-1",
                                       "--priority", "high", "--kind", "mail"});
    ASSERT_EQ(run.status, 0) << run.err;
    const std::uint64_t id = std::stoull(run.out);
    EXPECT_GE(id, std::uint64_t{1} << 48) << "an id from the client range";
    const auto row = store->get_task(TaskRef(TaskId{id}));
    ASSERT_TRUE(row.has_value());
    EXPECT_EQ(row->key, "job-1");
    EXPECT_EQ(row->pool, "p");
    EXPECT_EQ(row->kind, "mail");
    EXPECT_EQ(row->status, TaskStatus::Ready);
    EXPECT_EQ(row->priority, Priority::High);
    EXPECT_EQ(row->payload, R"({"n":1})") << "compact JSON text";

    // The same key again gives the same task; --json prints an object.
    const ToolRun again = run_tool(dir, {"--store", file(), "--json", "submit", "[2]", "--pool", "p", "--key", "job-1"});
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_EQ(nlohmann::json::parse(again.out).at("id").get<std::uint64_t>(), id);
}

TEST_F(ToolTest, SubmitReadsThePayloadFromStdin) {
    for (const std::vector<std::string>& args : {std::vector<std::string>{"--store", file(), "submit", "-", "--pool", "p"},
                                                std::vector<std::string>{"--store", file(), "submit", "--pool", "p"}}) {
        const ToolRun run = run_tool(dir, args, std::string("{\"from\": \"stdin\"}\n"));
        ASSERT_EQ(run.status, 0) << run.err;
        EXPECT_EQ(store->get_task(TaskRef(TaskId{std::stoull(run.out)}))->payload, R"({"from":"stdin"})");
    }
}

TEST_F(ToolTest, SubmitAndCancelRefuseBadArgumentsAndNameWhy) {
    const auto usage = [&](std::vector<std::string> args, const std::string& says) {
        args.insert(args.begin(), {"--store", file()});
        const ToolRun run = run_tool(dir, args, std::string());
        EXPECT_EQ(run.status, 2) << run.err;
        EXPECT_NE(run.err.find(says), std::string::npos) << run.err;
    };
    usage({"submit", "{}"}, "--pool");
    usage({"submit", "{not json", "--pool", "p"}, "not JSON");
    usage({"submit", "{}", "--pool", "p", "--priority", "urgent"}, "--priority");
    usage({"submit", "{}", "--pool", "p", "--bogus", "1"}, "--bogus");
    usage({"cancel"}, "cancel takes one id or key");
    const ToolRun no_pool = run_tool(dir, {"--store", file(), "submit", "{}", "--pool", ""});
    EXPECT_EQ(no_pool.status, 1) << no_pool.err;
    EXPECT_NE(no_pool.err.find("not submitted: invalid"), std::string::npos) << no_pool.err;
}

TEST_F(ToolTest, CancelCommitsACancelForATaskThatHasNotEnded) {
    const ToolRun submitted = run_tool(dir, {"--store", file(), "submit", "{}", "--pool", "p", "--key", "to-cancel"});
    ASSERT_EQ(submitted.status, 0) << submitted.err;
    const ToolRun run = run_tool(dir, {"--store", file(), "--json", "cancel", "to-cancel"});
    EXPECT_EQ(run.status, 0) << run.err;
    EXPECT_EQ(nlohmann::json::parse(run.out), (nlohmann::json{{"cancelled", true}}));
    // By id, too (task 3 is running); an ended or unknown task has nothing to cancel.
    EXPECT_EQ(run_tool(dir, {"--store", file(), "cancel", "3"}).status, 0);
    const ToolRun ended = run_tool(dir, {"--store", file(), "cancel", "1"});
    EXPECT_EQ(ended.status, 1);
    EXPECT_NE(ended.err.find("no task"), std::string::npos) << ended.err;
    EXPECT_EQ(run_tool(dir, {"--store", file(), "cancel", "no-such-key"}).status, 1);
}

}  // namespace
}  // namespace cronoq::test::tool_test
