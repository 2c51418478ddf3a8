// A scheduler with a SQLite store (docs/guide/durability.md), in one process: open, the
// acknowledgement rule, hand-over at shutdown, recovery on reopen.
#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <system_error>

namespace durable_scheduler_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using test::Durable;

// "<payload>!"; a payload "wait" runs until its attempt is cancelled;
// "fail" fails permanently.
Pool<std::string, std::string> echo_pool() {
    return Pool<std::string, std::string>("p")
        .workers(2, 2, 2)
        .retry(RetryPolicy{3, 1ms, 1.0, 1ms, false})
        .executor_fn([](TaskContext ctx, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            if (*s == "wait") {
                co_await ctx.cancelled();
                co_return TaskError::cancelled();
            }
            if (*s == "fail") co_return TaskError::permanent("told to fail");
            co_return *s + "!";
        });
}

Durable open(const std::filesystem::path& file) {
    return Durable::builder().threads(2).pool(echo_pool()).store(test::open_store(file)).open();
}

}  // namespace

TEST(DurableScheduler, BuildWithAStoreIsAConfigErrorThatSaysToOpen) {
    test::ScratchDir dir;
    try {
        auto s = Durable::builder().pool(echo_pool()).store(test::open_store(dir.file("s.db"))).build();
        FAIL() << "build() with a store must throw";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("open()"), std::string::npos) << e.what();
    }
}

TEST(DurableScheduler, OpenWithoutAStoreIsAConfigError) {
    EXPECT_THROW(Durable::builder().pool(echo_pool()).open(), ConfigError);
}

TEST(DurableScheduler, AnAcknowledgedSubmissionIsInTheStore) {
    test::ScratchDir dir;
    auto store = test::open_store(dir.file("s.db"));
    auto sched = Durable::builder().threads(2).pool(echo_pool()).store(store).open();
    auto h = sched.submit(Task<std::string>("wait").key("k"));
    // submit() returned: the row is committed, whatever the attempt is doing.
    auto row = store->get_task(TaskRef(h.id()));
    ASSERT_TRUE(row.has_value());
    EXPECT_EQ(row->key, "k");
    EXPECT_EQ(row->pool, "p");
    EXPECT_EQ(row->payload, "wait");
    EXPECT_TRUE(h.cancel());
    EXPECT_THROW(h.get(), TaskFailure);
    // The handle completed: its end is committed too.
    EXPECT_EQ(store->get_task(TaskRef("k"))->status, TaskStatus::Cancelled);
}

