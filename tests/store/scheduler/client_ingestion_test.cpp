// The leader's side of a store's clients (docs/store.md, "Clients"), on
// each backend: the configuration it writes when it leads, and its
// ingestion of rows and cancels that clients committed, written here
// through the store's ClientAccess directly (no Client): rows submitted
// while no leader runs, commit order, bounds at ingestion, cancels from
// another process and before ingestion, rows that cannot be admitted, a
// key race with the leader's own submission, and clients' batches. A
// leader killed between taking entries and committing:
// client_ingestion_crash_test.cpp.
#include "client_ingestion_support.hpp"

#include "driver/client_batch.hpp"
#include "driver/shard_config_codec.hpp"

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

using namespace std::chrono_literals;
using namespace cronoq;

namespace cronoq::test {

namespace {

TaskId submit_one(store::ClientAccess& access, store::TaskRow row) {
    std::vector<store::TaskRow> rows;
    rows.push_back(std::move(row));
    return access.submit(std::move(rows)).at(0).id;
}

/// Runs `io` on a thread of its own until destroyed (then stopped and
/// joined, also when a test's assertion returns early).
class IoThread {
public:
    explicit IoThread(asio::io_context& io) : io_(io) {
        io_.restart();  // run_one may have found it out of work
        thread_ = std::thread([this] {
            auto work = asio::make_work_guard(io_);
            io_.run();
        });
    }
    ~IoThread() {
        io_.stop();
        thread_.join();
    }
    IoThread(const IoThread&) = delete;
    IoThread& operator=(const IoThread&) = delete;

private:
    asio::io_context& io_;
    std::thread thread_;
};

/// Shuts `sched` down on its io_context (run by an IoThread) and waits.
void shut_down(asio::io_context& io, Scheduler<std::string, std::string>& sched) {
    std::promise<void> done;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto shutting = sched.shutdown(1s);
            co_await std::move(shutting);
            done.set_value();
        },
        asio::detached);
    done.get_future().wait();
}

/// Each test: a store (one `Store` object, which the leader shares), its
/// ClientAccess to commit as a client would, and pool "p" whose attempts
/// count their runs and, in `gated_pool`, wait for `release()`.
class ClientIngestion : public ::testing::TestWithParam<Backend> {
protected:
    using Sched = Scheduler<std::string, std::string>;

    /// Pool "p" whose attempts run at once.
    Pool<std::string, std::string> pool(std::size_t workers = 1) { return counted_pool("p", runs, open_gate(), workers); }
    /// Pool "p" (one slot) whose attempts wait for `release()`.
    Pool<std::string, std::string> gated_pool() { return counted_pool("p", runs, released_); }
    void release() { gate_.set_value(); }

    /// A scheduler leading `p` on the store.
    Durable lead(Pool<std::string, std::string> p) { return Durable::builder().pool(std::move(p)).store(client).open(); }
    /// A scheduler leading `p` on `io`, which runs only until it leads:
    /// what is committed next waits until an IoThread runs `io`.
    Sched lead_paused(asio::io_context& io, Pool<std::string, std::string> p) {
        std::optional<Sched> sched;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                const auto ex = co_await asio::this_coro::executor;
                auto builder = Sched::builder();
                builder.pool(std::move(p)).store(client);
                auto opening = builder.open(ex);
                sched.emplace(co_await std::move(opening));
            },
            asio::detached);
        while (!sched) io.run_one();
        return std::move(*sched);
    }

    TaskId submit(store::TaskRow row) { return submit_one(access, std::move(row)); }
    /// Every entry the leader took is gone once it committed.
    void expect_inbox_emptied(Durable& sched) {
        sched.flush();
        EXPECT_TRUE(inbox_tasks(*client).empty());
    }
    std::string error_of(TaskId id) const { return client->get_task(TaskRef(id))->last_error; }

    TestStore at{GetParam()};
    std::shared_ptr<Store> client = at.open();
    store::ClientAccess& access = client->client_access();
    std::shared_ptr<Runs> runs = std::make_shared<Runs>();

private:
    std::promise<void> gate_;
    std::shared_future<void> released_ = gate_.get_future().share();
};

}  // namespace

/// `--child ingest-cancel <location> <id>`: cancels the task through the
/// store's ClientAccess, as a client process would, writing "C <0|1>".
int ingest_cancel_child_main(int argc, char** argv) {
    if (argc != 5) return 2;
    auto store = open_location(argv[3]);
    const bool cancelled = store->client_access().cancel(TaskRef(TaskId{std::stoull(argv[4])}));
    say(std::string("C ") + (cancelled ? "1" : "0"));
    return 0;
}

