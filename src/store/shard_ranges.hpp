#pragma once
// Task and lease ids of a store's shards (docs/store.md, "Shards"): each
// shard's leaders hand ids out from a range of their own, so that two
// leaders of two shards never hand out one id, whatever they reserve ahead.
// The "default" shard's range starts at 0 (so a store of one shard keeps
// its ids), the next shard's at `shard_id_range`, and so on up to the
// client range (`first_client_task_id`).
#include <cronoq/store/client_access.hpp>
#include <cronoq/store/store.hpp>

#include <cstdint>
#include <string>

namespace cronoq::store {

inline constexpr std::uint64_t shard_id_range = std::uint64_t{1} << 40;

/// Throws StoreError(Io) when a shard's range starting at `base` would reach
/// the client range: the store has as many shards as it can hold (255 more
/// than "default").
inline void check_shard_range(std::uint64_t base, const std::string& shard, const std::string& store) {
    if (base + shard_id_range <= first_client_task_id) return;
    throw StoreError(StoreErrorKind::Io, "cannot lead shard \"" + shard + "\" of " + store +
                                             ": the store holds as many shards as it has id ranges for (256)");
}

/// The name of a shard's high-water mark of `what` ("next_task_id",
/// "next_lease_id") among the store's settings: the "default" shard keeps
/// the name a store of one shard had.
inline std::string mark_name(const std::string& what, const std::string& shard) {
    return shard == "default" ? what : what + "@" + shard;
}

/// SQL true for a task of `pool_column` that belongs to the shard named by
/// the parameter `shard_param` ("?2", "$1"): its pool is claimed by that
/// shard, or, for "default", by no other shard. Pools are claimed at a
/// takeover (docs/store.md, "Shards"), so the shard of a task never changes
/// while it is unfinished.
inline std::string owned_pool_sql(const std::string& pool_column, const std::string& shard_param,
                                  const std::string& shard_pools_table) {
    return "(" + pool_column + " IN (SELECT pool FROM " + shard_pools_table + " WHERE shard = " + shard_param +
           ") OR (" + shard_param + " = 'default' AND (" + pool_column + " IS NULL OR " + pool_column +
           " NOT IN (SELECT pool FROM " + shard_pools_table + "))))";
}

/// Why `shard` may not claim `pool`, which shard `other` claimed: `other`
/// leads now, or the store holds unfinished tasks of it (`holds`).
inline std::string claimed_pool_conflict(const std::string& shard, const std::string& other, const std::string& pool,
                                         bool holds) {
    return "pool \"" + pool + "\" is declared by shard \"" + shard + "\" and by shard \"" + other + "\"" +
           (holds ? ", which holds unfinished tasks of it (moving a pool to another shard needs it drained)"
                  : ", which leads now");
}

/// Why a shard may not give up its claim of `pool` (docs/store.md,
/// "Shards"): it claimed the pool, no longer declares it, and the store
/// still holds unfinished tasks of it, which no leader would run then.
inline std::string kept_pool_conflict(const std::string& shard, const std::string& pool) {
    return "shard \"" + shard + "\" no longer declares pool \"" + pool +
           "\", but the store holds unfinished tasks of it that only shard \"" + shard +
           "\" runs: declare the pool until they ended (or cancel them)";
}

/// Why `shard` may not claim `pool` yet (docs/store.md, "Shards"): no
/// shard claimed it, the "default" shard's leader leads now and takes its
/// tasks, and the store holds unfinished ones, which both would then run.
inline std::string unclaimed_pool_conflict(const std::string& shard, const std::string& pool) {
    return "pool \"" + pool + "\" is declared by shard \"" + shard +
           "\", but the store holds unfinished tasks of it that clients submitted while no shard declared it, "
           "which the leader of shard \"default\" takes now: open again once they ended";
}

}  // namespace cronoq::store
