// Real processes on one store file: a leader killed at random points, a
// standby taking over after SIGKILL, a frozen leader fenced, a full disk.
// Children are this binary re-executed (child_modes.cpp).
#include "store_support.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

namespace cronoq::test {
namespace {

using namespace std::chrono_literals;

/// A child in `leader` mode and what it acknowledged so far.
struct LeaderProcess {
    LeaderProcess(const ScratchDir& dir, const std::string& tag, std::chrono::milliseconds lease,
                  std::vector<std::string> extra = {})
        : child([&] {
              std::vector<std::string> args{"leader", "file=" + dir.file("s.db").string(),
                                            "lease=" + std::to_string(lease.count()), "tag=" + tag};
              args.insert(args.end(), extra.begin(), extra.end());
              return args;
          }()) {}

    /// Reads lines until one starts with `prefix`, recording what they say.
    std::optional<std::string> until(const std::string& prefix) {
        return child.read_until(prefix, [this](const std::string& line) { note(line); });
    }
    /// Reads what the child wrote before it ended.
    void drain() {
        while (auto line = child.read_line(5s)) note(*line);
    }
    void note(const std::string& line) {
        std::istringstream in(line.substr(std::min<std::size_t>(2, line.size())));
        if (line.rfind("L ", 0) == 0) in >> epoch >> first;
        else if (line.rfind("C ", 0) == 0) in >> acked;
        else if (line.rfind("E ", 0) == 0) errors.push_back(line);
        else if (line.rfind("X ", 0) == 0) lost = line;
    }
    /// Ids of acknowledged tasks: [first, first + acked).
    std::uint64_t end() const { return first + acked; }

