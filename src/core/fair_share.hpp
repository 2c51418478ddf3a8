#pragma once
// One pool's fair keys (docs/design.md#fair-sharing): per key with a ready
// task or a running attempt, its counts, its weight and the tasks parked at
// its cap. Counts are kept by interned key id, 8 bytes per id up to the
// largest id the pool's tasks held (an idle key's are zero; ids are reused,
// so this is bounded by the keys interned at once, not by keys ever seen);
// weights by name (`weights`), and per id only once the pool has any. The
// key "" (id 0) has no counts: they are the pool's less the keyed ones, so
// a pool whose tasks have no keys pays a branch per transition. The order
// between keys is the ready queue's (fair_queue.hpp); this counts what the
// cap and the stats need.
#include "fair_keys.hpp"
#include "dense_key_index.hpp"
#include "ready_queue.hpp"
#include "ring.hpp"
#include "slab.hpp"

#include <cronoq/fairness.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cronoq::core::detail {

class FairShare {
public:
    /// Validated by the caller (check_fairness); before the pool's first task.
    void configure(const FairnessConfig& config) {
        weights_.clear();
        for (const auto& [key, weight] : config.weights) weights_.emplace(key, weight);
        cap_ = config.per_key_concurrency.value_or(0);
        unkeyed_weight_ = weight_of("");
        weight_by_id_.assign(weights_.empty() ? 0 : counts_.size(), 1.0);
    }

    // The key "" keeps no counts of its own: its ready tasks and running
    // attempts are the pool's less the keyed ones, so a task without a key
    // costs a branch here. `ready` and `running` are the pool's counts.

    /// A task of `key` became Ready; returns the key's weight.
    double add_ready(FairKeyId key, const FairKeyNames& names) {
        if (key == 0) return unkeyed_weight_;
        Counts& c = counts(key, names);
        ++c.ready;
        ++keyed_ready_;
        return weights_.empty() ? 1.0 : weight_by_id_[key];
    }
    void remove_ready(FairKeyId key) {
        if (key == 0) return;
        Counts& c = counts_[key];
        --c.ready;
        --keyed_ready_;
        if (idle(c)) went_idle(key);
    }
    /// An attempt of `key` starts, `running` others running in the pool;
    /// true when the key just reached its cap.
    bool add_running(FairKeyId key, const FairKeyNames& names, std::size_t running) {
        if (key == 0) return cap_ != 0 && running + 1 - keyed_running_ == cap_;
        Counts& c = counts(key, names);
        ++c.running;
        ++keyed_running_;
        return cap_ != 0 && c.running == cap_;
    }
    /// An attempt of `key` ended, `running` still running in the pool;
    /// true when the key just fell below its cap.
    bool remove_running(FairKeyId key, std::size_t running) {
        if (key == 0) return cap_ != 0 && running + 1 - keyed_running_ == cap_;
        Counts& c = counts_[key];
        const bool was_capped = cap_ != 0 && c.running == cap_;
        --c.running;
        --keyed_running_;
        if (idle(c)) went_idle(key);
        return was_capped;
    }
    /// Starts loading the counts of `key`, which a transition will read soon.
    void prefetch_key(FairKeyId key) const {
        if (key != 0 && key < counts_.size()) prefetch(&counts_[key]);
    }
    bool capped() const { return cap_ != 0; }
    bool at_cap(FairKeyId key, std::size_t running) const {
        if (cap_ == 0) return false;
        if (key == 0) return running - keyed_running_ >= cap_;
        return key < counts_.size() && counts_[key].running >= cap_;
    }

    /// A Ready task of a key at its cap that came out of the queue on score
    /// (a deadline, a return from a resource): it waits here.
    void park(FairKeyId key, QueueRef ref) {
        if (key == 0) return unkeyed_parked_.push_back(ref);
        if (const std::uint32_t* i = parked_index_.find(key)) return parked_[*i].push_back(ref);
        const std::uint32_t at = parked_.acquire();
        parked_index_.insert(key, at);
        parked_[at].push_back(ref);
    }
    /// Calls `f(ref)` for each task parked at the key's cap, and forgets them.
    template <class F>
    void unpark(FairKeyId key, F&& f) {
        Ring<QueueRef> parked;
        if (key == 0) {
            std::swap(parked, unkeyed_parked_);
        } else {
            const std::uint32_t* i = parked_index_.find(key);
            if (!i) return;
            std::swap(parked, parked_[*i]);
            drop_parked(key);
        }
        for (; !parked.empty(); parked.pop_front()) f(parked.front());
    }

