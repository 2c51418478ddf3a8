// Shards, on every backend (docs/store.md, "Shards"): each shard of a store
// has its own lease, epoch, fencing and range of ids; recovery and the
// inbox hold the tasks of the shard's pools; a pool belongs to one shard.
#include "store_site.hpp"

#include "shard_ranges.hpp"

#include <cronoq/store/client_access.hpp>
#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace cronoq::test {
namespace {

using namespace std::chrono_literals;
using store::Batch;

/// A store that leads (or waits to lead) one shard, with its reports.
struct ShardLeader {
    ShardLeader(StoreSite& site, std::string shard, std::vector<std::string> pools, bool wait = true)
        : store(site.open()) {
        store::LeadHandlers handlers = reports.handlers();
        handlers.shard = std::move(shard);
        handlers.pools = std::move(pools);
        store->journal().lead(std::move(handlers));
        if (wait) {
            EXPECT_TRUE(reports.wait_leading());
        }
    }
    void commit(Batch batch) { EXPECT_TRUE(reports.wait_committed(store->journal().enqueue(std::move(batch)))); }
    const store::Recovered& recovered() const { return *reports.recovered; }

    Reports reports;
    std::shared_ptr<Store> store;
};

store::TaskRow row_in(std::uint64_t id, std::string pool) {
    store::TaskRow row = task_row(id);
    row.pool = std::move(pool);
    return row;
}

std::vector<std::uint64_t> ids_of(const std::vector<store::TaskRow>& rows) {
    std::vector<std::uint64_t> out;
    for (const auto& row : rows) out.push_back(row.id.value);
    return out;
}

std::vector<std::uint64_t> inbox_ids(const Store& store) {
    std::vector<std::uint64_t> out;
    for (const auto& entry : const_cast<Store&>(store).journal().read_inbox(100)) out.push_back(entry.task.value);
    return out;
}

const store::ShardMap::Lease* lease_of(const store::ShardMap& map, const std::string& shard) {
    for (const auto& lease : map.leases)
        if (lease.shard == shard) return &lease;
    return nullptr;
}

TEST_P(Shards, TwoShardsLeadAtOnceEachInItsOwnEpochAndAStandbyWaitsForItsOwn) {
    ShardLeader a(site(), "a", {"pa"});
    ShardLeader b(site(), "b", {"pb"});
    EXPECT_EQ(a.recovered().epoch, 1u);
    EXPECT_EQ(b.recovered().epoch, 1u);
    ShardLeader standby(site(), "a", {"pa"}, false);
    a.commit(Batch{{store::TaskInserted{row_in(1 + store::shard_id_range, "pa")}}});
    b.commit(Batch{{store::TaskInserted{row_in(1 + 2 * store::shard_id_range, "pb")}}});
    EXPECT_FALSE(standby.reports.recovered) << "a standby of shard a led while a's leader held its lease";
    const store::ShardMap map = standby.store->journal().read_shards();
    ASSERT_TRUE(lease_of(map, "a"));
    ASSERT_TRUE(lease_of(map, "b"));
    EXPECT_TRUE(lease_of(map, "a")->lease.held);
    EXPECT_TRUE(lease_of(map, "b")->lease.held);
    EXPECT_EQ(a.store->journal().read_lease().epoch, 1u);
    // A release of shard a hands it to its standby, in a's next epoch; b goes on.
    a.store->journal().release();
    ASSERT_TRUE(standby.reports.wait_leading());
    EXPECT_EQ(standby.recovered().epoch, 2u);
    EXPECT_EQ(ids_of(standby.recovered().tasks), std::vector<std::uint64_t>{1 + store::shard_id_range});
    b.commit(Batch{{store::TaskInserted{row_in(2 + 2 * store::shard_id_range, "pb")}}});
    EXPECT_FALSE(b.reports.lost);
}

TEST_P(Shards, AShardFencedLeavesTheOtherCommitting) {
    ShardLeader d(site(), "default", {"pd"});
    ShardLeader b(site(), "b", {"pb"});
    d.commit(Batch{{store::TaskInserted{row_in(1, "pd")}}});
    site().bump_epoch();  // another process took shard "default" over
    d.store->journal().enqueue(Batch{{store::TaskInserted{row_in(2, "pd")}}});
    ASSERT_TRUE(d.reports.wait_lost());
    EXPECT_EQ(d.reports.lost->reason, store::LostReason::Fenced);
    for (std::uint64_t i = 1; i <= 3; ++i)
        b.commit(Batch{{store::TaskInserted{row_in(i + store::shard_id_range, "pb")}}});
    EXPECT_FALSE(b.reports.lost) << b.reports.lost->message;
    EXPECT_TRUE(b.store->get_task(TaskId{3 + store::shard_id_range}));
    EXPECT_FALSE(b.store->get_task(TaskId{2})) << "the fenced shard wrote after it was fenced";
}

TEST_P(Shards, EachShardHandsOutIdsFromARangeOfItsOwn) {
    {
        ShardLeader d(site(), "default", {"pd"});
        ShardLeader a(site(), "a", {"pa"});
        EXPECT_EQ(d.recovered().marks.next_task_id, 0u);
        EXPECT_EQ(a.recovered().marks.next_task_id, store::shard_id_range);
        EXPECT_EQ(a.recovered().marks.next_lease_id, store::shard_id_range);
        d.commit(Batch{{store::HighWaterMarks{4096, 4096}}});
        a.commit(Batch{{store::HighWaterMarks{store::shard_id_range + 8192, store::shard_id_range + 4096}}});
    }
    ShardLeader d(site(), "default", {"pd"});
    ShardLeader a(site(), "a", {"pa"});
    ShardLeader c(site(), "c", {"pc"});
    EXPECT_EQ(d.recovered().marks.next_task_id, 4096u);
    EXPECT_EQ(a.recovered().marks.next_task_id, store::shard_id_range + 8192);
    EXPECT_EQ(a.recovered().marks.next_lease_id, store::shard_id_range + 4096);
    EXPECT_EQ(c.recovered().marks.next_task_id, 2 * store::shard_id_range);
}

TEST_P(Shards, RecoveryAndTheInboxHoldOnlyTheTasksOfTheShardsPools) {
    const auto client = site().open();
    {
        ShardLeader d(site(), "default", {"pd"});
        ShardLeader b(site(), "b", {"pb"});
        d.commit(Batch{{store::TaskInserted{row_in(1, "pd")}}});
        b.commit(Batch{{store::TaskInserted{row_in(1 + store::shard_id_range, "pb")}}});
        std::vector<store::TaskRow> rows{row_in(0, "pb"), row_in(0, "pd"), row_in(0, "nowhere")};
        const auto submitted = client->client_access().submit(std::move(rows));
        const std::uint64_t to_b = submitted[0].id.value, to_d = submitted[1].id.value, stray = submitted[2].id.value;
        EXPECT_EQ(inbox_ids(*b.store), std::vector<std::uint64_t>{to_b});
        // The "default" shard takes the tasks of pools no shard claimed.
        EXPECT_EQ(inbox_ids(*d.store), (std::vector<std::uint64_t>{to_d, stray}));
        ASSERT_TRUE(client->client_access().cancel(TaskId{1 + store::shard_id_range}));
        EXPECT_EQ(inbox_ids(*b.store), (std::vector<std::uint64_t>{to_b, 1 + store::shard_id_range}));
        const auto map = client->journal().read_shards();
        EXPECT_EQ(map.pools, (std::vector<std::pair<std::string, std::string>>{{"pb", "b"}, {"pd", "default"}}));
    }
    ShardLeader d(site(), "default", {"pd"});
    ShardLeader b(site(), "b", {"pb"});
    for (const auto& row : b.recovered().tasks) EXPECT_EQ(row.pool, "pb") << row.id.value;
    for (const auto& row : d.recovered().tasks) EXPECT_NE(row.pool, "pb") << row.id.value;
    EXPECT_EQ(b.recovered().tasks.size(), 2u);
    EXPECT_EQ(d.recovered().tasks.size(), 3u);
    EXPECT_EQ(b.recovered().inbox.size(), 2u);
    EXPECT_EQ(d.recovered().inbox.size(), 2u);
}

TEST_P(Shards, APoolOfAnotherShardThatLeadsOrHoldsItsUnfinishedTasksIsRefusedNamingBoth) {
    auto a = std::make_unique<ShardLeader>(site(), "a", std::vector<std::string>{"p", "q"});
    a->commit(Batch{{store::TaskInserted{row_in(1 + store::shard_id_range, "p")}}});
    {
        ShardLeader b(site(), "b", {"p"});
        const std::string& why = b.recovered().pool_conflict;
        EXPECT_NE(why.find("pool \"p\""), std::string::npos) << why;
        EXPECT_NE(why.find("shard \"a\""), std::string::npos) << why;
        EXPECT_NE(why.find("shard \"b\""), std::string::npos) << why;
        EXPECT_TRUE(b.recovered().tasks.empty()) << "a refused shard read tasks";
    }
    a->store->journal().release();
    ASSERT_TRUE(a->reports.wait_lost());
    {
        // Nobody leads "a", but it holds an unfinished task of "p".
        ShardLeader b(site(), "b", {"p"});
        EXPECT_NE(b.recovered().pool_conflict.find("unfinished"), std::string::npos) << b.recovered().pool_conflict;
    }
    {
        ShardLeader again(site(), "a", {"p", "q"});
        EXPECT_TRUE(again.recovered().pool_conflict.empty()) << again.recovered().pool_conflict;
        store::TaskTransition done{TaskId{1 + store::shard_id_range}, TaskStatus::Succeeded, 1, "",
                                   std::chrono::system_clock::now(), std::nullopt, std::nullopt};
        again.commit(Batch{{done}});
    }
    // Drained, and nobody leads it: the pool moves.
    ShardLeader b(site(), "b", {"p"});
    EXPECT_TRUE(b.recovered().pool_conflict.empty()) << b.recovered().pool_conflict;
    const auto map = b.store->journal().read_shards();
    EXPECT_EQ(map.pools, (std::vector<std::pair<std::string, std::string>>{{"p", "b"}, {"q", "a"}}));
}

TEST_P(Shards, AShardRestartedWithoutAPoolThatHoldsUnfinishedTasksIsRefusedNamingThePool) {
    {
        ShardLeader a(site(), "a", {"p", "q"});
        a.commit(Batch{{store::TaskInserted{row_in(1 + store::shard_id_range, "q")}}});
    }
    {
        // Giving "q" up would hand its unfinished task to "default", which
        // does not run it: refused, nothing claimed or read.
        ShardLeader a(site(), "a", {"p"});
        const std::string& why = a.recovered().pool_conflict;
        EXPECT_NE(why.find("pool \"q\""), std::string::npos) << why;
        EXPECT_NE(why.find("shard \"a\""), std::string::npos) << why;
        EXPECT_TRUE(a.recovered().tasks.empty()) << "a refused shard read tasks";
    }
    EXPECT_EQ(site().open()->journal().read_shards().pools,
              (std::vector<std::pair<std::string, std::string>>{{"p", "a"}, {"q", "a"}}));
    {
        ShardLeader a(site(), "a", {"p", "q"});
        ASSERT_TRUE(a.recovered().pool_conflict.empty()) << a.recovered().pool_conflict;
        store::TaskTransition done{TaskId{1 + store::shard_id_range}, TaskStatus::Succeeded, 1, "",
                                   std::chrono::system_clock::now(), std::nullopt, std::nullopt};
        a.commit(Batch{{done}});
    }
    {
        // Drained: the pool is given up.
        ShardLeader a(site(), "a", {"p"});
        EXPECT_TRUE(a.recovered().pool_conflict.empty()) << a.recovered().pool_conflict;
        EXPECT_EQ(a.store->journal().read_shards().pools,
                  (std::vector<std::pair<std::string, std::string>>{{"p", "a"}}));
    }
    // The "default" shard keeps the tasks of a pool it gave up (and its
    // scheduler ends them, as with one shard): no refusal.
    {
        ShardLeader d(site(), "default", {"pd", "pq"});
        d.commit(Batch{{store::TaskInserted{row_in(1, "pq")}}});
    }
    ShardLeader d(site(), "default", {"pd"});
    EXPECT_TRUE(d.recovered().pool_conflict.empty()) << d.recovered().pool_conflict;
    const auto ids = ids_of(d.recovered().tasks);
    EXPECT_NE(std::find(ids.begin(), ids.end(), 1u), ids.end()) << "the default shard's task of pool pq did not come back";
}

TEST_P(Shards, AShardClaimingAPoolWhoseClientTasksTheDefaultLeaderTakesIsRefusedUntilTheyEnded) {
    const auto client = site().open();
    std::vector<store::TaskRow> rows{row_in(0, "p")};
    const TaskId queued = client->client_access().submit(std::move(rows)).at(0).id;
    {
        // No "default" leader: shard x claims the pool and takes the task.
        ShardLeader x(site(), "x", {"p"});
        ASSERT_TRUE(x.recovered().pool_conflict.empty()) << x.recovered().pool_conflict;
        ASSERT_EQ(x.recovered().inbox.size(), 1u);
        EXPECT_EQ(x.recovered().inbox[0].task, queued);
        store::TaskTransition cancelled{queued, TaskStatus::Cancelled, 0, "",
                                        std::chrono::system_clock::now(), std::nullopt, std::nullopt};
        x.commit(Batch{{cancelled, store::InboxTaken{{x.recovered().inbox[0].seq}}}});
    }
    { ShardLeader x(site(), "x", {"other"}); }  // drained: x gives "p" up
    // "p" is nobody's now. The "default" leader takes a new client task of it...
    ShardLeader d(site(), "default", {"pd"});
    std::vector<store::TaskRow> more{row_in(0, "p")};
    const TaskId stray = client->client_access().submit(std::move(more)).at(0).id;
    EXPECT_EQ(inbox_ids(*d.store), std::vector<std::uint64_t>{stray.value});
    {
        // ...so a shard that claimed it now would take it too.
        ShardLeader x(site(), "x", {"p"});
        const std::string& why = x.recovered().pool_conflict;
        EXPECT_NE(why.find("pool \"p\""), std::string::npos) << why;
        EXPECT_NE(why.find("shard \"x\""), std::string::npos) << why;
        EXPECT_NE(why.find("shard \"default\""), std::string::npos) << why;
        EXPECT_TRUE(x.recovered().inbox.empty()) << "a refused shard took an entry";
    }
    EXPECT_EQ(inbox_ids(*d.store), std::vector<std::uint64_t>{stray.value}) << "the refused claim moved the entry";
    // The "default" leader ends it (an unknown pool): then the pool may be claimed.
    store::TaskTransition failed{stray, TaskStatus::Failed, 0, "no pool named \"p\"",
                                 std::chrono::system_clock::now(), std::nullopt, std::nullopt};
    d.commit(Batch{{failed, store::InboxTaken{{d.store->journal().read_inbox(10).at(0).seq}}}});
    ShardLeader x(site(), "x", {"p"});
    EXPECT_TRUE(x.recovered().pool_conflict.empty()) << x.recovered().pool_conflict;
    EXPECT_TRUE(x.recovered().inbox.empty());
}

}  // namespace
}  // namespace cronoq::test
