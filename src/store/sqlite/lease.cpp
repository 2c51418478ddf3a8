#include "lease.hpp"

#include "../holder_identity.hpp"
#include "../shard_ranges.hpp"
#include "../stored_values.hpp"

#include <algorithm>
#include <limits>

namespace cronoq::store::sqlite {

namespace {

std::int64_t expiry(WallTime now, std::chrono::nanoseconds lease) {
    const std::int64_t stored = to_stored(now);
    // Saturated: a lease of nanoseconds::max() means "until released".
    return lease.count() > std::numeric_limits<std::int64_t>::max() - stored ? std::numeric_limits<std::int64_t>::max()
                                                                             : stored + lease.count();
}

/// Inside the caller's write transaction: the row of a shard that never led,
/// with the next free range of ids.
void ensure_row(Connection& connection, const std::string& shard) {
    Statement exists(connection, "SELECT 1 FROM leader WHERE shard = ?1");
    if (exists.bind(1, shard).step()) return;
    const auto base = static_cast<std::uint64_t>(connection.query_int("SELECT coalesce(max(id_base), 0) FROM leader")) +
                      shard_id_range;
    check_shard_range(base, shard, connection.path().string());
    Statement insert(connection,
                     "INSERT INTO leader (shard, epoch, holder, expires_at, id_base) VALUES (?1, 0, NULL, 0, ?2)");
    insert.bind(1, shard).bind(2, static_cast<std::int64_t>(base)).run();
}

}  // namespace

LeaderRow read_leader(Connection& connection, const std::string& shard) {
    Statement statement(connection, "SELECT epoch, holder, expires_at FROM leader WHERE shard = ?1");
    if (!statement.bind(1, shard).step()) return LeaderRow{0, std::nullopt, from_stored(0), std::nullopt};
    return LeaderRow{static_cast<std::uint64_t>(statement.int64(0)), statement.optional_text(1),
                     from_stored(statement.int64(2)), std::nullopt};
}

bool takeable(const LeaderRow& row, WallTime now) {
    return !row.holder || row.expires_at <= now || holder_has_ended(*row.holder);
}

std::optional<std::uint64_t> try_take(Connection& connection, const std::string& shard, const std::string& holder,
                                      WallTime now, std::chrono::nanoseconds lease) {
    WriteTransaction transaction(connection);
    ensure_row(connection, shard);
    const LeaderRow row = read_leader(connection, shard);
    if (!takeable(row, now)) return std::nullopt;
    const std::uint64_t epoch = row.epoch + 1;
    Statement update(connection, "UPDATE leader SET epoch = ?1, holder = ?2, expires_at = ?3 WHERE shard = ?4");
    update.bind(1, static_cast<std::int64_t>(epoch)).bind(2, holder).bind(3, expiry(now, lease)).bind(4, shard).run();
    transaction.commit();
    return epoch;
}

void check_and_renew(Connection& connection, const std::string& shard, std::uint64_t epoch, WallTime now,
                     std::chrono::nanoseconds lease) {
    const LeaderRow row = read_leader(connection, shard);
    if (row.epoch != epoch)
        throw StoreError(StoreErrorKind::Fenced,
                         "fenced: another process (" + row.holder.value_or("none") + ") took leadership of shard \"" +
                             shard + "\" of " + connection.path().string() + " over in epoch " +
                             std::to_string(row.epoch) + "; this process led epoch " + std::to_string(epoch));
    Statement update(connection, "UPDATE leader SET expires_at = ?1 WHERE shard = ?2");
    update.bind(1, expiry(now, lease)).bind(2, shard).run();
}

bool apply_unless_led(Connection& connection, const Change& change, WallTime now) {
    WriteTransaction transaction(connection);
    for (const ShardMap::Lease& lease : read_shard_map(connection, now).leases)
        if (lease.lease.held) return false;
    ChangeWriter(connection, "default").apply(change);
    // A pool's pauses and resumes that clients committed earlier are
    // older than this word: the next leader must not apply them after it
    // (docs/store.md, "Paused pools").
    if (const auto* paused = std::get_if<PoolPaused>(&change)) {
        Statement superseded(connection, "DELETE FROM inbox WHERE op IN (?1, ?2)");
        superseded.bind(1, inbox_op_text(InboxEntry::Op::Pause, paused->pool));
        superseded.bind(2, inbox_op_text(InboxEntry::Op::Resume, paused->pool)).run();
    }
    transaction.commit();
    return true;
}

void give_up(Connection& connection, const std::string& shard) {
    Statement update(connection, "UPDATE leader SET holder = NULL, expires_at = 0 WHERE shard = ?1");
    update.bind(1, shard).run();
}

ShardMap read_shard_map(Connection& connection, WallTime now) {
    ShardMap map;
    Statement leases(connection, "SELECT shard, epoch, holder, expires_at FROM leader ORDER BY shard");
    while (leases.step()) {
        const LeaderRow row{static_cast<std::uint64_t>(leases.int64(1)), leases.optional_text(2),
                            from_stored(leases.int64(3)), std::nullopt};
        map.leases.push_back(ShardMap::Lease{leases.text(0), LeaseView{row.epoch, !takeable(row, now)}, row.holder});
    }
    Statement pools(connection, "SELECT pool, shard FROM shard_pools ORDER BY pool");
    while (pools.step()) map.pools.emplace_back(pools.text(0), pools.text(1));
    return map;
}

std::string claim_pools(Connection& connection, const std::string& shard, const std::vector<std::string>& pools,
                        WallTime now) {
    const std::string unfinished_sql =
        std::string("SELECT EXISTS (SELECT 1 FROM tasks WHERE pool = ?1 AND status NOT IN ") + terminal_status_list() +
        ")";
    Statement owner(connection, "SELECT shard FROM shard_pools WHERE pool = ?1");
    Statement unfinished(connection, unfinished_sql.c_str());
    const auto holds_unfinished = [&](const std::string& pool) {
        unfinished.bind(1, pool).step();
        const bool holds = unfinished.int64(0) != 0;
        unfinished.reset();
        return holds;
    };
    for (const std::string& pool : pools) {
        if (!owner.bind(1, pool).step()) {
            owner.reset();
            // Unclaimed: the "default" leader takes its tasks until now.
            if (shard != "default" && !takeable(read_leader(connection, "default"), now) && holds_unfinished(pool))
                return unclaimed_pool_conflict(shard, pool);
            continue;
        }
        const std::string other = owner.text(0);
        owner.reset();
        if (other == shard) continue;
        const bool leads = !takeable(read_leader(connection, other), now);
        const bool holds = holds_unfinished(pool);
        if (leads || holds)
            return claimed_pool_conflict(shard, other, pool, holds);
    }
    // A pool this shard no longer declares stays its own while it has work
    // (the "default" shard ends such tasks itself, as a store of one shard did).
    std::vector<std::string> claimed;
    Statement mine(connection, "SELECT pool FROM shard_pools WHERE shard = ?1 ORDER BY pool");
    mine.bind(1, shard);
    while (mine.step()) claimed.push_back(mine.text(0));
    for (const std::string& pool : claimed)
        if (shard != "default" && std::find(pools.begin(), pools.end(), pool) == pools.end() &&
            holds_unfinished(pool))
            return kept_pool_conflict(shard, pool);
    Statement drop(connection, "DELETE FROM shard_pools WHERE shard = ?1");
    drop.bind(1, shard).run();
    Statement claim(connection, "INSERT INTO shard_pools (pool, shard) VALUES (?1, ?2) "
                                "ON CONFLICT (pool) DO UPDATE SET shard = excluded.shard");
    for (const std::string& pool : pools) claim.bind(1, pool).bind(2, shard).run();
    return {};
}

std::uint64_t id_base(Connection& connection, const std::string& shard) {
    Statement statement(connection, "SELECT id_base FROM leader WHERE shard = ?1");
    if (!statement.bind(1, shard).step()) return 0;
    return static_cast<std::uint64_t>(statement.int64(0));
}

}  // namespace cronoq::store::sqlite
