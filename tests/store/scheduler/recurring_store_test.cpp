// Recurring schedules with a store (docs/guide/durability.md "Recovery"): a schedule comes
// back with the store, fires no occurrence twice across a restart, and one
// missed while no process led fires once. On ManualClocks: each process's
// clock starts at the wall time the test gives it.
#include "durable_support.hpp"

#include "../../driver/driver_harness.hpp"

#include <cronoq/cronoq.hpp>

#include <gtest/gtest.h>

#include <ctime>
#include <optional>
#include <string>

namespace recurring_store_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<std::string, std::string>;

Pool<std::string, std::string> echo_pool() {
    return Pool<std::string, std::string>("p").workers(1, 1, 1).executor_fn(
        [](TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            co_return *s + "!";
        });
}

/// One process's life on a store: a scheduler on a ManualClock that starts
/// at `wall`.
struct Process : test::VirtualTime {
    std::optional<Sched> opened;
    Sched& sched;

    Process(const std::filesystem::path& file, std::chrono::system_clock::time_point wall)
        : sched(open(file, wall)) {}

    Sched& open(const std::filesystem::path& file, std::chrono::system_clock::time_point wall) {
        clock = std::make_shared<ManualClock>(wall);
        auto opening = Sched::builder().clock(clock).pool(echo_pool()).store(test::open_store(file)).open(io.get_executor());
        auto wait = [&]() -> asio::awaitable<void> { opened.emplace(co_await std::move(opening)); };
        test::run(io, wait());
        return *opened;
    }
    void flush() { test::run(io, sched.flush()); }
    void stop() { test::run(io, sched.shutdown(0s)); }
};

// The processes' wall clocks start at the last whole hour: near real time,
// since the store prunes rows by its own clock (`keep_finished`).
const auto t0 = std::chrono::floor<std::chrono::hours>(std::chrono::system_clock::now());

/// The key of `name`'s occurrence `minutes` after t0.
std::string at(const std::string& name, int minutes) {
    const std::time_t t = std::chrono::system_clock::to_time_t(t0 + std::chrono::minutes(minutes));
    std::tm utc{};
    gmtime_r(&t, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return name + "@" + text;
}

}  // namespace

TEST(RecurringStore, AScheduleResumesFromItsLastOccurrenceAfterARestart) {
    test::ScratchDir dir;
    const auto file = dir.file("s.db");
    {
        Process p(file, t0);
        p.sched.add_recurring(Recurring<std::string>("tick", "* * * * *", Task<std::string>("r")));
        p.advance(60s);  // 00:01 fires
        p.flush();
        EXPECT_EQ(p.sched.status(at("tick", 1)), TaskStatus::Succeeded);
        p.stop();
    }
    {
        // No process led from 00:01:00 to 00:03:30: 00:02 and 00:03 were
        // missed. The schedule came back by itself and fires the latest once.
        Process p(file, t0 + 3min + 30s);
        p.advance(0s);
        p.flush();
        EXPECT_EQ(p.sched.status(at("tick", 3)), TaskStatus::Succeeded);
        EXPECT_FALSE(p.sched.status(at("tick", 2)).has_value());
        // The one before the restart is the old task, not run again.
        auto first = p.sched.find(at("tick", 1));
        ASSERT_TRUE(first.has_value());
        EXPECT_EQ(first->status(), TaskStatus::Succeeded);
        // An application that adds its schedules at start replaces the one
        // recovered: it goes on from 00:03 instead of firing it again.
        p.sched.add_recurring(Recurring<std::string>("tick", "* * * * *", Task<std::string>("r")));
        p.advance(0s);
        p.advance(30s);  // 00:04 fires
        p.flush();
        EXPECT_EQ(p.sched.status(at("tick", 4)), TaskStatus::Succeeded);
        p.stop();
    }
    auto store = test::open_store(file);
    for (const int minute : {1, 3, 4}) {
        auto row = store->get_task(TaskRef(at("tick", minute)));
        ASSERT_TRUE(row.has_value()) << minute;
        EXPECT_EQ(row->status, TaskStatus::Succeeded);
        EXPECT_EQ(row->output, "r!");
    }
    EXPECT_FALSE(store->get_task(TaskRef(at("tick", 2))).has_value());
    EXPECT_EQ(store->list(TaskStatus::Succeeded, 100).size(), 3u);  // nothing fired twice
}

TEST(RecurringStore, ARemovedScheduleStaysRemovedAfterARestart) {
    test::ScratchDir dir;
    const auto file = dir.file("s.db");
    {
        Process p(file, t0);
        p.sched.add_recurring(Recurring<std::string>("gone", "* * * * *", Task<std::string>("g")));
        p.sched.add_recurring(Recurring<std::string>("kept", "*/2 * * * *", Task<std::string>("k")).tz("Europe/Paris"));
        EXPECT_TRUE(p.sched.remove_recurring("gone"));
        p.flush();
        p.stop();
    }
    Process p(file, t0 + 90s);
    p.advance(30s);  // 00:02: "kept" fires; "gone" would have fired at 00:01 and 00:02
    p.flush();
    EXPECT_EQ(p.sched.status(at("kept", 2)), TaskStatus::Succeeded);
    EXPECT_FALSE(p.sched.status(at("gone", 2)).has_value());
    EXPECT_FALSE(p.sched.remove_recurring("gone"));
    EXPECT_TRUE(p.sched.remove_recurring("kept"));  // it came back under its name
    p.stop();
}
}  // namespace recurring_store_test