TEST_P(ClientIngestion, TheLeaderWritesItsConfigurationBeforeOpenReturns) {
    EXPECT_TRUE(access.configs().empty());
    auto sched = Durable::builder()
                     .pool(pool().bounds(Bounds{10}).overflow(OverflowPolicy::Reject))
                     .pool(counted_pool("q", runs, open_gate()))
                     .resource(Resource::semaphore("db", 3))
                     .global_bounds(Bounds{100})
                     .retention(7s)
                     .store(client)
                     .open();
    const auto configs = access.configs();
    ASSERT_EQ(configs.size(), 1u);
    EXPECT_EQ(configs[0].shard, "default");
    EXPECT_EQ(configs[0].retention, std::chrono::nanoseconds(7s));
    const auto body = detail::decode_shard_config(configs[0].body);
    ASSERT_EQ(body.pools.size(), 2u);
    EXPECT_EQ(body.pools[0].name, "p");
    EXPECT_EQ(body.pools[0].max_pending, 10u);
    EXPECT_EQ(body.pools[0].overflow, OverflowPolicy::Reject);
    EXPECT_EQ(body.pools[1].name, "q");
    EXPECT_FALSE(body.pools[1].max_pending.has_value());
    ASSERT_EQ(body.resources.size(), 1u);
    EXPECT_EQ(body.resources[0].name, "db");
    EXPECT_EQ(body.resources[0].max_units, 3u);
    EXPECT_EQ(body.global_max_pending, 100u);
    EXPECT_EQ(body.retention, std::chrono::nanoseconds(7s));
    EXPECT_EQ(body.max_value_bytes, client->journal().max_value_bytes());
    sched.shutdown(1s);
}

TEST_P(ClientIngestion, RowsSubmittedWhileNoLeaderRunsRunOnceASchedulerLeads) {
    std::vector<TaskId> ids;
    for (const char* p : {"a", "b", "c"}) ids.push_back(submit(client_row(p, "p")));
    EXPECT_EQ(inbox_tasks(*client).size(), 3u);

    auto sched = lead(pool(2));
    const auto ended = wait_ended(access, ids);
    ASSERT_EQ(ended.size(), 3u);
    for (TaskId id : ids) {
        EXPECT_EQ(ended.at(id.value), TaskStatus::Succeeded);
        EXPECT_EQ(*sched.find(TaskRef(id))->get(), client->get_task(TaskRef(id))->payload + "!");
    }
    expect_inbox_emptied(sched);
    std::lock_guard lock(runs->mu);
    for (const char* p : {"a", "b", "c"}) EXPECT_EQ(runs->count[p], 1) << p;
}

TEST_P(ClientIngestion, RowsAreIngestedInCommitOrder) {
    auto sched = lead(gated_pool());
    std::vector<TaskId> ids{submit(client_row("first", "p"))};
    runs->first_started.get_future().wait();  // the pool's one slot is taken: the rest queue
    for (int i = 0; i < 10; ++i) ids.push_back(submit(client_row("r" + std::to_string(i), "p")));
    release();
    const auto ended = wait_ended(access, ids);
    ASSERT_EQ(ended.size(), ids.size());
    std::lock_guard lock(runs->mu);
    ASSERT_EQ(runs->order.size(), 11u);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(runs->order[i + 1], "r" + std::to_string(i));
}

TEST_P(ClientIngestion, UnderWaitASubmissionStaysInTheStoreUntilThereIsRoom) {
    auto sched = lead(gated_pool().bounds(Bounds{1}).overflow(OverflowPolicy::Wait));
    const TaskId running = submit(client_row("running", "p"));
    runs->first_started.get_future().wait();
    // One transaction: the pass that takes `queued` up tries `waiting` in the same step.
    std::vector<store::TaskRow> rows;
    rows.push_back(client_row("queued", "p"));
    rows.push_back(client_row("waiting", "p"));
    const auto made = access.submit(std::move(rows));
    const TaskId queued = made.at(0).id, waiting = made.at(1).id;
    auto watch = access.watch();
    while (!sched.find(TaskRef(queued))) watch->wait(200ms);  // ingested (a guard is the ctest timeout)
    EXPECT_FALSE(sched.find(TaskRef(waiting)).has_value());
    sched.flush();  // ingested is not yet committed: the taken entry goes with the commit
    EXPECT_EQ(inbox_tasks(*client), std::set<std::uint64_t>{waiting.value});
    EXPECT_EQ(client->get_task(TaskRef(waiting))->status, TaskStatus::Ready);

    release();
    const auto ended = wait_ended(access, {running, queued, waiting});
    ASSERT_EQ(ended.size(), 3u);
    for (const auto& [id, status] : ended) EXPECT_EQ(status, TaskStatus::Succeeded) << id;
    expect_inbox_emptied(sched);
}

