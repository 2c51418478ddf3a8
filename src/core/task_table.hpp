#pragma once
// The engine's table of tasks (docs/design.md#engine-source-layout): a slot
// per task from its admission until it is forgotten, its rare fields and its
// running attempt out of line, the ids and leases that find a slot, and the
// keys tasks hold. Every other component reads tasks through it; only the
// lifecycle (lifecycle.hpp) moves a task from one status to another.
#include "dependencies.hpp"  // StringMap
#include "engine_types.hpp"
#include "fair_keys.hpp"
#include "flat_id_map.hpp"
#include "prefetch.hpp"
#include "runtime/large_allocator.hpp"
#include "slab.hpp"

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cronoq::core {

class TaskTable {
public:
    // ---- slots --------------------------------------------------------------
    /// A slot for a new task: the last one freed first, still in cache.
    std::uint32_t allocate() {
        if (!free_.empty()) {
            const std::uint32_t s = free_.back();
            free_.pop_back();
            return s;
        }
        slots_.emplace_back();
        return static_cast<std::uint32_t>(slots_.size() - 1);
    }
    /// Frees the slot of a forgotten task, its id and its extras.
    void forget(std::uint32_t s) {
        TaskSlot& t = slots_[s];
        by_task_.erase(t.id.value);
        t.id = TaskId{};
        fair_keys.release(t.fair_key);
        t.fair_key = 0;
        if (t.extras != no_slot) {
            extras_.release(t.extras);
            t.extras = no_slot;
        }
        free_.push_back(s);
    }
    TaskSlot& operator[](std::uint32_t s) { return slots_[s]; }
    const TaskSlot& operator[](std::uint32_t s) const { return slots_[s]; }
    std::uint32_t size() const { return static_cast<std::uint32_t>(slots_.size()); }
    std::uint32_t index_of(const TaskSlot& t) const { return static_cast<std::uint32_t>(&t - slots_.data()); }
    /// Whether a queue or parking entry still names the task as it was.
    bool live(detail::QueueRef r) const { return slots_[r.slot].gen == r.gen; }
    void prefetch(std::uint32_t s) const { detail::prefetch(&slots_[s]); }

    /// When the task in slot `s` was admitted (restored: when it came back).
    void set_admitted(std::uint32_t s, Time at) { slots_[s].admitted = at; }
    Time admitted(std::uint32_t s) const { return slots_[s].admitted; }
    /// Slots in use (live and retained tasks).
    std::size_t held() const { return slots_.size() - free_.size(); }
    /// No task id below this was ever admitted here (a scan stops at it).
    std::uint64_t lowest_id() const { return lowest_id_; }

    // ---- ids ----------------------------------------------------------------
    void add_id(TaskId id, std::uint32_t s) {
        by_task_.insert(id.value, s);
        if (id.value < lowest_id_) lowest_id_ = id.value;
    }
    void prefetch_id(TaskId id) const { by_task_.prefetch(id.value); }
    /// The slot of a known task (live or retained), else null.
    TaskSlot* find(TaskId id) {
        const std::uint32_t* v = by_task_.find(id.value);
        return v ? &slots_[*v] : nullptr;
    }
    const TaskSlot* find(TaskId id) const {
        const std::uint32_t* v = by_task_.find(id.value);
        return v ? &slots_[*v] : nullptr;
    }
    /// The slot of a task that is not terminal.
    std::optional<std::uint32_t> live_slot(TaskId id) const {
        const std::uint32_t* v = by_task_.find(id.value);
        if (!v || is_terminal(slots_[*v].status)) return std::nullopt;
        return *v;
    }
    /// The slot of a terminal task still known, else null.
    TaskSlot* retained_slot(TaskId id) {
        TaskSlot* t = find(id);
        return t && is_terminal(t->status) ? t : nullptr;
    }
    std::optional<TaskStatus> status_of(TaskId id) const {
        const TaskSlot* t = find(id);
        if (!t) return std::nullopt;
        return t->status;
    }
    std::optional<std::uint64_t> user_of(TaskId id) const {
        const TaskSlot* t = find(id);
        if (!t) return std::nullopt;
        return t->user;
    }
    /// "task 12" or "task 12 (\"key\")", for messages.
    std::string describe(TaskId id) const;

    // ---- a task's rare fields -------------------------------------------------
    /// Its TaskExtras, made on first use.
    TaskExtras& extras_of(TaskSlot& t) {
        if (t.extras == no_slot) t.extras = extras_.acquire();
        return extras_[t.extras];
    }
    const TaskExtras* find_extras(const TaskSlot& t) const {
        return t.extras == no_slot ? nullptr : &extras_[t.extras];
    }
    /// Of a task known to have them (has_deadline).
    TaskExtras& extras(const TaskSlot& t) { return extras_[t.extras]; }
    const TaskExtras& extras(const TaskSlot& t) const { return extras_[t.extras]; }
    const std::string* key_of(const TaskSlot& t) const {
        const TaskExtras* e = find_extras(t);
        return e ? e->key : nullptr;
    }

    // ---- keys ---------------------------------------------------------------
    std::optional<TaskId> key_holder(std::string_view key) const {
        auto held = keys_.find(key);
        if (held == keys_.end()) return std::nullopt;
        return held->second;
    }
    /// `key` now names `id`; the returned string lives as long as the key
    /// is held (map nodes are stable), so that extras point at it.
    const std::string* hold_key(const std::string& key, TaskId id) {
        return &keys_.emplace(key, id).first->first;
    }
    void drop_key(const std::string& key) { keys_.erase(keys_.find(key)); }

    // ---- running attempts and their leases ------------------------------------
    AttemptState& attempt(const TaskSlot& t) { return attempts_[t.run]; }
    const AttemptState& attempt(const TaskSlot& t) const { return attempts_[t.run]; }
    /// A fresh attempt for `t`, which holds it in `run`.
    AttemptState& open_attempt(TaskSlot& t) {
        t.run = attempts_.acquire();
        return attempts_[t.run];
    }
    /// Releases `t`'s attempt and its lease; returns what it was.
    AttemptState close_attempt(TaskSlot& t) {
        const AttemptState a = attempts_[t.run];
        attempts_.release(t.run);
        t.run = no_slot;
        by_lease_.erase(a.lease.value);
        return a;
    }
    void add_lease(LeaseId lease, std::uint32_t s) { by_lease_.insert(lease.value, s); }
    const std::uint32_t* find_lease(LeaseId lease) const { return by_lease_.find(lease.value); }

    /// Tasks admitted and not yet terminal.
    std::size_t live_count = 0;
    /// The fair keys of live and retained tasks: a slot holds its key's
    /// name (TaskSlot::fair_key) until `forget` releases it.
    detail::FairKeyNames fair_keys;

private:
    std::vector<TaskSlot, detail::LargeAllocator<TaskSlot>> slots_;
    std::vector<std::uint32_t> free_;
    std::uint64_t lowest_id_ = std::numeric_limits<std::uint64_t>::max();
    detail::Slab<TaskExtras> extras_;      // TaskSlot::extras
    detail::Slab<AttemptState> attempts_;  // TaskSlot::run
    detail::FlatIdMap by_task_;
    detail::FlatIdMap by_lease_;
    detail::StringMap<TaskId> keys_;  // of live and retained tasks
};

inline std::string TaskTable::describe(TaskId id) const {
    std::string out = "task " + std::to_string(id.value);
    const TaskSlot* t = find(id);
    if (!t) return out;
    if (const std::string* key = key_of(*t)) {
        out.append(" (\"");
        out.append(*key);
        out.append("\")");
    }
    return out;
}

}  // namespace cronoq::core