    /// Sets the weight by name; `id`: the key's, if interned.
    void set_weight(std::string_view name, std::optional<FairKeyId> id, double weight) {
        // Until a pool has weights, every keyed weight is 1 and none is
        // kept per id.
        if (weights_.empty()) weight_by_id_.assign(counts_.size(), 1.0);
        weights_[std::string(name)] = weight;
        if (name.empty()) unkeyed_weight_ = weight;
        if (!id || *id == 0 || *id >= weight_by_id_.size()) return;
        weight_by_id_[*id] = weight;
    }

    /// Keys with a ready task or a running attempt.
    std::size_t active(std::size_t ready, std::size_t running) const {
        return active_ + (unkeyed_active(ready, running) ? 1 : 0);
    }
    /// The `n` keys with the most ready tasks, then the most running.
    std::vector<FairKeyLoad> top(std::size_t n, const FairKeyNames& names, std::size_t ready,
                                 std::size_t running) const {
        std::vector<FairKeyLoad> all;
        all.reserve(active(ready, running));
        if (unkeyed_active(ready, running)) all.push_back({"", ready - keyed_ready_, running - keyed_running_});
        for (std::uint32_t key = 1; key < counts_.size(); ++key)
            if (const Counts& c = counts_[key]; !idle(c)) all.push_back({names.name(key), c.ready, c.running});
        const auto before = [](const FairKeyLoad& a, const FairKeyLoad& b) {
            if (a.ready != b.ready) return a.ready > b.ready;
            if (a.running != b.running) return a.running > b.running;
            return a.key < b.key;
        };
        const auto end = all.begin() + static_cast<std::ptrdiff_t>(std::min(n, all.size()));
        std::partial_sort(all.begin(), end, all.end(), before);
        all.erase(end, all.end());
        return all;
    }

private:
    // 8 bytes per key id, so that the counts of thousands of keys stay in
    // cache (eight keys a line), where a record per active key took a line
    // of its own, out of cache for a key last touched thousands of keys
    // before (docs/design.md#fair-sharing, "Cost").
    struct Counts {
        std::uint32_t ready = 0;
        std::uint32_t running = 0;
    };
    static bool idle(const Counts& c) { return c.ready == 0 && c.running == 0; }
    bool unkeyed_active(std::size_t ready, std::size_t running) const {
        return ready > keyed_ready_ || running > keyed_running_;
    }

    // Inline for a key already active (every transition but its first);
    // the rest out of line, so that the common path saves no registers.
    Counts& counts(FairKeyId key, const FairKeyNames& names) {
        if (key < counts_.size() && !idle(counts_[key])) [[likely]]
            return counts_[key];
        return activate(key, names);
    }
    [[gnu::noinline]] Counts& activate(FairKeyId key, const FairKeyNames& names) {
        if (key >= counts_.size()) grow(key);
        ++active_;
        // Ids are reused for other names: the weight is the name's.
        if (!weights_.empty()) weight_by_id_[key] = weight_of(names.name(key));
        return counts_[key];
    }
    void grow(FairKeyId key) {
        const std::size_t size = std::max<std::size_t>(key + 1, counts_.size() * 2);
        counts_.resize(size);
        if (!weights_.empty()) weight_by_id_.resize(size, 1.0);
    }
    void went_idle(FairKeyId key) {
        --active_;
        // What it still had parked is stale (its tasks left Ready).
        if (parked_index_.size() != 0) drop_parked(key);
    }
    void drop_parked(FairKeyId key) {
        const std::uint32_t* i = parked_index_.find(key);
        if (!i) return;
        parked_.release(*i);
        parked_index_.erase(key);
    }
    double weight_of(std::string_view name) const {
        if (weights_.empty()) return 1.0;
        const auto it = weights_.find(name);
        return it == weights_.end() ? 1.0 : it->second;
    }

    std::map<std::string, double, std::less<>> weights_;
    std::uint32_t cap_ = 0;  // 0: none
    double unkeyed_weight_ = 1.0;
    std::size_t keyed_ready_ = 0;
    std::size_t keyed_running_ = 0;
    Ring<QueueRef> unkeyed_parked_;  // tasks of "" parked at its cap (stale ones too)
    // The other keys, by interned id (dense and reused: FairKeyNames): the
    // array grows to the largest id a task of the pool held, idle keys'
    // entries are zero. Weights per id only once the pool has any.
    std::vector<Counts> counts_;
    std::vector<double> weight_by_id_;
    std::size_t active_ = 0;  // keyed ids not idle
    // Tasks parked at a key's cap (stale ones too), for the keys that have
    // any: a pool with no cap never parks.
    DenseKeyIndex parked_index_;
    Slab<Ring<QueueRef>> parked_;
};

}  // namespace cronoq::core::detail