TEST_P(ClientIngestion, UnderRejectASubmissionBeyondTheBoundEndsShedWithTheReason) {
    auto sched = lead(gated_pool().bounds(Bounds{1}).overflow(OverflowPolicy::Reject));
    const TaskId running = submit(client_row("running", "p"));
    runs->first_started.get_future().wait();
    std::vector<store::TaskRow> rows;
    rows.push_back(client_row("queued", "p"));
    rows.push_back(client_row("shed", "p"));
    const auto made = access.submit(std::move(rows));
    const auto shed = wait_ended(access, {made.at(1).id});
    ASSERT_EQ(shed.size(), 1u);
    EXPECT_EQ(shed.begin()->second, TaskStatus::Shed);
    const auto row = client->get_task(TaskRef(made.at(1).id));
    EXPECT_NE(row->last_error.find("overloaded"), std::string::npos) << row->last_error;
    EXPECT_EQ(row->attempt, 0u);
    release();
    const auto ended = wait_ended(access, {running, made.at(0).id});
    for (const auto& [id, status] : ended) EXPECT_EQ(status, TaskStatus::Succeeded) << id;
    expect_inbox_emptied(sched);
}

TEST_P(ClientIngestion, ACancelFromAnotherProcessReachesARunningAttempt) {
    std::promise<TaskId> started;
    std::promise<void> saw_cancel;
    auto pool = Pool<std::string, std::string>("p").workers(1, 1, 1).executor_fn(
        [&](TaskContext ctx, std::shared_ptr<const std::string>) -> asio::awaitable<Result<std::string>> {
            started.set_value(ctx.id());
            auto cancelled = ctx.cancelled();
            co_await std::move(cancelled);
            saw_cancel.set_value();
            co_return TaskError::permanent("cancelled");
        });
    auto sched = lead(std::move(pool));
    const TaskId id = submit(client_row("long", "p"));
    EXPECT_EQ(started.get_future().get(), id);
    {
        Child canceller({"ingest-cancel", at.location(), std::to_string(id.value)});
        EXPECT_EQ(canceller.read_line(), "C 1");
        EXPECT_EQ(canceller.wait(), 0);
    }
    saw_cancel.get_future().wait();  // the attempt's context was cancelled
    const auto ended = wait_ended(access, {id});
    ASSERT_EQ(ended.size(), 1u);
    EXPECT_EQ(ended.at(id.value), TaskStatus::Cancelled);
    expect_inbox_emptied(sched);
}

TEST_P(ClientIngestion, ACancelBeforeIngestionEndsTheTaskCancelledWithoutAnAttempt) {
    const TaskId before_leading = submit(client_row("x", "p"));
    ASSERT_TRUE(access.cancel(TaskRef(before_leading)));

    // While leading: the scheduler's io_context does not run until both are committed.
    asio::io_context io;
    auto sched = lead_paused(io, pool());
    const TaskId while_leading = submit(client_row("y", "p"));
    ASSERT_TRUE(access.cancel(TaskRef(while_leading)));
    IoThread runner(io);

    const auto ended = wait_ended(access, {before_leading, while_leading});
    ASSERT_EQ(ended.size(), 2u);
    for (TaskId id : {before_leading, while_leading}) {
        EXPECT_EQ(ended.at(id.value), TaskStatus::Cancelled) << id.value;
        EXPECT_EQ(client->get_task(TaskRef(id))->attempt, 0u) << id.value;
    }
    shut_down(io, sched);
    EXPECT_TRUE(inbox_tasks(*client).empty());
    std::lock_guard lock(runs->mu);
    EXPECT_TRUE(runs->order.empty()) << "a cancelled task ran";
}

