// A store's shards on PostgreSQL (docs/store.md, "Shards"): the leader rows
// of shards that never led, the pools' claims, and the shard map the worker
// endpoint and `cronoq-store` read.
#include "store_impl.hpp"

#include "../shard_ranges.hpp"
#include "../stored_values.hpp"

#include <algorithm>
#include <utility>

namespace cronoq::store::postgres {

void ensure_leader_row(Connection& c, const Names& n, const std::string& shard) {
    if (c.exec("SELECT 1 FROM " + n.leader + " WHERE shard = $1", {Param(shard)}).rows() == 1) return;
    // Two first takeovers of two new shards must not pick one range: the
    // table's lock orders them (rare: once per shard, ever).
    c.exec("LOCK TABLE " + n.leader + " IN SHARE ROW EXCLUSIVE MODE");
    if (c.exec("SELECT 1 FROM " + n.leader + " WHERE shard = $1", {Param(shard)}).rows() == 1) return;
    const auto base =
        static_cast<std::uint64_t>(c.exec("SELECT coalesce(max(id_base), 0) FROM " + n.leader).int64(0, 0)) +
        shard_id_range;
    check_shard_range(base, shard, "the PostgreSQL schema " + n.schema);
    c.exec("INSERT INTO " + n.leader +
               " (shard, epoch, holder, backend_pid, expires_at, id_base) VALUES ($1, 0, NULL, NULL, '-infinity', $2)",
           {Param(shard), Param(static_cast<std::int64_t>(base))});
}

ShardMap read_shard_map(Connection& c, const Names& n) {
    ShardMap map;
    Result leases = c.exec(
        "SELECT shard, epoch, COALESCE(holder IS NOT NULL AND expires_at > now() AND backend_pid IN (SELECT pid FROM "
        "pg_stat_activity), false), holder FROM " + n.leader + " ORDER BY shard");
    for (int i = 0; i < leases.rows(); ++i)
        map.leases.push_back(ShardMap::Lease{
            leases.text(i, 0), LeaseView{static_cast<std::uint64_t>(leases.int64(i, 1)), leases.boolean(i, 2)},
            leases.optional_text(i, 3)});
    Result pools = c.exec("SELECT pool, shard FROM " + n.shard_pools + " ORDER BY pool");
    for (int i = 0; i < pools.rows(); ++i) map.pools.emplace_back(pools.text(i, 0), pools.text(i, 1));
    return map;
}

std::string claim_pools(Connection& c, const Names& n, const std::string& shard, const std::vector<std::string>& pools) {
    // Two shards claiming at once take turns: the second sees the first's claims.
    c.exec("LOCK TABLE " + n.shard_pools + " IN SHARE ROW EXCLUSIVE MODE");
    const std::string leads_sql =
        "COALESCE((SELECT holder IS NOT NULL AND expires_at > now() AND backend_pid IN (SELECT pid FROM "
        "pg_stat_activity) FROM " + n.leader + " WHERE shard = $1), false)";
    const std::string unfinished_sql =
        "EXISTS (SELECT 1 FROM " + n.tasks + " WHERE pool = $2 AND status NOT IN " + terminal_status_list() + ")";
    const auto state = [&](const std::string& other, const std::string& pool) {
        Result r = c.exec("SELECT " + leads_sql + ", " + unfinished_sql, {Param(other), Param(pool)});
        return std::pair{r.boolean(0, 0), r.boolean(0, 1)};
    };
    for (const std::string& pool : pools) {
        Result owner = c.exec("SELECT shard FROM " + n.shard_pools + " WHERE pool = $1", {Param(pool)});
        if (owner.rows() == 0) {
            // Unclaimed: the "default" leader takes its tasks until now.
            if (shard == "default") continue;
            if (const auto [leads, holds] = state("default", pool); leads && holds)
                return unclaimed_pool_conflict(shard, pool);
            continue;
        }
        const std::string other = owner.text(0, 0);
        if (other == shard) continue;
        const auto [leads, holds] = state(other, pool);
        if (leads || holds)
            return claimed_pool_conflict(shard, other, pool, holds);
    }
    // A pool this shard no longer declares stays its own while it has work
    // (the "default" shard ends such tasks itself, as a store of one shard did).
    Result claimed = c.exec("SELECT pool FROM " + n.shard_pools + " WHERE shard = $1 ORDER BY pool", {Param(shard)});
    for (int i = 0; i < claimed.rows(); ++i) {
        const std::string pool = claimed.text(i, 0);
        if (shard == "default" || std::find(pools.begin(), pools.end(), pool) != pools.end()) continue;
        if (state(shard, pool).second) return kept_pool_conflict(shard, pool);
    }
    c.exec("DELETE FROM " + n.shard_pools + " WHERE shard = $1", {Param(shard)});
    for (const std::string& pool : pools)
        c.exec("INSERT INTO " + n.shard_pools + " (pool, shard) VALUES ($1, $2) ON CONFLICT (pool) DO UPDATE SET "
               "shard = excluded.shard",
               {Param(pool), Param(shard)});
    return {};
}

}  // namespace cronoq::store::postgres
