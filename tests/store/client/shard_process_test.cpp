// Shards led by processes of their own (docs/guide/replicas.md, "Shards"),
// on each backend: tasks routed by pool to two leaders, one client
// submitting to both and finding, querying and cancelling across them;
// dependencies and batches across shards refused naming both; one shard's
// leader SIGKILLed and replaced while the other goes on; a pool declared by
// two shards refused at open; a shard restarted without a pool that still
// has tasks refused at open; keys and awaited keys of another shard's tasks
// seen by a leader's own submissions, which read the pools' shards once
// whatever their keys.
#include "client_support.hpp"
#include "shard_reads_counted.hpp"

#include <cronoq/cronoq.hpp>
#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <initializer_list>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

class ShardProcesses : public ::testing::TestWithParam<test::Backend> {};

Task<std::string> to(const std::string& pool, const std::string& payload) {
    return Task<std::string>(payload).pool(pool).key(payload);
}

/// The epoch of `shard`'s lease and whether it is held.
std::pair<std::uint64_t, bool> lease_of(Store& store, const std::string& shard) {
    for (const auto& lease : store.journal().read_shards().leases)
        if (lease.shard == shard) return {lease.lease.epoch, lease.lease.held};
    return {0, false};
}

template <class F>
void expect_invalid_naming_both(F&& submit) {
    try {
        submit();
        ADD_FAILURE() << "accepted a submission across shards";
    } catch (const SubmitException& e) {
        EXPECT_EQ(e.error(), SubmitError::Invalid) << e.what();
        const std::string what = e.what();
        EXPECT_NE(what.find("shard \"a\""), std::string::npos) << what;
        EXPECT_NE(what.find("shard \"b\""), std::string::npos) << what;
    }
}

/// The leader of shard "a" of `store`, with `pools`.
template <class... Pools>
test::Durable lead_shard_a(std::shared_ptr<Store> store, Pools... pools) {
    auto builder = test::Durable::builder().shard("a");
    (builder.pool(std::move(pools)), ...);
    return builder.store(std::move(store)).open();
}

/// Shard b led by a process of its own (pool "pb") on a fresh store of
/// `backend`, after a client ran one task there for each of `keys` (keyed
/// by it): for a leader of shard a, in this process, to meet b's keys.
struct ShardBHolds {
    ShardBHolds(test::Backend backend, const std::vector<std::string>& keys) : store(backend) {
        store.open().reset();
        b.emplace(std::vector<std::string>{"shard-leader", store.location(), "b", "pb"});
        if (b->read_line() != "L") throw std::runtime_error("shard b's leader never led");
        auto client = test::TestClient::open(store.open());
        for (const std::string& key : keys) {
            auto handle = client.submit(to("pb", key));
            EXPECT_EQ(*handle.get(), key + "@b");
            ids.emplace(key, handle.id());
        }
    }
    test::TestStore store;
    std::optional<test::Child> b;
    std::map<std::string, TaskId> ids;
};

/// Pool "pa" of shard a, whose tasks await a key nobody holds (yet).
Pool<std::string, std::string> awaiting_pool() {
    return test::identity_pool("pa").unknown_dependency(UnknownDependency::Await{30s});
}

/// `handle`'s task ended Skipped (it depends on a task of shard b), its
/// message naming each of `names`.
template <class Handle>
void expect_skipped(Handle& handle, std::initializer_list<std::string> names = {}) {
    try {
        handle.get();
        ADD_FAILURE() << "a task that depends on shard b's task ran in shard a";
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.status(), TaskStatus::Skipped) << e.what();
        for (const auto& name : names) EXPECT_NE(e.message().find(name), std::string::npos) << e.message();
    }
}

/// Opens a scheduler with `open`, which must throw ConfigError naming each
/// of `names`; `what` says what opening would have wrongly done.
template <class F>
void expect_refused_at_open(F&& open, const std::string& what, std::initializer_list<std::string> names) {
    try {
        auto sched = open();
        ADD_FAILURE() << what;
        sched.shutdown(0s);
    } catch (const ConfigError& e) {
        const std::string message = e.what();
        for (const auto& name : names) EXPECT_NE(message.find(name), std::string::npos) << message;
    }
}

}  // namespace

