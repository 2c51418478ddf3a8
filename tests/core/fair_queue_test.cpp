// Weighted fair queuing between the fair keys of one class (src/core/fair_queue.hpp).
#include "core/fair_queue.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

namespace cronoq::core::detail {
namespace {

// Slots number the tasks; a task is live until `dead` holds its slot.
struct Fixture {
    FairQueue q;
    std::set<std::uint32_t> dead;
    std::map<std::uint32_t, FairKeyId> key_of;
    std::uint32_t next = 0;

    std::uint32_t add(FairKeyId key, double weight = 1.0) {
        const std::uint32_t slot = next++;
        key_of[slot] = key;
        q.push(key, weight, QueueRef{slot, 0});
        return slot;
    }
    // The next task, left in place (a decision that took another class's).
    std::optional<std::uint32_t> head() {
        return q.head([this](QueueRef r) { return !dead.count(r.slot); });
    }
    std::optional<std::uint32_t> take() {
        auto slot = head();
        if (slot) q.pop();
        return slot;
    }
    // Dispatches per key over the next `n` takes.
    std::map<FairKeyId, int> serve(int n) {
        std::map<FairKeyId, int> count;
        for (int i = 0; i < n; ++i) {
            auto slot = take();
            if (!slot) break;
            ++count[key_of[*slot]];
        }
        return count;
    }
};

TEST(FairQueue, BackloggedKeysShareDispatchesByWeightWithinOne) {
    for (int n : {9, 45, 90, 450}) {
        Fixture g;
        for (int i = 0; i < 400; ++i) {
            g.add(1, 1.0);
            g.add(2, 3.0);
            g.add(0, 0.5);  // the key "": weight 0.5
        }
        auto count = g.serve(n);
        const double total = 4.5;
        EXPECT_NEAR(count[1], n * 1.0 / total, 1.0) << n;
        EXPECT_NEAR(count[2], n * 3.0 / total, 1.0) << n;
        EXPECT_NEAR(count[0], n * 0.5 / total, 1.0) << n;
    }
}

TEST(FairQueue, InsideAKeyFirstInFirstOut) {
    Fixture f;
    std::vector<std::uint32_t> a, b;
    for (int i = 0; i < 5; ++i) {
        a.push_back(f.add(7));
        b.push_back(f.add(8));
    }
    std::vector<std::uint32_t> got_a, got_b;
    while (auto s = f.take()) (f.key_of[*s] == 7 ? got_a : got_b).push_back(*s);
    EXPECT_EQ(got_a, a);
    EXPECT_EQ(got_b, b);
}

TEST(FairQueue, AFloodDoesNotStarveTheOthers) {
    Fixture f;
    for (int i = 0; i < 9000; ++i) f.add(1);
    for (FairKeyId k = 2; k <= 10; ++k)
        for (int i = 0; i < 100; ++i) f.add(k);
    // Ten keys backlogged: each small key gets a tenth of the dispatches,
    // not its 1 % share of the tasks.
    auto count = f.serve(500);
    for (FairKeyId k = 1; k <= 10; ++k) EXPECT_NEAR(count[k], 50, 1) << "key " << k;
}

TEST(FairQueue, AKeyBanksNoCreditWhileIdle) {
    Fixture f;
    for (int i = 0; i < 100; ++i) f.add(1);
    f.serve(50);  // key 1 alone: every dispatch
    for (int i = 0; i < 100; ++i) f.add(2);
    // Key 2 was idle during those 50: it now gets half, not 50 in a row.
    auto count = f.serve(20);
    EXPECT_NEAR(count[2], 10, 1);
    EXPECT_NEAR(count[1], 10, 1);
}

TEST(FairQueue, StaleEntriesAreDroppedAndAnEmptyKeyHoldsNoState) {
    Fixture f;
    const auto a = f.add(1);
    const auto b = f.add(2);
    const auto c = f.add(2);
    EXPECT_EQ(f.q.keys(), 2u);
    f.dead.insert(a);  // its task left Ready (cancelled, say)
    f.dead.insert(b);
    EXPECT_EQ(f.take(), c);
    EXPECT_EQ(f.take(), std::nullopt);
    EXPECT_EQ(f.q.keys(), 0u);
    EXPECT_EQ(f.q.entries(), 0u);
}

TEST(FairQueue, AParkedKeyWaitsWithoutHoldingBackTheOthers) {
    Fixture f;
    for (int i = 0; i < 10; ++i) {
        f.add(1);
        f.add(2);
    }
    f.q.park(1);  // at its concurrency cap
    auto count = f.serve(6);
    EXPECT_EQ(count[1], 0);
    EXPECT_EQ(count[2], 6);
    EXPECT_EQ(f.q.keys(), 2u);  // key 1 keeps its tasks
    f.q.unpark(1);
    // Back at the virtual time: no catch-up for the time it was parked.
    count = f.serve(4);
    EXPECT_EQ(count[1], 2);
    EXPECT_EQ(count[2], 2);
}

// Keys of equal weight go round in turn (the rotation beside the heap,
// fair_queue.hpp), and a key that becomes active joins the back of the round.
TEST(FairQueue, KeysOfEqualWeightGoRoundInTurnAndANewKeyJoinsAtTheBack) {
    Fixture f;
    for (FairKeyId k = 1; k <= 4; ++k) {
        f.add(k);
        f.add(k);
    }
    std::vector<FairKeyId> order;
    for (int i = 0; i < 2; ++i) order.push_back(f.key_of[*f.take()]);
    f.add(5);
    while (auto slot = f.take()) order.push_back(f.key_of[*slot]);
    EXPECT_EQ(order, (std::vector<FairKeyId>{1, 2, 3, 4, 1, 2, 5, 3, 4}));
}

// A heavier key's tags pass the round's back and go through the heap: the
// order between the two stays by tag.
TEST(FairQueue, AHeavierKeyOvertakesTheRoundByTag) {
    Fixture f;
    for (int i = 0; i < 6; ++i) {
        f.add(1);
        f.add(2);
        f.add(3, 4.0);
    }
    // Tags: key 3 at 0.25, 0.5, ... and keys 1 and 2 at 1, 2, 3; at a tie
    // the key tagged first goes first.
    std::vector<FairKeyId> order;
    for (int i = 0; i < 12; ++i) order.push_back(f.key_of[*f.take()]);
    EXPECT_EQ(order, (std::vector<FairKeyId>{3, 3, 3, 1, 2, 3, 3, 3, 1, 2, 1, 2}));
}

TEST(FairQueue, AChargedKeyYieldsItsTurn) {
    Fixture f;
    for (int i = 0; i < 20; ++i) {
        f.add(1);
        f.add(2);
    }
    // Key 1 won four dispatches elsewhere (tasks with deadlines, say).
    for (int i = 0; i < 4; ++i) f.q.charge(1);
    auto count = f.serve(8);
    EXPECT_EQ(count[2], 6);
    EXPECT_EQ(count[1], 2);
}

TEST(FairQueue, AWeightChangeAppliesFromTheNextStep) {
    Fixture f;
    for (int i = 0; i < 200; ++i) {
        f.add(1);
        f.add(2);
    }
    f.serve(10);
    f.q.set_weight(2, 4.0);
    auto count = f.serve(101);  // after one step at the old weight, 1 : 4
    EXPECT_NEAR(count[2], 80, 2);
    EXPECT_NEAR(count[1], 20, 2);
}

// The key "" is served outside the heap while it is the only key with state
// (a class without keyed tasks): the order and the shares must not tell.
TEST(FairQueue, TheKeyEmptyAloneIsAFifoAndSharesOnceAKeyArrives) {
    Fixture f;
    std::vector<std::uint32_t> unkeyed;
    for (int i = 0; i < 100; ++i) unkeyed.push_back(f.add(0));
    std::vector<std::uint32_t> got;
    for (int i = 0; i < 30; ++i) got.push_back(*f.take());
    // Key 5 arrives: "" competes from its tag on, one step each.
    for (int i = 0; i < 10; ++i) f.add(5);
    auto count = f.serve(20);
    EXPECT_EQ(count[0], 10);
    EXPECT_EQ(count[5], 10);
    EXPECT_EQ(f.q.keys(), 1u);  // key 5 served out: its state went
    // Alone again: parked, it gives nothing; back, it goes on in order.
    f.q.park(0);
    EXPECT_EQ(f.take(), std::nullopt);
    f.q.unpark(0);
    f.q.charge(0);  // a charge alone changes no order
    while (auto s = f.take()) got.push_back(*s);
    std::vector<std::uint32_t> expected(unkeyed.begin(), unkeyed.begin() + 30);
    expected.insert(expected.end(), unkeyed.begin() + 40, unkeyed.end());
    EXPECT_EQ(got, expected);
    EXPECT_EQ(f.q.keys(), 0u);
    EXPECT_EQ(f.q.entries(), 0u);
}

TEST(FairQueue, AKeyLeavingStaleFromTheTopHandsBackToTheKeyEmpty) {
    Fixture f;
    const auto a = f.add(0);
    const auto b = f.add(0);
    const auto dead = f.add(5, 10.0);  // a tenth of a step: its tag is least
    f.dead.insert(dead);
    // Key 5's only task is stale: dropping it drops key 5's state, and ""
    // is served outside the heap from there on.
    EXPECT_EQ(f.take(), a);
    EXPECT_EQ(f.q.keys(), 1u);
    const auto c = f.add(0);
    EXPECT_EQ(f.take(), b);
    EXPECT_EQ(f.take(), c);
    EXPECT_EQ(f.take(), std::nullopt);
    EXPECT_EQ(f.q.entries(), 0u);
}

// A keyed task arriving in an empty class is its only key, kept aside from
// the index and the order (fair_queue.hpp, `solo_`): when other keys come it
// competes with the tag it reached, and nothing of it stays once it empties.
TEST(FairQueue, AKeyAloneKeepsItsTagWhenOthersArriveAndLeavesNoState) {
    Fixture f;
    for (int i = 0; i < 3; ++i) f.add(7);
    f.serve(2);  // key 7 at tag 3, the virtual time at 2
    EXPECT_EQ(f.q.keys(), 1u);
    for (int i = 0; i < 3; ++i) {
        f.add(8);
        f.add(0);
    }
    std::vector<FairKeyId> order;
    while (auto s = f.take()) order.push_back(f.key_of[*s]);
    // Every tag is 3 at first: key 7 was first tagged, then 8, then "".
    EXPECT_EQ(order, (std::vector<FairKeyId>{7, 8, 0, 8, 0, 8, 0}));
    EXPECT_EQ(f.q.keys(), 0u);
    EXPECT_EQ(f.q.entries(), 0u);

    // Alone and stale: the head drops it and its state.
    f.dead.insert(f.add(9));
    EXPECT_EQ(f.take(), std::nullopt);
    EXPECT_EQ(f.q.keys(), 0u);

    // Alone and parked: it gives nothing, lets a newcomer through, and
    // comes back when unparked.
    const auto parked = f.add(4);
    f.q.park(4);
    EXPECT_EQ(f.take(), std::nullopt);
    EXPECT_EQ(f.q.keys(), 1u);
    const auto other = f.add(6);
    EXPECT_EQ(f.take(), other);
    f.q.unpark(4);
    EXPECT_EQ(f.take(), parked);
    EXPECT_EQ(f.take(), std::nullopt);
    EXPECT_EQ(f.q.keys(), 0u);
    EXPECT_EQ(f.q.entries(), 0u);
}

// A decision that takes another class's task leaves this class as it was:
// the head remembers the front of the key on top (fair_queue.hpp,
// `known_front_`) and must find it again after every change between two.
TEST(FairQueue, TheHeadFollowsEveryChangeBetweenTwoLooks) {
    Fixture f;
    const auto a1 = f.add(1);  // tag 1
    const auto a2 = f.add(1);
    const auto b1 = f.add(2, 0.5);  // tag 2
    f.add(2, 0.5);
    EXPECT_EQ(f.head(), a1);
    EXPECT_EQ(f.q.peek(), a1);
    f.add(1);  // behind its key's tasks: no change on top
    EXPECT_EQ(f.head(), a1);
    f.dead.insert(a1);  // left Ready: the key's next task
    EXPECT_EQ(f.head(), a2);
    f.q.park(1);
    EXPECT_EQ(f.head(), b1);
    f.q.unpark(1);  // back at tag 1, ahead of key 2
    EXPECT_EQ(f.head(), a2);
    const auto c1 = f.add(3, 4.0);  // a new key at tag 0.25 goes first
    EXPECT_EQ(f.head(), c1);
    EXPECT_EQ(f.q.peek(), c1);
    f.q.charge(3);
    f.q.charge(3);
    f.q.charge(3);
    f.q.charge(3);  // at 1.25 now: behind key 1
    EXPECT_EQ(f.head(), a2);
    EXPECT_EQ(f.take(), a2);
    EXPECT_EQ(f.head(), c1);
    f.dead.insert(c1);  // key 3's only task: its state goes at the next look
    EXPECT_NE(f.head(), c1);
    EXPECT_EQ(f.q.keys(), 2u);
}

}  // namespace
}  // namespace cronoq::core::detail
