#pragma once
// The deadline-free ready tasks of one pool's class, shared fairly between
// their fair keys (docs/design.md#fair-sharing).
//
// Weighted fair queuing by virtual finish tags (start-time fair queuing):
// every key with ready tasks has a tag; the key with the least tag is served
// next, the class's virtual time moves to that tag, and the key's tag grows
// by 1 / weight. A key that becomes active starts one step past the virtual
// time, so it banks no credit while idle; while keys stay backlogged, each
// gets dispatches in proportion to its weight, within one dispatch of its
// exact share. Inside a key, first in, first out (aging adds the same to
// every task of a class, so the oldest scores highest).
//
// Why tags and not deficit round robin: weights are any positive real, a
// weight change applies from the next dispatch without rounding a quantum,
// and the order between keys is a heap, O(log active keys) per decision
// (with equal weights a rotation beside it: O(1), fair_order.hpp).
//
// A key holds state only while it has entries (ready tasks, or stale
// entries not yet dropped); its state goes when its last entry is taken.
// The key "" (id 0, every task without a fair key) lives outside the map:
// a pool whose tasks have no keys pays no lookup. While it is the only key
// with state here (no task of the class has a key), it stays out of the
// heap too: a class of unkeyed tasks is a plain FIFO, with no heap entry
// made and dropped each time it empties and fills again (the common case
// of every class but the one holding the backlog). Likewise a keyed task
// that arrives in a class holding nothing is its only key: its state is
// kept aside (`solo_`), out of the index and the order, until another key
// comes (a class whose tasks are served as they arrive makes and drops a
// key's state per task: this way without an index entry, a slab entry or
// a rotation entry each time).
//
// Entries are removed lazily, as in the ready queue: an entry whose task
// left the Ready state is dropped when it reaches its key's front.
#include "dense_key_index.hpp"
#include "fair_key_id.hpp"
#include "fair_order.hpp"
#include "prefetch.hpp"
#include "queue_ref.hpp"
#include "ring.hpp"
#include "slab.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <optional>
#include <vector>

namespace cronoq::core::detail {

class FairQueue {
public:
    /// Adds `ref` at the back of `key`'s tasks; a key that had none becomes
    /// active, one step of `weight` past the virtual time.
    /// `parked`: the key is at its cap (a key new here starts parked).
    void push(FairKeyId key, double weight, QueueRef ref, bool parked = false) {
        KeyQueue& k = key_queue(key);
        const bool was_idle = k.fifo.empty();
        k.fifo.push_back(ref);
        ++entries_;
        if (&k != &unkeyed_ && &k != &solo_) back_[key] = k.fifo.next_back();
        if (!was_idle) return;  // its weight is current: set_weight keeps it
        k.step = 1.0 / weight;
        k.parked = parked;
        if (!parked) activate(key, k);
    }

    /// The slot at the front of the key on top, stale or not, without a
    /// change: what the next decision will likely read.
    std::optional<std::uint32_t> peek() const {
        if (alone()) return lone().fifo.empty() ? std::nullopt : std::optional(lone().fifo.front().slot);
        if (known_) return known_front_.slot;
        return peek_ordered();
    }

    /// The slot at the front of the key with the least tag among the keys
    /// not parked, dropping stale entries (`live(ref)` false) and the state
    /// of keys they leave empty; empty when no key has a live task.
    template <class Live>
    std::optional<std::uint32_t> head(Live&& live) {
        if (alone()) return unkeyed_head(live);
        // Every decision of the pool compares this head with the other
        // classes', but most take another class's task: the order and the
        // front of the key on top stay as they were, and the walk to them
        // (the order's top, the key's state, its ring, each a load waiting
        // on the one before) would only find the same front again.
        if (known_ && live(known_front_)) return known_front_.slot;
        return head_ordered(live);
    }

private:
    // `head` and `peek` among keys in the order, when the front on top is
    // not known: out of line, as `pop_ordered` is.
    template <class Live>
    [[gnu::noinline]] std::optional<std::uint32_t> head_ordered(Live& live) {
        known_ = false;
        while (!order_.empty()) {
            const OrderEntry first = order_.top();
            KeyQueue* k = &state_of(first);
            if (k->live_order != first.order || k->parked) {
                order_.pop_top();
                continue;
            }
            while (!k->fifo.empty() && !live(k->fifo.front())) {
                k->fifo.pop_front();
                --entries_;
            }
            if (!k->fifo.empty()) {
                known_front_ = k->fifo.front();
                known_ = true;
                return known_front_.slot;
            }
            order_.pop_top();
            erase(first.key);
            if (alone()) return unkeyed_head(live);  // the last key went: "" left the heap
        }
        return std::nullopt;
    }
    [[gnu::noinline]] std::optional<std::uint32_t> peek_ordered() const {
        if (order_.empty()) return std::nullopt;
        // A stale entry's state may be another key's now: a hint still.
        const KeyQueue& k = state_of(order_.top());
        if (k.fifo.empty()) return std::nullopt;
        return k.fifo.front().slot;
    }

public:

    /// The longest-waiting front among the keys that compete (`older(a, b)`:
    /// slot a waited longer than b), dropping stale fronts on the way. A
    /// parked key is left out: it waits for its own attempts to end, not
    /// for a slot. O(active keys): for the autoscaler's evaluations, never
    /// for a decision.
    template <class Live, class Older>
    std::optional<std::uint32_t> oldest(Live&& live, Older&& older) {
        std::optional<std::uint32_t> best;
        if (alone()) {
            KeyQueue& k = lone();
            if (k.parked) return best;
            drop_stale(k, live);  // an emptied solo key stays until `head`
            if (!k.fifo.empty()) best = k.fifo.front().slot;
            return best;
        }
        const auto consider = [&](const OrderEntry& e) {
            KeyQueue* k = &state_of(e);
            if (k->live_order != e.order || k->parked) return;
            // Emptied here, the key stays until `head` reaches its entry.
            drop_stale(*k, live);
            if (k->fifo.empty()) return;
            const std::uint32_t slot = k->fifo.front().slot;
            if (!best || older(slot, *best)) best = slot;
        };
        for (const OrderEntry& e : order_.heap()) consider(e);
        for (std::size_t i = 0; i < order_.rotation().size(); ++i) consider(order_.rotation()[i]);
        return best;
    }

    /// Takes the front returned by the last `head`: the virtual time moves
    /// to its key's tag, and the key, if it has more, waits one step more.
    /// Returns its slot.
    std::uint32_t pop() {
        if (alone()) {
            KeyQueue& k = lone();
            const std::uint32_t slot = k.fifo.front().slot;
            k.fifo.pop_front();
            --entries_;
            vtime_ = k.finish;
            k.finish += k.step;
            if (solo_key_ != 0 && k.fifo.empty()) drop_solo();
            return slot;
        }
        return pop_ordered();
    }

private:
    // `pop` among keys in the order: out of line, so that a class of one
    // key (every class of a pool without keys) inlines only the lines above.
    [[gnu::noinline]] std::uint32_t pop_ordered() {
        known_ = false;
        const FairKeyId key = order_.top().key;
        const std::uint32_t state = order_.top().state;
        KeyQueue& k = state_of(order_.top());
        const std::uint32_t slot = k.fifo.front().slot;
        k.fifo.pop_front();
        --entries_;
        vtime_ = k.finish;
        if (k.fifo.empty()) {
            order_.pop_top();
            erase(key);
            prefetch_rotation();
            return slot;
        }
        k.finish += k.step;
        k.live_order = next_order_++;
        if (order_.retag_top(OrderEntry{k.finish, k.live_order, key, state})) prefetch_rotation();
        return slot;
    }

public:
    /// A key served outside this queue (its task with a deadline, or one
    /// back from a resource, won on score): charged one dispatch, so that
    /// its share counts every dispatch of its class.
    void charge(FairKeyId key) {
        KeyQueue* k = find(key);
        if (!k || k->fifo.empty()) return;  // no backlog here: nothing to balance
        k->finish += k->step;
        if (!k->parked && !alone()) enqueue(key, *k);
    }

    /// The key's weight from its next step on (Scheduler::set_fair_weight).
    void set_weight(FairKeyId key, double weight) {
        if (KeyQueue* k = find(key)) k->step = 1.0 / weight;
    }

    /// A key at its concurrency cap leaves the competition, keeping its
    /// tasks and its tag, without holding back the other keys.
    void park(FairKeyId key) {
        known_ = false;
        if (KeyQueue* k = find(key)) k->parked = true;  // its heap entries go stale
    }
    /// Back in the competition, at no earlier tag than the virtual time.
    void unpark(FairKeyId key) {
        KeyQueue* k = find(key);
        if (!k || !k->parked) return;
        k->parked = false;
        if (k->fifo.empty()) return erase(key);
        k->finish = std::max(k->finish, vtime_ + k->step);
        if (!alone()) enqueue(key, *k);
    }