TEST(DurableScheduler, TheStoreNamesTheLargestValueItAcceptsBelowSqlitesLimit) {
    test::ScratchDir dir;
    auto store = test::open_store(dir.file("s.db"));
    // SQLite takes values up to SQLITE_LIMIT_LENGTH (10^9 bytes by default);
    // the store keeps room for the rest of a row below it.
    const std::size_t limit = store->journal().max_value_bytes();
    EXPECT_GT(limit, 500'000'000u);
    EXPECT_LT(limit, 1'000'000'000u);
}

TEST(DurableScheduler, TrySubmitIsDurableAfterFlush) {
    test::ScratchDir dir;
    auto store = test::open_store(dir.file("s.db"));
    auto sched = Durable::builder().threads(1).pool(echo_pool()).store(store).open();
    std::vector<Task<std::string>> tasks;
    for (int i = 0; i < 50; ++i) tasks.push_back(Task<std::string>("x" + std::to_string(i)));
    auto results = sched.try_submit_many(std::move(tasks));
    sched.flush();
    for (auto& r : results) {
        ASSERT_TRUE(r.has_value()) << r.message();
        EXPECT_TRUE(store->get_task(TaskRef(r.value().id())).has_value());
    }
    for (auto& r : results) EXPECT_EQ(r.value().get()->back(), '!');
}

TEST(DurableScheduler, ResultsWaitForTheCommitOfTheirEnd) {
    test::ScratchDir dir;
    auto store = test::open_store(dir.file("s.db"));
    auto sched = Durable::builder().threads(2).pool(echo_pool()).store(store).open();
    auto ok = sched.submit(Task<std::string>("a"));
    auto bad = sched.submit(Task<std::string>("fail"));
    EXPECT_EQ(*ok.get(), "a!");
    EXPECT_THROW(bad.get(), TaskFailure);
    const auto ok_row = store->get_task(TaskRef(ok.id()));
    EXPECT_EQ(ok_row->status, TaskStatus::Succeeded);
    EXPECT_EQ(ok_row->output, "a!");
    EXPECT_EQ(ok_row->attempt, 1u);
    const auto bad_row = store->get_task(TaskRef(bad.id()));
    EXPECT_EQ(bad_row->status, TaskStatus::Failed);
    EXPECT_EQ(bad_row->last_error, "told to fail");
}

TEST(DurableScheduler, FinishedTasksAndKeysComeBackAfterReopen) {
    test::ScratchDir dir;
    TaskId done{};
    TaskId failed{};
    {
        auto sched = open(dir.file("s.db"));
        auto h = sched.submit(Task<std::string>("a").key("done"));
        EXPECT_EQ(*h.get(), "a!");
        done = h.id();
        auto f = sched.submit(Task<std::string>("fail").key("failed"));
        EXPECT_THROW(f.get(), TaskFailure);
        failed = f.id();
    }
    auto sched = open(dir.file("s.db"));
    auto found = sched.find(TaskRef("done"));
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->id(), done);
    EXPECT_EQ(found->status(), TaskStatus::Succeeded);
    EXPECT_EQ(*found->get(), "a!");  // the output came back with it
    auto f = sched.find(TaskRef(failed));
    ASSERT_TRUE(f.has_value());
    try {
        f->get();
        FAIL() << "a failed task's handle throws";
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.status(), TaskStatus::Failed);
        EXPECT_EQ(e.message(), "told to fail");
    }
    // The key still deduplicates; a new task gets an id above the old ones.
    EXPECT_EQ(sched.submit(Task<std::string>("again").key("done")).id(), done);
    auto fresh = sched.submit(Task<std::string>("b"));
    EXPECT_GT(fresh.id().value, failed.value);
    EXPECT_GT(fresh.id().value, done.value);
    EXPECT_EQ(*fresh.get(), "b!");
}

TEST(DurableScheduler, ShutdownHandsQueuedWorkToTheNextLeader) {
    test::ScratchDir dir;
    TaskId later{};
    TaskId running{};
    {
        auto sched = open(dir.file("s.db"));
        auto h = sched.submit(Task<std::string>("later").start_in(1h));
        later = h.id();
        auto r = sched.submit(Task<std::string>("wait"));
        running = r.id();
        sched.shutdown(0s);
        try {
            h.get();
            FAIL() << "a handed-over task's handle fails";
        } catch (const TaskFailure& e) {
            EXPECT_EQ(e.status(), TaskStatus::Scheduled);
            EXPECT_NE(e.message().find("stays in the store"), std::string::npos) << e.message();
        }
        EXPECT_THROW(r.get(), TaskFailure);
    }
    {
        auto store = test::open_store(dir.file("s.db"));
        EXPECT_EQ(store->get_task(TaskRef(later))->status, TaskStatus::Scheduled);
    }
    auto sched = open(dir.file("s.db"));
    EXPECT_EQ(sched.status(TaskRef(later)), TaskStatus::Scheduled);
    // The attempt aborted at the end of the grace counts as lost: the task
    // runs again (and waits again, until cancelled here).
    auto r = sched.find(TaskRef(running));
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->cancel());
    EXPECT_THROW(r->get(), TaskFailure);
    EXPECT_EQ(r->status(), TaskStatus::Cancelled);
}

namespace {

// A coroutine function, not a lambda: its parameters live in its frame.
asio::awaitable<void> set_when_lead_lost(Scheduler<std::string, std::string> sched, bool& lost) {
    co_await sched.leadership_lost();
    lost = true;
}

}  // namespace