TEST_P(ShardProcesses, TwoLeadersRunTheTasksOfTheirOwnPoolsAndOneClientWorksAcrossBoth) {
    test::TestStore store(GetParam());
    store.open().reset();  // the schema before two processes race to make it
    test::Child a({"shard-leader", store.location(), "a", "pa"});
    test::Child b({"shard-leader", store.location(), "b", "pb"});
    ASSERT_EQ(a.read_line(), "L");
    ASSERT_EQ(b.read_line(), "L");
    auto client = test::TestClient::open(store.open());
    std::vector<test::TestHandle> to_a, to_b;
    for (int i = 0; i < 10; ++i) {
        to_a.push_back(client.submit(to("pa", "x" + std::to_string(i))));
        to_b.push_back(client.submit(to("pb", "y" + std::to_string(i))));
    }
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(*to_a[static_cast<std::size_t>(i)].get(), "x" + std::to_string(i) + "@a");
        EXPECT_EQ(*to_b[static_cast<std::size_t>(i)].get(), "y" + std::to_string(i) + "@b");
    }
    // find, get and query see both shards' tasks; a key resolves store-wide.
    EXPECT_EQ(client.find(TaskRef("y3"))->id(), to_b[3].id());
    EXPECT_EQ(client.get(TaskRef("x4"))->pool, "pa");
    EXPECT_EQ(client.submit(to("pa", "y5")).id(), to_b[5].id()) << "a key of shard b's task made a second task";
    EXPECT_EQ(client.query({.pool = "pa", .limit = 100}).tasks.size(), 10u);
    EXPECT_EQ(client.query({.limit = 100}).tasks.size(), 20u);
    EXPECT_EQ(lease_of(*store.open(), "a"), (std::pair<std::uint64_t, bool>{1, true}));
    EXPECT_EQ(lease_of(*store.open(), "b"), (std::pair<std::uint64_t, bool>{1, true}));
    // Ids of the two leaders' own ranges never meet the clients' range.
    for (const auto& h : to_a) EXPECT_GE(h.id().value, test::client_ids_from);
}

TEST_P(ShardProcesses, DependenciesAndBatchesAcrossShardsAreInvalidNamingBoth) {
    test::TestStore store(GetParam());
    store.open().reset();
    test::Child a({"shard-leader", store.location(), "a", "pa"});
    test::Child b({"shard-leader", store.location(), "b", "pb"});
    ASSERT_EQ(a.read_line(), "L");
    ASSERT_EQ(b.read_line(), "L");
    auto client = test::TestClient::open(store.open());
    auto in_b = client.submit(to("pb", "parent"));
    expect_invalid_naming_both([&] {
        client.submit(to("pa", "child").depends_on(Dep::on_success(TaskRef(in_b.id()))));
    });
    expect_invalid_naming_both([&] {
        client.submit(to("pa", "child-by-key").depends_on(Dep::on_success(TaskRef("parent"))));
    });
    expect_invalid_naming_both([&] {
        std::vector<Task<std::string>> batch;
        batch.push_back(to("pa", "one"));
        batch.push_back(to("pb", "two"));
        client.submit_batch(std::move(batch));
    });
    // Within one shard both go.
    auto same = client.submit(to("pb", "after-parent").depends_on(Dep::on_success(TaskRef("parent"))));
    EXPECT_EQ(*same.get(), "after-parent@b");
    EXPECT_FALSE(client.find(TaskRef("one"))) << "a refused batch committed a task";
}

TEST_P(ShardProcesses, AShardsLeaderKilledAndReplacedWhileTheOtherShardGoesOn) {
    test::TestStore store(GetParam());
    store.open().reset();
    auto a = std::make_unique<test::Child>(std::vector<std::string>{"shard-leader", store.location(), "a", "pa"});
    test::Child b({"shard-leader", store.location(), "b", "pb"});
    ASSERT_EQ(a->read_line(), "L");
    ASSERT_EQ(b.read_line(), "L");
    auto client = test::TestClient::open(store.open());
    EXPECT_EQ(*client.submit(to("pa", "before")).get(), "before@a");
    a->signal(SIGKILL);
    EXPECT_EQ(a->wait(), 128 + SIGKILL);
    // Shard a has no leader: its task waits in the store, shard b's run.
    auto waiting = client.submit(to("pa", "while-down"));
    for (int i = 0; i < 5; ++i) EXPECT_EQ(*client.submit(to("pb", "b" + std::to_string(i))).get(), "b" + std::to_string(i) + "@b");
    EXPECT_EQ(client.get(TaskRef(waiting.id()))->status, TaskStatus::Ready);
    EXPECT_EQ(lease_of(*store.open(), "b"), (std::pair<std::uint64_t, bool>{1, true})) << "shard b's leader was disturbed";
    a = std::make_unique<test::Child>(std::vector<std::string>{"shard-leader", store.location(), "a", "pa"});
    ASSERT_EQ(a->read_line(), "L");
    EXPECT_EQ(*waiting.get(), "while-down@a");
    EXPECT_EQ(lease_of(*store.open(), "a"), (std::pair<std::uint64_t, bool>{2, true}));
    EXPECT_EQ(*client.submit(to("pb", "after")).get(), "after@b");
    EXPECT_EQ(lease_of(*store.open(), "b").first, 1u);
}

TEST_P(ShardProcesses, APoolDeclaredByTwoShardsIsRefusedAtOpenNamingBoth) {
    test::TestStore store(GetParam());
    store.open().reset();
    test::Child a({"shard-leader", store.location(), "a", "pa"});
    ASSERT_EQ(a.read_line(), "L");
    expect_refused_at_open(
        [&] { return test::Durable::builder().shard("b").pool(test::identity_pool("pa")).store(store.open()).open(); },
        "opened a second shard declaring pool pa", {"pool \"pa\"", "shard \"a\"", "shard \"b\""});
    // The refused process left shard a alone and leads nothing.
    EXPECT_EQ(lease_of(*store.open(), "a"), (std::pair<std::uint64_t, bool>{1, true}));
    EXPECT_FALSE(lease_of(*store.open(), "b").second);
    auto client = test::TestClient::open(store.open());
    EXPECT_EQ(*client.submit(to("pa", "still")).get(), "still@a");
}