    /// Starts loading what a push of `key` will touch: its state, and
    /// where it writes in its ring (a key with a backlog was last pushed to
    /// long ago). Both addresses are known without the state, so the two
    /// loads overlap instead of one waiting for the other.
    void prefetch_key(FairKeyId key) const {
        if (key == 0 || alone()) return;  // no state, or the solo one: in cache
        if (const std::uint32_t* i = index_.find(key)) {
            const char* state = reinterpret_cast<const char*>(&states_[*i]);
            prefetch(state);
            prefetch(state + sizeof(KeyQueue) - 1);
            if (const QueueRef* at = back_[key]) prefetch(at);
        }
    }

    /// Keys holding entries (live or stale), parked ones included.
    std::size_t keys() const { return index_.size() + (unkeyed_.fifo.empty() ? 0 : 1) + (solo_key_ != 0 ? 1 : 0); }
    /// Entries held, stale ones included.
    std::size_t entries() const { return entries_; }

private:
    // No heap entry's order (orders count decisions from 0: 2^63 is never
    // reached).
    static constexpr std::uint64_t unordered = (std::uint64_t{1} << 63) - 1;
    // One cache line (the slab aligns entries to lines): `parked` shares
    // the order's word, so that a key's state is one miss, not two.
    struct KeyQueue {
        Ring<QueueRef> fifo;
        double finish = 0;
        double step = 1;
        // The order of its one live heap entry: unique over the queue's life,
        // so an entry left by a key's earlier state never passes for live.
        std::uint64_t live_order : 63 = unordered;
        std::uint64_t parked : 1 = 0;
    };
    static_assert(sizeof(KeyQueue) <= 64);
    using OrderEntry = FairOrder::Entry;

    KeyQueue& key_queue(FairKeyId key) {
        if (key == 0) {
            if (solo_key_ != 0) promote_solo();  // two keys now: they take turns
            return unkeyed_;
        }
        if (key == solo_key_) return solo_;
        if (!alone()) {
            if (const std::uint32_t* i = index_.find(key)) return states_[*i];
        } else if (solo_key_ != 0) {
            promote_solo();
        } else if (unkeyed_.fifo.empty()) {
            solo_key_ = key;  // the class's only key (reset when it leaves)
            return solo_;
        }
        // The first keyed state: "" competes from now on, in the heap.
        if (alone() && !unkeyed_.fifo.empty() && !unkeyed_.parked) enqueue(0, unkeyed_);
        return states_[new_state(key)];
    }
    KeyQueue* find(FairKeyId key) {
        if (key == 0) return &unkeyed_;
        if (key == solo_key_) return &solo_;
        const std::uint32_t* i = index_.find(key);
        return i ? &states_[*i] : nullptr;
    }
    const KeyQueue* find(FairKeyId key) const { return const_cast<FairQueue*>(this)->find(key); }
    void erase(FairKeyId key) {
        known_ = false;
        if (key == 0) {
            unkeyed_.parked = false;
            return;  // its ring keeps its storage: the key "" is always there
        }
        if (key == solo_key_) return drop_solo();
        const std::uint32_t i = *index_.find(key);
        index_.erase(key);
        back_[key] = nullptr;
        // No keyed state left: what the heap holds is stale, or the entry
        // of "", which goes on outside it.
        if (alone()) {
            order_.clear();
        }
        // A small ring keeps its storage for the next key that takes the
        // entry: a key that comes and goes (one task at a time in a class)
        // costs no allocation.
        if (states_[i].fifo.capacity() > small_ring) return states_.release(i);
        reset(states_[i]);
        states_.recycle(i);
    }
    // The solo key's last entry went (inline: a class served as its tasks
    // arrive does this once a task).
    void drop_solo() {
        solo_key_ = 0;
        if (solo_.fifo.capacity() > small_ring) solo_.fifo = Ring<QueueRef>{};
        reset(solo_);
    }
    static void reset(KeyQueue& k) {
        k.fifo.clear();
        k.finish = 0;
        k.step = 1;
        k.live_order = unordered;
        k.parked = false;
    }
    // A second key came: the solo key's state moves to the index and, if
    // it competes, into the order, with its tag.
    void promote_solo() {
        const FairKeyId key = solo_key_;
        solo_key_ = 0;
        // Emptied by `oldest` and not parked: nothing to keep.
        if (solo_.fifo.empty() && !solo_.parked) return reset(solo_);
        KeyQueue& k = states_[new_state(key)];
        std::swap(k.fifo, solo_.fifo);  // each keeps a ring's storage
        back_[key] = k.fifo.next_back();
        k.finish = solo_.finish;
        k.step = solo_.step;
        k.parked = solo_.parked;
        reset(solo_);
        if (!k.parked && !k.fifo.empty()) enqueue(key, k);
    }

