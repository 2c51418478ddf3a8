// A store's client in one process (docs/guide/replicas.md), on each backend:
// submissions acknowledged by the client's own commit with or without a
// leader, keys resolved by the store, the client's checks, and results,
// status, cancels, retries and look-ups through an in-process leader that
// shares the store.
#include "client_support.hpp"

#include <cronoq/cronoq.hpp>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/use_future.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <set>
#include <utility>

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

class ClientTest : public ::testing::TestWithParam<test::Backend> {};

Task<std::string> task(std::string payload) { return Task<std::string>(std::move(payload)).pool("p"); }

}  // namespace

TEST_P(ClientTest, SubmitWithoutALeaderIsCommittedWithAnIdFromTheClientRange) {
    test::TestStore store(GetParam());
    auto client = test::TestClient::open(store.open());
    auto a = client.submit(task("a"));
    auto b = client.submit(task("b").key("kb"));
    EXPECT_GE(a.id().value, test::client_ids_from);
    EXPECT_GT(b.id().value, a.id().value) << "ids increase within one process";
    // Read back by another store object, as another process would.
    auto reader = store.open();
    auto row = reader->get_task(TaskRef(a.id()));
    ASSERT_TRUE(row.has_value());
    EXPECT_EQ(row->status, TaskStatus::Ready);
    EXPECT_EQ(row->pool, "p");
    EXPECT_EQ(row->payload, "a");
    EXPECT_EQ(reader->get_task(TaskRef("kb"))->id, b.id());
    EXPECT_EQ(b.status(), TaskStatus::Ready);
}

TEST_P(ClientTest, AKeyTheStoreHoldsGivesThatTask) {
    test::TestStore store(GetParam());
    auto client = test::TestClient::open(store.open());
    auto first = client.submit(task("one").key("k"));
    auto again = client.submit(task("two").key("k"));
    EXPECT_EQ(again.id(), first.id());
    EXPECT_EQ(store.count_tasks(), 1);
    EXPECT_EQ(client.get(TaskRef("k"))->payload, "one");
}

TEST_P(ClientTest, SubmitManyRefusesEachBadTaskOnItsOwnAndCommitsTheRest) {
    test::TestStore store(GetParam());
    auto client = test::TestClient::open(store.open());
    std::vector<Task<std::string>> tasks;
    tasks.push_back(task("a"));
    tasks.push_back(Task<std::string>("no pool"));
    tasks.push_back(task("c"));
    auto results = client.submit_many(std::move(tasks));
    ASSERT_EQ(results.size(), 3u);
    EXPECT_TRUE(results[0].has_value());
    ASSERT_FALSE(results[1].has_value());
    EXPECT_EQ(results[1].error(), SubmitError::Invalid);
    EXPECT_NE(results[1].message().find("no default pool"), std::string::npos) << results[1].message();
    EXPECT_TRUE(results[2].has_value());
    EXPECT_EQ(store.count_tasks(), 2);
}

TEST_P(ClientTest, SubmitBatchIsAllOrNothing) {
    test::TestStore store(GetParam());
    auto client = test::TestClient::open(store.open());
    std::vector<Task<std::string>> bad;
    bad.push_back(task("a").key("x"));
    bad.push_back(task("b").key("x"));
    try {
        client.submit_batch(std::move(bad));
        ADD_FAILURE() << "a key given twice in a batch was accepted";
    } catch (const SubmitException& e) {
        EXPECT_EQ(e.error(), SubmitError::DuplicateKeyInBatch);
    }
    std::vector<Task<std::string>> no_pool;
    no_pool.push_back(task("a"));
    no_pool.push_back(Task<std::string>("b"));
    EXPECT_THROW(client.submit_batch(std::move(no_pool)), SubmitException);
    EXPECT_EQ(store.count_tasks(), 0) << "a refused batch committed some of its tasks";

    std::vector<Task<std::string>> good;
    good.push_back(task("a").key("ka"));
    good.push_back(task("b").depends_on(Dep::on_success("ka")));
    auto handles = client.submit_batch(std::move(good));
    ASSERT_EQ(handles.size(), 2u);
    EXPECT_EQ(handles[1].status(), TaskStatus::Blocked);
    EXPECT_EQ(store.count_tasks(), 2);
}

