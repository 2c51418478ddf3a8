// Real processes on one site, on every backend: a leader killed at random
// points, a standby taking over from a killed leader, a frozen leader
// overtaken and fenced. Children are the test binary re-executed in mode
// `leader` (leader_process.hpp).
#include "leader_process.hpp"
#include "store_site.hpp"

#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <iostream>
#include <optional>
#include <random>
#include <thread>

namespace cronoq::test {

void expect_acknowledged(StoreSite& site, std::uint64_t from, std::uint64_t to, const std::string& tag) {
    const auto count = site.count_tasks();
    const auto max = site.max_task_id();
    EXPECT_EQ(count, max) << "the committed tasks have no gaps";
    EXPECT_GE(static_cast<std::uint64_t>(max) + 1, to) << "an acknowledged task is missing";
    auto store = site.open();
    for (std::uint64_t id = from; id < to; ++id) {
        const auto task = store->get_task(TaskId{id});
        ASSERT_TRUE(task) << "acknowledged task " << id << " is missing";
        const std::string expected = tag + "-" + std::to_string(id);  // then padding dots, if any
        EXPECT_EQ(task->payload.substr(0, expected.size()), expected);
        EXPECT_EQ(task->payload.find_first_not_of('.', expected.size()), std::string::npos);
    }
}

using namespace std::chrono_literals;

void CrashTest::SetUp() {
    site_ = std::get<0>(GetParam()).make_site();
    ASSERT_TRUE(site_) << "no " << std::get<0>(GetParam()).name << " site for this test";
}

std::string crash_test_name(const ::testing::TestParamInfo<CrashTest::ParamType>& info) {
    return std::get<0>(info.param).name + "_seed" + std::to_string(std::get<1>(info.param));
}

TEST_P(CrashTest, EveryAcknowledgedChangeSurvivesSigkill) {
    std::mt19937 random(std::get<1>(GetParam()));
    LeaderProcess leader(site_->child_args(), "A", 500ms);
    ASSERT_TRUE(leader.until("L "));
    // Let it commit for a random while, then kill it wherever it is.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(5, 250)(random)));
    leader.child.signal(SIGKILL);
    EXPECT_EQ(leader.child.wait(), 128 + SIGKILL);
    leader.drain();
    std::cout << "seed " << std::get<1>(GetParam()) << ": " << leader.acked << " batches acknowledged before SIGKILL\n";
    expect_acknowledged(*site_, leader.first, leader.end(), "A");
    // Each acknowledged batch also moved the task before it to Running.
    if (leader.acked >= 2) {
        auto store = site_->open();
        EXPECT_EQ(store->get_task(TaskId{leader.end() - 2})->status, TaskStatus::Running);
    }
}

namespace {

TEST_P(Processes, AStandbyTakesOverFromAKilledLeader) {
    constexpr auto lease = 1000ms;
    site().open();  // the store exists before the children run
    LeaderProcess a(site().child_args(), "A", lease, {"pace=2"});
    ASSERT_TRUE(a.until("L "));
    while (a.acked < 50) ASSERT_TRUE(a.until("C "));
    LeaderProcess b(site().child_args(), "B", lease);
    ASSERT_TRUE(b.until("W"));
    ASSERT_TRUE(a.until("C "));
    a.child.signal(SIGKILL);
    const auto killed = std::chrono::steady_clock::now();
    a.child.wait();
    a.drain();
    ASSERT_TRUE(b.until("L ")) << "the standby never led";
    const auto took_over = std::chrono::steady_clock::now() - killed;
    std::cout << "standby led " << std::chrono::duration_cast<std::chrono::milliseconds>(took_over).count()
              << " ms after SIGKILL of the leader process (lease " << lease.count() << " ms)\n";
    EXPECT_EQ(b.epoch, a.epoch + 1);
    EXPECT_GE(b.first, a.end()) << "the standby goes on past every acknowledged id";
    ASSERT_TRUE(b.until("C "));
    b.child.signal(SIGKILL);
    b.child.wait();
    b.drain();
    expect_acknowledged(site(), a.first, a.end(), "A");
    expect_acknowledged(site(), b.first, b.end(), "B");
}

// The service restarted on its host after a SIGKILL (no standby waiting)
// leads long before the killed leader's lease would run out: SQLite sees
// that the holder's process ended (docs/store.md, "Leadership and
// fencing"), PostgreSQL that its session, and with it the lock, is gone.
TEST_P(Processes, ARestartAfterSigkillLeadsBeforeTheKilledLeadersLeaseRunsOut) {
    constexpr auto lease = 30s;
    site().open();
    LeaderProcess a(site().child_args(), "A", lease);
    ASSERT_TRUE(a.until("L "));
    ASSERT_TRUE(a.until("C "));
    // A renews only later, which would move the expiry later still.
    const auto expiry = std::chrono::steady_clock::now() + site().lease_left();
    ASSERT_GT(expiry - std::chrono::steady_clock::now(), lease / 2);

    a.child.signal(SIGKILL);
    const auto killed = std::chrono::steady_clock::now();
    EXPECT_EQ(a.child.wait(), 128 + SIGKILL);
    a.drain();
    LeaderProcess b(site().child_args(), "B", lease);
    ASSERT_TRUE(b.until("L ")) << "the restarted process never led";
    const auto led = std::chrono::steady_clock::now();
    EXPECT_LT(led, expiry) << "it led only once the killed leader's lease had run out";
    std::cout << "restart to lead after SIGKILL on one host: "
              << std::chrono::duration_cast<std::chrono::milliseconds>(led - killed).count() << " ms (lease "
              << lease.count() << " s)\n";
    EXPECT_EQ(b.epoch, a.epoch + 1) << "the takeover fences as any other";
    EXPECT_GE(b.first, a.end());
    ASSERT_TRUE(b.until("C "));
    b.child.signal(SIGKILL);
    b.child.wait();
    b.drain();
    expect_acknowledged(site(), a.first, a.end(), "A");
}

TEST_P(Processes, AFrozenLeaderIsOvertakenFencedAndWritesNothingAfterTheTakeover) {
    constexpr auto lease = 600ms;
    site().open();
    // Paced, so the leader spends most of its time outside transactions: a
    // SQLite leader frozen inside a transaction holds the write lock and no
    // standby can take over until it wakes (docs/guide/durability.md), so such a stop is
    // retried. A PostgreSQL standby ends the frozen session and takes over
    // at the first stop.
    LeaderProcess a(site().child_args(), "A", lease, {"pace=20"});
    ASSERT_TRUE(a.until("L "));
    while (a.acked < 10) ASSERT_TRUE(a.until("C "));
    Reports rs;
    auto standby = site().open(StoreOptions{lease});
    standby->journal().lead(rs.handlers());
    bool led = false;
    std::chrono::steady_clock::time_point stopped;
    // When the frozen leader's lease runs out, as the store says at a freeze
    // (lease_left() counts from the read, so this is never later). Not
    // counted from the SIGSTOP: a leader frozen inside a transaction keeps
    // the standby out past its lease, so on the next freeze its lease may
    // have run out already, and a loaded machine delays renewals.
    std::optional<std::chrono::steady_clock::time_point> lease_ends;
    int freezes = 0;
    for (; freezes < 20 && !led; ++freezes) {
        a.child.signal(SIGSTOP);
        stopped = std::chrono::steady_clock::now();
        const auto left = site().lease_left();
        // Not the standby's: it may have taken over while the leader ran
        // between two freezes.
        if (site().leader_epoch() == static_cast<std::int64_t>(a.epoch)) lease_ends = stopped + left;
        led = rs.wait([](const Reports& r) { return r.recovered.has_value() || r.lost.has_value(); }, 3s);
        if (!led) {
            a.child.signal(SIGCONT);
            std::this_thread::sleep_for(7ms);
        }
    }
    ASSERT_TRUE(led && rs.recovered) << "the standby never led";
    const auto led_at = std::chrono::steady_clock::now();
    ASSERT_TRUE(lease_ends) << "the standby led before the first freeze";
    const auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
    std::cout << "takeover from a leader frozen with SIGSTOP (lease " << lease.count() << " ms, freeze " << freezes
              << "): " << ms(led_at - stopped) << " ms after the freeze, " << ms(led_at - *lease_ends)
              << " ms after the lease ran out\n";
    EXPECT_GE(led_at, *lease_ends) << "the standby led " << ms(*lease_ends - led_at)
                                   << " ms before the frozen leader's lease ran out";
    EXPECT_EQ(rs.recovered->epoch, a.epoch + 1);
    std::uint64_t b_first = std::max<std::uint64_t>(rs.recovered->marks.next_task_id, 1);
    for (const auto& row : rs.recovered->tasks) b_first = std::max(b_first, row.id.value + 1);
    EXPECT_GE(b_first, a.end()) << "the new leader goes on past every acknowledged id";
    const auto commit_b = [&](std::uint64_t id) {
        store::TaskRow row = task_row(id);
        row.payload = "B-" + std::to_string(id);
        return rs.wait_committed(standby->journal().enqueue(store::Batch{{store::TaskInserted{std::move(row)},
                                                                          store::HighWaterMarks{id + 1, 0}}}));
    };
    ASSERT_TRUE(commit_b(b_first));
    ASSERT_TRUE(commit_b(b_first + 1));

    const auto rows_of_a = [&] {
        std::size_t n = 0;
        for (const auto& task : all_tasks(*standby)) n += task.payload.rfind("A-", 0) == 0;
        return n;
    };
    const std::size_t a_rows_at_takeover = rows_of_a();
    const std::int64_t mark_at_takeover = site().next_task_id_mark();
    a.child.signal(SIGCONT);
    ASSERT_TRUE(a.until("X ")) << "the old leader did not stop";
    a.drain();
    EXPECT_EQ(a.lost.value_or("").rfind("X fenced", 0), 0u) << a.lost.value_or("");
    EXPECT_EQ(a.child.wait(), 3) << "the woken leader stops as fenced";
    std::cout << "the woken leader: " << a.lost.value_or("") << "\n";
    EXPECT_EQ(rows_of_a(), a_rows_at_takeover) << "the old leader wrote nothing after the takeover";
    EXPECT_EQ(site().next_task_id_mark(), mark_at_takeover);
    ASSERT_TRUE(commit_b(b_first + 2));

    for (const auto& task : all_tasks(*standby)) {
        const std::string owner = task.id.value >= b_first ? "B-" : "A-";
        EXPECT_EQ(task.payload.rfind(owner, 0), 0u) << "task " << task.id.value << ": " << task.payload;
    }
    EXPECT_EQ(site().leader_epoch(), static_cast<std::int64_t>(rs.recovered->epoch));
    expect_acknowledged(site(), a.first, a.end(), "A");
    expect_acknowledged(site(), b_first, b_first + 3, "B");
}

}  // namespace
}  // namespace cronoq::test
