#pragma once
// The leader row: who leads, in which fencing epoch, until when.
#include "connection.hpp"
#include "rows.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace cronoq::store::sqlite {

LeaderRow read_leader(Connection& connection);

/// Whether a standby may take the lease over at `now`: nobody holds it, its
/// holder let it run out, or its holder was a process of this host that has
/// ended (killed, crashed: no need to wait for the lease; docs/store.md,
/// "Leadership and fencing").
bool takeable(const LeaderRow& row, WallTime now);

/// In its own write transaction: takes the lease over if it is takeable,
/// in a new epoch, until `now + lease`. Returns the new epoch, or nothing
/// when another process holds it.
std::optional<std::uint64_t> try_take(Connection& connection, const std::string& holder, WallTime now,
                                      std::chrono::nanoseconds lease);

/// Inside the caller's write transaction, before anything else it writes:
/// throws StoreError(Fenced) unless `epoch` still leads, then extends the
/// lease to `now + lease`.
void check_and_renew(Connection& connection, std::uint64_t epoch, WallTime now, std::chrono::nanoseconds lease);

/// In its own write transaction: applies `change` when no process leads the
/// store (the lease is takeable at `now`), for a tool writing while no
/// scheduler runs (docs/store.md, "Paused pools"). False, writing nothing,
/// while one leads: it would not see the change. A takeover waits for the
/// transaction, so the next leader's recovery reads the change.
bool apply_unless_led(Connection& connection, const Change& change, WallTime now);

/// Inside the caller's write transaction, after check_and_renew: gives the
/// lease up, so a standby takes over at its next look.
void give_up(Connection& connection);

}  // namespace cronoq::store::sqlite