TEST_P(ClientTest, ABatchTheLeaderRefusesEndsFailedWholeNamingTheFirstError) {
    test::TestStore store(GetParam());
    auto shared = store.open();
    auto sched = test::Durable::builder().pool(test::identity_pool("p")).store(shared).open();
    auto client = test::TestClient::open(shared);
    std::vector<Task<std::string>> batch;
    batch.push_back(task("fine").key("b0"));
    // Only the leader knows that no task holds this key (UnknownDependency::Reject).
    batch.push_back(task("orphan").depends_on(Dep::on_success("no-such-key")));
    auto handles = client.submit_batch(std::move(batch));
    ASSERT_EQ(handles.size(), 2u);
    for (auto& h : handles) {
        try {
            h.get();
            ADD_FAILURE() << "a task of a refused batch ran";
        } catch (const TaskFailure& e) {
            EXPECT_EQ(e.status(), TaskStatus::Failed);
            EXPECT_NE(e.message().find("no-such-key"), std::string::npos) << e.message();
        }
    }
    sched.shutdown(0s);
}

TEST_P(ClientTest, APayloadLargerThanTheStoreAcceptsIsInvalid) {
    test::TestStore store(GetParam());
    auto s = store.open();
    const std::size_t limit = s->journal().max_value_bytes();
    auto client = test::TestClient::open(s);
    try {
        // About 1 GB on SQLite: moved into the task, not copied (the encoding
        // is the one copy the submit makes).
        client.submit(task(std::string(limit + 1, 'x')));
        ADD_FAILURE() << "a payload over the store's limit was accepted";
    } catch (const SubmitException& e) {
        EXPECT_EQ(e.error(), SubmitError::Invalid);
        EXPECT_NE(std::string(e.what()).find("payload"), std::string::npos) << e.what();
    }
}

TEST_P(ClientTest, ValidatesAgainstTheConfigurationTheLeaderWrote) {
    test::TestStore store(GetParam());
    auto shared = store.open();
    auto sched = test::Durable::builder()
                     .pool(test::identity_pool("p"))
                     .resource(Resource::semaphore("r", 2))
                     .store(shared)
                     .open();
    auto client = test::TestClient::open(shared);
    auto expect_refused = [&](Task<std::string> t, SubmitError error) {
        try {
            client.submit(std::move(t));
            ADD_FAILURE() << "accepted; expected " << to_string(error);
        } catch (const SubmitException& e) {
            EXPECT_EQ(e.error(), error) << e.what();
        }
    };
    expect_refused(Task<std::string>("x").pool("q"), SubmitError::UnknownPool);
    expect_refused(task("x").resource("s", 1), SubmitError::UnknownResource);
    expect_refused(task("x").resource("r", 3), SubmitError::ResourceExceedsCapacity);
    EXPECT_EQ(*client.submit(task("x").resource("r", 2)).get(), "x");
    sched.shutdown(0s);
}

TEST_P(ClientTest, ResultCompletesOnceTheLeaderCommitsTheEnd) {
    test::TestStore store(GetParam());
    auto shared = store.open();
    auto sched = test::Durable::builder().pool(test::identity_pool("p")).store(shared).open();
    asio::io_context io;
    auto run = [&]() -> asio::awaitable<std::string> {
        auto opening = test::AsyncClient::open(shared, io.get_executor());
        auto client = co_await std::move(opening);
        auto submitting = client.submit(task("hello"));
        auto handle = co_await std::move(submitting);
        auto waiting = handle.result();
        auto out = co_await std::move(waiting);
        auto reading = handle.status();
        EXPECT_EQ(co_await std::move(reading), TaskStatus::Succeeded);
        co_return *out;
    };
    auto done = asio::co_spawn(io, run(), asio::use_future);
    io.run();
    EXPECT_EQ(done.get(), "hello");
    sched.shutdown(0s);
}

TEST_P(ClientTest, CancellingOneResultWaitEndsOnlyThatWait) {
    test::TestStore store(GetParam());
    auto shared = store.open();
    std::promise<void> gate;
    auto sched = test::Durable::builder().pool(test::gated_pool(gate.get_future().share(), 1)).store(shared).open();
    asio::io_context io;
    asio::cancellation_signal signal;
    std::string cancelled_with, second_got;
    auto first = [&](test::AsyncHandle h) -> asio::awaitable<void> {
        try {
            auto waiting = h.result();
            co_await std::move(waiting);
            cancelled_with = "completed";
        } catch (const std::system_error& e) {
            cancelled_with = e.code() == asio::error::operation_aborted ? "aborted" : e.what();
        }
        gate.set_value();  // only now may the task end
    };
    auto main = [&]() -> asio::awaitable<void> {
        auto opening = test::AsyncClient::open(shared, io.get_executor());
        auto client = co_await std::move(opening);
        auto submitting = client.submit(task("t"));
        auto h = co_await std::move(submitting);
        asio::co_spawn(io, first(h), asio::bind_cancellation_slot(signal.slot(), asio::detached));
        asio::post(io, [&] { signal.emit(asio::cancellation_type::terminal); });
        auto waiting = h.result();
        second_got = *co_await std::move(waiting);
    };
    auto done = asio::co_spawn(io, main(), asio::use_future);
    io.run();
    done.get();
    EXPECT_EQ(cancelled_with, "aborted");
    EXPECT_EQ(second_got, "t!");
    sched.shutdown(0s);
}

