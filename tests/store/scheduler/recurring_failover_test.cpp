// A recurring schedule across a failover (docs/guide/durability.md "Recovery": no
// occurrence fires twice, and one missed while no process led fires once),
// with real processes in real time, on each backend: a child leads and adds
// a schedule that fires every second; once it ran a few occurrences it is
// killed with SIGKILL, the test process, waiting in open(), takes over
// with the schedule as the store holds it (it does not add it again) and
// runs a few more. Every occurrence the store holds is there once, and
// none is missing from the window the two leaders covered, except those
// the rule drops: when several fell due while no process led, only the
// latest fires.
#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>

#include <gtest/gtest.h>

#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

constexpr const char* schedule_name = "tick";
constexpr const char* every_second = "* * * * * *";

}  // namespace

namespace cronoq::test {

/// `--child recurring <location>`: leads, adds the schedule (a new
/// occurrence even while the previous one runs, so that the overlap policy
/// drops none), says "R", then "E <key>" as each occurrence's attempt
/// starts, until killed.
int recurring_child_main(int argc, char** argv) {
    if (argc != 4) return 2;
    auto pool = Pool<std::string, std::string>("p").workers(2, 2, 2).executor_fn(
        [](TaskContext ctx, std::shared_ptr<const std::string> s) -> Result<std::string> {
            say("E " + ctx.key().value_or("?"));
            return *s + "!";
        });
    auto sched = Durable::builder().threads(1).pool(std::move(pool)).store(open_location(argv[3])).open();
    sched.add_recurring(
        Recurring<std::string>(schedule_name, every_second, Task<std::string>("r")).overlap(OverlapPolicy::Allow));
    say("R");
    for (;;) std::this_thread::sleep_for(1h);
}

}  // namespace cronoq::test

namespace {

using Wall = std::chrono::system_clock;

/// The start an occurrence's key names ("tick@2026-12-02T10:00:05Z").
std::optional<Wall::time_point> occurrence_time(const std::string& key) {
    const std::string prefix = std::string(schedule_name) + "@";
    if (key.rfind(prefix, 0) != 0) return std::nullopt;
    std::tm utc{};
    const std::string text = key.substr(prefix.size());
    if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%dZ", &utc.tm_year, &utc.tm_mon, &utc.tm_mday, &utc.tm_hour,
                    &utc.tm_min, &utc.tm_sec) != 6)
        return std::nullopt;
    utc.tm_year -= 1900;
    utc.tm_mon -= 1;
    return Wall::from_time_t(::timegm(&utc));
}

/// The keys of the occurrences the standby's attempts ran.
struct Runs {
    std::mutex mutex;
    std::condition_variable changed;
    std::set<std::string> keys;

    /// Until it ran `n` occurrences due after `t` (none the old leader
    /// fired: it was gone by then); false after the hang guard.
    bool wait_for(std::size_t n, Wall::time_point t) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, 60s, [&] {
            std::size_t later = 0;
            for (const std::string& key : keys) later += occurrence_time(key).value_or(t) > t;
            return later >= n;
        });
    }
};

Pool<std::string, std::string> recording_pool(std::shared_ptr<Runs> runs) {
    return Pool<std::string, std::string>("p").workers(2, 2, 2).executor_fn(
        [runs](TaskContext ctx, std::shared_ptr<const std::string> s) -> Result<std::string> {
            {
                std::lock_guard lock(runs->mutex);
                runs->keys.insert(ctx.key().value_or("?"));
            }
            runs->changed.notify_all();
            return *s + "!";
        });
}

class RecurringFailover : public ::testing::TestWithParam<test::Backend> {};

}  // namespace