namespace {

// Opens a scheduler on `store`; the test fails if it ever leads.
asio::awaitable<void> open_and_never_lead(std::shared_ptr<SqliteStore> store) {
    const auto ex = co_await asio::this_coro::executor;
    auto builder = Scheduler<std::string, std::string>::builder();
    builder.pool(echo_pool()).store(store);
    auto opening = builder.open(ex);
    auto sched = co_await std::move(opening);
    ADD_FAILURE() << "the standby led while another scheduler held the store";
}

}  // namespace

// Builder::open honours Asio cancellation (scheduler.hpp): a standby that
// waits for the lead stops waiting with operation_aborted, and the leader
// goes on undisturbed.
TEST(DurableScheduler, CancellingOpenEndsAStandbysWait) {
    test::ScratchDir dir;
    auto leader = open(dir.file("s.db"));
    auto standby_store = test::open_store(dir.file("s.db"));
    asio::io_context io;
    asio::cancellation_signal cancel;
    std::exception_ptr ended;
    bool done = false;
    asio::co_spawn(io, open_and_never_lead(standby_store),
                   asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e) {
                       ended = e;
                       done = true;
                   }));
    io.poll();  // up to the wait for the lead
    ASSERT_FALSE(done) << "open completed while another scheduler leads";
    cancel.emit(asio::cancellation_type::terminal);
    io.run();
    ASSERT_TRUE(done);
    ASSERT_TRUE(ended) << "open completed without an error";
    try {
        std::rethrow_exception(ended);
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code(), asio::error::operation_aborted) << e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "ended by " << e.what() << ", not by the cancellation";
    }
    EXPECT_EQ(*leader.submit(Task<std::string>("x")).get(), "x!");
}

TEST(DurableScheduler, LeadershipLostCompletesWhenShutdownReleasesTheLead) {
    test::ScratchDir dir;
    asio::io_context io;
    auto store = test::open_store(dir.file("s.db"));
    bool lost = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            // GCC 12: no temporary (a builder, a lambda) in a full-expression
            // with a co_await; each is named first.
            const auto ex = co_await asio::this_coro::executor;
            auto builder = Scheduler<std::string, std::string>::builder();
            builder.pool(echo_pool()).store(store);
            auto opening = builder.open(ex);
            auto sched = co_await std::move(opening);
            auto h = co_await sched.submit(Task<std::string>("a"));
            EXPECT_EQ(*co_await h.result(), "a!");
            asio::co_spawn(ex, set_when_lead_lost(sched, lost), asio::detached);
            co_await sched.flush();
            co_await sched.shutdown(0s);
        },
        asio::detached);
    io.run();
    EXPECT_TRUE(lost);
}

namespace {

// "flaky" fails permanently while this is set (each test sets it first).
std::atomic<bool> flaky_fails{true};

Pool<std::string, std::string> flaky_pool() {
    return Pool<std::string, std::string>("p").workers(1, 1, 1).executor_fn(
        [](TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            if (flaky_fails) co_return TaskError::permanent("flaky failed");
            co_return *s + "!";
        });
}

Durable open_flaky(const std::filesystem::path& file) {
    return Durable::builder().threads(1).pool(flaky_pool()).store(test::open_store(file)).open();
}

}  // namespace