TEST_P(ClientTest, AFailedTaskThrowsTaskFailureAndRetryRunsItAgain) {
    test::TestStore store(GetParam());
    auto shared = store.open();
    auto failing_once = std::make_shared<std::atomic<int>>(0);
    auto pool = Pool<std::string, std::string>("p").executor_fn(
        [failing_once](TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            if (failing_once->fetch_add(1) == 0) co_return TaskError::permanent("first attempt fails");
            co_return *s + "?";
        });
    auto sched = test::Durable::builder().pool(std::move(pool)).store(shared).open();
    auto client = test::TestClient::open(shared);
    auto h = client.submit(task("r"));
    try {
        h.get();
        ADD_FAILURE() << "a failed task gave a result";
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.status(), TaskStatus::Failed);
        EXPECT_EQ(e.message(), "first attempt fails");
    }
    auto again = client.retry(TaskRef(h.id()));
    ASSERT_TRUE(again.has_value());
    EXPECT_NE(again->id(), h.id());
    EXPECT_EQ(*again->get(), "r?");
    EXPECT_EQ(h.status(), TaskStatus::Failed) << "the old task keeps its end";
    EXPECT_FALSE(client.retry(TaskRef(again->id())).has_value()) << "a succeeded task is not retried";
    sched.shutdown(0s);
}

// docs/guide/replicas.md, "Retry from a client": a keyed task that ended
// within the retention is retried as Scheduler::retry does: the key moves
// to the new task, in the store and in the leader's engine.
TEST_P(ClientTest, RetryOfAKeyedTaskEndedWithinTheRetentionMovesTheKey) {
    test::TestStore store(GetParam());
    auto shared = store.open();
    auto failing_once = std::make_shared<std::atomic<int>>(0);
    auto pool = Pool<std::string, std::string>("p").executor_fn(
        [failing_once](TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            if (failing_once->fetch_add(1) == 0) co_return TaskError::permanent("first attempt fails");
            co_return *s + "?";
        });
    auto sched = test::Durable::builder().retention(1h).pool(std::move(pool)).store(shared).open();
    auto client = test::TestClient::open(shared);
    auto h = client.submit(task("r").key("moving"));
    EXPECT_THROW(h.get(), TaskFailure);
    auto again = client.retry(TaskRef("moving"));
    ASSERT_TRUE(again.has_value()) << "a keyed task ended within the retention was not retried";
    EXPECT_NE(again->id(), h.id());
    EXPECT_EQ(*again->get(), "r?");
    EXPECT_EQ(client.get(TaskRef("moving"))->id, again->id()) << "the key stayed with the old task in the store";
    EXPECT_FALSE(client.get(TaskRef(h.id()))->key.has_value());
    EXPECT_EQ(client.get(TaskRef(h.id()))->status, TaskStatus::Failed) << "the old task keeps its end";
    auto held = sched.find(TaskRef("moving"));
    ASSERT_TRUE(held.has_value());
    EXPECT_EQ(held->id(), again->id()) << "the leader's engine did not move the key";
    // Retried again (by id), as Scheduler::retry: the old task gave its key
    // away, so the new one has none, and the key stays with the first retry.
    auto twice = client.retry(TaskRef(h.id()));
    ASSERT_TRUE(twice.has_value());
    EXPECT_NE(twice->id(), again->id());
    EXPECT_FALSE(client.get(TaskRef(twice->id()))->key.has_value());
    EXPECT_EQ(*twice->get(), "r?");
    EXPECT_EQ(client.get(TaskRef("moving"))->id, again->id());
    EXPECT_EQ(store.count_tasks(), 3);
    sched.shutdown(0s);
}

// docs/guide/replicas.md, "Pause and resume": a client's pause and resume
// reach the leader through the store, each applied once, in commit order
// with the client's other entries.
TEST_P(ClientTest, PauseAndResumeFromAClientReachTheLeader) {
    test::TestStore store(GetParam());
    auto shared = store.open();
    auto sched = test::Durable::builder().pool(test::identity_pool("p")).store(shared).open();
    auto client = test::TestClient::open(shared);
    client.pause("p");
    // Ingested after the pause: it waits Ready, and the cancel ends it
    // before any attempt.
    auto waiting = client.submit(task("w"));
    EXPECT_TRUE(client.cancel(TaskRef(waiting.id())));
    try {
        waiting.get();
        ADD_FAILURE() << "a task of a paused pool ran";
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.status(), TaskStatus::Cancelled);
        EXPECT_EQ(e.attempt(), 0u) << "a task of the paused pool started";
    }
    EXPECT_TRUE(sched.snapshot().pools.at(0).paused);
    client.resume("p");
    auto runs = client.submit(task("r"));
    auto out = runs.get_for(60s);  // a guard against a hang, not a bound
    ASSERT_TRUE(out.has_value()) << "the resume did not reach the leader";
    EXPECT_EQ(**out, "r");
    EXPECT_FALSE(sched.snapshot().pools.at(0).paused);
    sched.shutdown(0s);
}

