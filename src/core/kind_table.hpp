#pragma once
// Interned kind names in bounded memory. A kind is remembered while a task
// of it is live; of the kinds without one ("idle"), at most a capacity are
// kept, least recently used forgotten first, so that an application that
// gives every task its own kind does not grow the table (and what the pools
// learned per kind) forever.
#include <cronoq/core/task_spec.hpp>

#include "dependencies.hpp"  // StringMap

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cronoq::core::detail {

class KindTable {
public:
    struct Interned {
        KindId id;
        bool reused;  // the id belonged to a forgotten kind: drop what was learned of it
    };

    explicit KindTable(std::size_t idle_capacity) : idle_capacity_(idle_capacity) {
        // "" is kind 0, the default, and is never forgotten.
        const auto it = ids_.emplace("", 0).first;
        entries_.push_back(Entry{&it->first});
    }

    Interned intern(std::string_view name) {
        // Most tasks have no kind: kind 0 needs no hashing (it is never
        // idle, so neither its recency nor its epoch matters).
        if (name.empty()) return {0, false};
        if (auto it = ids_.find(name); it != ids_.end()) {
            Entry& e = entries_[it->second];
            e.epoch = epoch_;
            if (e.live == 0 && it->second != 0) {  // most recently used now
                unlink(it->second);
                link_last(it->second);
            }
            return {it->second, false};
        }
        // Kinds interned since the last admission call are protected: their
        // caller has not submitted with them yet (e.g. a batch).
        while (idle_count_ >= idle_capacity_ && idle_head_ != none && entries_[idle_head_].epoch != epoch_) forget(idle_head_);
        KindId id = 0;
        bool reused = false;
        if (!free_.empty()) {
            id = free_.back();
            free_.pop_back();
            reused = true;
        } else {
            id = static_cast<KindId>(entries_.size());
            entries_.emplace_back();
        }
        const auto it = ids_.emplace(std::string(name), id).first;
        entries_[id] = Entry{&it->first};
        entries_[id].epoch = epoch_;
        link_last(id);
        return {id, reused};
    }

    bool known(KindId id) const { return id < entries_.size() && entries_[id].name != nullptr; }
    /// Throws std::out_of_range for an id that names no kind (never
    /// interned, or forgotten and not reused).
    const std::string& name(KindId id) const {
        if (!known(id)) throw std::out_of_range("unknown kind id " + std::to_string(id));
        return *entries_[id].name;
    }
    std::size_t size() const { return ids_.size(); }

    /// A task of `id` was admitted / ended: live kinds are never forgotten.
    void task_admitted(KindId id) {
        if (entries_[id].live++ == 0 && id != 0) unlink(id);
    }
    void task_ended(KindId id) {
        if (--entries_[id].live == 0 && id != 0) link_last(id);
    }
    /// Called at each admission call: ids interned before it lose their
    /// protection from being forgotten.
    void next_admission() { ++epoch_; }

private:
    static constexpr KindId none = std::numeric_limits<KindId>::max();

    struct Entry {
        const std::string* name = nullptr;  // the key in ids_ (nodes are stable); null when free
        std::uint64_t live = 0;             // tasks admitted and not ended
        std::uint64_t epoch = 0;            // admission epoch of its last intern
        KindId older = none;                // neighbours in the idle list (live == 0)
        KindId newer = none;
    };

    void link_last(KindId id) {
        Entry& e = entries_[id];
        e.older = idle_tail_;
        e.newer = none;
        if (idle_tail_ != none)
            entries_[idle_tail_].newer = id;
        else
            idle_head_ = id;
        idle_tail_ = id;
        ++idle_count_;
    }

    void unlink(KindId id) {
        Entry& e = entries_[id];
        if (e.older != none)
            entries_[e.older].newer = e.newer;
        else
            idle_head_ = e.newer;
        if (e.newer != none)
            entries_[e.newer].older = e.older;
        else
            idle_tail_ = e.older;
        e.older = e.newer = none;
        --idle_count_;
    }

    void forget(KindId id) {
        unlink(id);
        ids_.erase(ids_.find(*entries_[id].name));  // by iterator: the name lives in that node
        entries_[id] = Entry{};
        free_.push_back(id);
    }

    std::size_t idle_capacity_;
    StringMap<KindId> ids_;
    std::vector<Entry> entries_;
    std::vector<KindId> free_;  // ids of forgotten kinds, reused first
    KindId idle_head_ = none;   // least recently used idle kind
    KindId idle_tail_ = none;
    std::size_t idle_count_ = 0;
    std::uint64_t epoch_ = 0;
};

}  // namespace cronoq::core::detail