TEST(DurableScheduler, RetryAfterARestartSubmitsTheStoredTaskAgainAndMovesItsKey) {
    test::ScratchDir dir;
    const auto file = dir.file("s.db");
    flaky_fails = true;
    TaskId keyed{};
    TaskId plain{};
    TaskId succeeded{};
    {
        auto sched = open_flaky(file);
        auto k = sched.submit(Task<std::string>("flaky").key("k").deadline_in(1h));
        auto p = sched.submit(Task<std::string>("flaky"));
        EXPECT_THROW(k.get(), TaskFailure);
        EXPECT_THROW(p.get(), TaskFailure);
        keyed = k.id();
        plain = p.id();
        flaky_fails = false;
        auto s = sched.submit(Task<std::string>("ok"));
        EXPECT_EQ(*s.get(), "ok!");
        succeeded = s.id();
    }
    auto sched = open_flaky(file);
    // An ended task without a key has no record in memory: found in the store.
    auto found = sched.find(TaskRef(succeeded));
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(*found->get(), "ok!");
    EXPECT_FALSE(sched.retry(TaskRef(succeeded)).has_value());
    auto again = sched.retry("k");
    ASSERT_TRUE(again.has_value());
    EXPECT_GT(again->id().value, succeeded.value);
    EXPECT_EQ(*again->get(), "flaky!");
    auto plain_again = sched.retry(TaskRef(plain));  // from its row
    ASSERT_TRUE(plain_again.has_value());
    EXPECT_EQ(*plain_again->get(), "flaky!");
    sched.flush();
    EXPECT_EQ(sched.find("k")->id(), again->id());
    auto store = test::open_store(file);
    const auto old_row = store->get_task(TaskRef(keyed));
    EXPECT_EQ(old_row->status, TaskStatus::Failed);  // its one terminal status
    EXPECT_FALSE(old_row->key.has_value());           // the key moved
    EXPECT_EQ(store->get_task(TaskRef("k"))->id, again->id());
    EXPECT_EQ(store->get_task(TaskRef(again->id()))->status, TaskStatus::Succeeded);
}

TEST(DurableScheduler, SnapshotShowsTheStoresCommitFigures) {
    test::ScratchDir dir;
    auto sched = open(dir.file("s.db"));
    for (int i = 0; i < 5; ++i) EXPECT_EQ(*sched.submit(Task<std::string>("x")).get(), "x!");
    sched.flush();
    const Snapshot snap = sched.scheduler().snapshot();
    ASSERT_TRUE(snap.store.has_value());
    EXPECT_GE(snap.store->commits, 5u);  // each acknowledged submission waited for a commit
    // At least one row per task: a commit writes the net changes of its
    // batches, so a task admitted and ended in one commit is one change
    // (docs/store.md, "Net changes").
    EXPECT_GE(snap.store->changes_committed, 5u);
    EXPECT_GT(snap.store->mean_batch_size, 0.0);
    EXPECT_GT(snap.store->commit_latency_p99.count(), 0);
    EXPECT_GE(snap.store->commit_latency_p99, snap.store->commit_latency_p50);
    EXPECT_TRUE(snap.store->leading);
    EXPECT_EQ(snap.store->epoch, 1u);
    const auto json = snap.to_json();
    EXPECT_EQ(json.at("store").at("commits").get<std::uint64_t>(), snap.store->commits);
    EXPECT_TRUE(json.at("store").at("leading").get<bool>());
    EXPECT_TRUE(json.at("store").contains("commit_latency_ms"));
    // Every commit in the histogram since the store opened (for Prometheus).
    EXPECT_EQ(snap.store->commit_seconds.count, snap.store->commits);
    EXPECT_GT(snap.store->commit_seconds.sum, 0.0);
    EXPECT_EQ(json.at("store").at("commit_seconds").at("count").get<std::uint64_t>(), snap.store->commits);

    // Without a store there is no such part.
    auto plain = Durable::builder().pool(echo_pool()).build();
    EXPECT_FALSE(plain.scheduler().snapshot().store.has_value());
    EXPECT_FALSE(plain.scheduler().snapshot().to_json().contains("store"));
}

