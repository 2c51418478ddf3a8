#pragma once
// One pool's fair keys (docs/design.md#fair-sharing): per key with a ready
// task or a running attempt, its counts, its weight and the tasks parked at
// its cap. A key with neither has no entry here (its weight, if configured
// or set, stays in `weights`, by name). The key "" (id 0) has no entry: its
// counts are the pool's less the keyed ones, so a pool whose tasks have no
// keys pays a branch per transition. The order between
// keys is the ready queue's (fair_queue.hpp); this counts what the cap and
// the stats need.
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
    /// Validated by the caller (check_fairness).
    void configure(const FairnessConfig& config) {
        weights_.clear();
        for (const auto& [key, weight] : config.weights) weights_.emplace(key, weight);
        cap_ = config.per_key_concurrency.value_or(0);
        unkeyed_weight_ = weight_of("");
    }

    // The key "" keeps no counts of its own: its ready tasks and running
    // attempts are the pool's less the keyed ones, so a task without a key
    // costs a branch here. `ready` and `running` are the pool's counts.

    /// A task of `key` became Ready; returns the key's weight.
    double add_ready(FairKeyId key, const FairKeyNames& names) {
        if (key == 0) return unkeyed_weight_;
        Load& l = load(key, names);
        ++l.ready;
        ++keyed_ready_;
        return l.weight;
    }
    void remove_ready(FairKeyId key) {
        if (key == 0) return;
        Load& l = *find(key);
        --l.ready;
        --keyed_ready_;
        release_if_idle(key, l);
    }
    /// An attempt of `key` starts, `running` others running in the pool;
    /// true when the key just reached its cap.
    bool add_running(FairKeyId key, const FairKeyNames& names, std::size_t running) {
        if (key == 0) return cap_ != 0 && running + 1 - keyed_running_ == cap_;
        Load& l = load(key, names);
        ++l.running;
        ++keyed_running_;
        return cap_ != 0 && l.running == cap_;
    }
    /// An attempt of `key` ended, `running` still running in the pool;
    /// true when the key just fell below its cap.
    bool remove_running(FairKeyId key, std::size_t running) {
        if (key == 0) return cap_ != 0 && running + 1 - keyed_running_ == cap_;
        Load& l = *find(key);
        const bool was_capped = cap_ != 0 && l.running == cap_;
        --l.running;
        --keyed_running_;
        release_if_idle(key, l);
        return was_capped;
    }
    /// Starts loading the counts of `key`, which a transition will read soon.
    void prefetch_key(FairKeyId key) const {
        if (key == 0) return;
        if (const std::uint32_t* i = index_.find(key)) prefetch(&loads_[*i]);
    }
    bool capped() const { return cap_ != 0; }
    bool at_cap(FairKeyId key, std::size_t running) const {
        if (cap_ == 0) return false;
        if (key == 0) return running - keyed_running_ >= cap_;
        const Load* l = find(key);
        return l && l->running >= cap_;
    }

    /// A Ready task of a key at its cap that came out of the queue on score
    /// (a deadline, a return from a resource): it waits here.
    void park(FairKeyId key, QueueRef ref) {
        if (key == 0) return unkeyed_parked_.push_back(ref);
        find(key)->parked.push_back(ref);
    }
    /// Calls `f(ref)` for each task parked at the key's cap, and forgets them.
    template <class F>
    void unpark(FairKeyId key, F&& f) {
        Ring<QueueRef>* from = &unkeyed_parked_;
        if (key != 0) {
            Load* l = find(key);
            if (!l) return;
            from = &l->parked;
        }
        Ring<QueueRef> parked;
        std::swap(parked, *from);
        for (; !parked.empty(); parked.pop_front()) f(parked.front());
    }

    /// Sets the weight by name; `id`: the key's, if interned.
    void set_weight(std::string_view name, std::optional<FairKeyId> id, double weight) {
        weights_[std::string(name)] = weight;
        if (name.empty()) unkeyed_weight_ = weight;
        if (!id || *id == 0) return;
        if (Load* l = find(*id)) l->weight = weight;
    }

    /// Keys with a ready task or a running attempt.
    std::size_t active(std::size_t ready, std::size_t running) const {
        return index_.size() + (unkeyed_active(ready, running) ? 1 : 0);
    }
    /// The `n` keys with the most ready tasks, then the most running.
    std::vector<FairKeyLoad> top(std::size_t n, const FairKeyNames& names, std::size_t ready,
                                 std::size_t running) const {
        std::vector<FairKeyLoad> all;
        all.reserve(active(ready, running));
        if (unkeyed_active(ready, running)) all.push_back({"", ready - keyed_ready_, running - keyed_running_});
        for (std::uint32_t i = 0; i < loads_.size(); ++i)
            if (const Load& l = loads_[i]; !idle(l)) all.push_back({names.name(l.key), l.ready, l.running});
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
    struct Load {
        std::uint32_t ready = 0;
        std::uint32_t running = 0;
        double weight = 1.0;
        FairKeyId key = 0;
        Ring<QueueRef> parked;
    };
    static bool idle(const Load& l) { return l.ready == 0 && l.running == 0; }
    bool unkeyed_active(std::size_t ready, std::size_t running) const {
        return ready > keyed_ready_ || running > keyed_running_;
    }

    Load& load(FairKeyId key, const FairKeyNames& names) {
        if (const std::uint32_t* i = index_.find(key)) return loads_[*i];
        const std::uint32_t i = loads_.acquire();
        index_.insert(key, i);
        Load& l = loads_[i];
        l.key = key;
        l.weight = weight_of(names.name(key));
        return l;
    }
    Load* find(FairKeyId key) {
        const std::uint32_t* i = index_.find(key);
        return i ? &loads_[*i] : nullptr;
    }
    const Load* find(FairKeyId key) const { return const_cast<FairShare*>(this)->find(key); }
    void release_if_idle(FairKeyId key, Load& l) {
        if (!idle(l)) return;
        loads_.release(*index_.find(key));
        index_.erase(key);
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
    // The other active keys, as in FairQueue: an index by key id into a slab
    // (a free entry is idle, with no parked task, so `top` skips it).
    DenseKeyIndex index_;
    Slab<Load> loads_;
};

}  // namespace cronoq::core::detail