    Child child;
    std::uint64_t epoch = 0, first = 0;
    store::Sequence acked = 0;
    std::vector<std::string> errors;
    std::optional<std::string> lost;
};

/// Every id in [from, to) is stored with `tag`'s payload, and the stored ids
/// form one run from 1 (batches commit in order, whole or not at all).
void expect_acknowledged(const ScratchDir& dir, std::uint64_t from, std::uint64_t to, const std::string& tag) {
    RawDb raw(dir.file("s.db"));
    const auto count = raw.query_int("SELECT count(*) FROM tasks");
    const auto max = raw.query_int("SELECT coalesce(max(id), 0) FROM tasks");
    EXPECT_EQ(count, max) << "the committed tasks have no gaps";
    EXPECT_GE(static_cast<std::uint64_t>(max) + 1, to) << "an acknowledged task is missing";
    auto store = SqliteStore::open(dir.file("s.db"));
    for (std::uint64_t id = from; id < to; ++id) {
        const auto task = store->get_task(TaskId{id});
        ASSERT_TRUE(task) << "acknowledged task " << id << " is missing";
        const std::string expected = tag + "-" + std::to_string(id);  // then padding dots, if any
        EXPECT_EQ(task->payload.substr(0, expected.size()), expected);
        EXPECT_EQ(task->payload.find_first_not_of('.', expected.size()), std::string::npos);
    }
}

class CrashTest : public ::testing::TestWithParam<unsigned> {};

TEST_P(CrashTest, EveryAcknowledgedChangeSurvivesSigkill) {
    ScratchDir dir;
    std::mt19937 random(GetParam());
    LeaderProcess leader(dir, "A", 500ms);
    ASSERT_TRUE(leader.until("L "));
    // Let it commit for a random while, then kill it wherever it is.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(5, 250)(random)));
    leader.child.signal(SIGKILL);
    EXPECT_EQ(leader.child.wait(), 128 + SIGKILL);
    leader.drain();
    std::cout << "seed " << GetParam() << ": " << leader.acked << " batches acknowledged before SIGKILL\n";
    expect_acknowledged(dir, leader.first, leader.end(), "A");
    // Each acknowledged batch also moved the task before it to Running.
    if (leader.acked >= 2) {
        auto store = SqliteStore::open(dir.file("s.db"));
        EXPECT_EQ(store->get_task(TaskId{leader.end() - 2})->status, TaskStatus::Running);
    }
}

INSTANTIATE_TEST_SUITE_P(Seeds, CrashTest, ::testing::Values(1u, 2u, 3u, 4u, 5u));

TEST(Standby, TakesOverAfterTheLeaderIsKilled) {
    ScratchDir dir;
    LeaderProcess a(dir, "A", 300ms);
    ASSERT_TRUE(a.until("L "));
    ASSERT_TRUE(a.until("C "));
    LeaderProcess b(dir, "B", 300ms);
    ASSERT_TRUE(a.until("C "));
    a.child.signal(SIGKILL);
    const auto killed = std::chrono::steady_clock::now();
    a.child.wait();
    a.drain();
    ASSERT_TRUE(b.until("L ")) << "the standby never led";
    const auto took_over = std::chrono::steady_clock::now() - killed;
    std::cout << "standby led " << std::chrono::duration_cast<std::chrono::milliseconds>(took_over).count()
              << " ms after SIGKILL (lease 300 ms)\n";
    EXPECT_EQ(b.epoch, a.epoch + 1);
    EXPECT_GE(b.first, a.end()) << "the standby goes on past every acknowledged id";
    ASSERT_TRUE(b.until("C "));
    b.child.signal(SIGKILL);
    b.child.wait();
    b.drain();
    expect_acknowledged(dir, a.first, a.end(), "A");
    expect_acknowledged(dir, b.first, b.end(), "B");
}

TEST(Standby, AFrozenLeaderIsFencedAndWritesNothingAfterTheTakeover) {
    ScratchDir dir;
    // Paced, so the leader spends most of its time outside transactions: one
    // frozen inside a transaction holds the write lock and no standby can
    // take over until it wakes (SPEC §14), so such a stop is retried.
    LeaderProcess a(dir, "A", 300ms, {"pace=20"});
    ASSERT_TRUE(a.until("L "));
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(a.until("C "));
    // The new leader is paced too: one committing without pause can keep
    // the woken leader from the write lock (SQLite's busy wait polls) past
    // its lease, and it then stops as failed instead of fenced.
    LeaderProcess b(dir, "B", 300ms, {"pace=20"});
    ASSERT_TRUE(b.until("W"));
    std::optional<std::string> led;
    for (int tries = 0; tries < 20 && !led; ++tries) {
        a.child.signal(SIGSTOP);
        led = b.child.read_line(3s);  // the lease (300 ms) runs out first
        if (!led) {
            a.child.signal(SIGCONT);
            std::this_thread::sleep_for(7ms);
        }
    }
    ASSERT_TRUE(led) << "the standby never led";
    b.note(*led);
    ASSERT_EQ(led->rfind("L ", 0), 0u) << *led;
    EXPECT_GT(b.epoch, a.epoch);
    ASSERT_TRUE(b.until("C "));
    ASSERT_TRUE(b.until("C "));

    a.child.signal(SIGCONT);
    ASSERT_TRUE(a.until("X ")) << "the old leader did not stop";
    EXPECT_EQ(a.lost->rfind("X fenced", 0), 0u) << *a.lost;
    EXPECT_EQ(a.child.wait(), 3);

    ASSERT_TRUE(b.until("C "));
    b.child.signal(SIGKILL);
    b.child.wait();
    b.drain();
    RawDb raw(dir.file("s.db"));
    std::cout << "A: epoch " << a.epoch << " first " << a.first << " acked " << a.acked << "; B: epoch " << b.epoch
              << " first " << b.first << " acked " << b.acked << "; max A id "
              << raw.query_int("SELECT max(id) FROM tasks WHERE CAST(payload AS TEXT) LIKE 'A-%'") << " min B id "
              << raw.query_int("SELECT min(id) FROM tasks WHERE CAST(payload AS TEXT) LIKE 'B-%'") << "\n";
    EXPECT_EQ(raw.query_int("SELECT count(*) FROM tasks WHERE id >= " + std::to_string(b.first) +
                            " AND CAST(payload AS TEXT) NOT LIKE 'B-%'"),
              0)
        << "the fenced leader wrote after the takeover";
    EXPECT_EQ(raw.query_int("SELECT count(*) FROM tasks WHERE id < " + std::to_string(b.first) +
                            " AND CAST(payload AS TEXT) NOT LIKE 'A-%'"),
              0);
    EXPECT_EQ(raw.query_int("SELECT epoch FROM leader"), static_cast<std::int64_t>(b.epoch));
    expect_acknowledged(dir, b.first, b.end(), "B");
}

TEST(FullDisk, CommitsFailWithAnIoErrorThenTheLeaderStopsAndKeepsWhatWasAcknowledged) {
    ScratchDir dir;
    // Created first, so that the child's file-size limit leaves room for
    // some commits only.
    SqliteStore::open(dir.file("s.db"));
    LeaderProcess leader(dir, "A", 300ms, {"payload=1000", "fsize=2097152"});
    ASSERT_TRUE(leader.until("X ")) << "the leader never stopped";
    EXPECT_EQ(leader.lost->rfind("X failed", 0), 0u) << *leader.lost;
    EXPECT_EQ(leader.child.wait(), 4);
    ASSERT_FALSE(leader.errors.empty());
    EXPECT_EQ(leader.errors.front().rfind("E io ", 0), 0u) << leader.errors.front();
    std::cout << leader.acked << " batches acknowledged; first error: " << leader.errors.front() << "\n";
    EXPECT_GT(leader.acked, 0u);
    expect_acknowledged(dir, leader.first, leader.end(), "A");
}

}  // namespace
}  // namespace cronoq::test