    // A state from the slab for `key`, entered in the index.
    std::uint32_t new_state(FairKeyId key) {
        const std::uint32_t i = states_.acquire();
        index_.insert(key, i);
        if (key >= back_.size()) back_.resize(std::max<std::size_t>(key + 1, 2 * back_.size()), nullptr);
        return i;
    }

    void activate(FairKeyId key, KeyQueue& k) {
        k.finish = vtime_ + k.step;
        if (!alone()) enqueue(key, k);
    }
    // No key has state in the index: the one key with entries, "" or the
    // solo key, is served without the order.
    bool alone() const { return index_.size() == 0; }
    KeyQueue& lone() { return solo_key_ != 0 ? solo_ : unkeyed_; }
    const KeyQueue& lone() const { return solo_key_ != 0 ? solo_ : unkeyed_; }
    template <class Live>
    void drop_stale(KeyQueue& k, Live& live) {
        while (!k.fifo.empty() && !live(k.fifo.front())) {
            k.fifo.pop_front();
            --entries_;
        }
    }
    // Inline into `head` always: the path of every class of one key.
    template <class Live>
    [[gnu::always_inline]] std::optional<std::uint32_t> unkeyed_head(Live& live) {
        KeyQueue& k = lone();
        if (k.parked) return std::nullopt;
        drop_stale(k, live);
        if (!k.fifo.empty()) return k.fifo.front().slot;
        if (solo_key_ != 0) drop_solo();
        return std::nullopt;
    }
    // Keys in the rotation are served in its order, so the lines of the
    // next decisions can load ahead in stages, each from a line loaded
    // one decision before: the state of the key two ahead, the front of
    // the ring of the key next but one (its state loaded by now), and
    // (the caller, from `peek`) the front task of the key next. One
    // decision's chain of misses (state, ring, task) costs one miss's wait.
    // Called by `pop` as it moves the rotation: a `Low` decision in four
    // here, so a check in `peek` (after every decision of every class)
    // for a changed front was a branch the processor could not predict.
    void prefetch_rotation() const {
        const Ring<OrderEntry>& rotation = order_.rotation();
        const std::size_t n = rotation.size();
        if (n > 2) {
            const char* state = reinterpret_cast<const char*>(&state_of(rotation[2]));
            prefetch(state);
            prefetch(state + sizeof(KeyQueue) - 1);
        }
        if (n > 1) {
            const KeyQueue& k = state_of(rotation[1]);
            if (!k.fifo.empty()) prefetch(&k.fifo.front());
        }
    }
    // A keyed state enters the order only from the slab: the solo key's
    // (kept aside) never competes, since a second key promotes it first.
    void enqueue(FairKeyId key, KeyQueue& k) {
        assert(key == 0 || (key != solo_key_ && &k >= &states_[0] && &k < &states_[0] + states_.size()));
        k.live_order = next_order_++;
        const auto state = key == 0 ? std::uint32_t{0} : static_cast<std::uint32_t>(&k - &states_[0]);
        known_ = false;  // the new entry may come first
        order_.push(OrderEntry{k.finish, k.live_order, key, state});
    }
    // The state an entry of the order names (stale or not).
    KeyQueue& state_of(const OrderEntry& e) { return e.key == 0 ? unkeyed_ : states_[e.state]; }
    const KeyQueue& state_of(const OrderEntry& e) const { return e.key == 0 ? unkeyed_ : states_[e.state]; }

    static constexpr std::size_t small_ring = 16;
    KeyQueue unkeyed_;
    // The class's only key while no other has entries (0: none); then ""
    // has none either and the index is empty.
    FairKeyId solo_key_ = 0;
    KeyQueue solo_;
    // The other active keys: an index by key id (dense_key_index.hpp) into
    // a slab of states, reused.
    DenseKeyIndex index_;
    Slab<KeyQueue> states_;
    // By key id, for the keys in the index: where a push of the key writes
    // next in its ring (null when the ring is full), kept by each push, so
    // that the admission can start loading it beside the key's state
    // (`prefetch_key`); a hint only, never written through.
    std::vector<const QueueRef*> back_;
    FairOrder order_;
    // The front of the key on top, as `head` last found it live:
    // good until the order or that front changes, so every change to the
    // order (`enqueue`, `pop_ordered`, `park`, `erase`) forgets it. A task
    // that leaves the Ready state makes it stale, which `head` checks.
    QueueRef known_front_{};
    bool known_ = false;
    double vtime_ = 0;
    std::uint64_t next_order_ = 0;
    std::size_t entries_ = 0;
};

}  // namespace cronoq::core::detail
