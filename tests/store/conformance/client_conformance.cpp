// Clients of a store, on every backend (docs/store.md, "Clients"): ids from
// the client range, key resolution (live, retained, within one call, and
// between racing client processes), cancels, ends, the inbox a leader takes
// entries from exactly once, its notification, and a client's watch.
#include "client_process.hpp"
#include "store_site.hpp"

#include <cronoq/store/client_access.hpp>
#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace cronoq::test {

namespace {

using namespace std::chrono;
using namespace std::chrono_literals;
using store::InboxEntry;

store::TaskRow ended_row(std::uint64_t id, std::string key, store::WallTime updated_at) {
    store::TaskRow row = task_row(id, std::move(key));
    row.status = TaskStatus::Succeeded;
    row.updated_at = updated_at;
    return row;
}

store::ConfigWritten config(std::string body, nanoseconds retention) {
    return store::ConfigWritten{store::ShardConfig{"default", std::move(body), system_clock::now(), retention}};
}

/// A leader that counts `on_inbox` calls and how many entries each saw.
struct InboxLeader {
    explicit InboxLeader(StoreSite& site) : store(site.open()) {
        store::LeadHandlers handlers = reports.handlers();
        handlers.on_inbox = [this] {
            const std::size_t entries = store->journal().read_inbox(1000).size();
            std::lock_guard lock(mutex);
            seen.push_back(entries);
            changed.notify_all();
        };
        store->journal().lead(handlers);
        EXPECT_TRUE(reports.wait_leading());
    }
    bool wait_calls(std::size_t n) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, 60s, [&] { return seen.size() >= n; });
    }

    Reports reports;
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<std::size_t> seen;
    std::shared_ptr<Store> store;  // last: goes first, while the handlers' state lives
};

TEST_P(Clients, IdsComeFromTheClientRangeUniqueAndIncreasing) {
    auto store = site().open();  // nobody leads: a client never waits for a leader
    auto first = store->client_access().submit({task_row(1), task_row(1), task_row(1)});
    auto second = site().open()->client_access().submit({task_row(1), task_row(1)});
    first.insert(first.end(), second.begin(), second.end());
    ASSERT_EQ(first.size(), 5u);
    for (std::size_t i = 0; i < first.size(); ++i) {
        EXPECT_TRUE(first[i].created);
        EXPECT_GE(first[i].id.value, store::first_client_task_id);
        if (i > 0) {
            EXPECT_GT(first[i].id.value, first[i - 1].id.value);
        }
        const auto task = store->get_task(first[i].id);
        ASSERT_TRUE(task);
        EXPECT_EQ(task->status, TaskStatus::Ready);
        EXPECT_EQ(task->payload, "payload-1");
    }
    EXPECT_EQ(site().count_tasks(), 5);
}

TEST_P(Clients, OnlyStatusesAdmissionGivesAreSubmitted) {
    auto store = site().open();
    store::TaskRow running = task_row(0);
    running.status = TaskStatus::Running;
    store::TaskRow blocked = task_row(0);
    blocked.status = TaskStatus::Blocked;
    EXPECT_THROW(store->client_access().submit({blocked, running}), std::invalid_argument);
    EXPECT_EQ(site().count_tasks(), 0);
    const auto got = store->client_access().submit({blocked});
    EXPECT_EQ(store->get_task(got.at(0).id)->status, TaskStatus::Blocked);
}

TEST_P(Clients, AKeyResolvesToALiveTaskAndWithinOneCall) {
    {
        Leader leader(site());
        leader.commit(store::Batch{{store::TaskInserted{task_row(7, "live")}}});
    }
    const auto client_store = site().open();
    auto& clients = client_store->client_access();
    const auto got = clients.submit({task_row(0, "live"), task_row(0, "new"), task_row(0, "new"), task_row(0)});
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[0].id, TaskId{7});
    EXPECT_FALSE(got[0].created);
    EXPECT_TRUE(got[1].created);
    EXPECT_EQ(got[2].id, got[1].id);
    EXPECT_FALSE(got[2].created);
    EXPECT_TRUE(got[3].created);
    EXPECT_EQ(site().count_tasks(), 3);
    // And from another call: the client's own row holds the key now.
    const auto again = clients.submit({task_row(0, "new")});
    EXPECT_EQ(again.at(0).id, got[1].id);
    EXPECT_FALSE(again.at(0).created);
}