TEST_P(ShardProcesses, ALeadersOwnSubmissionsSeeKeysHeldByTasksOfAnotherShard) {
    ShardBHolds b(GetParam(), {"held", "awaited"});
    auto sched = lead_shard_a(b.store.open(), awaiting_pool());
    // A key is unique store-wide: shard b's task holds "held", so the
    // leader of shard a makes no second task of it.
    auto again = sched.try_submit(Task<std::string>("again").pool("pa").key("held"));
    if (again) {
        ADD_FAILURE() << "a key held by shard b's task made a second task in shard a";
    } else {
        EXPECT_EQ(again.error(), SubmitError::Invalid);
        for (const std::string& name : {"task " + std::to_string(b.ids.at("held").value), std::string("shard \"a\""),
                                        std::string("shard \"b\"")})
            EXPECT_NE(again.message().find(name), std::string::npos) << again.message();
        EXPECT_FALSE(sched.find(TaskRef("again"))) << "the refused submission left a task";
    }
    // A dependency awaiting that key can never be met in shard a: Skipped
    // at once (not at the end of the Await timeout), naming both shards.
    auto child = sched.submit(Task<std::string>("child").pool("pa").depends_on(Dep::on_success(TaskRef("awaited"))));
    expect_skipped(child, {"shard \"a\"", "shard \"b\""});
    // Keys of its own shard and keys nobody holds go on as before.
    auto own = sched.submit(Task<std::string>("own").pool("pa").key("own"));
    EXPECT_EQ(sched.try_submit(Task<std::string>("own-again").pool("pa").key("own")).value().id(), own.id());
    auto waits = sched.submit(Task<std::string>("waits").pool("pa").depends_on(Dep::on_success(TaskRef("later"))));
    EXPECT_EQ(waits.status(), TaskStatus::Blocked);
    auto later = sched.submit(Task<std::string>("later").pool("pa").key("later"));
    EXPECT_EQ(*later.get(), "later");
    EXPECT_EQ(*waits.get(), "waits");
    sched.shutdown(0s);
}

TEST_P(ShardProcesses, ALeadersSubmissionOrBatchReadsThePoolsShardsOnceWhateverItsKeys) {
    ShardBHolds b(GetParam(), {"k0", "k1", "k2", "k3"});
    std::vector<Dep> on_b;
    for (const auto& [key, id] : b.ids) on_b.push_back(Dep::on_success(TaskRef(key)));
    auto counted = std::make_shared<test::ShardReadsCounted>(b.store.open());
    auto sched = lead_shard_a(counted, awaiting_pool());
    // Each submission reads whether other shards lead (at most once) and
    // the pools' shards once, not once a key it looks up.
    Task<std::string> on_all("one");
    on_all.pool("pa");
    for (const Dep& dep : on_b) on_all.depends_on(dep);
    std::size_t before = counted->shard_reads();
    auto one = sched.submit(std::move(on_all));
    EXPECT_LE(counted->shard_reads() - before, 2u) << "a submission read the shards once per key";
    expect_skipped(one);
    const auto one_each = [&] {
        std::vector<Task<std::string>> tasks;
        for (const Dep& dep : on_b) tasks.push_back(std::move(Task<std::string>("each").pool("pa").depends_on(dep)));
        return tasks;
    };
    before = counted->shard_reads();
    auto batch = sched.submit_batch(one_each());
    EXPECT_LE(counted->shard_reads() - before, 2u) << "a batch read the shards once per key";
    for (auto& handle : batch) expect_skipped(handle);
    before = counted->shard_reads();
    auto many = sched.try_submit_many(one_each());
    EXPECT_LE(counted->shard_reads() - before, 2u) << "try_submit_many read the shards once per key";
    for (auto& result : many) expect_skipped(result.value());
    sched.shutdown(0s);
}

TEST_P(ShardProcesses, ALeaderRestartedWithoutAPoolThatStillHasTasksIsRefusedAtOpenNamingIt) {
    test::TestStore store(GetParam());
    {
        auto sched = lead_shard_a(store.open(), test::identity_pool("pa"), test::identity_pool("pq"));
        sched.submit(Task<std::string>("later").pool("pq").key("later").start_in(1h));
        sched.shutdown(0s);
    }
    expect_refused_at_open(
        [&] { return lead_shard_a(store.open(), test::identity_pool("pa")); },
        "shard a gave up pool pq while it held an unfinished task", {"pool \"pq\"", "shard \"a\""});
    // Declared again, the pool's task is still there to run.
    auto sched = lead_shard_a(store.open(), test::identity_pool("pa"), test::identity_pool("pq"));
    const auto task = sched.find(TaskRef("later"));
    ASSERT_TRUE(task);
    EXPECT_EQ(task->status(), TaskStatus::Scheduled);
    sched.shutdown(0s);
}

INSTANTIATE_TEST_SUITE_P(Backends, ShardProcesses, ::testing::ValuesIn(test::tested_backends()), test::BackendName());
