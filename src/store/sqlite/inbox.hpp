#pragma once
// The clients' tables (docs/store.md, "Clients"): the inbox a leader takes
// client submissions and cancels from, and the shards' configurations.
// Each function runs inside the caller's transaction, or alone.
#include "connection.hpp"

#include <cronoq/store/journal.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cronoq::store::sqlite {

/// Up to `limit` entries of `shard` (for tasks of its pools, docs/store.md,
/// "Shards"), oldest first (commit order: one writer at a time), each
/// submission with its task's row as stored now; an entry whose row is gone
/// (pruned) is the "default" shard's, and a submission comes without one.
std::vector<InboxEntry> read_inbox(Connection& connection, const std::string& shard, std::size_t limit);

std::vector<ShardConfig> read_configs(Connection& connection);

}  // namespace cronoq::store::sqlite