TEST_P(Clients, AnEndedTaskHoldsItsKeyWithinTheRetentionItsLeaderWrote) {
    const auto now = system_clock::now();
    Leader leader(site());
    leader.commit(store::Batch{{store::TaskInserted{ended_row(1, "before-config", now)}}});
    const auto client_store = site().open();
    auto& clients = client_store->client_access();
    // No configuration written: no retention known, only live tasks hold keys.
    EXPECT_TRUE(clients.submit({task_row(0, "before-config")}).at(0).created);

    leader.commit(store::Batch{{config("{}", 1h), store::TaskInserted{ended_row(2, "retained", now - 10min)},
                                store::TaskInserted{ended_row(3, "expired", now - 2h)}}});
    const auto got = clients.submit({task_row(0, "retained"), task_row(0, "expired")});
    EXPECT_EQ(got.at(0).id, TaskId{2});
    EXPECT_FALSE(got.at(0).created);
    EXPECT_TRUE(got.at(1).created);
    EXPECT_GE(got.at(1).id.value, store::first_client_task_id);
}

TEST_P(Clients, TwoClientProcessesRacingWithOneKeyGetOneTask) {
    constexpr int rounds = 100;
    const auto start = duration_cast<nanoseconds>((system_clock::now() + 500ms).time_since_epoch()).count();
    std::vector<std::unique_ptr<Child>> children;
    for (int i = 0; i < 3; ++i) {
        std::vector<std::string> args{"client"};
        for (const auto& a : site().child_args()) args.push_back(a);
        args.push_back("op=race");
        args.push_back("rounds=" + std::to_string(rounds));
        args.push_back("start=" + std::to_string(start));
        children.push_back(std::make_unique<Child>(args));
    }
    std::map<int, std::set<std::uint64_t>> ids;
    std::map<int, int> created;
    for (auto& child : children) {
        while (auto line = child->read_line()) {
            if (*line == "D") break;
            ASSERT_EQ(line->rfind("S ", 0), 0u) << *line;
            std::istringstream in(line->substr(2));
            int round = 0, made = 0;
            std::uint64_t id = 0;
            in >> round >> id >> made;
            ids[round].insert(id);
            created[round] += made;
        }
        EXPECT_EQ(child->wait(), 0);
    }
    ASSERT_EQ(ids.size(), static_cast<std::size_t>(rounds));
    for (int round = 0; round < rounds; ++round) {
        EXPECT_EQ(ids[round].size(), 1u) << "round " << round << " made several tasks";
        EXPECT_EQ(created[round], 1) << "round " << round;
    }
    EXPECT_EQ(site().count_tasks(), rounds);
}

TEST_P(Clients, CancelIsQueuedWhileTheTaskHasNotEnded) {
    Leader leader(site());
    leader.commit(store::Batch{{store::TaskInserted{ended_row(1, "done", system_clock::now())}}});
    const auto client_store = site().open();
    auto& clients = client_store->client_access();
    const TaskId id = clients.submit({task_row(0, "k")}).at(0).id;
    EXPECT_TRUE(clients.cancel(TaskRef(id)));
    EXPECT_TRUE(clients.cancel(TaskRef(std::string("k"))));
    EXPECT_FALSE(clients.cancel(TaskRef(TaskId{1})));  // ended
    EXPECT_FALSE(clients.cancel(TaskRef(std::string("done"))));
    EXPECT_FALSE(clients.cancel(TaskRef(TaskId{999})));  // unknown
    const auto inbox = leader.store->journal().read_inbox(100);
    ASSERT_EQ(inbox.size(), 3u);
    EXPECT_EQ(inbox[0].op, InboxEntry::Op::Submit);
    for (std::size_t i = 1; i < 3; ++i) {
        EXPECT_EQ(inbox[i].op, InboxEntry::Op::Cancel);
        EXPECT_EQ(inbox[i].task, id);
        EXPECT_FALSE(inbox[i].row);
    }
    // Once the leader ended it, a cancel is refused and queues nothing.
    leader.commit(store::Batch{{store::TaskTransition{id, TaskStatus::Cancelled, 0, "cancelled", system_clock::now(),
                                                      std::nullopt, std::nullopt}}});
    EXPECT_FALSE(clients.cancel(TaskRef(id)));
    EXPECT_EQ(leader.store->journal().read_inbox(100).size(), 3u);
}