TEST_P(ClientIngestion, ARowThatCannotBeAdmittedEndsFailedNamingWhy) {
    auto sched = lead(pool());
    auto unreadable = client_row("u", "p");
    unreadable.options = "not json";
    detail::TaskRequest needs;
    needs.resources.push_back({"nowhere", 1});
    std::vector<store::TaskRow> rows;
    rows.push_back(std::move(unreadable));
    rows.push_back(client_row("v", "nope"));
    rows.push_back(client_row("w", "p", std::nullopt, needs));
    rows.push_back(client_row("ok", "p"));
    std::vector<TaskId> ids;
    for (const auto& r : access.submit(std::move(rows))) ids.push_back(r.id);
    const auto ended = wait_ended(access, ids);
    ASSERT_EQ(ended.size(), 4u);
    EXPECT_EQ(ended.at(ids[0].value), TaskStatus::Failed);
    EXPECT_EQ(error_of(ids[0]).rfind("ingestion: decode: ", 0), 0u) << error_of(ids[0]);
    EXPECT_EQ(ended.at(ids[1].value), TaskStatus::Failed);
    EXPECT_EQ(error_of(ids[1]), "ingestion: unknown_pool: no pool named \"nope\"");
    EXPECT_EQ(ended.at(ids[2].value), TaskStatus::Failed);
    EXPECT_EQ(error_of(ids[2]).rfind("ingestion: unknown_resource: ", 0), 0u) << error_of(ids[2]);
    EXPECT_EQ(ended.at(ids[3].value), TaskStatus::Succeeded);
    expect_inbox_emptied(sched);
}

TEST_P(ClientIngestion, AClientsBatchIsAdmittedWholeOrEveryTaskEndsFailedNamingTheFirstError) {
    auto sched = lead(pool(2));
    const auto batch = [](std::vector<store::TaskRow> rows) {
        const std::string id = detail::new_client_batch_id();
        for (std::uint32_t i = 0; i < rows.size(); ++i)
            rows[i].options = detail::mark_client_batch(rows[i].options, {id, static_cast<std::uint32_t>(rows.size()), i});
        return rows;
    };
    detail::TaskRequest after_parent;
    after_parent.depends_on.push_back(Dep::on_success(TaskRef("parent")));
    detail::TaskRequest after_nothing;
    after_nothing.depends_on.push_back(Dep::on_success(TaskRef(TaskId{12345})));
    std::vector<store::TaskRow> good;
    good.push_back(client_row("child", "p", "child", after_parent));
    good.push_back(client_row("parent", "p", "parent"));
    std::vector<store::TaskRow> bad;
    bad.push_back(client_row("fine", "p"));
    bad.push_back(client_row("orphan", "p", std::nullopt, after_nothing));
    std::vector<TaskId> ids;
    for (const auto& r : access.submit(batch(std::move(good)))) ids.push_back(r.id);
    for (const auto& r : access.submit(batch(std::move(bad)))) ids.push_back(r.id);
    const auto ended = wait_ended(access, ids);
    ASSERT_EQ(ended.size(), 4u);
    EXPECT_EQ(ended.at(ids[0].value), TaskStatus::Succeeded);  // its dependency within the batch
    EXPECT_EQ(ended.at(ids[1].value), TaskStatus::Succeeded);
    for (TaskId id : {ids[2], ids[3]}) {
        EXPECT_EQ(ended.at(id.value), TaskStatus::Failed);
        EXPECT_EQ(error_of(id).rfind("ingestion: unknown_dependency: task 1: ", 0), 0u) << error_of(id);
    }
    std::lock_guard lock(runs->mu);
    EXPECT_EQ(runs->count["fine"], 0) << "a task of a refused batch ran";
}

TEST_P(ClientIngestion, AKeyTheLeadersOwnSubmissionTookFirstKeepsItAndTheClientsRowEndsCancelled) {
    asio::io_context io;
    auto sched = lead_paused(io, pool());
    // The client commits first; the leader, whose io_context does not run,
    // has not ingested it when its own submission takes the key.
    const TaskId clients = submit(client_row("client's", "p", "k"));
    auto own = sched.try_submit(Task<std::string>("leader's").pool("p").key("k"));
    ASSERT_TRUE(own.has_value());
    const TaskId leaders = own.value().id();
    IoThread runner(io);

    const auto ended = wait_ended(access, {clients, leaders});
    ASSERT_EQ(ended.size(), 2u) << "the client's row or the leader's task did not end";
    EXPECT_EQ(ended.at(clients.value), TaskStatus::Cancelled);
    EXPECT_EQ(error_of(clients), "key \"k\" is held by task " + std::to_string(leaders.value));
    EXPECT_EQ(ended.at(leaders.value), TaskStatus::Succeeded);
    shut_down(io, sched);
    std::lock_guard lock(runs->mu);
    EXPECT_EQ(runs->count["client's"], 0);
    EXPECT_EQ(runs->count["leader's"], 1);
}

// SQLite only: the test holds the file's write lock, so that the leader
// takes entries up (and runs their attempts) but cannot commit. (The
// PostgreSQL binary instantiates it with no backend.) Not the fixture: the
// leader's process must make the file, before this process opens it.
INSTANTIATE_TEST_SUITE_P(Backends, ClientIngestion, ::testing::ValuesIn(tested_backends()), BackendName());

}  // namespace cronoq::test
