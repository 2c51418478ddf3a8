// A leader killed between taking clients' entries from its store's inbox
// and committing what it made of them (docs/store.md, "Clients"): the next
// leader runs each task once. SQLite only: the test holds the file's write
// lock so that none of the leader's commits can succeed.
#include "client_ingestion_support.hpp"

#include <asio/awaitable.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <csignal>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>

using namespace std::chrono_literals;
using namespace cronoq;

namespace cronoq::test {

namespace {

asio::awaitable<void> say_when_lost(Scheduler<std::string, std::string> scheduler) {
    co_await scheduler.leadership_lost();
    say("X");
}

}  // namespace

/// `--child ingest-leader <location>`: leads pool "p" (4 slots) whose
/// attempts write "S <payload>" and answer "<payload>!"; "L" once leading,
/// "X" once its lead is lost.
int ingest_leader_child_main(int argc, char** argv) {
    if (argc != 4) return 2;
    auto pool = Pool<std::string, std::string>("p").workers(4, 4, 4).executor_fn(
        [](TaskContext, std::shared_ptr<const std::string> s) -> Result<std::string> {
            say("S " + *s);
            return *s + "!";
        });
    auto sched = Durable::builder().threads(2).pool(std::move(pool)).store(open_location(argv[3])).open();
    say("L");
    asio::co_spawn(sched.scheduler().get_executor(), say_when_lost(sched.scheduler()), asio::detached);
    for (;;) ::pause();
}

class ClientIngestionOnSqlite : public ::testing::TestWithParam<Backend> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ClientIngestionOnSqlite);

TEST_P(ClientIngestionOnSqlite, ALeaderKilledAfterTakingEntriesButBeforeItsCommitLeavesEachToTheNextOnce) {
    // The rows are committed while the leader is stopped, and the write lock
    // is taken before it goes on: it takes them and runs them, and none of
    // its commits can succeed. The store thread that would look at the inbox
    // also commits, though: one stopped just before a commit blocks on the
    // lock for its lease and gives its lead up ("X") without having read the
    // rows. Then the scene is played again on a fresh store.
    for (int attempt = 0;; ++attempt) {
        ASSERT_LT(attempt, 20) << "the leader never took the rows before its commit blocked";
        TestStore at(GetParam());
        const std::string file = at.location().substr(std::string("sqlite:").size());
        Child leader({"ingest-leader", at.location()});
        ASSERT_EQ(leader.read_line(), "L");
        auto client = at.open();
        // No busy timeout: a lock another connection holds is refused at once.
        std::unique_ptr<sqlite3, int (*)(sqlite3*)> lock(nullptr, sqlite3_close);
        {
            sqlite3* opened = nullptr;
            ASSERT_EQ(sqlite3_open(file.c_str(), &opened), SQLITE_OK);
            lock.reset(opened);
        }
        const auto exec = [&](const char* sql) { return sqlite3_exec(lock.get(), sql, nullptr, nullptr, nullptr); };
        // One stopped inside a write transaction holds the lock: it goes on
        // until that transaction has committed, so that the next stop is
        // not at the same place again.
        const auto commits = client->client_access().watch();
        for (int tries = 0;; ++tries) {
            ASSERT_LT(tries, 200) << "the leader kept the write lock";
            leader.signal(SIGSTOP);
            siginfo_t info{};
            ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(leader.pid()), &info, WSTOPPED), 0);  // each stop is seen
            if (exec("BEGIN IMMEDIATE") == SQLITE_OK) {
                ASSERT_EQ(exec("ROLLBACK"), SQLITE_OK);
                break;
            }
            commits->wait(0ms);  // what was committed before this stop
            leader.signal(SIGCONT);
            ASSERT_TRUE(commits->wait(60s)) << "the leader did not commit the transaction it was stopped in";
        }
        std::vector<store::TaskRow> rows;
        for (int i = 0; i < 5; ++i) rows.push_back(client_row("t" + std::to_string(i), "p"));
        std::vector<TaskId> ids;
        for (const auto& r : client->client_access().submit(std::move(rows))) ids.push_back(r.id);
        ASSERT_EQ(exec("BEGIN IMMEDIATE"), SQLITE_OK);
        leader.signal(SIGCONT);
        std::set<std::string> ran;
        bool lost = false;
        while (ran.size() < ids.size() && !lost) {
            auto line = leader.read_line();
            ASSERT_TRUE(line.has_value()) << "the leader neither ran every task nor gave its lead up";
            lost = line == "X";
            if (line->rfind("S ", 0) == 0) ran.insert(line->substr(2));
        }
        leader.signal(SIGKILL);
        EXPECT_EQ(leader.wait(), 128 + SIGKILL);
        exec("ROLLBACK");
        lock.reset();
        if (lost) {
            std::cerr << "attempt " << attempt << ": the leader gave its lead up after running " << ran.size()
                      << " of the tasks\n";
            continue;
        }
        for (TaskId id : ids)
            EXPECT_EQ(client->get_task(TaskRef(id))->status, TaskStatus::Ready) << "committed by the killed leader";
        EXPECT_EQ(inbox_tasks(*client).size(), ids.size());

        auto runs = std::make_shared<Runs>();
        auto sched = Durable::builder().pool(counted_pool("p", runs, open_gate(), 2)).store(client).open();
        const auto ended = wait_ended(client->client_access(), ids);
        ASSERT_EQ(ended.size(), ids.size());
        for (const auto& [id, status] : ended) EXPECT_EQ(status, TaskStatus::Succeeded) << id;
        sched.flush();
        EXPECT_TRUE(inbox_tasks(*client).empty());
        std::lock_guard guard(runs->mu);
        for (int i = 0; i < 5; ++i) EXPECT_EQ(runs->count["t" + std::to_string(i)], 1) << i;
        return;
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, ClientIngestionOnSqlite, ::testing::ValuesIn(sqlite_backends()), BackendName());

}  // namespace cronoq::test