TEST_P(Clients, EndedReportsTheTerminalOnes) {
    Leader leader(site());
    const auto client_store = site().open();
    auto& clients = client_store->client_access();
    const auto got = clients.submit({task_row(0), task_row(0), task_row(0)});
    EXPECT_TRUE(clients.ended({got[0].id, got[1].id, got[2].id}).empty());
    leader.commit(store::Batch{{store::TaskTransition{got[1].id, TaskStatus::Failed, 1, "boom", system_clock::now(),
                                                      std::nullopt, std::nullopt}}});
    const auto ended = clients.ended({got[0].id, got[1].id, got[2].id, TaskId{12345}});
    ASSERT_EQ(ended.size(), 1u);
    EXPECT_EQ(ended[0].first, got[1].id);
    EXPECT_EQ(ended[0].second, TaskStatus::Failed);
    EXPECT_TRUE(clients.ended({}).empty());
}

TEST_P(Clients, TheLeaderReadsTheInboxInCommitOrderAndTakesEachEntryOnce) {
    Leader leader(site());
    const auto client_store = site().open();
    auto& clients = client_store->client_access();
    const auto a = clients.submit({task_row(0, "a"), task_row(0, "b")});
    ASSERT_TRUE(clients.cancel(TaskRef(a[0].id)));
    const auto c = site().open()->client_access().submit({task_row(0, "c")});
    auto inbox = leader.store->journal().read_inbox(100);
    ASSERT_EQ(inbox.size(), 4u);
    for (std::size_t i = 1; i < inbox.size(); ++i) EXPECT_GT(inbox[i].seq, inbox[i - 1].seq);
    const std::vector<TaskId> tasks{a[0].id, a[1].id, a[0].id, c[0].id};
    for (std::size_t i = 0; i < inbox.size(); ++i) {
        EXPECT_EQ(inbox[i].task, tasks[i]) << i;
        EXPECT_EQ(inbox[i].op, i == 2 ? InboxEntry::Op::Cancel : InboxEntry::Op::Submit) << i;
        EXPECT_EQ(inbox[i].row.has_value(), i != 2) << i;
    }
    EXPECT_EQ(inbox[1].row->key, "b");
    EXPECT_EQ(inbox[1].row->payload, "payload-0");
    EXPECT_EQ(leader.store->journal().read_inbox(2).size(), 2u);

    leader.commit(store::Batch{{store::InboxTaken{{inbox[0].seq, inbox[1].seq}}}});
    auto left = leader.store->journal().read_inbox(100);
    ASSERT_EQ(left.size(), 2u);
    EXPECT_EQ(left[0].seq, inbox[2].seq);
    // Taken twice (a retried commit): the second removes nothing more.
    leader.commit(store::Batch{{store::InboxTaken{{inbox[0].seq, inbox[1].seq, inbox[2].seq}}}});
    left = leader.store->journal().read_inbox(100);
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(left[0].seq, inbox[3].seq);
    // A new entry never reuses a taken seq.
    clients.submit({task_row(0)});
    left = leader.store->journal().read_inbox(100);
    ASSERT_EQ(left.size(), 2u);
    EXPECT_GT(left[1].seq, inbox[3].seq);
}

// Commit order: an entry never shows up below one a reader already saw
// (PostgreSQL hands a bigserial out at the insert, not at the commit).
TEST_P(Clients, NoEntryAppearsBelowOneAlreadyRead) {
    // Made before the children: what this test is about is the order of
    // their commits, not three processes making one file at once.
    auto reader = site().open();
    std::vector<std::unique_ptr<Child>> children;
    for (int i = 0; i < 3; ++i) {
        std::vector<std::string> args{"client"};
        for (const auto& a : site().child_args()) args.push_back(a);
        args.push_back("op=flood");
        args.push_back("rounds=300");
        children.push_back(std::make_unique<Child>(args));
    }
    std::set<std::uint64_t> seen;
    std::uint64_t highest = 0;
    std::size_t late = 0;
    // Reads while the children commit.
    std::atomic<bool> done = false;
    std::thread waiter([&] {
        for (auto& child : children) EXPECT_EQ(child->read_line(), "D");
        done = true;
    });
    while (!done) {
        std::uint64_t top = highest;
        for (const InboxEntry& entry : reader->journal().read_inbox(100000)) {
            if (seen.insert(entry.seq).second && entry.seq < highest) ++late;
            top = std::max(top, entry.seq);
        }
        highest = top;
    }
    waiter.join();
    for (auto& child : children) EXPECT_EQ(child->wait(), 0);
    EXPECT_EQ(late, 0u) << "entries became visible below ones already read";
    EXPECT_EQ(reader->journal().read_inbox(100000).size(), 1800u);
}