TEST_P(RecurringFailover, EachOccurrenceFiresOnceAcrossAFailover) {
    test::TestStore store(GetParam());
    test::Child leader({"recurring", store.location()});
    ASSERT_EQ(leader.read_line(), "R");
    auto runs = std::make_shared<Runs>();
    test::Standby standby(store.location(), recording_pool(runs));
    // Four attempts started: the occurrences before the last were committed
    // a second or more before the kill (an attempt may start before its
    // task's admission is committed).
    for (int ran = 0; ran < 4;) {
        auto line = leader.read_line();
        ASSERT_TRUE(line.has_value()) << "the leader stopped early";
        if (line->rfind("E ", 0) == 0) ++ran;
    }
    const auto killed_at = Wall::now();
    leader.signal(SIGKILL);
    EXPECT_EQ(leader.wait(), 128 + SIGKILL);

    ASSERT_EQ(standby.led.wait_for(60s), std::future_status::ready) << "the standby never led";
    standby.led.get();
    test::Durable& sched = *standby.sched;
    ASSERT_TRUE(runs->wait_for(3, killed_at)) << "the schedule did not fire under the new leader";
    // It came back from the store under its name.
    EXPECT_TRUE(sched.remove_recurring(schedule_name));
    sched.flush();
    // Occurrences the old leader admitted but did not finish end too.
    auto reader = store.open();
    for (TaskStatus s : {TaskStatus::Scheduled, TaskStatus::Ready, TaskStatus::Running, TaskStatus::Retrying})
        for (const StoredTask& row : reader->list(s, 1000)) {
            auto h = sched.find(TaskRef(row.id));
            ASSERT_TRUE(h.has_value()) << row.id.value;
            EXPECT_EQ(*h->get(), "r!");
        }
    sched.flush();
    sched.shutdown(0s);

    // Every occurrence in the store, once.
    std::map<Wall::time_point, StoredTask> occurrences;
    for (const StoredTask& row : reader->list(TaskStatus::Succeeded, 1'000'000)) {
        ASSERT_TRUE(row.key.has_value()) << row.id.value;
        const auto at = occurrence_time(*row.key);
        ASSERT_TRUE(at.has_value()) << *row.key;
        EXPECT_TRUE(occurrences.emplace(*at, row).second) << *row.key << " fired twice";
        EXPECT_EQ(row.output, "r!");
    }
    EXPECT_EQ(store.count_tasks(), static_cast<std::int64_t>(occurrences.size())) << "an occurrence did not succeed";
    std::size_t before_kill = 0;
    for (const auto& [at, row] : occurrences) before_kill += row.submitted_at < killed_at;
    EXPECT_GE(before_kill, 2u) << "the old leader's occurrences";
    EXPECT_GE(occurrences.size() - before_kill, 3u) << "the new leader's occurrences";

    // None missing between the first and the last, but where the rule drops
    // some: a gap is allowed only across the failover (the occurrence
    // before it fired by the old leader, the one after it by the new), and
    // the one after it must be the latest that was due when the new leader
    // fired it. Its submission time is read a few microseconds after the
    // time the firing went by, in the same step: 10 ms allow for that.
    std::size_t dropped = 0;
    std::optional<Wall::duration> first_firing_after_kill;
    for (auto it = occurrences.begin(); std::next(it) != occurrences.end(); ++it) {
        const auto& [a, a_row] = *it;
        const auto& [b, b_row] = *std::next(it);
        if (a_row.submitted_at < killed_at && b_row.submitted_at >= killed_at)
            first_firing_after_kill = b_row.submitted_at - killed_at;
        if (b - a == 1s) continue;
        const std::string between = *a_row.key + " and " + *b_row.key;
        EXPECT_TRUE(a_row.submitted_at < killed_at && b_row.submitted_at >= killed_at)
            << "occurrences missing between " << between << ", not across the failover";
        EXPECT_LT(b_row.submitted_at, b + 1s + 10ms) << "the new leader fired " << *b_row.key << " late";
        dropped += static_cast<std::size_t>((b - a) / 1s) - 1;
    }
    ASSERT_TRUE(first_firing_after_kill.has_value());
    std::cout << occurrences.size() << " occurrences, " << before_kill << " fired by the old leader; the new one fired "
              << std::chrono::duration_cast<std::chrono::milliseconds>(*first_firing_after_kill).count()
              << " ms after the SIGKILL (lease " << test::test_lease.count() << " ms); " << dropped
              << " dropped while no process led\n";
}

INSTANTIATE_TEST_SUITE_P(Stores, RecurringFailover, ::testing::ValuesIn(test::tested_backends()), test::BackendName{});