TEST_P(ClientTest, PauseOfAnUnknownPoolIsTheErrorSubmitGives) {
    test::TestStore store(GetParam());
    auto shared = store.open();
    auto sched = test::Durable::builder().pool(test::identity_pool("p")).store(shared).open();
    auto client = test::TestClient::open(shared);
    SubmitError from_submit{};
    try {
        client.submit(Task<std::string>("x").pool("q"));
    } catch (const SubmitException& e) {
        from_submit = e.error();
    }
    EXPECT_EQ(from_submit, SubmitError::UnknownPool);
    for (bool pausing : {true, false}) {
        try {
            if (pausing) client.pause("q");
            else client.resume("q");
            ADD_FAILURE() << (pausing ? "pause" : "resume") << " of an unknown pool was committed";
        } catch (const SubmitException& e) {
            EXPECT_EQ(e.error(), from_submit);
            EXPECT_NE(std::string(e.what()).find("\"q\""), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(client.pause(""), SubmitException);
    EXPECT_TRUE(shared->journal().read_inbox(10).empty()) << "a refused pause was committed";
    sched.shutdown(0s);
}

// Committed while no leader runs: the next leader starts the pool paused,
// and applies a later resume.
TEST_P(ClientTest, APauseCommittedWhileNoLeaderRunsIsAppliedByTheNextLeader) {
    test::TestStore store(GetParam());
    auto shared = store.open();
    auto client = test::TestClient::open(shared);
    client.pause("p");
    auto h = client.submit(task("held"));
    {
        auto sched = test::Durable::builder().pool(test::identity_pool("p")).store(shared).open();
        EXPECT_TRUE(sched.snapshot().pools.at(0).paused) << "the leader did not apply the pause at recovery";
        EXPECT_EQ(h.status(), TaskStatus::Ready);
        sched.shutdown(0s);
    }
    EXPECT_TRUE(shared->journal().read_inbox(10).empty()) << "the pause was not taken";
    client.resume("p");
    auto sched = test::Durable::builder().pool(test::identity_pool("p")).store(store.open()).open();
    EXPECT_EQ(*h.get(), "held");
    EXPECT_FALSE(sched.snapshot().pools.at(0).paused);
    sched.shutdown(0s);
}

TEST_P(ClientTest, ACancelBeforeAnyLeaderEndsTheTaskCancelledWithoutAnAttempt) {
    test::TestStore store(GetParam());
    auto shared = store.open();
    auto client = test::TestClient::open(shared);
    auto h = client.submit(task("c").key("c"));
    EXPECT_TRUE(client.cancel(TaskRef("c")));
    EXPECT_FALSE(client.cancel(TaskRef("no such key")));
    auto sched = test::Durable::builder().pool(test::identity_pool("p")).store(shared).open();
    try {
        h.get();
        ADD_FAILURE() << "a task cancelled before ingestion ran";
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.status(), TaskStatus::Cancelled);
        EXPECT_EQ(e.attempt(), 0u);
    }
    EXPECT_FALSE(client.cancel(TaskRef("c"))) << "an ended task is not cancelled again";
    sched.shutdown(0s);
}

TEST_P(ClientTest, FindAndQuerySeeWhatTheStoreHolds) {
    test::TestStore store(GetParam());
    auto client = test::TestClient::open(store.open());
    auto a = client.submit(task("a").key("qa"));
    client.submit(task("b").key("qb"));
    auto found = client.find(TaskRef("qa"));
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->id(), a.id());
    EXPECT_FALSE(client.find(TaskRef("none")).has_value());
    TaskQuery q;
    q.key_prefix = "q";
    const TaskPage page = client.query(q);
    ASSERT_EQ(page.tasks.size(), 2u);
    EXPECT_EQ(page.tasks[1].id, a.id()) << "newest first";
}

TEST_P(ClientTest, AHandleOutlivesItsClient) {
    test::TestStore store(GetParam());
    auto shared = store.open();
    std::optional<test::TestHandle> h;
    {
        auto client = test::TestClient::open(shared);
        h = client.submit(task("late"));
    }
    auto sched = test::Durable::builder().pool(test::identity_pool("p")).store(shared).open();
    EXPECT_EQ(*h->get(), "late");
    sched.shutdown(0s);
}

INSTANTIATE_TEST_SUITE_P(Backends, ClientTest, ::testing::ValuesIn(test::tested_backends()), test::BackendName());