TEST_P(Clients, AFencedLeaderTakesNoEntry) {
    Leader leader(site());
    site().open()->client_access().submit({task_row(0)});
    const auto inbox = leader.store->journal().read_inbox(100);
    ASSERT_EQ(inbox.size(), 1u);
    site().bump_epoch();
    leader.store->journal().enqueue(store::Batch{{store::InboxTaken{{inbox[0].seq}}}});
    ASSERT_TRUE(leader.reports.wait_lost());
    EXPECT_EQ(leader.reports.lost->reason, store::LostReason::Fenced);
    EXPECT_EQ(site().open()->journal().read_inbox(100).size(), 1u);
}

TEST_P(Clients, ANewLeaderRecoversTheInboxOfOneThatDied) {
    LeaderProcess dead(site().child_args(), "A", 500ms);
    ASSERT_TRUE(dead.until("L "));
    const auto client_store = site().open();
    auto& clients = client_store->client_access();
    const auto got = clients.submit({task_row(0, "x"), task_row(0)});
    ASSERT_TRUE(clients.cancel(TaskRef(got[0].id)));
    dead.child.signal(SIGKILL);
    EXPECT_EQ(dead.child.wait(), 128 + SIGKILL);
    const store::Recovered recovered = recover(site());
    ASSERT_EQ(recovered.inbox.size(), 3u);
    EXPECT_EQ(recovered.inbox[0].task, got[0].id);
    EXPECT_EQ(recovered.inbox[1].task, got[1].id);
    EXPECT_EQ(recovered.inbox[2].op, InboxEntry::Op::Cancel);
    EXPECT_LT(recovered.inbox[0].seq, recovered.inbox[1].seq);
    EXPECT_LT(recovered.inbox[1].seq, recovered.inbox[2].seq);
    ASSERT_TRUE(find_row(recovered, got[0].id.value));
    EXPECT_EQ(find_row(recovered, got[0].id.value)->key, "x");
    ASSERT_TRUE(find_row(recovered, got[1].id.value));
}

TEST_P(Clients, TheLeaderIsToldOfAClientCommitOnlyWithEntriesToTake) {
    InboxLeader leader(site());
    // The leader's own commits, and an empty inbox, tell it nothing; every
    // call below saw entries.
    for (std::uint64_t id = 1; id <= 3; ++id) {
        const auto sequence = leader.store->journal().enqueue(insert_batch(id));
        ASSERT_TRUE(leader.reports.wait_committed(sequence));
    }
    site().open()->client_access().submit({task_row(0)});
    ASSERT_TRUE(leader.wait_calls(1));
    std::lock_guard lock(leader.mutex);
    for (const std::size_t entries : leader.seen) EXPECT_EQ(entries, 1u);
}

TEST_P(Clients, ConfigurationsAreWrittenPerShardAndReplaced) {
    Leader leader(site());
    const auto client_store = site().open();
    auto& clients = client_store->client_access();
    EXPECT_TRUE(clients.configs().empty());
    leader.commit(store::Batch{{config(R"({"pools":["a"]})", 1h)}});
    leader.commit(store::Batch{{config(R"({"pools":["b"]})", 2h)}});
    const auto configs = clients.configs();
    ASSERT_EQ(configs.size(), 1u);
    EXPECT_EQ(configs[0].shard, "default");
    EXPECT_EQ(configs[0].body, R"({"pools":["b"]})");
    EXPECT_EQ(configs[0].retention, 2h);
}

TEST_P(Clients, AWatchWakesOnAnotherProcessCommitAndTimesOutOtherwise) {
    auto store = site().open();
    auto watch = store->client_access().watch();
    EXPECT_FALSE(watch->wait(50ms));
    // interrupt() from another thread, before or during the wait.
    // A lost interrupt shows as a wait that never ends (ctest's timeout).
    std::thread interrupter([&] { watch->interrupt(); });
    EXPECT_FALSE(watch->wait(24h));
    interrupter.join();

    std::vector<std::string> args{"client"};
    for (const auto& a : site().child_args()) args.push_back(a);
    args.push_back("op=end");
    args.push_back("id=5");
    Child child(args);
    EXPECT_EQ(child.read_line(), "D");
    EXPECT_TRUE(watch->wait(60s));
    EXPECT_EQ(child.wait(), 0);
    EXPECT_EQ(store->client_access().ended({TaskId{5}}).size(), 1u);
}

}  // namespace
}  // namespace cronoq::test
