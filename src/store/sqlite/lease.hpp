#pragma once
// The leader rows: who leads each shard, in which fencing epoch, until when
// (docs/store.md, "Shards").
#include "connection.hpp"
#include "rows.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cronoq::store::sqlite {

/// The lease of `shard`; a shard that never led reads as epoch 0, unheld.
LeaderRow read_leader(Connection& connection, const std::string& shard);

/// Whether a standby may take the lease over at `now`: nobody holds it, its
/// holder let it run out, or its holder was a process of this host that has
/// ended (killed, crashed: no need to wait for the lease; docs/store.md,
/// "Leadership and fencing").
bool takeable(const LeaderRow& row, WallTime now);

/// In its own write transaction: takes the lease of `shard` over if it is
/// takeable, in a new epoch, until `now + lease`; a shard's first takeover
/// gives it a range of ids of its own. Returns the new epoch, or nothing
/// when another process holds it.
std::optional<std::uint64_t> try_take(Connection& connection, const std::string& shard, const std::string& holder,
                                      WallTime now, std::chrono::nanoseconds lease);

/// Inside the caller's write transaction, before anything else it writes:
/// throws StoreError(Fenced) unless `epoch` still leads `shard`, then
/// extends its lease to `now + lease`.
void check_and_renew(Connection& connection, const std::string& shard, std::uint64_t epoch, WallTime now,
                     std::chrono::nanoseconds lease);

/// In its own write transaction: applies `change` when no process leads any
/// shard of the store (every lease is takeable at `now`), for a tool
/// writing while no scheduler runs (docs/store.md, "Paused pools"). False,
/// writing nothing, while one leads: it would not see the change. A
/// takeover waits for the transaction, so the next leader's recovery reads
/// the change.
bool apply_unless_led(Connection& connection, const Change& change, WallTime now);

/// Inside the caller's write transaction, after check_and_renew: gives the
/// lease of `shard` up, so a standby takes over at its next look.
void give_up(Connection& connection, const std::string& shard);

/// Every shard's lease (held: not takeable at `now`) and the pools' shards.
ShardMap read_shard_map(Connection& connection, WallTime now = std::chrono::system_clock::now());

/// Inside the caller's write transaction, right after a takeover of `shard`:
/// claims `pools` for it (and gives up its claims of pools it no longer
/// declares), unless one of them belongs to another shard that leads now or
/// holds unfinished tasks of it: then claims nothing and returns why,
/// naming the pool and both shards (docs/store.md, "Shards").
std::string claim_pools(Connection& connection, const std::string& shard, const std::vector<std::string>& pools,
                        WallTime now);

/// The first id of `shard`'s range (0 for "default"; docs/store.md, "Shards").
std::uint64_t id_base(Connection& connection, const std::string& shard);

}  // namespace cronoq::store::sqlite