TEST(DurableScheduler, ATaskThatEndsWhileItsAdmissionWaitsToCommitIsWrittenOnce) {
    // An idle store would commit a task's admission at once and its end in
    // a second commit. It holds a group of admissions open while the ends
    // of its tasks arrive, which fold into the inserts (docs/store.md,
    // "Holding admissions open"): a trivial task is one commit of one row,
    // in its final state. The bound leaves room for a machine that pauses
    // a thread for longer than the quiet wait (1 ms).
    // Each task runs a few hundred microseconds, so without the hold the
    // store's thread has taken its admission before it ends.
    auto brief = Pool<std::string, std::string>("p").workers(2, 2, 2).executor_fn(
        [](TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            asio::steady_timer timer(co_await asio::this_coro::executor, 300us);
            auto waiting = timer.async_wait(asio::use_awaitable);
            co_await std::move(waiting);
            co_return *s + "!";
        });
    test::ScratchDir dir;
    auto store = SqliteStore::open(dir.file("s.db"), SqliteStoreConfig{Durability::Full, 10s, std::chrono::hours(24)});
    auto sched = Durable::builder().threads(1).pool(std::move(brief)).store(store).open();
    const auto before = store->journal().figures();
    constexpr std::uint64_t n = 40;
    for (std::uint64_t i = 0; i < n; ++i) {
        auto handle = sched.submit(Task<std::string>("x" + std::to_string(i)));
        EXPECT_EQ(*handle.get(), "x" + std::to_string(i) + "!");
        const auto row = store->get_task(TaskRef(handle.id()));
        ASSERT_TRUE(row);
        EXPECT_EQ(row->status, TaskStatus::Succeeded);
        EXPECT_TRUE(row->output.has_value());
    }
    const auto after = store->journal().figures();
    // Two per task without the hold (1.85 to 2.0 measured at load 13 on
    // two cores), about one on a quiet machine.
    EXPECT_LE(after.commits - before.commits, n * 7 / 4) << "commits for " << n << " tasks, one at a time";
    EXPECT_LE(after.changes_committed - before.changes_committed, n * 7 / 4) << "changes written";
}

TEST(DurableScheduler, FindSeesATaskWithoutAKeyThroughItsEnd) {
    test::ScratchDir dir;
    auto sched = open(dir.file("s.db"));
    std::vector<Task<std::string>> tasks;
    for (int i = 0; i < 300; ++i) tasks.push_back(Task<std::string>("x" + std::to_string(i)));
    auto results = sched.try_submit_many(std::move(tasks));
    // While the tasks run and end, every lookup finds each one: a live task
    // by its record, one that ended by its row, once its end is committed.
    for (int round = 0; round < 3; ++round)
        for (auto& r : results) ASSERT_TRUE(sched.find(TaskRef(r.value().id())).has_value()) << r.value().id().value;
    for (std::size_t i = 0; i < results.size(); ++i)
        EXPECT_EQ(*sched.find(TaskRef(results[i].value().id()))->get(), "x" + std::to_string(i) + "!");
}

TEST(DurableScheduler, RowsOfAnUnknownPoolOrThatCannotBeDecodedEndFailedWithoutStoppingOpen) {
    test::ScratchDir dir;
    const auto file = dir.file("s.db");
    TaskId elsewhere{};
    TaskId damaged{};
    TaskId fine{};
    {
        auto sched = Durable::builder()
                         .threads(1)
                         .pool(echo_pool())
                         .pool(test::identity_pool("q"))
                         .store(test::open_store(file))
                         .open();
        elsewhere = sched.submit(Task<std::string>("q-task").pool("q").start_in(1h)).id();
        damaged = sched.submit(Task<std::string>("damaged").start_in(2h)).id();
        fine = sched.submit(Task<std::string>("fine").start_in(3h)).id();  // apart: one reservation at a time
        sched.shutdown(0s);  // hands them over
    }
    test::RawDb(file).exec("UPDATE tasks SET options = 'not json' WHERE id = " + std::to_string(damaged.value));
    auto sched = open(file);  // declares pool "p" only
    EXPECT_EQ(sched.status(TaskRef(fine)), TaskStatus::Scheduled);
    sched.flush();
    auto store = test::open_store(file);
    const auto q = store->get_task(TaskRef(elsewhere));
    EXPECT_EQ(q->status, TaskStatus::Failed);
    EXPECT_EQ(q->last_error, "unknown pool after restart: q");
    const auto d = store->get_task(TaskRef(damaged));
    EXPECT_EQ(d->status, TaskStatus::Failed);
    EXPECT_EQ(d->last_error.rfind("decode: ", 0), 0u) << d->last_error;
    // Their handles tell the same.
    try {
        sched.find(TaskRef(elsewhere))->get();
        FAIL() << "the task of an unknown pool failed";
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.status(), TaskStatus::Failed);
        EXPECT_EQ(e.message(), "unknown pool after restart: q");
    }
}
}  // namespace durable_scheduler_test
