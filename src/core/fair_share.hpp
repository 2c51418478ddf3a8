#pragma once
// One pool's fair keys (docs/design.md#fair-sharing): per key with a ready
// task or a running attempt, its counts, its weight and the tasks parked at
// its cap. A key with neither has no entry here (its weight, if configured
// or set, stays in `weights`, by name). The key "" (id 0) lives outside the
// map: a pool whose tasks have no keys pays no lookup. The order between
// keys is the ready queue's (fair_queue.hpp); this counts what the cap and
// the stats need.
#include "fair_keys.hpp"
#include "flat_id_map.hpp"
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
    }

    /// A task of `key` became Ready; returns the key's weight.
    double add_ready(FairKeyId key, const FairKeyNames& names) {
        Load& l = load(key, names);
        ++l.ready;
        return l.weight;
    }
    void remove_ready(FairKeyId key) {
        Load& l = *find(key);
        --l.ready;
        release_if_idle(key, l);
    }
    /// An attempt of `key` started; true when the key just reached its cap.
    bool add_running(FairKeyId key, const FairKeyNames& names) {
        Load& l = load(key, names);
        ++l.running;
        return cap_ != 0 && l.running == cap_;
    }
    /// An attempt of `key` ended; true when the key just fell below its cap.
    bool remove_running(FairKeyId key) {
        Load& l = *find(key);
        const bool was_capped = cap_ != 0 && l.running == cap_;
        --l.running;
        release_if_idle(key, l);
        return was_capped;
    }
    bool capped() const { return cap_ != 0; }
    bool at_cap(FairKeyId key) const {
        if (cap_ == 0) return false;
        const Load* l = find(key);
        return l && l->running >= cap_;
    }

    /// A Ready task of a key at its cap that came out of the queue on score
    /// (a deadline, a return from a resource): it waits here.
    void park(FairKeyId key, QueueRef ref) { find(key)->parked.push_back(ref); }
    /// Calls `f(ref)` for each task parked at the key's cap, and forgets them.
    template <class F>
    void unpark(FairKeyId key, F&& f) {
        Load* l = find(key);
        if (!l) return;
        Ring<QueueRef> parked;
        std::swap(parked, l->parked);
        for (; !parked.empty(); parked.pop_front()) f(parked.front());
    }

    /// Sets the weight by name; true (and `*id` set) when the key is active.
    void set_weight(std::string_view name, std::optional<FairKeyId> id, double weight) {
        weights_[std::string(name)] = weight;
        if (!id) return;
        if (Load* l = find(*id)) l->weight = weight;
    }

    /// Keys with a ready task or a running attempt.
    std::size_t active() const { return index_.size() + (idle(unkeyed_) ? 0 : 1); }
    /// The `n` keys with the most ready tasks, then the most running.
    std::vector<FairKeyLoad> top(std::size_t n, const FairKeyNames& names) const {
        std::vector<FairKeyLoad> all;
        all.reserve(active());
        if (!idle(unkeyed_)) all.push_back({"", unkeyed_.ready, unkeyed_.running});
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

    Load& load(FairKeyId key, const FairKeyNames& names) {
        if (key == 0) {
            if (idle(unkeyed_)) unkeyed_.weight = weight_of("");
            return unkeyed_;
        }
        if (const std::uint32_t* i = index_.find(key)) return loads_[*i];
        const std::uint32_t i = loads_.acquire();
        index_.insert(key, i);
        Load& l = loads_[i];
        l.key = key;
        l.weight = weight_of(names.name(key));
        return l;
    }
    Load* find(FairKeyId key) {
        if (key == 0) return &unkeyed_;
        const std::uint32_t* i = index_.find(key);
        return i ? &loads_[*i] : nullptr;
    }
    const Load* find(FairKeyId key) const { return const_cast<FairShare*>(this)->find(key); }
    void release_if_idle(FairKeyId key, Load& l) {
        if (!idle(l)) return;
        if (key == 0) {
            if (!unkeyed_.parked.empty()) unkeyed_.parked = Ring<QueueRef>{};  // only stale entries left
            return;
        }
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
    Load unkeyed_;
    // The other active keys, as in FairQueue: an index into a slab (a free
    // entry is idle, with no parked task, so `top` skips it).
    FlatIdMap index_;
    Slab<Load> loads_;
};

}  // namespace cronoq::core::detail
