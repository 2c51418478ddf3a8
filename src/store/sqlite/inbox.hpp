#pragma once
// The clients' tables (docs/store.md, "Clients"): the inbox a leader takes
// client submissions and cancels from, and the shards' configurations.
// Each function runs inside the caller's transaction, or alone.
#include "connection.hpp"

#include <cronoq/store/journal.hpp>

#include <cstddef>
#include <string_view>
#include <vector>

namespace cronoq::store::sqlite {

/// Up to `limit` entries, oldest first (commit order: one writer at a
/// time), each submission with its task's row as stored now; a submission
/// whose row is gone (pruned) comes without one.
std::vector<InboxEntry> read_inbox(Connection& connection, std::size_t limit);

std::vector<ShardConfig> read_configs(Connection& connection);

}  // namespace cronoq::store::sqlite
