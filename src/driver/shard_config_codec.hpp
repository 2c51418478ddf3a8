#pragma once
// What a shard's leader tells clients of its store about itself
// (docs/store.md, "Clients"): the body of its `store::ShardConfig`, JSON
// text written in the first commit after it starts leading. A client
// (`cronoq::Client`) decodes it to check a task before it commits it: an
// unknown pool or resource, labels on a local pool, a payload over the
// store's limit. One type, encoded by the leader and decoded by clients, so
// that the two never disagree on the format. No Asio, no engine: only the
// JSON library.
#include <cronoq/bounds.hpp>
#include <cronoq/resource.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cronoq::detail {

/// The shard a scheduler leads unless `Builder::shard` names another
/// (docs/store.md, "Shards").
inline constexpr std::string_view default_shard = "default";

struct ShardConfigBody {
    struct PoolEntry {
        std::string name;
        /// Attempts run on remote workers: only such a pool takes task
        /// labels (`Task::label`).
        bool remote = false;
        /// The pool's `Bounds::max_pending`; empty when unbounded.
        std::optional<std::size_t> max_pending;
        /// What a submission beyond the bound becomes at ingestion:
        /// `Wait` stays in the store until there is room, the others end
        /// `Shed` when no room can be made.
        OverflowPolicy overflow = OverflowPolicy::Wait;
        /// Concurrent attempts at most (a remote pool: 0 when uncapped).
        std::size_t max_workers = 0;
    };
    struct ResourceEntry {
        std::string name;
        Resource::Kind kind = Resource::Kind::Semaphore;
        /// The most units one task may ask for: a semaphore's permits, a
        /// token bucket's burst.
        std::uint32_t max_units = 0;
    };

    /// In the order the leader declared them.
    std::vector<PoolEntry> pools;
    std::vector<ResourceEntry> resources;
    /// `Builder::global_bounds`' max_pending; empty when unbounded.
    std::optional<std::size_t> global_max_pending;
    /// How long ended tasks keep their keys (a key resolves to a task that
    /// is live or ended within it; `EngineConfig::retention`).
    std::chrono::nanoseconds retention{0};
    /// The largest encoded payload or output the store accepts in a row.
    std::size_t max_value_bytes = 0;
    /// Kinds are free in this version: any kind is accepted. Written so
    /// that a later leader may restrict them without a new format.
    bool any_kind = true;
    /// The worker endpoint this leader serves (`WorkerServerConfig::advertise`
    /// or its default), which a process that does not lead sends workers to;
    /// empty without `Builder::serve_workers` (docs/remote.md, Redirects).
    std::string advertise;
    /// The fencing epoch the leader wrote this in: a redirect names
    /// `advertise` only while the store's lease is held in this epoch.
    std::uint64_t epoch = 0;
};

/// JSON text of format version 1 (docs/store.md, "Clients").
std::string encode_shard_config(const ShardConfigBody& body);

/// The body `encode_shard_config` wrote. Throws std::exception
/// (nlohmann::json's errors, std::runtime_error for another format
/// version) on text it cannot read; fields it does not know are ignored.
ShardConfigBody decode_shard_config(std::string_view text);

}  // namespace cronoq::detail
