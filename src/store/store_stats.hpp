#pragma once
// What `cronoq-store stats` reports of a store, the same for every backend:
// the schema version, rows by status, paused pools, the high-water marks and
// the lease.
#include <cronoq/store/journal.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cronoq::store {

/// The lease row: who leads, in which fencing epoch, until when.
struct LeaderRow {
    std::uint64_t epoch = 0;
    std::optional<std::string> holder;
    WallTime expires_at;  ///< the epoch for none
    /// PostgreSQL only: the leader's server session (docs/postgres.md).
    std::optional<std::int64_t> backend_pid;
};

struct StoreStats {
    std::int64_t schema_version = 0;
    std::map<std::string, std::int64_t> tasks_by_status;
    std::int64_t tasks = 0;
    std::int64_t recurring = 0;
    std::vector<std::string> paused_pools;  ///< by name (docs/store.md, "Paused pools")
    HighWaterMarks marks;
    LeaderRow leader;  ///< the "default" shard's
    ShardMap shards;
};

}  // namespace cronoq::store
