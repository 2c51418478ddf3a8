// A scheduler opening a store that holds what it cannot use (a damaged
// table, rows it cannot read or restore) and tasks it forgot: open fails
// with a StoreError only, or goes on with those rows ended Failed and
// visible at once; retry reaches every task whose row the store holds.
#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>
#include <cronoq/manual_clock.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <string>

namespace durable_recovery_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using test::Durable;

// "<payload>!", or a permanent failure while `failing` is set.
std::atomic<bool> failing{false};

Pool<std::string, std::string> echo_pool() {
    return Pool<std::string, std::string>("p").workers(1, 1, 1).executor_fn(
        [](TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            if (failing) co_return TaskError::permanent("told to fail");
            co_return *s + "!";
        });
}

Durable open(const std::shared_ptr<SqliteStore>& store) {
    return Durable::builder().threads(2).pool(echo_pool()).store(store).open();
}

}  // namespace

TEST(DurableRecovery, ARowWithAnUnknownStatusEndsFailedWithoutStoppingOpen) {
    test::ScratchDir dir;
    failing = false;
    const auto file = dir.file("s.db");
    TaskId zombie{};
    TaskId fine{};
    {
        auto sched = open(test::open_store(file));
        zombie = sched.submit(Task<std::string>("zombie").key("z").start_in(1h)).id();
        fine = sched.submit(Task<std::string>("fine").start_in(2h)).id();
        sched.shutdown(0s);
    }
    test::RawDb(file).exec("UPDATE tasks SET status = 'zombie' WHERE id = " + std::to_string(zombie.value));
    auto store = test::open_store(file);
    auto sched = open(store);
    EXPECT_EQ(sched.status(TaskRef(fine)), TaskStatus::Scheduled);
    const auto row = store->get_task(TaskRef(zombie));
    ASSERT_TRUE(row.has_value());
    EXPECT_EQ(row->status, TaskStatus::Failed);
    EXPECT_EQ(row->last_error, "decode: unknown status \"zombie\"");
    auto found = sched.find(TaskRef("z"));
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->status(), TaskStatus::Failed);
    // The store goes on as usual.
    failing = false;
    EXPECT_EQ(*sched.submit(Task<std::string>("new")).get(), "new!");
}

// The recovery's failures are committed before open returns: no window in
// which the rows still read `ready` and `find` sees nothing.
TEST(DurableRecovery, RowsTheRecoveryEndedFailedAreFailedWhenOpenReturns) {
    test::ScratchDir dir;
    failing = false;
    const auto file = dir.file("s.db");
    TaskId elsewhere{};
    TaskId damaged{};
    {
        auto sched = Durable::builder()
                         .threads(1)
                         .pool(echo_pool())
                         .pool(test::identity_pool("q"))
                         .store(test::open_store(file))
                         .open();
        elsewhere = sched.submit(Task<std::string>("q-task").pool("q").start_in(1h)).id();
        damaged = sched.submit(Task<std::string>("damaged").key("d").start_in(2h)).id();
        sched.shutdown(0s);
    }
    test::RawDb(file).exec("UPDATE tasks SET options = 'not json' WHERE id = " + std::to_string(damaged.value));
    auto store = test::open_store(file);
    auto sched = open(store);  // declares pool "p" only
    // No flush: what open returned is what the store and find tell.
    EXPECT_EQ(store->get_task(TaskRef(elsewhere))->status, TaskStatus::Failed);
    EXPECT_EQ(store->get_task(TaskRef("d"))->status, TaskStatus::Failed);
    auto q = sched.find(TaskRef(elsewhere));
    ASSERT_TRUE(q.has_value());
    EXPECT_EQ(q->status(), TaskStatus::Failed);
    auto d = sched.find(TaskRef("d"));
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->id(), damaged);
    EXPECT_EQ(d->status(), TaskStatus::Failed);
}

// The engine forgets a task past its retention at its next step, and a
// retry was that step: it forgot the task, then refused it as unknown,
// while its row (and find) still had it.
TEST(DurableRecovery, RetryOfATaskWithoutAKeyPastItsRetentionSubmitsItFromItsRow) {
    test::ScratchDir dir;
    auto clock = std::make_shared<ManualClock>(std::chrono::system_clock::now());
    auto sched = Durable::builder()
                     .threads(1)
                     .clock(clock)
                     .retention(1min)
                     .pool(echo_pool())
                     .store(test::open_store(dir.file("s.db")))
                     .open();
    failing = true;
    auto failed = sched.submit(Task<std::string>("again"));
    EXPECT_THROW(failed.get(), TaskFailure);
    failing = false;
    clock->advance(1h);
    auto found = sched.find(TaskRef(failed.id()));
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->status(), TaskStatus::Failed);
    auto again = sched.retry(TaskRef(failed.id()));
    ASSERT_TRUE(again.has_value());
    EXPECT_NE(again->id(), failed.id());
    EXPECT_EQ(*again->get(), "again!");
    // A task whose row the store does not hold: nothing to retry.
    EXPECT_FALSE(sched.retry(TaskRef(TaskId{again->id().value + 1000})).has_value());
}

// Under AddressSanitizer this was a heap-use-after-free: the facade's
// io_context went before the scheduler core whose strands belong to it.
TEST(DurableRecovery, OpeningAStoreThatCannotBeRecoveredThrowsAStoreErrorOnly) {
    test::ScratchDir dir;
    const auto file = dir.file("s.db");
    test::open_store(file);
    // Every table is there, but the recovery's read of the tasks fails.
    test::RawDb(file).exec("ALTER TABLE tasks DROP COLUMN output");
    auto store = test::open_store(file);
    try {
        open(store);
        FAIL() << "open() of a store whose tasks cannot be read succeeded";
    } catch (const StoreError& e) {
        // The store's own error, not a lead that was never lost.
        EXPECT_NE(e.kind(), StoreErrorKind::Fenced) << e.what();
        EXPECT_NE(std::string(e.what()).find("cannot recover"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find("leadership lost"), std::string::npos) << e.what();
    }
}

}  // namespace durable_recovery_test
