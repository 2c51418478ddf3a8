#pragma once
// Bounds on tasks not yet running, and the overflow policies
// (docs/guide/resources-and-bounds.md): whether a new task has room, the
// victim a shedding pool gives up for it, and SpaceAvailable for pools that
// answered Full once room comes back. Owns the per-pool lists of ready
// tasks in arrival order that shedding picks victims from.
#include <cronoq/bounds.hpp>

#include "engine_types.hpp"
#include "outbox.hpp"
#include "task_table.hpp"

#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cronoq::core {

class BacklogBounds {
public:
    /// Reads the pools' counters and configs and links the tasks' shed
    /// lists (by slot, here); both outlive it.
    BacklogBounds(const Bounds& global, TaskTable& tasks, const std::vector<PoolState>& pools)
        : global_(global), tasks_(tasks), pools_(pools) {}

    /// A new pool; sets its may_shed (a pool that may shed, or any pool
    /// under global bounds, keeps its ready tasks in shed lists).
    void add_pool(PoolState& pool);
    /// Ready task `s` joins / leaves its (pool, class) list (pools that shed).
    void link_ready(std::uint32_t s);
    void unlink_ready(std::uint32_t s);

    /// Room for one more task of `pool` at `priority`: nothing in the way,
    /// a victim the caller sheds, or the error (Full also marks the pool for
    /// a SpaceAvailable). `why` says which bound is full.
    struct Room {
        std::optional<SubmitError> error;
        std::uint32_t victim = no_slot;
    };
    Room make_room(PoolId pool, Priority priority, std::string& why) {
        // Most pools are unbounded: every submit asks, so answer inline.
        const PoolState& p = pools_[pool];
        if (!global_.bounded() && (!p.config.bounds.bounded() || p.pending() < p.config.bounds.max_pending)) return {};
        return make_room_when_bounded(pool, priority, why);
    }
    /// Room for a batch: `incoming[pool]` new tasks per pool; never sheds.
    std::optional<SubmitError> check_room(std::span<const std::size_t> incoming, std::string& why);
    /// SpaceAvailable for each pool that answered Full and has room again.
    void announce_space(Outbox& out) {
        if (full_pools_ > 0) announce(out);
    }

private:
    struct PoolLists {
        std::array<std::uint32_t, priority_count> oldest{no_slot, no_slot, no_slot, no_slot};
        std::array<std::uint32_t, priority_count> newest{no_slot, no_slot, no_slot, no_slot};
        bool full = false;      // a submit got Full: SpaceAvailable once there is room
    };
    Room make_room_when_bounded(PoolId pool, Priority priority, std::string& why);
    std::size_t pending_total() const;
    bool has_room(std::size_t pool, std::size_t incoming) const;
    void mark_full(std::size_t pool);
    std::uint32_t pick_victim(PoolId pool, Priority priority, bool pool_full) const;
    void announce(Outbox& out);

    // A ready task's neighbours in its shed list, by slot: beside the task
    // table, not in its slots, since only pools that may shed use them.
    struct Links {
        std::uint32_t older = no_slot;
        std::uint32_t newer = no_slot;
    };

    Bounds global_;
    TaskTable& tasks_;
    std::vector<Links> links_;
    const std::vector<PoolState>& pools_;
    std::vector<PoolLists> lists_;
    std::size_t full_pools_ = 0;
};

}  // namespace cronoq::core
